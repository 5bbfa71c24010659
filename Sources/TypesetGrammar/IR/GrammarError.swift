/// Why a schema, regular expression or grammar text could not be compiled, with where.
///
/// Positions are JSON pointers into the schema (`#/properties/name/pattern`), byte offsets
/// into a pattern or JSON text, or line and column in a grammar text.
public enum GrammarError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The JSON text is malformed at `offset` (bytes from the start).
    case invalidJSON(offset: Int, message: String)
    /// The schema is not a valid JSON Schema at `pointer`.
    case invalidSchema(pointer: String, message: String)
    /// `keyword` at `pointer` cannot be enforced by a grammar (or not yet by this one).
    /// Soundness first: it is never silently dropped unless the lenient option says so.
    case unsupportedKeyword(keyword: String, pointer: String, reason: String)
    /// A `$ref` that does not resolve inside the document.
    case unresolvedReference(reference: String, pointer: String)
    /// A regular expression outside the supported ECMAScript subset, or malformed.
    case invalidRegex(pattern: String, offset: Int, message: String)
    /// A grammar text (GBNF-style) that does not parse or refers to an undefined rule.
    case invalidGrammarText(line: Int, column: Int, message: String)
    /// A grammar rule that can call itself without consuming a byte.
    case leftRecursion(rule: String)
    /// The schema or grammar accepts no value at all.
    case emptyLanguage(pointer: String)
    /// A grammar text (or regular expression) whose start rule matches nothing: every way
    /// through it calls a rule that can never finish.
    case emptyGrammar(rule: String)
    /// Compilation went past its size or time budget.
    case budgetExceeded(what: String, limit: Int)

    public var description: String {
        switch self {
        case .invalidJSON(let offset, let message):
            return "invalid JSON at byte \(offset): \(message)"
        case .invalidSchema(let pointer, let message):
            return "invalid schema at \(pointer): \(message)"
        case .unsupportedKeyword(let keyword, let pointer, let reason):
            return "cannot enforce '\(keyword)' at \(pointer): \(reason)"
        case .unresolvedReference(let reference, let pointer):
            return "unresolved reference '\(reference)' at \(pointer)"
        case .invalidRegex(let pattern, let offset, let message):
            return "regular expression /\(pattern)/ at offset \(offset): \(message)"
        case .invalidGrammarText(let line, let column, let message):
            return "grammar text at \(line):\(column): \(message)"
        case .leftRecursion(let rule):
            return "rule '\(rule)' is left-recursive (it can reach itself without consuming input)"
        case .emptyLanguage(let pointer):
            return "the schema at \(pointer) accepts no value"
        case .emptyGrammar(let rule):
            return "the grammar matches nothing: rule '\(rule)' can never finish (every alternative needs a rule that never ends)"
        case .budgetExceeded(let what, let limit):
            return "compilation budget exceeded: \(what) (limit \(limit))"
        }
    }
}
