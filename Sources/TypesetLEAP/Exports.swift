// LEAP's API over Typeset, for code written against Liquid's LEAP SDK (deprecated since August
// 2026). Its own declarations (`Leap`, `ModelRunner`, `Conversation`, `GenerationOptions`,
// `MessageResponse`, `ChatMessage`, …) are LEAP's shapes; Typeset, which this module
// re-exports, supplies the rest. Where both declare a name, this module's declaration is the
// one a file that imports it sees.
@_exported import Typeset
