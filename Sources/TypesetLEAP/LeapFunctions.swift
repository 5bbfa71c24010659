// LEAP's function declarations over Typeset's: a `LeapFunction` is a `FunctionDefinition` whose
// parameters are listed as LEAP lists them (the JSON Schema is built from the list).

/// LEAP's name for ``FunctionDefinition``: a function the model may call.
public typealias LeapFunction = FunctionDefinition

extension FunctionDefinition {
    /// A function whose arguments are `parameters`, as LEAP declares them: the schema is an
    /// object with one property per parameter, in the list's order, required unless
    /// `optional`, and no other property.
    public init(name: String, description: String, parameters: [LeapFunctionParameter]) {
        let properties = parameters.map { ($0.name, $0.type.schema(describedAs: $0.description)) }
        let required = parameters.filter { !$0.optional }.map { JSONValue.string($0.name) }
        self.init(name: name, description: description, parameters: .object([
            ("type", .string("object")), ("properties", .object(properties)), ("required", .array(required)),
            ("additionalProperties", .bool(false)),
        ]))
    }
}

/// One parameter of a ``LeapFunction``.
public struct LeapFunctionParameter: Sendable, Hashable {
    public var name: String
    public var type: LeapFunctionParameterType
    public var description: String
    /// Whether the model may leave the parameter out.
    public var optional: Bool

    public init(name: String, type: LeapFunctionParameterType, description: String, optional: Bool = false) {
        self.name = name
        self.type = type
        self.description = description
        self.optional = optional
    }
}

/// The type of a ``LeapFunctionParameter`` (or of an array's items, an object's properties).
public indirect enum LeapFunctionParameterType: Sendable, Hashable {
    case string(StringType)
    case number(NumberType)
    case integer(IntegerType)
    case boolean(BooleanType)
    case array(ArrayType)
    case object(ObjectType)
    case null(NullType)

    /// The type's JSON Schema, with `description` when it is not empty and the type has none.
    func schema(describedAs description: String? = nil) -> JSONValue {
        var members: [(String, JSONValue)]
        var own: String?
        switch self {
        case .string(let type):
            members = [("type", .string("string"))]
            if let values = type.enumValues { members.append(("enum", .array(values.map(JSONValue.string)))) }
            own = type.description
        case .number(let type):
            members = [("type", .string("number"))]
            if let values = type.enumValues { members.append(("enum", .array(values.map { .number(numberText($0)) }))) }
            own = type.description
        case .integer(let type):
            members = [("type", .string("integer"))]
            if let values = type.enumValues { members.append(("enum", .array(values.map { .number(String($0)) }))) }
            own = type.description
        case .boolean(let type):
            members = [("type", .string("boolean"))]
            own = type.description
        case .null:
            members = [("type", .string("null"))]
        case .array(let type):
            members = [("type", .string("array")), ("items", type.itemType.schema())]
            own = type.description
        case .object(let type):
            let names = type.properties.keys.sorted()
            members = [
                ("type", .string("object")),
                ("properties", .object(names.map { ($0, type.properties[$0]!.schema()) })),
                ("required", .array(type.required.map(JSONValue.string))),
                ("additionalProperties", .bool(false)),
            ]
            own = type.description
        }
        if let text = own ?? description, !text.isEmpty { members.insert(("description", .string(text)), at: 0) }
        return .object(members)
    }
}

/// A string parameter, one of `enumValues` when they are given.
public struct StringType: Sendable, Hashable {
    public var enumValues: [String]?
    public var description: String?
    public init(enumValues: [String]? = nil, description: String? = nil) {
        self.enumValues = enumValues
        self.description = description
    }
}

/// A number parameter, one of `enumValues` when they are given.
public struct NumberType: Sendable, Hashable {
    public var enumValues: [Double]?
    public var description: String?
    public init(enumValues: [Double]? = nil, description: String? = nil) {
        self.enumValues = enumValues
        self.description = description
    }
}

/// An integer parameter, one of `enumValues` when they are given.
public struct IntegerType: Sendable, Hashable {
    public var enumValues: [Int]?
    public var description: String?
    public init(enumValues: [Int]? = nil, description: String? = nil) {
        self.enumValues = enumValues
        self.description = description
    }
}

/// A Boolean parameter.
public struct BooleanType: Sendable, Hashable {
    public var description: String?
    public init(description: String? = nil) { self.description = description }
}

/// A parameter that can only be null.
public struct NullType: Sendable, Hashable {
    public init() {}
}

/// An array parameter whose items are `itemType`.
public struct ArrayType: Sendable, Hashable {
    public var itemType: LeapFunctionParameterType
    public var description: String?
    public init(itemType: LeapFunctionParameterType, description: String? = nil) {
        self.itemType = itemType
        self.description = description
    }
}

/// An object parameter with `properties` (written in the order of their names), of which
/// `required` must be present; no other property.
public struct ObjectType: Sendable, Hashable {
    public var properties: [String: LeapFunctionParameterType]
    public var required: [String]
    public var description: String?
    public init(properties: [String: LeapFunctionParameterType], required: [String] = [], description: String? = nil) {
        self.properties = properties
        self.required = required
        self.description = description
    }
}
