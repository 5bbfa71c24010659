extension Grammar {
    /// Compiles a JSON Schema (draft 2020-12, and draft-07 spellings) into a grammar whose
    /// sentences are exactly JSON texts valid against the schema, written compactly (or
    /// with bounded whitespace) and with object properties in declaration order.
    ///
    /// Soundness first: every keyword that constrains values is enforced, or compilation
    /// fails with `GrammarError.unsupportedKeyword` naming it and its JSON pointer (with
    /// `options.lenient`, it is dropped and listed in `droppedKeywords` instead).
    ///
    /// - Throws: ``GrammarError``; `.budgetExceeded` when the text, the time or the memory the
    ///   compilation takes goes past `budget` (see ``CompilationBudget``).
    public init(
        jsonSchema text: String, options: JSONSchemaOptions = JSONSchemaOptions(), budget: CompilationBudget = CompilationBudget()
    ) throws(GrammarError) {
        self = try CompilationMeter.metering(budget) { () throws(GrammarError) in
            try Grammar(jsonSchema: try JSONValue(parsingSchema: text, budget: budget), options: options, budget: budget)
        }
    }

    public init(
        jsonSchema document: JSONValue, options: JSONSchemaOptions = JSONSchemaOptions(), budget: CompilationBudget = CompilationBudget()
    ) throws(GrammarError) {
        self = try CompilationMeter.metering(budget) { () throws(GrammarError) in
            var compiler = try SchemaCompiler(document: document, options: options)
            return try compiler.compile()
        }
    }
}

extension JSONValue {
    /// Reads the text of a JSON Schema within `budget`: its size (the parsed document takes up
    /// to sixteen times its text, measured on a 40 MB schema of 1.3 million small properties)
    /// and time. A lone surrogate is an error: no UTF-8 output can hold it.
    ///
    /// - Throws: `GrammarError.invalidJSON` with the byte offset; `.budgetExceeded`.
    public init(parsingSchema text: String, budget: CompilationBudget = CompilationBudget()) throws(GrammarError) {
        self = try CompilationMeter.metering(budget) { () throws(GrammarError) in
            try CompilationMeter.check(bytes: text.utf8.count * 16, "reading the schema (\(text.utf8.count) bytes)")
            // Parsing checks the time between its blocks of text.
            return try JSONValue(parsing: text, loneSurrogates: .reject)
        }
    }
}

/// Builds the grammar of a schema: one rule per distinct subschema (so identical and
/// recursive subschemas share a rule), terminal rules for strings and numbers, and object
/// and array rules that call their members' rules.
struct SchemaCompiler {
    let document: JSONValue
    let options: JSONSchemaOptions
    var grammar = Grammar()
    /// Rules by subschema (annotations removed): hashed and compared as values, which costs
    /// no text (the compact text of a large subschema, built at every visit, did).
    var rulesBySchema: [RuleKey: Int32] = [:]
    /// Numbers are written in their shortest spelling only (``NumericFilters/writesEachValueOnce``):
    /// while the items of a `uniqueItems` array are compiled, so a value has one spelling.
    var writesNumbersOnce = false
    var anyValueRule: Int32?
    var anyStringRule: Int32?
    /// Quoted-string automata of nodes with only length bounds, by (minimum, maximum): every
    /// plain `"type": "string"` and every object's "any other key" share one construction.
    var boundedStringLanguages: [LengthBounds: DFA] = [:]
    /// Byte spellings of lists of character classes (`CharacterDFA.quotedJSONStrings`), shared
    /// by every pattern of the schema.
    var spellingFans: [[CodePointSet]: DFA] = [:]
    /// Rules of objects' undeclared keys, by their automaton: objects whose other keys are
    /// alike (every free-form object's are) share one rule.
    var keyRules: [DFA: Int32] = [:]
    /// Every quoted key but the given names (sorted, without duplicates): objects with the
    /// same names, or the same object met again, share one product.
    var keysOtherThan: [[String]: DFA] = [:]
    /// Nodes resolved so far (``resolvedNode(_:depth:)``), by the subschema's pointer and
    /// order, with its value (compared on a hit: a subschema the compiler builds, such as an
    /// `allOf` of parts, shares its first part's pointer) and the deepest nesting it was
    /// resolved at (a hit is good at that depth or shallower). An `anyOf`'s alternatives are
    /// resolved to compare them, then again to compile them; a class hierarchy's bases, at
    /// every use.
    var resolvedNodes: [ResolvedNodeKey: (value: JSONValue, depth: Int, node: SchemaNode?)] = [:]
    /// The targets of the references resolved so far (a document's definitions are found by
    /// a walk that reads each object's members in turn: hundreds per `$ref` in a large one).
    var resolvedReferences: [String: Subschema] = [:]
    /// Rules counting the characters of strings with only length bounds, by bounds.
    var countedStringRules: [LengthBounds: Int32] = [:]
    /// The rule standing for one item of a `uniqueItems` array, per item rule it calls.
    var distinctItemRules: [Int32: Int32] = [:]
    /// Alternatives expanded from `not`, `if` and dependencies so far (see `alternativeLimit`).
    var alternativesExpanded = 0
    /// The budget being spent (nil outside ``CompilationMeter/metering(_:_:)``).
    let meter = CompilationMeter.current
    /// Rules being compiled inside one another now (each a few frames of call stack).
    var ruleNesting = 0
    /// The deepest `ruleNesting` allowed: deeper than any schema written by hand (the JSON
    /// reader stops at 512 levels of nesting, and `$ref` chains are not nesting in the text).
    static let ruleNestingLimit = 256

    /// Subschemas by anchor name (`$anchor`, `"$id": "#name"`), for `$ref: "#name"`.
    let anchors: [String: Subschema]

    /// Whether a `$ref` replaces the keywords beside it, as drafts 3 to 7 say (the root's
    /// `$schema` names one of them); from draft 2019-09 on they apply together.
    let referenceReplacesSiblings: Bool

    init(document: JSONValue, options: JSONSchemaOptions) throws(GrammarError) {
        self.document = document
        self.options = options
        self.anchors = try SchemaAnchors.collect(in: document)
        if case .string(let dialect)? = document["$schema"] {
            referenceReplacesSiblings = ["draft-03", "draft-04", "draft-06", "draft-07"].contains { dialect.contains($0) }
        } else {
            referenceReplacesSiblings = false
        }
    }

    /// The members of a schema object that assert something: all of them, or only `$ref`
    /// where it replaces its siblings (``referenceReplacesSiblings``).
    func assertingMembers(_ members: [(String, JSONValue)]) -> [(String, JSONValue)] {
        guard referenceReplacesSiblings, let reference = members.first(where: { $0.0 == "$ref" }) else { return members }
        return [reference]
    }

    mutating func compile() throws(GrammarError) -> Grammar {
        // Every separator unrolls the whitespace run: its bound is a repetition like any other.
        if case .flexible(let maximum) = options.whitespace, maximum > options.repetitionLimit {
            throw .budgetExceeded(what: "whitespace bytes in a row (the flexible whitespace option)", limit: options.repetitionLimit)
        }
        grammar.isFromJSONSchema = true
        if case .pythonCalls(let several) = options.syntax {
            grammar.root = try pythonCallList(several: several)
        } else {
            grammar.root = try rule(for: Subschema(value: document, pointer: "#"), name: "root")
        }
        return grammar
    }

    // MARK: Rules

    /// Checks the budget being spent, if any, with the grammar's automaton as what the
    /// compilation holds; `what` names the work for the error.
    func checkBudget(_ what: @autoclosure () -> String) throws(GrammarError) {
        try meter?.retain(bytes: grammar.automaton.stateCount * CompilationMeter.bytesPerNFAState, what())
    }

    /// The rule matching `schema`'s values (shared by every equal subschema).
    mutating func rule(for schema: Subschema, name: String? = nil) throws(GrammarError) -> Int32 {
        let assertions = Self.withoutAnnotations(schema.value)
        let key = RuleKey(schema: assertions, writesNumbersOnce: writesNumbersOnce)
        if let known = rulesBySchema[key] { return known }
        if assertions == .bool(true) || assertions == .object([]) { return try anyValue() }
        guard ruleNesting < Self.ruleNestingLimit else {
            throw .budgetExceeded(what: "subschemas nested inside one another (through $ref) at \(schema.pointer)", limit: Self.ruleNestingLimit)
        }
        let rule = grammar.declareRule(grammar.uniqueName(name ?? Self.ruleName(schema.pointer)))
        rulesBySchema[key] = rule
        ruleNesting += 1
        defer { ruleNesting -= 1 }
        let body = try fragment(for: schema, depth: 0)
        grammar.define(rule, as: body)
        return rule
    }

    /// What a rule is compiled from: a subschema, and whether its numbers are written once.
    struct RuleKey: Hashable {
        var schema: JSONValue
        var writesNumbersOnce: Bool
    }

    /// The schema without its own annotation members (`title`, `description`, `examples`…),
    /// which do not change what it admits: subschemas that differ only there share a rule.
    /// (Nested subschemas keep theirs; each is a rule of its own and sheds them there.)
    static func withoutAnnotations(_ value: JSONValue) -> JSONValue {
        guard case .object(let members) = value, members.contains(where: { SchemaNode.annotations.contains($0.0) }) else { return value }
        return .object(members.filter { !SchemaNode.annotations.contains($0.0) })
    }

    /// A rule's name from its schema's pointer: the last two parts that are not the
    /// structure's own words, letters and digits kept and anything else a `-`
    /// (`#/$defs/user/properties/e-mail` → `user-e-mail`).
    static func ruleName(_ pointer: String) -> String {
        var kept: [Substring] = []
        for part in pointer.split(separator: "/").reversed() where !structuralPointerParts.contains(part) {
            kept.append(part)
            if kept.count == 2 { break }
        }
        var name = String.UnicodeScalarView()
        for (index, part) in kept.reversed().enumerated() {
            if index > 0 { name.append("-") }
            for scalar in part.unicodeScalars {
                let value = scalar.value
                let isLetterOrDigit = (0x30 ... 0x39).contains(value) || (0x41 ... 0x5A).contains(value) || (0x61 ... 0x7A).contains(value)
                name.append(isLetterOrDigit ? scalar : "-")
            }
        }
        return name.isEmpty ? "value" : String(name)
    }

    /// The words of a pointer that say where in a schema, not what: left out of rule names.
    private static let structuralPointerParts: Set<Substring> = ["#", "properties", "items", "$defs", "definitions", "anyOf", "oneOf", "allOf", "prefixItems"]

    /// Reports a keyword that cannot be enforced: fails, or records it when lenient.
    mutating func report(_ keyword: String, _ pointer: String, _ reason: String) throws(GrammarError) {
        guard options.lenient else { throw .unsupportedKeyword(keyword: keyword, pointer: pointer, reason: reason) }
        record(DroppedKeyword(keyword: keyword, pointer: pointer, reason: reason))
    }

    /// Lists a keyword the grammar does not enforce in `Grammar.droppedKeywords` (once).
    mutating func record(_ dropped: DroppedKeyword) {
        if !grammar.droppedKeywords.contains(dropped) { grammar.droppedKeywords.append(dropped) }
    }

    // MARK: Schema nodes

    /// Parses `schema`, then inlines its `$ref` and `allOf` members into one node.
    /// `nil` for the `false` schema.
    mutating func resolvedNode(_ schema: Subschema, depth: Int) throws(GrammarError) -> SchemaNode? {
        guard depth <= options.referenceDepthLimit else {
            throw .budgetExceeded(what: "nested $ref/allOf inlining at \(schema.pointer)", limit: options.referenceDepthLimit)
        }
        switch schema.value {
        case .bool(true): return SchemaNode(pointer: schema.pointer)
        case .bool(false): return nil
        case .object(let written):
            let key = ResolvedNodeKey(pointer: schema.pointer, order: schema.order)
            if let known = resolvedNodes[key], depth <= known.depth, known.value == schema.value { return known.node }
            let node = try resolvedObject(written, schema, depth: depth)
            resolvedNodes[key] = (schema.value, depth, node)
            return node
        default:
            throw .invalidSchema(pointer: schema.pointer, message: "a schema must be an object or a boolean")
        }
    }

    /// ``resolvedNode(_:depth:)`` of an object schema whose members are `written`.
    private mutating func resolvedObject(_ written: [(String, JSONValue)], _ schema: Subschema, depth: Int) throws(GrammarError) -> SchemaNode? {
        let members = assertingMembers(written)
        var reports: [(String, String, String)] = []
        var node = try SchemaNode(parsing: members, pointer: schema.pointer, order: schema.order) { keyword, pointer, reason throws(GrammarError) in
            reports.append((keyword, pointer, reason))
        }
        for (keyword, pointer, reason) in reports { try report(keyword, pointer, reason) }
        if let reference = node.reference {
            node.reference = nil
            var target = try resolve(reference.target, at: reference.pointer)
            target.order = schema.order + [written.firstIndex { $0.0 == "$ref" } ?? 0]
            guard let targetNode = try resolvedNode(target, depth: depth + 1) else { return nil }
            node = node.merged(with: targetNode)
        }
        let parts = node.allOf
        node.allOf = []
        for part in parts {
            guard let partNode = try resolvedNode(part, depth: depth + 1) else { return nil }
            node = node.merged(with: partNode)
        }
        try applyUnevaluated(&node)
        return node
    }

    /// `unevaluatedProperties` and `unevaluatedItems` of a node whose `$ref` and `allOf` are
    /// merged: what they evaluate is then known, so the keywords become ordinary ones. A
    /// member neither declared nor matched by a pattern anywhere in the node takes the
    /// `unevaluatedProperties` schema (a clause of its own, so siblings merged later do not
    /// count as evaluating it), unless some `additionalProperties` already evaluates every
    /// member; items past every `prefixItems` take `unevaluatedItems`, unless `items` evaluates
    /// them. Beside `anyOf`, `oneOf`, `not`, `if` or dependencies, what is evaluated depends on
    /// the branch a value takes (and on `contains` for items): not supported.
    mutating func applyUnevaluated(_ node: inout SchemaNode) throws(GrammarError) {
        let branches = !node.anyOf.isEmpty || !node.oneOf.isEmpty || !node.negations.isEmpty || !node.conditionals.isEmpty
            || !node.dependencies.isEmpty
        let why = "which members are evaluated depends on the anyOf, oneOf, not, if or dependency branch a value takes"
        if let schema = node.unevaluatedProperties {
            node.unevaluatedProperties = nil
            if schema.isTrue {
                // Admits and evaluates every other member, for an enclosing `unevaluatedProperties` too.
                if !node.mergedClauses.isEmpty {
                    node.mergedClauses.append(MemberClause(names: [], patterns: [], additional: [schema]))
                } else if node.additionalProperties == nil {
                    node.additionalProperties = [schema]
                }
            } else if branches {
                try report("unevaluatedProperties", node.pointer, why)
            } else if node.memberClauses.allSatisfy({ $0.additional == nil }) {
                let clauses = node.memberClauses
                let evaluated = MemberClause(names: Set(node.properties.map(\.name)),
                                             patterns: clauses.flatMap { $0.patterns.map { ($0.pattern, [Subschema]()) } },
                                             additional: [schema])
                node.mergedClauses = clauses + [evaluated]
                node.patternProperties = []
                node.additionalProperties = nil
            }
        }
        if let schema = node.unevaluatedItems {
            node.unevaluatedItems = nil
            if schema.isTrue {
                // Evaluates every other item, for an enclosing `unevaluatedItems` too.
                if node.items.isEmpty { node.items = [schema] }
            } else if branches || !node.requiredItems.isEmpty {
                try report("unevaluatedItems", node.pointer, node.requiredItems.isEmpty ? why : "items evaluated by 'contains' are not tracked")
            } else if node.items.isEmpty {
                node.items = [schema]
            }
        }
    }

    /// The subschema a `$ref` points to within this document: a JSON pointer (`#/$defs/a`)
    /// or an anchor name (`#a`).
    mutating func resolve(_ reference: String, at pointer: String) throws(GrammarError) -> Subschema {
        if let known = resolvedReferences[reference] { return known }
        let resolved = try walk(to: reference, at: pointer)
        resolvedReferences[reference] = resolved
        return resolved
    }

    /// ``resolve(_:at:)`` without the table: the document walked member by member.
    private func walk(to reference: String, at pointer: String) throws(GrammarError) -> Subschema {
        guard reference.hasPrefix("#") else { throw .unresolvedReference(reference: reference, pointer: pointer) }
        var value = document
        let path = JSONPointer.percentDecoded(String(reference.dropFirst()))
        if !path.isEmpty {
            guard path.hasPrefix("/") else {
                guard let anchored = anchors[path] else { throw .unresolvedReference(reference: reference, pointer: pointer) }
                return anchored
            }
            for token in path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map({ JSONPointer.unescape(String($0)) }) {
                switch value {
                case .object:
                    guard let next = value[token] else { throw .unresolvedReference(reference: reference, pointer: pointer) }
                    value = next
                case .array(let items):
                    guard let index = Int(token), items.indices.contains(index) else { throw .unresolvedReference(reference: reference, pointer: pointer) }
                    value = items[index]
                default:
                    throw .unresolvedReference(reference: reference, pointer: pointer)
                }
            }
        }
        return Subschema(value: value, pointer: reference)
    }

    // MARK: Fragments

    mutating func fragment(for schema: Subschema, depth: Int) throws(GrammarError) -> Fragment {
        // A bare reference is a call: recursion stays finite and the target's rule is shared.
        if case .object(let written) = schema.value, case let members = assertingMembers(written),
           let target = members.first(where: { $0.0 == "$ref" })?.1, case .string(let reference) = target,
           members.allSatisfy({ $0.0 == "$ref" || SchemaNode.annotations.contains($0.0) }) {
            let resolved = try resolve(reference, at: schema.pointer + "/$ref")
            let called = try rule(for: resolved)
            return grammar.automaton.rule(called)
        }
        guard let node = try resolvedNode(schema, depth: depth) else { return grammar.automaton.nothing() }
        return try fragment(for: node, depth: depth)
    }

    mutating func fragment(for node: SchemaNode, depth: Int) throws(GrammarError) -> Fragment {
        try checkBudget("compiling \(node.pointer)")
        var node = node
        // Distribute combinators: (rest ∧ (a ∨ b)) = (rest ∧ a) ∨ (rest ∧ b).
        if !node.anyOf.isEmpty || !node.oneOf.isEmpty {
            let isOneOf = node.anyOf.isEmpty
            let alternatives = isOneOf ? node.oneOf.removeFirst() : node.anyOf.removeFirst()
            if isOneOf {
                let overlaps = try overlappingAlternatives(alternatives, depth: depth)
                if !overlaps.isEmpty { return try exactlyOne(of: alternatives, rest: node, overlaps: overlaps, depth: depth) }
            }
            var pieces: [Fragment] = []
            if node.isUnconstrained {
                for alternative in alternatives { pieces.append(grammar.automaton.rule(try rule(for: alternative))) }
            } else {
                for alternative in alternatives {
                    guard let alternativeNode = try resolvedNode(alternative, depth: depth + 1) else { continue }
                    pieces.append(try fragment(for: node.merged(with: alternativeNode), depth: depth + 1))
                }
            }
            return pieces.isEmpty ? grammar.automaton.nothing() : grammar.automaton.union(pieces)
        }
        // Distribute `not`, `if` and dependencies the same way, over their alternatives.
        if let (rest, alternatives) = try splitConditionalAssertion(node, depth: depth) {
            var pieces: [Fragment] = []
            for alternative in alternatives {
                let merged = rest.merged(with: alternative)
                if merged.types?.isEmpty == true { continue }
                pieces.append(try fragment(for: merged, depth: depth + 1))
            }
            return pieces.isEmpty ? grammar.automaton.nothing() : grammar.automaton.union(pieces)
        }
        if let values = node.values {
            var rest = node
            rest.values = nil
            var pieces: [Fragment] = []
            let admitsAll = rest.isUnconstrained
            for (position, value) in values.enumerated() {
                if position & 255 == 255 {
                    try checkBudget("listing the values at \(node.pointer)")
                }
                let admitted = admitsAll ? true : try admits(value, rest, depth: depth) == true
                if admitted { pieces.append(literal(value)) }
            }
            return pieces.isEmpty ? grammar.automaton.nothing() : grammar.automaton.union(pieces)
        }
        let types = node.types ?? Set(JSONType.allCases)
        var pieces: [Fragment] = []
        if types.contains(.null), !node.excludes(.null) { pieces.append(literal(.null)) }
        if types.contains(.boolean) {
            for value in [true, false] where !node.excludes(.bool(value)) { pieces.append(literal(.bool(value))) }
        }
        if types.contains(.number) {
            pieces.append(try numberFragment(node, integer: false))
        } else if types.contains(.integer) {
            pieces.append(try numberFragment(node, integer: true))
        }
        if types.contains(.string) {
            let besideCalls = types.contains(.array) || types.contains(.object)
            pieces.append(besideCalls ? try stringCall(node) : try stringFragment(node))
        }
        if types.contains(.array) { pieces.append(try arrayFragment(node)) }
        if types.contains(.object) { pieces.append(try objectFragment(node)) }
        return pieces.isEmpty ? grammar.automaton.nothing() : grammar.automaton.union(pieces)
    }

    /// The compact JSON text of `value`, as a literal.
    mutating func literal(_ value: JSONValue) -> Fragment {
        if case .number(let text) = value, let decimal = DecimalNumber(text) {
            // Equal numbers are equal values whatever their spelling: accept the canonical ones.
            return grammar.automaton.union(decimal.spellings.map { grammar.automaton.literal(Array($0.utf8)) })
        }
        switch value {
        case .array(let items):
            var parts = [grammar.automaton.literal([UInt8(ascii: "[")]), whitespace()]
            for (index, item) in items.enumerated() {
                if index > 0 { parts += [grammar.automaton.literal([UInt8(ascii: ",")]), whitespace()] }
                parts += [literal(item), whitespace()]
            }
            parts.append(grammar.automaton.literal([UInt8(ascii: "]")]))
            return grammar.automaton.sequence(parts)
        case .object(let members):
            var parts = [grammar.automaton.literal([UInt8(ascii: "{")]), whitespace()]
            for (index, (name, item)) in members.enumerated() {
                if index > 0 { parts += [grammar.automaton.literal([UInt8(ascii: ",")]), whitespace()] }
                parts += [grammar.automaton.literal(Lowering.jsonStringLiteral(name)), whitespace(),
                          grammar.automaton.literal([UInt8(ascii: ":")]), whitespace(), literal(item), whitespace()]
            }
            parts.append(grammar.automaton.literal([UInt8(ascii: "}")]))
            return grammar.automaton.sequence(parts)
        case .null, .bool:
            guard case .pythonCalls = options.syntax else { return grammar.automaton.literal(Array(value.compactText.utf8)) }
            let word = value == .null ? "None" : value == .bool(true) ? "True" : "False"
            return grammar.automaton.literal(Array(word.utf8))
        default:
            return grammar.automaton.literal(Array(value.compactText.utf8))
        }
    }

    mutating func whitespace() -> Fragment {
        switch options.whitespace {
        case .compact: return grammar.automaton.empty()
        case .flexible(let maximum):
            let space = grammar.automaton.bytes(ByteSet(" \t\n\r".utf8))
            return grammar.automaton.repeating(space, minimum: 0, maximum: max(0, maximum))
        }
    }

    mutating func punctuation(_ character: Character) -> Fragment {
        grammar.automaton.literal(Array(String(character).utf8))
    }

    /// `oneOf` where some alternatives may match one value: each alternative together with the
    /// negation of every other it may overlap (`A ∧ ¬B ∨ ¬A ∧ B ∨ C` when only `A` and `B`
    /// overlap). A negation that cannot be built makes the `oneOf` unsupported, with the reason.
    mutating func exactlyOne(of alternatives: [Subschema], rest: SchemaNode, overlaps: [(Int, Int)], depth: Int) throws(GrammarError) -> Fragment {
        let pointer = rest.pointer
        let why = "alternatives \(overlaps[0].0) and \(overlaps[0].1) may both match a value"
        var pieces: [Fragment] = []
        for (index, alternative) in alternatives.enumerated() {
            guard var node = try resolvedNode(alternative, depth: depth + 1) else { continue }
            let others = overlaps.compactMap { pair in pair.0 == index ? pair.1 : pair.1 == index ? pair.0 : nil }
            node.negations += others.sorted().map { alternatives[$0] }
            do {
                pieces.append(try fragment(for: rest.merged(with: node), depth: depth + 1))
            } catch .unsupportedKeyword(let keyword, let at, let reason) {
                throw .unsupportedKeyword(keyword: "oneOf", pointer: pointer,
                                          reason: why + ", and 'exactly one' needs the negation of each: \(keyword) at \(at): \(reason)")
            }
        }
        return pieces.isEmpty ? grammar.automaton.nothing() : grammar.automaton.union(pieces)
    }

    /// The pairs of alternatives of a `oneOf` that may both match a value (none: the `oneOf`
    /// is an `anyOf`). See `nodesAreDisjoint`.
    mutating func overlappingAlternatives(_ alternatives: [Subschema], depth: Int) throws(GrammarError) -> [(Int, Int)] {
        var nodes: [SchemaNode?] = []
        for alternative in alternatives { nodes.append(try resolvedNode(alternative, depth: depth + 1)) }
        var overlaps: [(Int, Int)] = []
        for i in nodes.indices {
            for j in nodes.indices where j > i {
                guard let a = nodes[i], let b = nodes[j] else { continue }  // `false` matches nothing
                if try !nodesAreDisjoint(a, b, depth: depth) { overlaps.append((i, j)) }
            }
        }
        return overlaps
    }

    /// The JSON types a node's values can have (`integer` and `number` together: `1.0` is both).
    func footprint(_ node: SchemaNode) -> Set<JSONType> {
        var types = node.types ?? Set(JSONType.allCases)
        if let values = node.values { types = types.intersection(values.map { JSONType(rawValue: $0.typeName) ?? .number }.reduce(into: []) { $0.insert($1) }) }
        if types.contains(.number) || types.contains(.integer) { types.formUnion([.number, .integer]) }
        return types
    }

    /// Whether no value satisfies both nodes (`false`: they may overlap, or it cannot tell):
    /// their JSON types differ; or their `enum`/`const` scalars differ (numbers by value);
    /// or both are objects and one requires a property the other forbids, or both require a
    /// property whose schemas are disjoint in turn (a discriminator).
    mutating func nodesAreDisjoint(_ a: SchemaNode, _ b: SchemaNode, depth: Int) throws(GrammarError) -> Bool {
        let shared = footprint(a).intersection(footprint(b))
        if shared.isEmpty { return true }
        if let first = a.values, let second = b.values, (first + second).allSatisfy(\.isScalar),
           !first.contains(where: { value in second.contains { Self.sameScalar(value, $0) } }) {
            return true
        }
        if shared == [.object] { return try objectsAreDisjoint(a, b, depth: depth) }
        return false
    }

    /// JSON equality of two scalars, numbers compared by value (`1` and `1.0` are equal).
    static func sameScalar(_ a: JSONValue, _ b: JSONValue) -> Bool {
        if case .number(let x) = a, case .number(let y) = b {
            guard let left = DecimalNumber(x), let right = DecimalNumber(y) else { return x == y }
            return left == right
        }
        return a == b
    }

    /// Whether no object satisfies both nodes, by a required property the other forbids or a
    /// property both require with disjoint schemas.
    mutating func objectsAreDisjoint(_ a: SchemaNode, _ b: SchemaNode, depth: Int) throws(GrammarError) -> Bool {
        let aClauses = a.memberClauses, bClauses = b.memberClauses
        if a.required.contains(where: { b.forbidsProperty($0, clauses: bClauses, options) })
            || b.required.contains(where: { a.forbidsProperty($0, clauses: aClauses, options) }) {
            return true
        }
        guard depth + 2 < options.referenceDepthLimit else { return false }
        for name in a.required where b.required.contains(name) {
            guard let first = a.properties.first(where: { $0.name == name }), let second = b.properties.first(where: { $0.name == name }),
                  let firstNode = try resolvedNode(Subschema.all(first.schemas), depth: depth + 1),
                  let secondNode = try resolvedNode(Subschema.all(second.schemas), depth: depth + 1) else { continue }
            if try nodesAreDisjoint(firstNode, secondNode, depth: depth + 1) { return true }
        }
        return false
    }

    // MARK: Any value

    /// The rule of every JSON value (`true` / `{}` schemas).
    mutating func anyValue() throws(GrammarError) -> Int32 {
        if let anyValueRule { return anyValueRule }
        let value = grammar.declareRule(grammar.uniqueName("value"))
        anyValueRule = value
        let string = try anyString()
        var pieces: [Fragment] = []
        pieces += [literal(.null), literal(.bool(true)), literal(.bool(false))]
        pieces.append(try numberFragment(SchemaNode(pointer: "#"), integer: false))
        pieces.append(grammar.automaton.rule(string))
        // Arrays: "[" (value ("," value)*)? "]"
        let element = grammar.automaton.sequence([whitespace(), grammar.automaton.rule(value), whitespace()])
        let more = grammar.automaton.star(grammar.automaton.sequence([punctuation(","), grammar.automaton.duplicate(element)]))
        pieces.append(grammar.automaton.sequence([punctuation("["), grammar.automaton.union([grammar.automaton.sequence([element, more]), whitespace()]), punctuation("]")]))
        // Objects: "{" (string ":" value ("," string ":" value)*)? "}"
        let member = grammar.automaton.sequence([whitespace(), grammar.automaton.rule(string), whitespace(), punctuation(":"),
                                                 whitespace(), grammar.automaton.rule(value), whitespace()])
        let moreMembers = grammar.automaton.star(grammar.automaton.sequence([punctuation(","), grammar.automaton.duplicate(member)]))
        pieces.append(grammar.automaton.sequence([punctuation("{"), grammar.automaton.union([grammar.automaton.sequence([member, moreMembers]), whitespace()]), punctuation("}")]))
        grammar.define(value, as: grammar.automaton.union(pieces))
        return value
    }

    /// The node's strings as a call of a rule of their own, for a value that may also be an
    /// array or an object. Inline, a string's positions would sit in a rule with calls, whose
    /// masks need the vocabulary walked with a stack; in a terminal rule they are walked with
    /// one state per depth, and take the plain slices' shortcut where it applies (a pattern
    /// `^.*.xsl$` beside other types, Gemma's vocabulary: 14 ms a position inline, 6 in a
    /// rule of its own).
    mutating func stringCall(_ node: SchemaNode) throws(GrammarError) -> Fragment {
        if Self.hasOnlyLengthBounds(node) {
            // Bounded: already a call of a counted rule; unbounded: any string.
            return node.minimumLength > 0 || node.maximumLength != nil ? try stringFragment(node) : grammar.automaton.rule(try anyString())
        }
        let rule = grammar.declareRule(grammar.uniqueName(Self.ruleName(node.pointer) + "-string"))
        grammar.define(rule, as: try stringFragment(node))
        return grammar.automaton.rule(rule)
    }

    mutating func anyString() throws(GrammarError) -> Int32 {
        if let anyStringRule { return anyStringRule }
        let rule = grammar.declareRule(grammar.uniqueName("string"))
        anyStringRule = rule
        grammar.define(rule, as: try stringFragment(SchemaNode(pointer: "#")))
        return rule
    }
}

extension SchemaNode {
    /// Whether the node asserts nothing (so a combinator can call alternatives' rules as is).
    var isUnconstrained: Bool {
        types == nil && values == nil && minimumLength == 0 && maximumLength == nil && patterns.isEmpty && formats.isEmpty
            && minimum.isEmpty && exclusiveMinimum.isEmpty && maximum.isEmpty && exclusiveMaximum.isEmpty && multipleOf.isEmpty
            && prefixItems.isEmpty && items.isEmpty && minimumItems == 0 && maximumItems == nil
            && properties.isEmpty && required.isEmpty && patternProperties.isEmpty && additionalProperties == nil && mergedClauses.isEmpty
            && propertyNames.isEmpty && minimumProperties == 0 && maximumProperties == nil
            && anyOf.isEmpty && oneOf.isEmpty && allOf.isEmpty && reference == nil
            && negations.isEmpty && conditionals.isEmpty && dependencies.isEmpty
            && excludedValues.isEmpty && excludedPatterns.isEmpty && excludedMultiples.isEmpty && forbiddenProperties.isEmpty
            && requiredMembers.isEmpty && requiredItems.isEmpty && !uniqueItems
    }
}

/// Where a subschema stands: its pointer and its order (`Subschema.order`), which with its
/// value decide what it resolves to.
struct ResolvedNodeKey: Hashable {
    var pointer: String
    var order: [Int]
}
