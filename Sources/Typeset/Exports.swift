// The public API re-exports the layers a Typeset user meets directly: the models and their
// errors, tokens, JSON values and schema options. GGUF is not among them: a model is loaded
// by path, and code that reads GGUF files itself imports the GGUF product.
@_exported import Grammar
@_exported import Models
@_exported import Tokenizer

// The Foundation types Typeset's public API takes and returns, so `import Typeset` is enough
// to use it: model locations (`URL`) and exact numbers (`Decimal`).
@_exported import struct Foundation.Decimal
@_exported import struct Foundation.URL
