/// A schema built at run time, for output whose shape is known only then (a restaurant's
/// menu, the fields of a form a user designed).
///
/// Build the pieces, then turn them into a ``GenerationSchema`` with
/// `GenerationSchema(root:dependencies:)`, which checks them:
///
/// ```swift
/// let soup = DynamicGenerationSchema(name: "Soup", anyOf: ["Tomato", "Chicken Noodle", "Clam Chowder"])
/// let menu = DynamicGenerationSchema(name: "Menu", properties: [
///     .init(name: "dailySoup", schema: DynamicGenerationSchema(referenceTo: "Soup")),
///     .init(name: "sides", schema: DynamicGenerationSchema(arrayOf: .init(type: String.self), maximumElements: 3)),
/// ])
/// let schema = try GenerationSchema(root: menu, dependencies: [soup])
/// ```
public struct DynamicGenerationSchema: Sendable {
    indirect enum Shape: Sendable {
        case node(SchemaNode)
        case object(name: String, description: String?, properties: [Property])
        case choices(name: String, description: String?, [DynamicGenerationSchema])
        case stringChoices(name: String, description: String?, [String])
        case array(DynamicGenerationSchema, minimumCount: Int?, maximumCount: Int?)
        case reference(String)
    }

    let shape: Shape

    /// An object named `name` with `properties`, generated in order.
    public init(name: String, description: String? = nil, properties: [Property]) {
        shape = .object(name: name, description: description, properties: properties)
    }

    /// One of the schemas `choices`.
    public init(name: String, description: String? = nil, anyOf choices: [DynamicGenerationSchema]) {
        shape = .choices(name: name, description: description, choices)
    }

    /// One of the strings `choices`.
    public init(name: String, description: String? = nil, anyOf choices: [String]) {
        shape = .stringChoices(name: name, description: description, choices)
    }

    /// An array of `element`, with `minimumElements...maximumElements` elements when given.
    public init(arrayOf element: DynamicGenerationSchema, minimumElements: Int? = nil, maximumElements: Int? = nil) {
        shape = .array(element, minimumCount: minimumElements, maximumCount: maximumElements)
    }

    /// The schema of the dependency (or root) named `name`.
    public init(referenceTo name: String) {
        shape = .reference(name)
    }

    /// A value of the generable type `type` (a `String`, an `Int`, an `@Generable`
    /// structure, …), constrained by `guides`.
    public init<Value: Generable>(type: Value.Type, guides: [GenerationGuide<Value>] = []) {
        let schema = Value.generationSchema
        shape = .node(SchemaNode.inlining(schema).constrained(by: guides.flatMap(\.constraints)))
    }

    /// A property of a dynamic object.
    public struct Property: Sendable {
        let name: String
        let description: String?
        let schema: DynamicGenerationSchema
        let isOptional: Bool

        /// The property `name` of schema `schema`; an optional property may be left out (or
        /// be `null`).
        public init(name: String, description: String? = nil, schema: DynamicGenerationSchema, isOptional: Bool = false) {
            self.name = name
            self.description = description
            self.schema = schema
            self.isOptional = isOptional
        }
    }

    /// The schema's name, for those that have one.
    var name: String? {
        switch shape {
        case .object(let name, _, _), .choices(let name, _, _), .stringChoices(let name, _, _): return name
        case .node, .array, .reference: return nil
        }
    }
}

extension SchemaNode {
    /// `schema`'s root with the definitions it references written in place, except those
    /// that refer to themselves (kept as references; a dynamic schema that embeds a recursive
    /// type must list that type as a dependency).
    static func inlining(_ schema: GenerationSchema) -> SchemaNode {
        var node = schema.root
        for definition in schema.definitions where !definition.node.references(definition.name) {
            node = node.replacingReferences(to: definition.name, with: definition.node)
        }
        return node
    }

    func replacingReferences(to name: String, with replacement: SchemaNode) -> SchemaNode {
        switch self {
        case .reference(let target): return target == name ? replacement : self
        case .array(let items, let minimum, let maximum):
            return .array(items: items.replacingReferences(to: name, with: replacement), minimumCount: minimum, maximumCount: maximum)
        case .object(let objectName, let description, let properties):
            return .object(name: objectName, description: description, properties: properties.map { property in
                var property = property
                property.node = property.node.replacingReferences(to: name, with: replacement)
                return property
            })
        case .choices(let choicesName, let description, let nodes):
            return .choices(name: choicesName, description: description, nodes.map { $0.replacingReferences(to: name, with: replacement) })
        case .nullable(let node): return .nullable(node.replacingReferences(to: name, with: replacement))
        case .string, .integer, .number, .boolean, .stringChoices, .constant, .anyValue: return self
        }
    }
}

/// Why dynamic schemas do not make a ``GenerationSchema``.
public enum GenerationSchemaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Two schemas (the root or dependencies) have the same name.
    case duplicateType(String)
    /// An object has two properties named `property`.
    case duplicateProperty(schema: String, property: String)
    /// References name no schema among the root and the dependencies.
    case undefinedReferences(schema: String?, references: [String])
    /// An `anyOf` has no choices.
    case emptyTypeChoices(schema: String)
    /// An array's element bounds are negative or inverted.
    case invalidElementCount(schema: String?, minimum: Int?, maximum: Int?)

    public var description: String {
        switch self {
        case .duplicateType(let name): return "two schemas are named '\(name)'"
        case .duplicateProperty(let schema, let property): return "schema '\(schema)' has two properties named '\(property)'"
        case .undefinedReferences(let schema, let references):
            let names = references.map { "'\($0)'" }.joined(separator: ", ")
            return "\(schema.map { "schema '\($0)'" } ?? "the root") refers to undefined \(references.count == 1 ? "schema" : "schemas") \(names)"
        case .emptyTypeChoices(let schema): return "schema '\(schema)' offers no choices"
        case .invalidElementCount(let schema, let minimum, let maximum):
            return "\(schema.map { "schema '\($0)'" } ?? "an array"): invalid element count \(minimum.map(String.init) ?? "")...\(maximum.map(String.init) ?? "")"
        }
    }
}

extension GenerationSchema {
    /// The schema `root`, whose references name `root` itself or one of `dependencies`.
    ///
    /// Dependencies are written under `$defs` (when referenced); everything else is inline.
    ///
    /// - Throws: ``GenerationSchemaError`` for two schemas of one name, two properties of one
    ///   name, references to names that are not defined, an empty `anyOf`, or inverted array
    ///   bounds.
    public init(root: DynamicGenerationSchema, dependencies: [DynamicGenerationSchema]) throws(GenerationSchemaError) {
        var names = Set<String>()
        for schema in [root] + dependencies {
            guard let name = schema.name else { continue }
            guard names.insert(name).inserted else { throw .duplicateType(name) }
        }
        var definitions: [Definition] = []
        for dependency in dependencies {
            var references: [String] = []
            let node = try dependency.node(references: &references)
            let undefined = references.filter { !names.contains($0) }
            guard undefined.isEmpty else { throw .undefinedReferences(schema: dependency.name, references: Self.unique(undefined)) }
            if let name = dependency.name { definitions.append(Definition(name: name, node: node)) }
        }
        var references: [String] = []
        let node = try root.node(references: &references)
        let undefined = references.filter { !names.contains($0) }
        guard undefined.isEmpty else { throw .undefinedReferences(schema: root.name, references: Self.unique(undefined)) }
        if let name = root.name, node.references(name) || definitions.contains(where: { $0.node.references(name) }) {
            definitions.insert(Definition(name: name, node: node), at: 0)
        }
        self.init(node: node, definitions: definitions)
    }

    private static func unique(_ names: [String]) -> [String] {
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }
}

extension DynamicGenerationSchema {
    /// The schema as a node, checked; collects the names it references.
    func node(references: inout [String]) throws(GenerationSchemaError) -> SchemaNode {
        switch shape {
        case .node(let node):
            return node
        case .object(let name, let description, let properties):
            var seen = Set<String>()
            var members: [SchemaProperty] = []
            for property in properties {
                guard seen.insert(property.name).inserted else { throw .duplicateProperty(schema: name, property: property.name) }
                let node = try property.schema.node(references: &references)
                members.append(SchemaProperty(
                    name: property.name, description: property.description,
                    node: property.isOptional ? .nullable(node) : node, isOptional: property.isOptional))
            }
            return .object(name: name, description: description, properties: members)
        case .choices(let name, let description, let choices):
            guard !choices.isEmpty else { throw .emptyTypeChoices(schema: name) }
            var nodes: [SchemaNode] = []
            for choice in choices { nodes.append(try choice.node(references: &references)) }
            return .choices(name: name, description: description, nodes)
        case .stringChoices(let name, let description, let choices):
            guard !choices.isEmpty else { throw .emptyTypeChoices(schema: name) }
            return .stringChoices(name: name, description: description, choices)
        case .array(let element, let minimum, let maximum):
            if let minimum, minimum < 0 { throw .invalidElementCount(schema: nil, minimum: minimum, maximum: maximum) }
            if let maximum, maximum < (minimum ?? 0) { throw .invalidElementCount(schema: nil, minimum: minimum, maximum: maximum) }
            return .array(items: try element.node(references: &references), minimumCount: minimum, maximumCount: maximum)
        case .reference(let name):
            references.append(name)
            return .reference(name)
        }
    }
}
