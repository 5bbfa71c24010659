import Foundation
import TypesetGrammar

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

    /// The value (structures with unique property names, in generation order) and which of
    /// its parts are still open.
    let partial: PartialJSONValue

    /// Whether the value, and everything in it, has been generated to its end.
    public var isComplete: Bool { partial.isComplete }

    /// Content of `partial`, whose objects have unique member names.
    package init(_ partial: PartialJSONValue) {
        self.partial = partial
    }

    // MARK: Creating

    /// Complete content of `value`, whose objects already have unique member names (it is
    /// made of other content): nothing to resolve.
    package init(complete value: JSONValue) {
        self.init(PartialJSONValue(value))
    }

    /// A complete value of `kind`.
    public init(kind: Kind) {
        switch kind {
        case .null: self.init(complete: .null)
        case .bool(let value): self.init(complete: .bool(value))
        case .number(let value): self.init(complete: .number(numberText(value)))
        case .string(let value): self.init(complete: .string(value))
        case .array(let elements): self.init(complete: .array(elements.map(\.jsonValue)))
        case .structure(let properties, let orderedKeys):
            var members = orderedKeys.compactMap { key in properties[key].map { (key, $0.jsonValue) } }
            let listed = Set(orderedKeys)
            members += properties.keys.filter { !listed.contains($0) }.sorted().map { ($0, properties[$0]!.jsonValue) }
            self.init(complete: .object(uniquing: members))
        }
    }

    /// The content of `value`.
    public init(_ value: some ConvertibleToGeneratedContent) { self = value.generatedContent }

    /// A structure with `properties`, in their order. A property whose value is `nil` is left
    /// out; a repeated name keeps its first position and its last value.
    public init(properties: KeyValuePairs<String, (any ConvertibleToGeneratedContent)?>) {
        self.init(complete: .object(uniquing: properties.compactMap { name, value in value.map { (name, $0.generatedContent.jsonValue) } }))
    }

    /// An array of `elements`.
    public init(elements: some Sequence<any ConvertibleToGeneratedContent>) {
        self.init(complete: .array(elements.map(\.generatedContent.jsonValue)))
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

    /// The content of a JSON value, complete (a repeated member name keeps its first position
    /// and its last value).
    public init(_ json: JSONValue) {
        self.init(PartialJSONValue(json.withUniqueMemberNames))
    }

    // MARK: Reading

    /// The value's shape.
    public var kind: Kind {
        switch partial.value {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .number(let text): return .number(Double(text) ?? .nan)
        case .string(let text): return .string(text)
        case .array: return .array(children.map(\.value))
        case .object:
            let members = children
            return .structure(properties: Dictionary(members.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }),
                              orderedKeys: members.map(\.name))
        }
    }

    /// The elements of an array or the members of a structure (unnamed for an array), each open
    /// only if it is the part still being generated.
    private var children: [(name: String, value: GeneratedContent)] {
        switch partial.value {
        case .array(let items): return items.indices.map { ("", GeneratedContent(partial.child($0))) }
        case .object(let members): return members.indices.map { (members[$0].0, GeneratedContent(partial.child($0))) }
        default: return []
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
        guard let property = try property(name), property.jsonValue != .null else { return nil }
        return try GeneratedContentError.located(at: name) { try Value(property) }
    }

    private func property(_ name: String) throws(GeneratedContentError) -> GeneratedContent? {
        guard case .object(let members) = partial.value else {
            throw .typeMismatch(expected: "structure", found: typeName, pointer: "")
        }
        return members.firstIndex { $0.0 == name }.map { GeneratedContent(partial.child($0)) }
    }

    /// The elements of an array.
    public func elements() throws(GeneratedContentError) -> [GeneratedContent] {
        guard case .array = partial.value else { throw .typeMismatch(expected: "array", found: typeName, pointer: "") }
        return children.map(\.value)
    }

    /// The properties of a structure, in generation order.
    public func properties() throws(GeneratedContentError) -> [(name: String, value: GeneratedContent)] {
        guard case .object = partial.value else { throw .typeMismatch(expected: "structure", found: typeName, pointer: "") }
        return children
    }

    /// The JSON type of the value, as error messages name it.
    var typeName: String {
        switch partial.value {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "structure"
        }
    }

    // MARK: JSON

    /// The value as compact JSON (an incomplete value as far as it goes, closed: a string
    /// streamed in part reads `"Bri"`).
    public var jsonString: String { jsonValue.compactText }

    /// The value as a JSON value (an incomplete value as far as it goes, closed).
    public var jsonValue: JSONValue { partial.value }

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
        let escaped = "/" + JSONPointer.escape(component)
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

    /// The value of the optional property `name`, or `nil` when it is missing or `null`; the
    /// type comes from the context (`@Generable` expansions name no property type in the
    /// conformance's extension).
    public func _optionalValue<Value: ConvertibleFromGeneratedContent>(forProperty name: String) throws -> Value? {
        try value(Value?.self, forProperty: name)
    }

    /// The complete string naming an enumeration's case.
    public func _caseName(of type: String) throws(GeneratedContentError) -> String {
        guard case .string(let value) = partial.value else { throw .typeMismatch(expected: "string (a case of \(type))", found: typeName, pointer: "") }
        guard isComplete else { throw .incomplete(pointer: "") }
        return value
    }
}

/// The snapshot type of `Value` (`Value.PartiallyGenerated`), spelled so that any type syntax
/// fits in it; used by `@Generable` expansions.
public typealias _PartiallyGenerated<Value: Generable> = Value.PartiallyGenerated
