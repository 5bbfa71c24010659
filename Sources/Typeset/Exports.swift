// What `import Typeset` shows of the layers below it: the types its own API takes, returns or
// throws, each re-exported by name (with its members), and nothing else of those modules.
// Code that works with the layers themselves — the grammar compiler's automata and masks, the
// tokenizers, GGUF files — imports their products: TypesetGrammar, TypesetTokenizer, GGUF.
// Benchmarks/public_surface.py counts what this file and the module's own declarations expose.

// JSON values and schema options (tool arguments, `GeneratedContent`, `GenerationOptions`).
@_exported import enum TypesetGrammar.JSONValue
@_exported import struct TypesetGrammar.JSONSchemaOptions
// A reply held to a caller's own constraint (`Conversation.generateResponse(to:options:constraint:)`),
// and the mask such a constraint fills.
@_exported import protocol TypesetGrammar.TokenConstraint
@_exported import struct TypesetGrammar.TokenBitmask
// How a runner compiles grammars (`ModelRunner.Options`) and what it reports of them.
@_exported import enum TypesetGrammar.MaskComputation
@_exported import struct TypesetGrammar.CompilationBudget
import TypesetGrammar
/// The counters of the compiled-grammar cache a runner keeps (``ModelRunner/grammarCacheStatistics``):
/// hits, misses, compilations and their time, archives loaded and stored, evictions.
public typealias GrammarCacheStatistics = CompiledGrammarCache.Statistics

// The errors Typeset's own errors carry.
@_exported import enum TypesetGrammar.GrammarError
@_exported import enum Models.ModelError

// The Foundation types Typeset's public API takes and returns, so `import Typeset` is enough
// to use it: model locations (`URL`) and exact numbers (`Decimal`).
@_exported import struct Foundation.Decimal
@_exported import struct Foundation.URL
