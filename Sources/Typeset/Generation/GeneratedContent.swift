import Foundation

/// A generated value whose type is known at run time only: what a `DynamicGenerationSchema`
/// produces, what `@Generable` types are decoded from, and (incomplete) what streaming
/// snapshots hold.
///
/// Structures keep their properties in generation order, and numbers keep their JSON text, so
/// a 64-bit integer or a `Decimal` reads back exactly.
///
/// A value streamed in part is *incomplete* (`isComplete == false`): a string that has not
/// closed, an array or structure still open (and the values they contain). Numbers and
/// literals appear only once complete.
public struct GeneratedContent: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The shape of a value.
    public enum Kind: Sendable, Equatable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([GeneratedContent])
        /// Properties by name, and their names in generation order.
        case structure(properties: [String: GeneratedContent], orderedKeys: [String])
    }

    enum _Storage: Sendable, Equatable {
        case null
        case bool(Bool)
        /// JSON number text.
        case number(String)
        case string(String)
        case array([GeneratedContent])
        case structure([_Member])
    }

    struct _Member: Sendable, Equatable {
        var name: String
        var value: GeneratedContent

        /// `members` in order of first appearance, a repeated name keeping its last value
        /// (as JSON parsers do).
        static func lastOfEachName(_ members: [(String, GeneratedContent)]) -> [_Member] {
            var unique: [_Member] = []
            var indices: [String: Int] = [:]
            for (name, value) in members {
                if let index = indices[name] { unique[index].value = value } else {
                    indices[name] = unique.count
                    unique.append(_Member(name: name, value: value))
                }
            }
            return unique
        }
    }

    let storage: _Storage
    /// Whether the value, and everything in it, has been generated to its end.
    public let isComplete: Bool

    init(storage: _Storage, isComplete: Bool = true) {
        self.storage = storage
        self.isComplete = isComplete
    }

    // MARK: Creating

    /// A complete value of `kind`.
    public init(kind: Kind) {
        switch kind {
        case .null: storage = .null
        case .bool(let value): storage = .bool(value)
        case .number(let value): storage = .number(_numberText(value))
        case .string(let value): storage = .string(value)
        case .array(let elements): storage = .array(elements)
        case .structure(let properties, let orderedKeys):
            var members = orderedKeys.compactMap { key in properties[key].map { _Member(name: key, value: $0) } }
            let listed = Set(orderedKeys)
            members += properties.keys.filter { !listed.contains($0) }.sorted().map { _Member(name: $0, value: properties[$0]!) }
            storage = .structure(members)
        }
        isComplete = true
    }

    /// The content of `value`.
    public init(_ value: some ConvertibleToGeneratedContent) { self = value.generatedContent }

    /// A structure with `properties`, in their order. A property whose value is `nil` is left out.
    public init(properties: KeyValuePairs<String, (any ConvertibleToGeneratedContent)?>) {
        self.init(storage: .structure(properties.compactMap { name, value in
            value.map { _Member(name: name, value: $0.generatedContent) }
        }))
    }

    /// An array of `elements`.
    public init(elements: some Sequence<any ConvertibleToGeneratedContent>) {
        self.init(storage: .array(elements.map(\.generatedContent)))
    }

    /// The value of a complete JSON text.
    ///
    /// - Throws: ``GeneratedContentError/invalidJSON(offset:message:)``.
    public init(json: String) throws(GeneratedContentError) {
        do {
            self.init(try JSONValue(parsing: json))
        } catch {
            if case .invalidJSON(let offset, let message) = error { throw .invalidJSON(offset: offset, message: message) }
            throw .invalidJSON(offset: 0, message: error.description)
        }
    }

    /// The content of a parsed JSON value (members with the same name keep the last).
    public init(_ json: JSONValue) {
        switch json {
        case .null: self.init(storage: .null)
        case .bool(let value): self.init(storage: .bool(value))
        case .number(let text): self.init(storage: .number(text))
        case .string(let text): self.init(storage: .string(text))
        case .array(let items): self.init(storage: .array(items.map(GeneratedContent.init)))
        case .object(let members):
            self.init(storage: .structure(_Member.lastOfEachName(members.map { ($0.0, GeneratedContent($0.1)) })))
        }
    }

    /// The content of a value streamed in part.
    init(_ partial: _PartialJSONValue) {
        switch partial {
        case .null: self.init(storage: .null)
        case .bool(let value): self.init(storage: .bool(value))
        case .number(let text): self.init(storage: .number(text))
        case .string(let text, let isComplete): self.init(storage: .string(text), isComplete: isComplete)
        case .array(let items, let isComplete):
            self.init(storage: .array(items.map(GeneratedContent.init)), isComplete: isComplete)
        case .object(let members, let isComplete):
            self.init(storage: .structure(_Member.lastOfEachName(members.map { ($0.name, GeneratedContent($0.value)) })), isComplete: isComplete)
        }
    }

    // MARK: Reading

    /// The value's shape.
    public var kind: Kind {
        switch storage {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .number(let text): return .number(Double(text) ?? .nan)
        case .string(let text): return .string(text)
        case .array(let elements): return .array(elements)
        case .structure(let members):
            return .structure(
                properties: Dictionary(members.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }),
                orderedKeys: members.map(\.name))
        }
    }

    /// The value as `Value`.
    ///
    /// - Throws: ``GeneratedContentError`` (or what `Value`'s initializer throws) when the
    ///   content does not fit `Value`.
    public func value<Value: ConvertibleFromGeneratedContent>(_ type: Value.Type = Value.self) throws -> Value {
        try Value(self)
    }

    /// The value of the property `name` of a structure, as `Value`.
    ///
    /// - Throws: ``GeneratedContentError/missingProperty(_:pointer:)`` when there is no such
    ///   property, ``GeneratedContentError/typeMismatch(expected:found:pointer:)`` when this is
    ///   not a structure; errors inside the property say where (a JSON pointer).
    public func value<Value: ConvertibleFromGeneratedContent>(
        _ type: Value.Type = Value.self, forProperty name: String
    ) throws -> Value {
        guard let property = try property(name) else { throw GeneratedContentError.missingProperty(name, pointer: "") }
        return try GeneratedContentError.located(at: name) { try Value(property) }
    }

    /// The value of the property `name` of a structure, or `nil` when it is missing or `null`.
    public func value<Value: ConvertibleFromGeneratedContent>(
        _ type: Value?.Type, forProperty name: String
    ) throws -> Value? {
        guard let property = try property(name), property.storage != .null else { return nil }
        return try GeneratedContentError.located(at: name) { try Value(property) }
    }

    private func property(_ name: String) throws(GeneratedContentError) -> GeneratedContent? {
        guard case .structure(let members) = storage else {
            throw .typeMismatch(expected: "structure", found: typeName, pointer: "")
        }
        return members.last { $0.name == name }?.value
    }

    /// The elements of an array.
    public func elements() throws(GeneratedContentError) -> [GeneratedContent] {
        guard case .array(let elements) = storage else { throw .typeMismatch(expected: "array", found: typeName, pointer: "") }
        return elements
    }

    /// The properties of a structure, in generation order.
    public func properties() throws(GeneratedContentError) -> [(name: String, value: GeneratedContent)] {
        guard case .structure(let members) = storage else {
            throw .typeMismatch(expected: "structure", found: typeName, pointer: "")
        }
        return members.map { ($0.name, $0.value) }
    }

    /// The JSON type of the value, as error messages name it.
    var typeName: String {
        switch storage {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .structure: return "structure"
        }
    }

    // MARK: JSON

    /// The value as compact JSON (an incomplete value as far as it goes, closed: a string
    /// streamed in part reads `"Bri"`).
    public var jsonString: String { jsonValue.compactText }

    /// The value as a JSON value.
    public var jsonValue: JSONValue {
        switch storage {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .number(let text): return .number(text)
        case .string(let text): return .string(text)
        case .array(let elements): return .array(elements.map(\.jsonValue))
        case .structure(let members): return .object(members.map { ($0.name, $0.value.jsonValue) })
        }
    }

    public var description: String { jsonString }

    public var debugDescription: String { "GeneratedContent(\(isComplete ? "" : "incomplete: ")\(jsonString))" }
}

/// Why generated content does not fit the type asked for.
public enum GeneratedContentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The content is of another type (`pointer`: where, as a JSON pointer).
    case typeMismatch(expected: String, found: String, pointer: String)
    /// A required property is missing.
    case missingProperty(String, pointer: String)
    /// A string is not one of the enumeration's values.
    case unknownCase(String, type: String, pointer: String)
    /// A number does not fit the type (out of range, or not an integer).
    case numberOutOfRange(String, type: String, pointer: String)
    /// The content stopped before its end.
    case incomplete(pointer: String)
    /// The text is not JSON.
    case invalidJSON(offset: Int, message: String)

    public var description: String {
        func at(_ pointer: String) -> String { pointer.isEmpty ? "" : " at \(pointer)" }
        switch self {
        case .typeMismatch(let expected, let found, let pointer): return "expected \(expected), found \(found)\(at(pointer))"
        case .missingProperty(let name, let pointer): return "missing property '\(name)'\(at(pointer))"
        case .unknownCase(let value, let type, let pointer): return "'\(value)' is not a case of \(type)\(at(pointer))"
        case .numberOutOfRange(let text, let type, let pointer): return "\(text) does not fit \(type)\(at(pointer))"
        case .incomplete(let pointer): return "the value is incomplete\(at(pointer))"
        case .invalidJSON(let offset, let message): return "invalid JSON at byte \(offset): \(message)"
        }
    }

    /// Runs `body`, prefixing the JSON pointer of an error it throws with `component`.
    static func located<Result>(at component: String, _ body: () throws -> Result) throws -> Result {
        do { return try body() } catch let error as GeneratedContentError { throw error.prefixed(component) }
    }

    func prefixed(_ component: String) -> GeneratedContentError {
        let escaped = "/" + component.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
        switch self {
        case .typeMismatch(let expected, let found, let pointer): return .typeMismatch(expected: expected, found: found, pointer: escaped + pointer)
        case .missingProperty(let name, let pointer): return .missingProperty(name, pointer: escaped + pointer)
        case .unknownCase(let value, let type, let pointer): return .unknownCase(value, type: type, pointer: escaped + pointer)
        case .numberOutOfRange(let text, let type, let pointer): return .numberOutOfRange(text, type: type, pointer: escaped + pointer)
        case .incomplete(let pointer): return .incomplete(pointer: escaped + pointer)
        case .invalidJSON: return self
        }
    }
}

// MARK: - Support for @Generable expansions

extension GeneratedContent {
    /// Throws ``GeneratedContentError/incomplete(pointer:)`` unless the content is complete
    /// (a value is read from complete content only; snapshots are `PartiallyGenerated`).
    public func _requireComplete() throws(GeneratedContentError) {
        guard isComplete else { throw .incomplete(pointer: "") }
    }

    /// The complete string naming an enumeration's case.
    public func _caseName(of type: String) throws(GeneratedContentError) -> String {
        guard case .string(let value) = storage else { throw .typeMismatch(expected: "string (a case of \(type))", found: typeName, pointer: "") }
        guard isComplete else { throw .incomplete(pointer: "") }
        return value
    }
}

/// The snapshot type of `Value` (`Value.PartiallyGenerated`), spelled so that any type syntax
/// fits in it; used by `@Generable` expansions.
public typealias _PartiallyGenerated<Value: Generable> = Value.PartiallyGenerated
