// The public API re-exports the layers a Typeset user meets directly.
@_exported import GGUF
@_exported import Grammar
@_exported import Models
@_exported import Tokenizer
