import Foundation

/// The JSON Schema of a generable type: what `@Generable` produces for a type, what
/// `GenerationSchema(root:dependencies:)` builds from dynamic schemas, and what a reply is
/// held to while it is decoded.
///
/// ```swift
/// @Generable(description: "Basic profile information about a cat")
/// struct CatProfile {
///     var name: String
///     @Guide(description: "The age of the cat", .range(0...20))
///     var age: Int
/// }
/// print(CatProfile.generationSchema.jsonText)
/// // {"title":"CatProfile","description":"Basic profile information about a cat","type":"object",
/// //  "properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":20,
/// //  "description":"The age of the cat"}},"required":["name","age"],"additionalProperties":false}
/// ```
///
/// **Layout.** Nested generable types are written inline where they are used, which small
/// models follow best; a type that contains itself (directly or through others), and every
/// named dependency of a dynamic schema, is written once under `$defs` and referenced by
/// `{"$ref":"#/$defs/Name"}`. Properties keep their declaration order; optional properties are
/// not `required` and may also be `null`; objects admit no other properties.
public struct GenerationSchema: Sendable, Equatable, CustomDebugStringConvertible {
    let root: SchemaNode
    /// Named schemas that references point to, in first-use order.
    let definitions: [Definition]

    struct Definition: Sendable, Equatable {
        var name: String
        var node: SchemaNode
    }

    init(node: SchemaNode, definitions: [Definition] = []) {
        root = node
        self.definitions = definitions
    }

    /// This schema with its root transformed (definitions kept).
    func mapRoot(_ transform: (SchemaNode) -> SchemaNode) -> GenerationSchema {
        GenerationSchema(node: transform(root), definitions: definitions)
    }

    // MARK: Schemas of @Generable types

    /// A structure's schema: an object with `properties`, in order. (Used by `@Generable`.)
    public init(type: any Generable.Type, description: String? = nil, properties: [Property]) {
        var definitions: [Definition] = []
        let members = properties.map { property in
            Self.merge(property.schema.definitions, into: &definitions)
            return SchemaProperty(
                name: property.name, description: property.description, node: property.schema.root,
                isOptional: property.isOptional)
        }
        self.init(named: type, node: .object(name: Self.name(of: type), description: description, properties: members),
                  definitions: definitions)
    }

    /// An enumeration's schema: one of the strings `choices`. (Used by `@Generable`.)
    public init(type: any Generable.Type, description: String? = nil, anyOf choices: [String]) {
        self.init(named: type, node: .stringChoices(name: Self.name(of: type), description: description, choices), definitions: [])
    }

    /// The schema of an enumeration with associated values: one object per case, tagged by a
    /// `"type"` property holding the case's name. (Used by `@Generable`.)
    public init(type: any Generable.Type, description: String? = nil, taggedCases: [TaggedCase]) {
        var definitions: [Definition] = []
        let choices = taggedCases.map { taggedCase in
            var members = [SchemaProperty(name: "type", description: nil, node: .constant(taggedCase.name), isOptional: false)]
            for property in taggedCase.properties {
                Self.merge(property.schema.definitions, into: &definitions)
                members.append(SchemaProperty(
                    name: property.name, description: property.description, node: property.schema.root,
                    isOptional: property.isOptional))
            }
            return SchemaNode.object(name: nil, description: nil, properties: members)
        }
        self.init(named: type, node: .choices(name: Self.name(of: type), description: description, choices), definitions: definitions)
    }

    /// A named type's schema; when `node` refers to the type itself, its definition is kept.
    private init(named type: any Generable.Type, node: SchemaNode, definitions: [Definition]) {
        var definitions = definitions
        let name = Self.name(of: type)
        if node.references(name), !definitions.contains(where: { $0.name == name }) {
            definitions.insert(Definition(name: name, node: node), at: 0)
        }
        self.init(node: node, definitions: definitions)
    }

    static func name(of type: any Generable.Type) -> String {
        String(describing: type)
    }

    static func merge(_ new: [Definition], into definitions: inout [Definition]) {
        for definition in new where !definitions.contains(where: { $0.name == definition.name }) {
            definitions.append(definition)
        }
    }

    /// One property of a structure or of an enumeration case.
    public struct Property: Sendable {
        let name: String
        let description: String?
        let schema: GenerationSchema
        let isOptional: Bool

        /// A property of type `Value`, constrained by `guides`. An optional property may be
        /// left out of a generated value (or be `null`).
        public init<Value: Generable>(
            name: String, description: String? = nil, type: Value.Type, isOptional: Bool = false,
            guides: [GenerationGuide<Value>] = []
        ) {
            self.name = name
            self.description = description
            let constraints = guides.flatMap(\.constraints)
            let schema = Value.generationSchema.mapRoot { $0.constrained(by: constraints) }
            self.schema = isOptional ? schema.mapRoot { .nullable($0) } : schema
            self.isOptional = isOptional
        }
    }

    /// One case of an enumeration with associated values.
    public struct TaggedCase: Sendable {
        let name: String
        let properties: [Property]

        /// The case `name`, with its associated values as `properties`.
        public init(name: String, properties: [Property] = []) {
            self.name = name
            self.properties = properties
        }
    }

    // MARK: Recursion

    /// Builds the schema of `type` with `body`, or, while that schema is already being built
    /// further up (a type that contains itself), returns a reference to it. `@Generable`
    /// wraps each type's schema in this, so recursive types terminate.
    public static func _building(_ type: any Generable.Type, _ body: () -> GenerationSchema) -> GenerationSchema {
        let identifier = ObjectIdentifier(type)
        if _SchemaBuilding.inProgress.contains(identifier) {
            return GenerationSchema(node: .reference(name(of: type)))
        }
        return _SchemaBuilding.$inProgress.withValue(_SchemaBuilding.inProgress.union([identifier]), operation: body)
    }

    // MARK: JSON Schema

    /// The schema as a JSON Schema document (draft 2020-12).
    public var jsonSchema: JSONValue {
        var members = root.jsonMembers(title: true)
        let referenced = definitions.filter { definition in
            root.references(definition.name) || definitions.contains { $0.node.references(definition.name) }
        }
        if !referenced.isEmpty {
            members.append(("$defs", .object(referenced.map { ($0.name, .object($0.node.jsonMembers(title: false))) })))
        }
        return .object(members)
    }

    /// The JSON Schema as compact JSON text.
    public var jsonText: String { jsonSchema.compactText }

    /// The schema as `includeSchemaInPrompt` shows it to the model: the JSON Schema without
    /// the root's `title`. A title is a Swift type's name, and small models copy it into the
    /// first string they write (`"name": "CatProfile"`).
    package var promptText: String {
        guard case .object(let members) = jsonSchema else { return jsonText }
        return JSONValue.object(members.filter { $0.0 != "title" }).compactText
    }

    public var debugDescription: String { "GenerationSchema(\(jsonText))" }
}

@usableFromInline
enum _SchemaBuilding {
    @TaskLocal static var inProgress: Set<ObjectIdentifier> = []
}

// MARK: - Nodes

/// A string's constraints.
struct StringConstraints: Sendable, Hashable {
    var choices: [String]?
    var constant: String?
    var pattern: String?
}

/// One property of an object node.
struct SchemaProperty: Sendable, Equatable {
    var name: String
    var description: String?
    var node: SchemaNode
    var isOptional: Bool
}

/// A schema as a tree; named nodes carry the type's name (the title of a root, the key under
/// `$defs`) and description.
indirect enum SchemaNode: Sendable, Equatable {
    case string(StringConstraints)
    case integer(minimum: String?, maximum: String?)
    case number(minimum: String?, maximum: String?)
    case boolean
    case array(items: SchemaNode, minimumCount: Int?, maximumCount: Int?)
    case object(name: String?, description: String?, properties: [SchemaProperty])
    case stringChoices(name: String?, description: String?, [String])
    /// One of several schemas.
    case choices(name: String?, description: String?, [SchemaNode])
    case constant(String)
    case nullable(SchemaNode)
    case reference(String)
    case anyValue

    /// Whether a reference to `name` occurs in the tree.
    func references(_ name: String) -> Bool {
        switch self {
        case .reference(let target): return target == name
        case .array(let items, _, _): return items.references(name)
        case .object(_, _, let properties): return properties.contains { $0.node.references(name) }
        case .choices(_, _, let nodes): return nodes.contains { $0.references(name) }
        case .nullable(let node): return node.references(name)
        case .string, .integer, .number, .boolean, .stringChoices, .constant, .anyValue: return false
        }
    }

    /// The node with guides applied (bounds tighten; guides that do not apply to the node's
    /// type are ignored, which `GenerationGuide`'s typing rules out for `@Generable` types).
    func constrained(by constraints: [GuideConstraint]) -> SchemaNode {
        guard !constraints.isEmpty else { return self }
        var node = self
        for constraint in constraints { node = node.applying(constraint) }
        return node
    }

    private func applying(_ constraint: GuideConstraint) -> SchemaNode {
        switch (self, constraint) {
        case (.nullable(let node), _):
            return .nullable(node.applying(constraint))
        case (.integer(let minimum, let maximum), .minimum(let bound)):
            return .integer(minimum: Self.tighter(minimum, bound, keepsLarger: true), maximum: maximum)
        case (.integer(let minimum, let maximum), .maximum(let bound)):
            return .integer(minimum: minimum, maximum: Self.tighter(maximum, bound, keepsLarger: false))
        case (.number(let minimum, let maximum), .minimum(let bound)):
            return .number(minimum: Self.tighter(minimum, bound, keepsLarger: true), maximum: maximum)
        case (.number(let minimum, let maximum), .maximum(let bound)):
            return .number(minimum: minimum, maximum: Self.tighter(maximum, bound, keepsLarger: false))
        case (.string(var constraints), .anyOf(let choices)):
            constraints.choices = constraints.choices.map { existing in existing.filter(choices.contains) } ?? choices
            return .string(constraints)
        case (.string(var constraints), .constant(let value)):
            constraints.constant = value
            return .string(constraints)
        case (.string(var constraints), .pattern(let pattern)):
            constraints.pattern = pattern
            return .string(constraints)
        case (.array(let items, let minimum, let maximum), .minimumCount(let count)):
            return .array(items: items, minimumCount: Swift.max(minimum ?? 0, count), maximumCount: maximum)
        case (.array(let items, let minimum, let maximum), .maximumCount(let count)):
            return .array(items: items, minimumCount: minimum, maximumCount: maximum.map { Swift.min($0, count) } ?? count)
        case (.array(let items, let minimum, let maximum), .element(let constraints)):
            return .array(items: items.constrained(by: constraints), minimumCount: minimum, maximumCount: maximum)
        default:
            return self
        }
    }

    /// The tighter of two bounds (JSON number text, compared exactly).
    private static func tighter(_ current: String?, _ new: String, keepsLarger: Bool) -> String {
        guard let current, let old = Decimal(string: current), let candidate = Decimal(string: new) else { return new }
        return (candidate > old) == keepsLarger ? new : current
    }

    // MARK: JSON

    /// The node's JSON Schema members; a named object or enumeration gets its name as
    /// `title` when `title` is set (the document's root).
    func jsonMembers(title: Bool) -> [(String, JSONValue)] {
        func named(_ name: String?, _ description: String?) -> [(String, JSONValue)] {
            var members: [(String, JSONValue)] = []
            if title, let name { members.append(("title", .string(name))) }
            if let description { members.append(("description", .string(description))) }
            return members
        }
        switch self {
        case .string(let constraints):
            var members: [(String, JSONValue)] = [("type", .string("string"))]
            if let constant = constraints.constant { members.append(("const", .string(constant))) }
            if let choices = constraints.choices { members.append(("enum", .array(choices.map(JSONValue.string)))) }
            if let pattern = constraints.pattern { members.append(("pattern", .string(pattern))) }
            return members
        case .integer(let minimum, let maximum), .number(let minimum, let maximum):
            var members: [(String, JSONValue)] = [("type", .string(isInteger ? "integer" : "number"))]
            if let minimum { members.append(("minimum", .number(minimum))) }
            if let maximum { members.append(("maximum", .number(maximum))) }
            return members
        case .boolean:
            return [("type", .string("boolean"))]
        case .array(let items, let minimumCount, let maximumCount):
            var members: [(String, JSONValue)] = [("type", .string("array")), ("items", .object(items.jsonMembers(title: false)))]
            if let minimumCount, minimumCount > 0 { members.append(("minItems", .number(String(minimumCount)))) }
            if let maximumCount { members.append(("maxItems", .number(String(maximumCount)))) }
            return members
        case .object(let name, let description, let properties):
            var members = named(name, description)
            members.append(("type", .string("object")))
            members.append(("properties", .object(properties.map { property in
                var schema = property.node.jsonMembers(title: false)
                if let description = property.description {
                    schema.removeAll { $0.0 == "description" }
                    schema.append(("description", .string(description)))
                }
                return (property.name, .object(schema))
            })))
            members.append(("required", .array(properties.filter { !$0.isOptional }.map { .string($0.name) })))
            members.append(("additionalProperties", .bool(false)))
            return members
        case .stringChoices(let name, let description, let choices):
            return named(name, description) + [("type", .string("string")), ("enum", .array(choices.map(JSONValue.string)))]
        case .choices(let name, let description, let nodes):
            return named(name, description) + [("anyOf", .array(nodes.map { .object($0.jsonMembers(title: false)) }))]
        case .constant(let value):
            return [("const", .string(value))]
        case .nullable(let node):
            var members = node.jsonMembers(title: title)
            if let index = members.firstIndex(where: { $0.0 == "type" }), case .string(let type) = members[index].1,
               !members.contains(where: { $0.0 == "enum" || $0.0 == "const" })
            {
                members[index].1 = .array([.string(type), .string("null")])
                return members
            }
            let described = members.filter { $0.0 == "title" || $0.0 == "description" }
            let rest = members.filter { $0.0 != "title" && $0.0 != "description" }
            return described + [("anyOf", .array([.object(rest), .object([("type", .string("null"))])]))]
        case .reference(let name):
            return [("$ref", .string("#/$defs/" + name))]
        case .anyValue:
            return []
        }
    }

    private var isInteger: Bool {
        if case .integer = self { return true }
        return false
    }
}
