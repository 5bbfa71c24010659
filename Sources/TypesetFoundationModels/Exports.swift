// Foundation Models' API over Typeset. Its own declarations (`LanguageModelSession`,
// `SystemLanguageModel`, `Transcript`, `Prompt`, `Instructions`, …) are Foundation Models'
// shapes; what Foundation Models and Typeset share (`@Generable`, `@Guide`, `Generable`,
// `GenerationSchema`, `GeneratedContent`, `DynamicGenerationSchema`, `Tool`) comes from Typeset,
// which this module re-exports. Where both declare a name, this module's declaration is the one
// a file that imports it sees.
@_exported import Typeset
