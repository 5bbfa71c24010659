// MARK: Negation, conditionals and dependencies

/// `not`, `if`/`then`/`else` and the dependency keywords are compiled by rewriting them into
/// alternatives of positive nodes, the way `anyOf` is: the node's other assertions are merged
/// into each alternative, and the grammar is the union of the alternatives' grammars.
///
/// Negation is pushed down to single keywords (De Morgan): a schema is the conjunction of its
/// keywords, each of which holds vacuously on the JSON types it does not apply to, so
///
///     ¬{type: T, K₁, K₂, …} = (a type outside T) ∨ ¬K₁ ∨ ¬K₂ ∨ …
///
/// where `¬K` is "a value of K's type that fails K": `¬minimum m` is a number below `m`,
/// `¬required [a, b]` an object without `a` or without `b`, `¬pattern p` a string that `p`
/// does not match (its automaton subtracted), `¬enum V` a value outside `V`,
/// `¬properties {a: S}` an object whose `a` fails `S` (the property gets the schema
/// `{"not": S}`, negated in turn), `¬anyOf [A, B]` = `¬A ∧ ¬B`, `¬not S` = `S`, and so on.
///
/// Soundness: each `¬K` is exact, or a subset of the true complement (numbers without
/// exponents, bounds tightened inward). A keyword whose complement cannot be built exactly
/// (a `format`, which the compiler enforces only as a subset of its valid strings;
/// `propertyNames`, whose failure means "some name fails") is reported as an unsupported
/// `not`. "Some item fails `items`" and "some member fails `patternProperties` or
/// `additionalProperties`" are required items and members (`requiredItems`,
/// `requiredMembers`), which the array and object automata track in their states. In lenient mode such a negation is dropped whole (the
/// grammar then admits a superset, as lenient mode promises), never half-built.
extension SchemaCompiler {
    /// The most alternatives `not`, `if` and the dependency keywords may expand into over a
    /// whole schema (each alternative is a fragment of the grammar).
    static let alternativeLimit = 20_000

    /// The node's first `not`, `if`/`then`/`else` or dependency, expanded: the node without
    /// it (`rest`) and the alternatives, one of which the value must also satisfy. `nil` when
    /// the node has none of these.
    mutating func splitConditionalAssertion(_ node: SchemaNode, depth: Int) throws(GrammarError) -> (rest: SchemaNode, alternatives: [SchemaNode])? {
        var rest = node
        let alternatives: [SchemaNode]
        if !rest.negations.isEmpty {
            alternatives = try complement(of: rest.negations.removeFirst(), depth: depth)
        } else if !rest.conditionals.isEmpty {
            let conditional = rest.conditionals.removeFirst()
            var pieces: [SchemaNode] = []
            // (if ∧ then) ∨ (¬if ∧ else); a missing branch is `true`.
            if let condition = try resolvedNode(conditional.condition, depth: depth + 1) {
                if let then = conditional.then {
                    if let thenNode = try resolvedNode(then, depth: depth + 1) { pieces.append(condition.merged(with: thenNode)) }
                } else {
                    pieces.append(condition)
                }
            }
            var otherwise = SchemaNode(pointer: conditional.condition.pointer)
            otherwise.negations = [conditional.condition]
            if let branch = conditional.otherwise {
                if let branchNode = try resolvedNode(branch, depth: depth + 1) { pieces.append(otherwise.merged(with: branchNode)) }
            } else {
                pieces.append(otherwise)
            }
            alternatives = pieces
        } else if !rest.dependencies.isEmpty {
            // Not an object, or an object without the property, or one with it that satisfies the schema.
            let dependency = rest.dependencies.removeFirst()
            var nonObject = SchemaNode(pointer: dependency.schema.pointer)
            nonObject.types = Set(JSONType.allCases).subtracting([.object])
            var without = SchemaNode(pointer: dependency.schema.pointer)
            without.types = [.object]
            without.forbiddenProperties = [dependency.name]
            var pieces = [nonObject, without]
            if let schema = try resolvedNode(dependency.schema, depth: depth + 1) {
                var with = schema
                with.types = (schema.types ?? Set(JSONType.allCases)).intersection([.object])
                if !with.required.contains(dependency.name) { with.required.append(dependency.name) }
                // Undeclared elsewhere, the trigger comes before the properties its schema declares.
                if with.propertyOrder[dependency.name] == nil, !with.properties.isEmpty {
                    with.propertyOrder[dependency.name] = dependency.schema.order
                }
                pieces.append(with)
            }
            alternatives = pieces
        } else {
            return nil
        }
        alternativesExpanded += alternatives.count
        guard alternativesExpanded <= Self.alternativeLimit else {
            throw .budgetExceeded(what: "alternatives from not, if and dependencies at \(node.pointer)", limit: Self.alternativeLimit)
        }
        return (rest, alternatives)
    }

    /// Nodes whose union is the values `schema` rejects (a subset of them where a complement
    /// is tightened, never a superset). See the extension's comment.
    mutating func complement(of schema: Subschema, depth: Int) throws(GrammarError) -> [SchemaNode] {
        switch try exactComplement(of: schema, depth: depth) {
        case .alternatives(let alternatives):
            return alternatives
        case .unsupported(let reason):
            // Lenient: the whole `not` is dropped (a superset); strict: an error.
            try report("not", schema.pointer, reason)
            return [SchemaNode(pointer: schema.pointer)]
        }
    }

    private enum Complement {
        case alternatives([SchemaNode])
        case unsupported(String)
    }

    private mutating func exactComplement(of schema: Subschema, depth: Int) throws(GrammarError) -> Complement {
        guard let node = try resolvedNode(schema, depth: depth + 1) else {
            return .alternatives([SchemaNode(pointer: schema.pointer)])  // ¬false: every value
        }
        let pointer = node.pointer
        func only(_ types: Set<JSONType>) -> SchemaNode {
            var alternative = SchemaNode(pointer: pointer)
            alternative.types = types
            return alternative
        }
        func cannot(_ keyword: String, _ why: String) -> Complement {
            .unsupported("the negation of '\(keyword)' is not supported: \(why)")
        }
        var alternatives: [SchemaNode] = []

        // Types: the other types. `number` includes the integers; "not an integer" is a
        // number that is not a multiple of 1.
        if let types = node.types {
            var others = Set(JSONType.allCases).subtracting(types)
            if types.contains(.number) || types.contains(.integer) { others.subtract([.number, .integer]) }
            if !others.isEmpty { alternatives.append(only(others)) }
            if types.contains(.integer), !types.contains(.number) {
                var fraction = only([.number])
                fraction.excludedMultiples = ["1"]
                alternatives.append(fraction)
            }
        }
        if let values = node.values {
            let compound = values.filter { !$0.isScalar }
            if values.count == 1, let value = compound.first {
                // A value unequal to one array or object: structurally different somewhere.
                alternatives += unequal(to: value, pointer: pointer)
            } else {
                // Unequal to each: the scalars excluded, each array or object a `not` of its own.
                var outside = SchemaNode(pointer: pointer)
                outside.excludedValues = values.filter(\.isScalar)
                outside.negations = compound.map { Subschema(value: .object([("const", $0)]), pointer: pointer + "/enum") }
                alternatives.append(outside)
            }
        }

        // Counts (characters, items, properties): below the minimum, or above the maximum.
        for (type, minimum, maximum) in [(JSONType.string, \SchemaNode.minimumLength, \SchemaNode.maximumLength),
                                         (.array, \.minimumItems, \.maximumItems), (.object, \.minimumProperties, \.maximumProperties)] {
            if node[keyPath: minimum] > 0 {
                var fewer = only([type])
                fewer[keyPath: maximum] = node[keyPath: minimum] - 1
                alternatives.append(fewer)
            }
            if let bound = node[keyPath: maximum] {
                var more = only([type])
                more[keyPath: minimum] = bound + 1
                alternatives.append(more)
            }
        }

        // Strings.
        for pattern in node.patterns {
            var failing = only([.string])
            failing.excludedPatterns = [pattern]
            alternatives.append(failing)
        }
        // An unknown format kept as an annotation holds for every string: its complement is empty.
        if let format = node.formats.first(where: { Formats.pattern(for: $0.format) != nil || options.unknownFormats == .refuse }) {
            return cannot("format", "'\(format.format)' is enforced as a subset of its valid strings, so its complement would admit valid ones")
        }

        // Numbers: each bound flips to the opposite strict or non-strict bound.
        for (bounds, flipped) in [(node.minimum, \SchemaNode.exclusiveMaximum), (node.exclusiveMinimum, \.maximum),
                                  (node.maximum, \.exclusiveMinimum), (node.exclusiveMaximum, \.minimum)] {
            for bound in bounds {
                var beyond = only([.number])
                beyond[keyPath: flipped] = [bound]
                alternatives.append(beyond)
            }
        }
        for multiple in node.multipleOf {
            var other = only([.number])
            other.excludedMultiples = [multiple]
            alternatives.append(other)
        }

        // Arrays.
        if node.uniqueItems {
            return cannot("uniqueItems", "an array with a repeated item would have to be generated by pairing items")
        }
        let forbidsItems = node.items.contains { $0.value == .bool(false) }
        if forbidsItems {
            var longer = only([.array])
            longer.minimumItems = node.prefixItems.count + 1
            alternatives.append(longer)
        }
        // Item i fails its prefix schema; or some item past the prefix fails `items`.
        for (index, schemas) in node.prefixItems.enumerated() where !schemas.allSatisfy(\.isTrue) {
            var failing = only([.array])
            failing.prefixItems = Array(repeating: [], count: index) + [[Subschema.negation(of: schemas)]]
            failing.minimumItems = index + 1
            alternatives.append(failing)
        }
        if !forbidsItems, !node.items.allSatisfy(\.isTrue) {
            var failing = only([.array])
            failing.requiredItems = [([Subschema.negation(of: node.items)], node.prefixItems.count)]
            alternatives.append(failing)
        }
        // `contains`: every item (from where it applies) fails it.
        for requirement in node.requiredItems {
            var none = only([.array])
            none.prefixItems = Array(repeating: [], count: requirement.from)
            none.items = [Subschema.negation(of: requirement.schemas)]
            alternatives.append(none)
        }

        // Objects.
        for name in node.required {
            var missing = only([.object])
            missing.forbiddenProperties = [name]
            alternatives.append(missing)
        }
        for (name, schemas) in node.properties where !schemas.allSatisfy(\.isTrue) {
            var failing = only([.object])
            failing.required = [name]
            failing.properties = [(name, [Subschema.negation(of: schemas)])]
            failing.propertyOrder[name] = node.propertyOrder[name]
            alternatives.append(failing)
        }
        // Some member whose name matches a pattern fails the pattern's schema; some member
        // neither declared nor matched fails `additionalProperties` (`false`: is there at all).
        if !node.mergedClauses.isEmpty {
            return cannot("patternProperties", "members decided by several clauses ('patternProperties' merged from 'allOf', 'unevaluatedProperties') are not negated")
        }
        for (pattern, schemas) in node.patternProperties where !schemas.allSatisfy(\.isTrue) {
            var failing = only([.object])
            failing.requiredMembers = [RequiredMember(names: .matching(pattern: pattern), schemas: [Subschema.negation(of: schemas)])]
            alternatives.append(failing)
        }
        if let additional = node.additionalProperties, !additional.allSatisfy(\.isTrue) {
            var other = only([.object])
            let outside = RequiredMember.Names.outside(names: node.properties.map(\.name), patterns: node.patternProperties.map(\.pattern))
            let forbidsOthers = additional.contains { $0.value == .bool(false) }
            other.requiredMembers = [RequiredMember(names: outside, schemas: forbidsOthers ? [] : [Subschema.negation(of: additional)])]
            alternatives.append(other)
        }
        if !node.propertyNames.isEmpty { return cannot("propertyNames", "it needs \"some name fails\"") }

        // Combinators.
        for list in node.anyOf {
            var none = SchemaNode(pointer: pointer)
            none.negations = list
            alternatives.append(none)
        }
        for list in node.oneOf {
            // None of them, or two at once.
            guard list.count <= 8 else { return cannot("oneOf", "more than 8 alternatives") }
            var none = SchemaNode(pointer: pointer)
            none.negations = list
            alternatives.append(none)
            for first in list.indices {
                for second in list.indices where second > first {
                    guard let a = try resolvedNode(list[first], depth: depth + 2), let b = try resolvedNode(list[second], depth: depth + 2) else { continue }
                    alternatives.append(a.merged(with: b))
                }
            }
        }
        for negation in node.negations {
            if let positive = try resolvedNode(negation, depth: depth + 2) { alternatives.append(positive) }
        }
        for conditional in node.conditionals {
            // ¬(if → then, else) = (if ∧ ¬then) ∨ (¬if ∧ ¬else).
            if let then = conditional.then, var condition = try resolvedNode(conditional.condition, depth: depth + 2) {
                condition.negations.append(then)
                alternatives.append(condition)
            }
            if let otherwise = conditional.otherwise {
                var neither = SchemaNode(pointer: pointer)
                neither.negations = [conditional.condition, otherwise]
                alternatives.append(neither)
            }
        }
        for dependency in node.dependencies {
            // An object with the property that fails the dependent schema.
            var failing = only([.object])
            failing.required = [dependency.name]
            failing.negations = [dependency.schema]
            alternatives.append(failing)
        }
        precondition(node.excludedValues.isEmpty && node.excludedPatterns.isEmpty && node.excludedMultiples.isEmpty
                      && node.forbiddenProperties.isEmpty && node.requiredMembers.isEmpty, "complements are built from parsed schemas only")
        return .alternatives(alternatives)
    }
}

extension SchemaCompiler {
    /// Nodes whose union is the values unequal to an array or object `value` (JSON equality:
    /// members in any order, numbers by value): another type; for an object, one without
    /// some member, with some member unequal, or with a member it does not have; for an
    /// array, another length or some item unequal.
    func unequal(to value: JSONValue, pointer: String) -> [SchemaNode] {
        func notEqual(_ part: JSONValue) -> Subschema {
            Subschema.negation(of: [Subschema(value: .object([("const", part)]), pointer: pointer + "/enum")])
        }
        var alternatives: [SchemaNode] = []
        var other = SchemaNode(pointer: pointer)
        switch value {
        case .object(let members):
            other.types = Set(JSONType.allCases).subtracting([.object])
            alternatives.append(other)
            for (name, member) in members {
                var missing = SchemaNode(pointer: pointer)
                missing.types = [.object]
                missing.forbiddenProperties = [name]
                alternatives.append(missing)
                var different = SchemaNode(pointer: pointer)
                different.types = [.object]
                different.required = [name]
                different.properties = [(name, [notEqual(member)])]
                alternatives.append(different)
            }
            var more = SchemaNode(pointer: pointer)
            more.types = [.object]
            more.requiredMembers = [RequiredMember(names: .outside(names: members.map(\.0), patterns: []), schemas: [])]
            alternatives.append(more)
        case .array(let items):
            other.types = Set(JSONType.allCases).subtracting([.array])
            alternatives.append(other)
            if !items.isEmpty {
                var shorter = SchemaNode(pointer: pointer)
                shorter.types = [.array]
                shorter.maximumItems = items.count - 1
                alternatives.append(shorter)
            }
            var longer = SchemaNode(pointer: pointer)
            longer.types = [.array]
            longer.minimumItems = items.count + 1
            alternatives.append(longer)
            for (index, item) in items.enumerated() {
                var different = SchemaNode(pointer: pointer)
                different.types = [.array]
                different.minimumItems = index + 1
                different.prefixItems = Array(repeating: [], count: index) + [[notEqual(item)]]
                alternatives.append(different)
            }
        default:
            other.excludedValues = [value]
            alternatives.append(other)
        }
        return alternatives
    }
}

extension JSONValue {
    /// Whether the value is null, a boolean, a number or a string.
    var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }

    var isString: Bool {
        if case .string = self { return true }
        return false
    }
}

extension SchemaNode {
    /// Whether `value` is one of `excludedValues` (numbers compared by value: `1` and `1.0`).
    func excludes(_ value: JSONValue) -> Bool {
        excludedValues.contains { excluded in
            if case .number(let a) = excluded, case .number(let b) = value, let left = DecimalNumber(a), let right = DecimalNumber(b) {
                return left == right
            }
            return excluded == value
        }
    }
}
