/// A subschema not compiled yet, with where it is.
struct Subschema: Sendable {
    var value: JSONValue
    var pointer: String
    /// Where the subschema stands in the document, as the member and element indices on the
    /// way to it (through `$ref`s as written at the referring site): properties merged from
    /// several subschemas are written in this order (see `SchemaNode.propertyOrder`).
    var order: [Int] = []

    /// Whether the subschema asserts nothing (`true` or `{}`).
    var isTrue: Bool { value == .bool(true) || value == .object([]) }

    /// The subschema `{"not": …}` of the conjunction of `parts`: the values failing them.
    static func negation(of parts: [Subschema]) -> Subschema {
        let all = Subschema.all(parts)
        return Subschema(value: .object([("not", all.value)]), pointer: all.pointer, order: all.order)
    }

    /// The conjunction of several subschemas as one (`allOf`), or the single one.
    static func all(_ parts: [Subschema]) -> Subschema {
        if parts.count == 1 { return parts[0] }
        return Subschema(value: .object([("allOf", .array(parts.map(\.value)))]), pointer: parts.first?.pointer ?? "#",
                          order: parts.first?.order ?? [])
    }
}

/// The JSON types a schema can admit. `integer` values are also `number`s.
enum JSONType: String, CaseIterable, Sendable {
    case null, boolean, integer, number, string, array, object
}

/// One schema object's assertions, parsed and typed, so that `allOf` can merge several into
/// one (bounds tighten, property sets combine) before the grammar is built.
///
/// Subschemas stay as `Subschema` lists meaning "all of these": merging two nodes that
/// both constrain property `a` lists both schemas for `a`.
struct SchemaNode: Sendable {
    var pointer: String
    /// `nil`: every type.
    var types: Set<JSONType>?
    /// `enum`/`const` values, already intersected when merged.
    var values: [JSONValue]?

    // Strings
    var minimumLength = 0
    var maximumLength: Int?
    var patterns: [(pattern: String, pointer: String)] = []
    var formats: [(format: String, pointer: String)] = []

    // Numbers (JSON number text of each bound; the compiler compares them exactly)
    var minimum: [String] = []
    var exclusiveMinimum: [String] = []
    var maximum: [String] = []
    var exclusiveMaximum: [String] = []
    var multipleOf: [String] = []

    // Arrays
    var prefixItems: [[Subschema]] = []
    /// Schemas for items past `prefixItems` (empty: any value).
    var items: [Subschema] = []
    var minimumItems = 0
    var maximumItems: Int?
    /// Items the array must have: for each entry, some item at index `from` or later
    /// satisfies all of `schemas` (`contains`, and the complement of `items`: "some item
    /// fails").
    var requiredItems: [(schemas: [Subschema], from: Int)] = []
    /// `uniqueItems: true`: no two items are equal JSON values.
    var uniqueItems = false

    // Objects
    var properties: [(name: String, schemas: [Subschema])] = []
    /// Where each property was first declared in the document (`Subschema.order` of its
    /// schema): an object merged from `allOf` parts and `anyOf` alternatives writes its
    /// properties in document order, as a person reading the schema top to bottom would.
    var propertyOrder: [String: [Int]] = [:]
    var required: [String] = []
    var patternProperties: [(pattern: String, schemas: [Subschema])] = []
    /// `nil`: no `additionalProperties` (any value); else all of these.
    var additionalProperties: [Subschema]?
    var propertyNames: [Subschema] = []
    /// What several object schemas merged into this one say about members each one does not
    /// name: set instead of `patternProperties` and `additionalProperties` when a merge
    /// involves `patternProperties`, whose names only compiled patterns can decide (see
    /// ``memberClauses``). `properties` then lists each name with its declared schemas only.
    var mergedClauses: [MemberClause] = []
    var minimumProperties = 0
    var maximumProperties: Int?

    // Combinators kept for distribution: all of these lists must hold, one member of each.
    var anyOf: [[Subschema]] = []
    var oneOf: [[Subschema]] = []
    var allOf: [Subschema] = []
    var reference: (target: String, pointer: String)?
    /// `not`: the value must fail each of these.
    var negations: [Subschema] = []
    /// `if`/`then`/`else`: when the value passes `condition` it must pass `then`, else `otherwise`.
    var conditionals: [Conditional] = []
    /// `unevaluatedProperties` and `unevaluatedItems` as written in this schema object, until
    /// its `$ref` and `allOf` are merged into it (the members and items they evaluate are
    /// then known; `SchemaCompiler.applyUnevaluated`).
    var unevaluatedProperties: Subschema?
    var unevaluatedItems: Subschema?
    /// `dependentRequired`, `dependentSchemas` and draft-07 `dependencies`: when the object has
    /// property `name`, it must pass `schema` (a `required` list is a schema too).
    var dependencies: [(name: String, schema: Subschema)] = []

    // Complements, produced only by negating a schema (never parsed from one).
    /// Values the node does not admit (scalars only: null, booleans, numbers, strings).
    var excludedValues: [JSONValue] = []
    /// Patterns (search semantics) no string may match.
    var excludedPatterns: [(pattern: String, pointer: String)] = []
    /// Numbers must not be multiples of any of these.
    var excludedMultiples: [String] = []
    /// Properties the object must not have.
    var forbiddenProperties: [String] = []
    /// Members the object must have, each one of its own (the complements of
    /// `patternProperties` and `additionalProperties`: "some member fails").
    var requiredMembers: [RequiredMember] = []

    init(pointer: String) { self.pointer = pointer }

    /// Keywords with no effect on validity.
    static let annotations: Set<String> = [
        "title", "description", "$comment", "examples", "example", "default", "deprecated", "readOnly", "writeOnly",
        "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$vocabulary", "contentMediaType", "contentEncoding",
        "contentSchema", "$defs", "definitions", "discriminator", "xml", "externalDocs", "markdownDescription",
    ]

    /// Keywords that constrain values in ways a context-free grammar cannot (or this compiler
    /// does not) enforce.
    static let unsupported: [String: String] = [
        "$dynamicRef": "dynamic references are not supported",
        "$recursiveRef": "recursive references are not supported",
    ]

    /// Parses one schema object. `report` receives each keyword that cannot be enforced;
    /// it throws (strict) or records and returns (lenient).
    init(parsing members: [(String, JSONValue)], pointer: String, order: [Int] = [],
         report: (String, String, String) throws(GrammarError) -> Void) throws(GrammarError) {
        self.init(pointer: pointer)
        var member = 0
        func invalid(_ keyword: String, _ message: String) -> GrammarError {
            .invalidSchema(pointer: pointer + "/" + JSONPointer.escape(keyword), message: message)
        }
        func count(_ keyword: String, _ value: JSONValue) throws(GrammarError) -> Int {
            guard case .number(let text) = value, let decimal = DecimalNumber(text), let integer = decimal.exactInteger, integer >= 0 else {
                throw invalid(keyword, "expected a non-negative integer")
            }
            return integer
        }
        func schema(_ keyword: String, _ value: JSONValue, _ suffix: String = "", element: Int? = nil) -> Subschema {
            Subschema(value: value, pointer: pointer + "/" + JSONPointer.escape(keyword) + suffix,
                       order: order + [member] + (element.map { [$0] } ?? []))
        }
        func schemaList(_ keyword: String, _ value: JSONValue) throws(GrammarError) -> [Subschema] {
            guard case .array(let list) = value, !list.isEmpty else { throw invalid(keyword, "expected a non-empty array of schemas") }
            return list.enumerated().map { schema(keyword, $0.element, "/\($0.offset)", element: $0.offset) }
        }
        func number(_ keyword: String, _ value: JSONValue) throws(GrammarError) -> String {
            guard case .number(let text) = value else { throw invalid(keyword, "expected a number") }
            return text
        }
        let keywords = Set(members.map(\.0))
        for (index, (keyword, value)) in members.enumerated() {
            member = index
            switch keyword {
            case "type":
                var set = Set<JSONType>()
                let names: [JSONValue]
                if case .array(let list) = value { names = list } else { names = [value] }
                for name in names {
                    guard case .string(let text) = name, let type = JSONType(rawValue: text) else {
                        throw invalid(keyword, "unknown type \(name.compactText)")
                    }
                    set.insert(type)
                }
                types = set
            case "nullable":
                break  // applied after the loop
            case "enum":
                guard case .array(let list) = value else { throw invalid(keyword, "expected an array") }
                let listed = Set(list)
                values = values.map { existing in existing.filter { listed.contains($0) } } ?? list
            case "const":
                values = values.map { existing in existing.filter { $0 == value } } ?? [value]
            case "minLength": minimumLength = try count(keyword, value)
            case "maxLength": maximumLength = try count(keyword, value)
            case "pattern":
                guard case .string(let text) = value else { throw invalid(keyword, "expected a string") }
                patterns.append((text, pointer + "/pattern"))
            case "format":
                guard case .string(let text) = value else { throw invalid(keyword, "expected a string") }
                formats.append((text, pointer + "/format"))
            case "minimum": minimum.append(try number(keyword, value))
            case "maximum": maximum.append(try number(keyword, value))
            case "exclusiveMinimum":
                if case .bool(let flag) = value {  // draft 4
                    if flag, case .number(let bound)? = members.last(where: { $0.0 == "minimum" })?.1 { exclusiveMinimum.append(bound) }
                } else {
                    exclusiveMinimum.append(try number(keyword, value))
                }
            case "exclusiveMaximum":
                if case .bool(let flag) = value {
                    if flag, case .number(let bound)? = members.last(where: { $0.0 == "maximum" })?.1 { exclusiveMaximum.append(bound) }
                } else {
                    exclusiveMaximum.append(try number(keyword, value))
                }
            case "multipleOf":
                let text = try number(keyword, value)
                guard let decimal = DecimalNumber(text), decimal.isPositive else { throw invalid(keyword, "expected a positive number") }
                multipleOf.append(text)
            case "prefixItems":
                prefixItems = try schemaList(keyword, value).map { [$0] }
            case "items":
                if case .array(let list) = value {  // draft 2019-09 and earlier: tuple form
                    prefixItems = list.enumerated().map { [schema(keyword, $0.element, "/\($0.offset)")] }
                    if let additional = members.last(where: { $0.0 == "additionalItems" })?.1 {
                        items = [schema("additionalItems", additional)]
                    }
                } else {
                    items = [schema(keyword, value)]
                }
            case "additionalItems":
                break  // read with the tuple form of `items`; ignored otherwise, as the drafts say
            case "minItems": minimumItems = try count(keyword, value)
            case "maxItems": maximumItems = try count(keyword, value)
            case "properties":
                guard case .object(let list) = value else { throw invalid(keyword, "expected an object") }
                properties = []
                properties.reserveCapacity(list.count)
                for (index, entry) in list.enumerated() {
                    if index & 4095 == 4095 { try CompilationMeter.check("reading the properties at \(pointer)") }
                    properties.append((entry.0, [schema(keyword, entry.1, "/" + JSONPointer.escape(entry.0), element: index)]))
                }
                for (index, entry) in list.enumerated() where propertyOrder[entry.0] == nil { propertyOrder[entry.0] = order + [member, index] }
            case "required":
                guard case .array(let list) = value else { throw invalid(keyword, "expected an array of names") }
                var known = Set(required)
                for name in list {
                    guard case .string(let text) = name else { throw invalid(keyword, "expected an array of names") }
                    if known.insert(text).inserted { required.append(text) }
                }
            case "patternProperties":
                guard case .object(let list) = value else { throw invalid(keyword, "expected an object") }
                patternProperties = list.map { ($0.0, [schema(keyword, $0.1, "/" + JSONPointer.escape($0.0))]) }
            case "additionalProperties":
                additionalProperties = [schema(keyword, value)]
            case "propertyNames":
                propertyNames = [schema(keyword, value)]
            case "unevaluatedProperties":
                unevaluatedProperties = schema(keyword, value)
            case "unevaluatedItems":
                unevaluatedItems = schema(keyword, value)
            case "minProperties": minimumProperties = try count(keyword, value)
            case "maxProperties": maximumProperties = try count(keyword, value)
            case "anyOf": anyOf.append(try schemaList(keyword, value))
            case "oneOf": oneOf.append(try schemaList(keyword, value))
            case "allOf": allOf += try schemaList(keyword, value)
            case "$ref":
                guard case .string(let target) = value else { throw invalid(keyword, "expected a string") }
                reference = (target, pointer + "/$ref")
            case "not":
                negations.append(schema(keyword, value))
            case "if":
                // Without `then` and `else` it asserts nothing, but the members and items it
                // evaluates count for `unevaluated*` beside it: then it stays, a branch.
                guard keywords.contains("then") || keywords.contains("else")
                      || keywords.contains("unevaluatedProperties") || keywords.contains("unevaluatedItems") else { break }
                conditionals.append(Conditional(
                    condition: schema(keyword, value),
                    then: members.last { $0.0 == "then" }.map { schema("then", $0.1) },
                    otherwise: members.last { $0.0 == "else" }.map { schema("else", $0.1) }))
            case "then", "else":
                break  // read with `if`; ignored without it, as the specification says
            case "dependentRequired", "dependentSchemas", "dependencies":
                guard case .object(let entries) = value else { throw invalid(keyword, "expected an object") }
                for (entry, (name, dependency)) in entries.enumerated() {
                    let position = order + [member, entry]
                    let at = pointer + "/" + JSONPointer.escape(keyword) + "/" + JSONPointer.escape(name)
                    switch dependency {
                    case .array(let names):
                        // A list of required names (`dependentRequired`, draft-07's array form).
                        guard keyword != "dependentSchemas", names.allSatisfy({ if case .string = $0 { true } else { false } }) else {
                            throw .invalidSchema(pointer: at, message: "expected an array of property names")
                        }
                        dependencies.append((name, Subschema(value: .object([("required", dependency)]), pointer: at, order: position)))
                    case .object, .bool:
                        guard keyword != "dependentRequired" else { throw .invalidSchema(pointer: at, message: "expected an array of property names") }
                        dependencies.append((name, Subschema(value: dependency, pointer: at, order: position)))
                    default:
                        throw .invalidSchema(pointer: at, message: "expected a schema or an array of property names")
                    }
                }
            case "contains":
                // `minContains: 0` makes it vacuous; more than one match, or at most some, is not counted.
                var least = 1
                if let entry = members.last(where: { $0.0 == "minContains" }) { least = try count(entry.0, entry.1) }
                if least > 1 { try report("minContains", pointer, "'minContains' above 1 is not supported (items are not counted)") }
                if members.contains(where: { $0.0 == "maxContains" }) {
                    try report("maxContains", pointer, "'maxContains' is not supported (items are not counted)")
                }
                if least > 0 { requiredItems.append(([schema(keyword, value)], 0)) }
            case "minContains", "maxContains":
                break  // read with `contains`; ignored without it, as the specification says
            case "uniqueItems":
                uniqueItems = value == .bool(true)
            default:
                if let reason = Self.unsupported[keyword] { try report(keyword, pointer, reason) }
                // Anything else is an annotation or an unknown keyword: no effect on validity.
            }
        }
        if members.contains(where: { $0.0 == "nullable" && $0.1 == .bool(true) }), var set = types {
            set.insert(.null)
            types = set
        }
    }

    /// The node holding both nodes' assertions (`allOf` of two). Combinators are collected,
    /// not merged; `reference`s must have been resolved by the caller.
    func merged(with other: SchemaNode) -> SchemaNode {
        var result = self
        if let otherTypes = other.types {
            var mine = types ?? Set(JSONType.allCases)
            // `integer` within `number`: number ∧ integer = integer.
            if mine.contains(.number), otherTypes.contains(.integer) { mine.insert(.integer) }
            var theirs = otherTypes
            if theirs.contains(.number), mine.contains(.integer) { theirs.insert(.integer) }
            result.types = mine.intersection(theirs)
        }
        if let otherValues = other.values {
            let theirs = Set(otherValues)
            result.values = values.map { mine in mine.filter { theirs.contains($0) } } ?? otherValues
        }
        result.minimumLength = max(minimumLength, other.minimumLength)
        result.maximumLength = [maximumLength, other.maximumLength].compactMap { $0 }.min()
        result.patterns += other.patterns
        result.formats += other.formats
        result.minimum += other.minimum
        result.exclusiveMinimum += other.exclusiveMinimum
        result.maximum += other.maximum
        result.exclusiveMaximum += other.exclusiveMaximum
        result.multipleOf += other.multipleOf
        // Arrays: item i must satisfy both nodes' schemas for position i.
        let prefixCount = max(prefixItems.count, other.prefixItems.count)
        result.prefixItems = (0 ..< prefixCount).map { index in
            (index < prefixItems.count ? prefixItems[index] : items) + (index < other.prefixItems.count ? other.prefixItems[index] : other.items)
        }
        result.items = items + other.items
        result.minimumItems = max(minimumItems, other.minimumItems)
        result.maximumItems = [maximumItems, other.maximumItems].compactMap { $0 }.min()
        result.uniqueItems = uniqueItems || other.uniqueItems
        result.requiredItems += other.requiredItems
        // Objects: each name gets what each node says about that name.
        // (Tables and sets rather than scans: an object may declare a hundred thousand names.)
        var names = properties.map(\.name)
        var known = Set(names)
        for (name, _) in other.properties where known.insert(name).inserted { names.append(name) }
        let mine = declaredSchemas, theirs = other.declaredSchemas
        result.properties = names.map { name in
            (name, schemas(forProperty: name, declared: mine) + other.schemas(forProperty: name, declared: theirs))
        }
        for (name, position) in other.propertyOrder {
            if let mine = result.propertyOrder[name], !position.lexicographicallyPrecedes(mine) { continue }
            result.propertyOrder[name] = position
        }
        var required = Set(result.required)
        for name in other.required where required.insert(name).inserted { result.required.append(name) }
        if (decidesNamesByPattern && other.constrainsObjects) || (other.decidesNamesByPattern && constrainsObjects) {
            // Which of a node's patterns a name matches decides what that node requires of
            // it: each node's say stays a clause of its own.
            result.properties = names.map { name in (name, (mine[name] ?? []) + (theirs[name] ?? [])) }
            result.mergedClauses = memberClauses + other.memberClauses
            result.patternProperties = []
            result.additionalProperties = nil
        } else {
            result.mergedClauses = mergedClauses + other.mergedClauses
            result.patternProperties = patternProperties + other.patternProperties
            if additionalProperties != nil || other.additionalProperties != nil {
                result.additionalProperties = (additionalProperties ?? []) + (other.additionalProperties ?? [])
            }
        }
        result.propertyNames = propertyNames + other.propertyNames
        result.minimumProperties = max(minimumProperties, other.minimumProperties)
        result.maximumProperties = [maximumProperties, other.maximumProperties].compactMap { $0 }.min()
        result.anyOf += other.anyOf
        result.oneOf += other.oneOf
        result.allOf += other.allOf
        result.negations += other.negations
        result.conditionals += other.conditionals
        result.dependencies += other.dependencies
        result.excludedValues += other.excludedValues
        result.excludedPatterns += other.excludedPatterns
        result.excludedMultiples += other.excludedMultiples
        var forbidden = Set(result.forbiddenProperties)
        for name in other.forbiddenProperties where forbidden.insert(name).inserted { result.forbiddenProperties.append(name) }
        result.requiredMembers += other.requiredMembers
        return result
    }

    /// The `properties` entries by name (the first, where a name is declared twice): built
    /// once for a loop over names, since an object may declare a hundred thousand.
    var declaredSchemas: [String: [Subschema]] {
        var table: [String: [Subschema]] = [:]
        for property in properties where table[property.name] == nil { table[property.name] = property.schemas }
        return table
    }

    /// What this node requires of the value of property `name`: its `properties` entry (from
    /// `declared`, this node's ``declaredSchemas``), or the `patternProperties` it matches
    /// (decided by the caller), or `additionalProperties`. Pattern matching needs compiled
    /// patterns, so here a name only covered by patterns keeps the pattern schemas' pointers
    /// for the compiler to resolve.
    func schemas(forProperty name: String, declared: [String: [Subschema]]) -> [Subschema] {
        declared[name] ?? additionalProperties ?? []
    }

    /// Whether the node says anything about an object's members.
    var constrainsObjects: Bool {
        !properties.isEmpty || additionalProperties != nil || !patternProperties.isEmpty || !mergedClauses.isEmpty
    }

    /// Whether what the node requires of a member depends on the patterns its name matches.
    var decidesNamesByPattern: Bool { !patternProperties.isEmpty || !mergedClauses.isEmpty }

    /// What the node says about members, one clause per object schema merged into it: a
    /// member must satisfy every clause. In a clause, a member takes its declared schema (in
    /// `properties`) and those of the patterns its name matches; one neither declared nor
    /// matched takes `additional`.
    var memberClauses: [MemberClause] {
        guard mergedClauses.isEmpty else { return mergedClauses }
        return [MemberClause(names: Set(properties.map(\.name)), patterns: patternProperties, additional: additionalProperties)]
    }
}

/// One object schema's `properties` names, `patternProperties` and `additionalProperties`.
struct MemberClause: Sendable {
    var names: Set<String>
    var patterns: [(pattern: String, schemas: [Subschema])]
    /// `nil`: no `additionalProperties` (any value); else all of these.
    var additional: [Subschema]?

    /// Whether a member neither named nor matched by a pattern may be written.
    func admitsUnmatched(_ options: JSONSchemaOptions) -> Bool {
        guard let additional else { return !(options.closesDeclaredObjects && (!names.isEmpty || !patterns.isEmpty)) }
        return !additional.contains(where: { $0.value == .bool(false) })
    }
}

/// A member an object must have: its name in `names`, its value satisfying all of `schemas`
/// (any value when empty), besides what the object's own keywords say of it.
struct RequiredMember: Sendable {
    enum Names: Sendable {
        /// Names matching a pattern (search semantics).
        case matching(pattern: String)
        /// Names that are none of `names` and match none of `patterns`.
        case outside(names: [String], patterns: [String])
    }

    var names: Names
    var schemas: [Subschema]
}

/// One `if`/`then`/`else`: a missing branch is the `true` schema.
struct Conditional: Sendable {
    var condition: Subschema
    var then: Subschema?
    var otherwise: Subschema?
}

extension SchemaNode {
    /// Whether the node provably forbids a member named `name` (no clause names it, matches it
    /// by a pattern or admits others).
    /// `clauses`: the node's ``memberClauses``, built once for a loop over names.
    func forbidsProperty(_ name: String, clauses: [MemberClause], _ options: JSONSchemaOptions) -> Bool {
        forbiddenProperties.contains(name)
            || clauses.contains { !$0.names.contains(name) && $0.patterns.isEmpty && !$0.admitsUnmatched(options) }
    }
}
