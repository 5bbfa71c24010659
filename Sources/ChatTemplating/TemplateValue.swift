// MARK: - TemplateValue

/// A value passed into a chat template: the JSON-like data model that Python's
/// `apply_chat_template` hands to Jinja (messages, tools, flags, special tokens).
///
/// Objects keep their keys in insertion order, because templates print them
/// (`tool | tojson`) and Python dictionaries preserve insertion order.
///
/// Build values with literals:
/// ```swift
/// let message: TemplateValue = ["role": "user", "content": "Hello"]
/// let flags: TemplateValue = [true, 1, 2.5, nil]
/// ```
public enum TemplateValue: Sendable, Equatable {
    /// Jinja's `Undefined`: renders as an empty string, is falsy and fails `is defined`.
    case undefined
    /// Python `None` (JSON `null`).
    case none
    /// Python `bool`.
    case boolean(Bool)
    /// Python `int` (limited to 64 bits here).
    case integer(Int)
    /// Python `float`.
    case double(Double)
    /// Python `str`.
    case string(String)
    /// Python `list` (JSON array).
    case array([TemplateValue])
    /// Python `dict` with string keys (JSON object), in insertion order.
    ///
    /// If a key appears more than once, the last value wins, as in a Python dict literal.
    case object([(key: String, value: TemplateValue)])

    /// Compares two values structurally. Objects compare their entries in order.
    public static func == (lhs: TemplateValue, rhs: TemplateValue) -> Bool {
        switch (lhs, rhs) {
        case (.undefined, .undefined), (.none, .none):
            return true
        case let (.boolean(left), .boolean(right)):
            return left == right
        case let (.integer(left), .integer(right)):
            return left == right
        case let (.double(left), .double(right)):
            return left == right
        case let (.string(left), .string(right)):
            return left == right
        case let (.array(left), .array(right)):
            return left == right
        case let (.object(left), .object(right)):
            guard left.count == right.count else { return false }
            for (leftEntry, rightEntry) in zip(left, right) {
                if leftEntry.key != rightEntry.key || leftEntry.value != rightEntry.value {
                    return false
                }
            }
            return true
        default:
            return false
        }
    }

    /// The value stored under `key` when this is an object, otherwise `nil`.
    public subscript(key: String) -> TemplateValue? {
        guard case .object(let entries) = self else { return nil }
        return entries.last(where: { $0.key == key })?.value
    }
}

// MARK: - Literal conformances

extension TemplateValue: ExpressibleByNilLiteral {
    /// `nil` is Python `None`.
    public init(nilLiteral: ()) { self = .none }
}

extension TemplateValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
}

extension TemplateValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .integer(value) }
}

extension TemplateValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension TemplateValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension TemplateValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: TemplateValue...) { self = .array(elements) }
}

extension TemplateValue: ExpressibleByDictionaryLiteral {
    /// Keeps the literal's key order.
    public init(dictionaryLiteral elements: (String, TemplateValue)...) {
        self = .object(elements.map { (key: $0.0, value: $0.1) })
    }
}

extension TemplateValue: CustomStringConvertible {
    /// The value as Python's `str()` would print it inside a template.
    public var description: String {
        RuntimeValue(self, depth: 0).pythonString()
    }
}
