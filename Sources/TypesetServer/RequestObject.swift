import Typeset

/// A JSON object of a request, read field by field with typed errors that name the field
/// (`temperature`, `tools[1].function.parameters`), and checked at the end for fields nobody
/// read: a field the server does not implement is refused, never silently ignored.
///
/// `null` reads as absent, as OpenAI's API treats it; so does an empty value (`{}`, `[]`, `""`)
/// of a field nobody reads: it asks for nothing (`logit_bias: {}`, `metadata: {}`), and
/// clients send such fields by default.
struct RequestObject {
    /// Where the object is in the request (`""` for the body itself).
    let path: String
    private let members: [(String, JSONValue)]
    private var read: Set<String> = []

    init(_ value: JSONValue, path: String = "") throws(APIError) {
        guard case .object(let members) = value else {
            throw .invalid(path.isEmpty ? "body" : path, "\(path.isEmpty ? "the request body" : path) must be a JSON object")
        }
        self.path = path
        self.members = members
    }

    /// The path of field `key`.
    func path(of key: String) -> String { path.isEmpty ? key : path + "." + key }

    /// Field `key`, or `nil` when it is absent or `null`.
    mutating func value(_ key: String) -> JSONValue? {
        read.insert(key)
        guard let value = members.last(where: { $0.0 == key })?.1, value != .null else { return nil }
        return value
    }

    mutating func string(_ key: String) throws(APIError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw .invalid(path(of: key), "\(path(of: key)) must be a string") }
        return text
    }

    mutating func bool(_ key: String) throws(APIError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw .invalid(path(of: key), "\(path(of: key)) must be true or false") }
        return flag
    }

    /// A number within `range` (finite).
    mutating func number(_ key: String, in range: ClosedRange<Double>) throws(APIError) -> Double? {
        guard let value = value(key) else { return nil }
        guard case .number(let text) = value, let number = Double(text), number.isFinite else {
            throw .invalid(path(of: key), "\(path(of: key)) must be a number")
        }
        guard range.contains(number) else {
            throw .invalid(path(of: key), "\(path(of: key)) must be between \(Self.format(range.lowerBound)) and \(Self.format(range.upperBound)); got \(text)")
        }
        return number
    }

    /// A whole number within `range`.
    mutating func integer(_ key: String, in range: ClosedRange<Int>) throws(APIError) -> Int? {
        guard let value = value(key) else { return nil }
        guard case .number(let text) = value, let number = Double(text), number.rounded() == number else {
            throw .invalid(path(of: key), "\(path(of: key)) must be an integer")
        }
        guard number >= Double(range.lowerBound), number <= Double(range.upperBound) else {
            throw .invalid(path(of: key), "\(path(of: key)) must be between \(range.lowerBound) and \(range.upperBound); got \(text)")
        }
        return Int(number)
    }

    mutating func object(_ key: String) throws(APIError) -> RequestObject? {
        guard let value = value(key) else { return nil }
        return try RequestObject(value, path: path(of: key))
    }

    mutating func array(_ key: String) throws(APIError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw .invalid(path(of: key), "\(path(of: key)) must be an array") }
        return items
    }

    /// Field `key` when it asks for something: `nil` when it is absent, `null` or empty
    /// (`{}`, `[]`, `""`).
    mutating func nonEmptyValue(_ key: String) -> JSONValue? {
        guard let value = value(key), !Self.isEmpty(value) else { return nil }
        return value
    }

    /// Refuses the first field nobody read that asks for something.
    func finish() throws(APIError) {
        if let unknown = members.first(where: { !read.contains($0.0) && !Self.isEmpty($0.1) })?.0 {
            throw .invalid(path(of: unknown), "\(path(of: unknown)) is not a field Typeset implements")
        }
    }

    private static func isEmpty(_ value: JSONValue) -> Bool {
        switch value {
        case .null: true
        case .string(let text): text.isEmpty
        case .array(let items): items.isEmpty
        case .object(let members): members.isEmpty
        default: false
        }
    }

    private static func format(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}
