// MARK: - ChatTemplateError

/// Why a chat template could not be parsed or rendered.
///
/// Lines and columns are 1-based and count Unicode scalars, after the template's
/// line endings have been normalized to `\n` (as Jinja does).
public enum ChatTemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The template is not valid Jinja (unterminated tag, unknown tag, bad expression, unknown filter…).
    case syntax(message: String, line: Int, column: Int)
    /// Valid Jinja that this interpreter deliberately does not implement
    /// (`{% include %}`, `{% extends %}`, `{% call %}`, recursive loops, some filters…).
    case unsupported(feature: String, line: Int, column: Int)
    /// The template called `raise_exception(message)`, as chat templates do to reject a conversation.
    case raised(message: String)
    /// An undefined value was used in a way Jinja forbids (attribute access, arithmetic, calls):
    /// Jinja's `UndefinedError`.
    case undefinedValue(message: String, line: Int, column: Int)
    /// A type or value error while evaluating (Python's `TypeError`, `ValueError`, `ZeroDivisionError`…).
    case runtime(message: String, line: Int, column: Int)
    /// The template tried something Jinja's immutable sandbox forbids, such as `list.append`:
    /// Jinja's `SecurityError`.
    case sandboxViolation(message: String, line: Int, column: Int)
    /// The template exceeded one of the resource limits in ``ChatTemplate/Limits``.
    case limitExceeded(message: String, line: Int, column: Int)

    public var description: String {
        switch self {
        case let .syntax(message, line, column):
            return "Template syntax error at line \(line), column \(column): \(message)"
        case let .unsupported(feature, line, column):
            return "Unsupported template feature at line \(line), column \(column): \(feature)"
        case let .raised(message):
            return "Template raised an exception: \(message)"
        case let .undefinedValue(message, line, column):
            return "Undefined value at line \(line), column \(column): \(message)"
        case let .runtime(message, line, column):
            return "Template error at line \(line), column \(column): \(message)"
        case let .sandboxViolation(message, line, column):
            return "Sandbox violation at line \(line), column \(column): \(message)"
        case let .limitExceeded(message, line, column):
            return "Template limit exceeded at line \(line), column \(column): \(message)"
        }
    }

    /// The message without the location prefix (for ``raised(message:)``, the template's own text).
    public var message: String {
        switch self {
        case let .syntax(message, _, _), let .undefinedValue(message, _, _), let .runtime(message, _, _),
             let .sandboxViolation(message, _, _), let .limitExceeded(message, _, _):
            return message
        case let .unsupported(feature, _, _):
            return feature
        case let .raised(message):
            return message
        }
    }

    /// The 1-based line of the error, if it has one.
    public var line: Int? {
        switch self {
        case let .syntax(_, line, _), let .unsupported(_, line, _), let .undefinedValue(_, line, _),
             let .runtime(_, line, _), let .sandboxViolation(_, line, _), let .limitExceeded(_, line, _):
            return line
        case .raised:
            return nil
        }
    }

    /// The 1-based column of the error, if it has one.
    public var column: Int? {
        switch self {
        case let .syntax(_, _, column), let .unsupported(_, _, column), let .undefinedValue(_, _, column),
             let .runtime(_, _, column), let .sandboxViolation(_, _, column), let .limitExceeded(_, _, column):
            return column
        case .raised:
            return nil
        }
    }
}

// MARK: - Source locations

/// A 1-based position in the (newline-normalized) template source.
struct SourceLocation: Sendable, Equatable {
    var line: Int
    var column: Int

    static let unknown = SourceLocation(line: 0, column: 0)
}

extension ChatTemplateError {
    static func syntax(_ message: String, at location: SourceLocation) -> ChatTemplateError {
        .syntax(message: message, line: location.line, column: location.column)
    }

    static func unsupported(_ feature: String, at location: SourceLocation) -> ChatTemplateError {
        .unsupported(feature: feature, line: location.line, column: location.column)
    }

    static func runtime(_ message: String, at location: SourceLocation) -> ChatTemplateError {
        .runtime(message: message, line: location.line, column: location.column)
    }

    static func limit(_ message: String, at location: SourceLocation) -> ChatTemplateError {
        .limitExceeded(message: message, line: location.line, column: location.column)
    }
}
