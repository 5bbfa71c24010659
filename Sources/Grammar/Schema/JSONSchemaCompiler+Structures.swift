// MARK: Arrays and objects

extension SchemaCompiler {
    /// The rule of "all of these schemas" (any value when empty).
    mutating func valueRule(_ schemas: [Subschema]) throws(GrammarError) -> Int32 {
        schemas.isEmpty ? try anyValue() : try rule(for: Subschema.all(schemas))
    }

    /// `[` items `]` with `prefixItems`, `items`, `minItems` and `maxItems`.
    ///
    /// States count the items so far: `after[i]` follows the i-th item. Past the prefix and
    /// the minimum, an unbounded array loops on one state.
    mutating func arrayFragment(_ node: SchemaNode) throws(GrammarError) -> Fragment {
        let prefixCount = node.prefixItems.count
        let itemsForbidden = node.items.contains { $0.value == .bool(false) }
        var maximum = node.maximumItems
        if itemsForbidden { maximum = min(maximum ?? prefixCount, prefixCount) }
        let minimum = node.minimumItems
        if let maximum, maximum < minimum { return grammar.automaton.nothing() }
        let unrolled = max(prefixCount, minimum, maximum ?? 0)
        guard unrolled <= options.repetitionLimit else {
            throw .budgetExceeded(what: "array items to unroll at \(node.pointer)", limit: options.repetitionLimit)
        }
        let states = maximum ?? max(prefixCount, minimum, 1)
        var itemRules: [Int32] = []
        for index in 0 ..< min(prefixCount, states) { itemRules.append(try valueRule(node.prefixItems[index])) }
        let restRule = (maximum == nil || states > prefixCount) && !itemsForbidden ? try valueRule(node.items) : nil
        let open = grammar.automaton.sequence([punctuation("["), whitespace()])
        let close = grammar.automaton.sequence([punctuation("]")])
        var after: [Int32] = [open.end]
        func item(_ index: Int, _ rule: Int32) -> Fragment {
            var parts: [Fragment] = []
            if index > 0 { parts += [punctuation(","), whitespace()] }
            parts += [grammar.automaton.rule(rule), whitespace()]
            return grammar.automaton.sequence(parts)
        }
        for index in 0 ..< states {
            guard let rule = index < prefixCount ? itemRules[index] : restRule else { break }
            let piece = item(index, rule)
            grammar.automaton.addEdge(from: after[index], to: piece.start, label: nil)
            after.append(piece.end)
        }
        if maximum == nil, let restRule {
            // Loop: more items of the rest schema after the last unrolled state.
            let last = after.count - 1
            let piece = item(max(last, 1), restRule)
            grammar.automaton.addEdge(from: after[last], to: piece.start, label: nil)
            grammar.automaton.addEdge(from: piece.end, to: after[last], label: nil)
        }
        for count in minimum ..< after.count {
            grammar.automaton.addEdge(from: after[count], to: close.start, label: nil)
        }
        return Fragment(start: open.start, end: close.end)
    }

    /// `{` members `}`: declared properties in declaration order (required ones mandatory),
    /// then any number of other members allowed by `patternProperties` and
    /// `additionalProperties`, with `minProperties`/`maxProperties` counted in the states.
    ///
    /// Names are ordered by where the document declares them (`propertyOrder`), so `allOf`
    /// parts and `anyOf` alternatives keep their place. Required names with no declaration
    /// (`required` alone, or a dependency's trigger) have no place in the document: up to
    /// three of them may come in any order (a union over their orders), more follow the order
    /// in which `required` lists them.
    mutating func objectFragment(_ node: SchemaNode, style: ObjectStyle = .json) throws(GrammarError) -> Fragment {
        var names = node.properties.map(\.name)
        var known = Set(names)
        for name in node.required where known.insert(name).inserted { names.append(name) }
        let placed = names.filter { node.propertyOrder[$0] != nil }
        let unplaced = names.filter { node.propertyOrder[$0] == nil }
        let sorted = placed.enumerated().sorted { a, b in
            let x = node.propertyOrder[a.element]!, y = node.propertyOrder[b.element]!
            return x != y ? x.lexicographicallyPrecedes(y) : a.offset < b.offset
        }.map(\.element)
        let orders = unplaced.count > 1 && unplaced.count <= 3 ? Self.permutations(of: unplaced) : [unplaced]
        var pieces: [Fragment] = []
        for order in orders { pieces.append(try objectFragment(node, names: sorted + order, style: style)) }
        return pieces.count == 1 ? pieces[0] : grammar.automaton.union(pieces)
    }

    static func permutations(of names: [String]) -> [[String]] {
        guard names.count > 1 else { return [names] }
        return names.indices.flatMap { index in
            var rest = names
            let first = rest.remove(at: index)
            return permutations(of: rest).map { [first] + $0 }
        }
    }

    /// How an object's members are written.
    enum ObjectStyle {
        /// `{"name": value, …}`.
        case json
        /// `(name=value, …)`: the keyword arguments of a Python call. Only declared names
        /// (Python identifiers) can be written so; other members are not admitted.
        case keywordArguments
    }

    /// The object with its declared members written in the order of `names`.
    private mutating func objectFragment(_ node: SchemaNode, names: [String], style: ObjectStyle) throws(GrammarError) -> Fragment {
        // Names matched by a pattern also take the pattern's schema.
        var patternKeys: [(dfa: DFA, schemas: [Subschema])] = []
        for (pattern, schemas) in node.patternProperties {
            patternKeys.append((try keyLanguage(pattern: pattern, pointer: node.pointer + "/patternProperties"), schemas))
        }
        let nameFilter = try propertyNameLanguage(node)
        // Sets and a table, not scans: an object may declare a hundred thousand names.
        let required = Set(node.required), forbidden = Set(node.forbiddenProperties)
        let propertySchemas = node.declaredSchemas
        var declared: [(name: String, schemas: [Subschema], required: Bool)] = []
        for (position, name) in names.enumerated() {
            if position & 255 == 255 {
                try checkBudget("listing the properties at \(node.pointer)")
            }
            let literal = Lowering.jsonStringLiteral(name)
            let isRequired = required.contains(name)
            if forbidden.contains(name) {
                if isRequired { return grammar.automaton.nothing() }
                continue
            }
            if let nameFilter, !nameFilter.accepts(literal) {
                if isRequired { return grammar.automaton.nothing() }
                continue
            }
            var schemas: [Subschema] = propertySchemas[name] ?? []
            let matched = patternKeys.filter { $0.dfa.accepts(literal) }
            schemas += matched.flatMap(\.schemas)
            if propertySchemas[name] == nil, matched.isEmpty {
                schemas += node.additionalProperties ?? []
            }
            if schemas.contains(where: { $0.value == .bool(false) }) {
                if isRequired { return grammar.automaton.nothing() }
                continue
            }
            declared.append((name, schemas, isRequired))
        }
        // Other members: keys outside the declared names, grouped by the schema they get.
        var extraGroups: [(key: DFA, schemas: [Subschema])] = []
        let declaredNames = try literalsLanguage((names + node.forbiddenProperties).map { Lowering.jsonStringLiteral($0) })
        var claimed = declaredNames
        for (index, pattern) in patternKeys.enumerated() {
            var key = try budgeted { () throws(DFA.TooLarge) in try pattern.dfa.subtracting(claimed) }
            // Keys matching several patterns would need all their schemas: left out.
            for (otherIndex, other) in patternKeys.enumerated() where otherIndex != index {
                key = try budgeted { () throws(DFA.TooLarge) in try key.subtracting(other.dfa) }
            }
            if let nameFilter { key = try budgeted { () throws(DFA.TooLarge) in try key.intersection(nameFilter) } }
            if !key.isEmptyLanguage, !pattern.schemas.contains(where: { $0.value == .bool(false) }) { extraGroups.append((key, pattern.schemas)) }
        }
        for pattern in patternKeys { claimed = try budgeted { () throws(DFA.TooLarge) in try DFA.union(claimed, pattern.dfa) } }
        if node.admitsUndeclaredProperties(options) {
            let anyKey = try anyKeyLanguage()
            var key = try budgeted { () throws(DFA.TooLarge) in try anyKey.subtracting(claimed) }
            if let nameFilter { key = try budgeted { () throws(DFA.TooLarge) in try key.intersection(nameFilter) } }
            if !key.isEmptyLanguage { extraGroups.append((key, node.additionalProperties ?? [])) }
        }

        // A member outside some names and patterns may be required (`not` of
        // `additionalProperties: false`): members are "other" or not, the state remembers
        // whether one was written, and the object closes only after one.
        guard node.requiredOtherMembers.count <= 1 else {
            try report("not", node.pointer, "several negated 'additionalProperties: false' on one object are not supported")
            return try objectFragment({ var copy = node; copy.requiredOtherMembers = []; return copy }(), names: names, style: style)
        }
        var otherKeys: DFA?
        if let requirement = node.requiredOtherMembers.first {
            var inside = try literalsLanguage(requirement.names.map { Lowering.jsonStringLiteral($0) })
            for pattern in requirement.patterns {
                let matched = try keyLanguage(pattern: pattern, pointer: node.pointer + "/not/patternProperties")
                inside = try budgeted { () throws(DFA.TooLarge) in try DFA.union(inside, matched) }
            }
            let anyKey = try anyKeyLanguage()
            otherKeys = try budgeted { () throws(DFA.TooLarge) in try anyKey.subtracting(inside) }
        }
        let isOther = declared.map { otherKeys?.accepts(Lowering.jsonStringLiteral($0.name)) ?? false }
        var extraIsOther = [Bool](repeating: false, count: extraGroups.count)
        if let otherKeys {
            var split: [(key: DFA, schemas: [Subschema])] = []
            extraIsOther = []
            for group in extraGroups {
                let others = try budgeted { () throws(DFA.TooLarge) in try group.key.intersection(otherKeys) }
                let rest = try budgeted { () throws(DFA.TooLarge) in try group.key.subtracting(otherKeys) }
                for (part, other) in [(others, true), (rest, false)] where !part.isEmptyLanguage {
                    split.append((part, group.schemas))
                    extraIsOther.append(other)
                }
            }
            extraGroups = split
        }
        let requiresOther = otherKeys != nil
        if style == .keywordArguments {
            // Keyword arguments name declared parameters only.
            extraGroups = []
            extraIsOther = []
            if requiresOther { return grammar.automaton.nothing() }
        }

        let minimum = node.minimumProperties
        let maximum = node.maximumProperties
        if let maximum, maximum < minimum { return grammar.automaton.nothing() }
        let saturation = maximum ?? max(minimum, 1)
        guard saturation <= options.repetitionLimit else {
            throw .budgetExceeded(what: "property counts at \(node.pointer)", limit: options.repetitionLimit)
        }
        // State (next declared index, members so far, whether an "other" member was written).
        var states: [LengthKey: Int32] = [:]
        func state(_ index: Int, _ count: Int, _ other: Bool) -> Int32 {
            let key = LengthKey(state: Int32(index * 2 + (other ? 1 : 0)), count: count)
            if let known = states[key] { return known }
            let created = grammar.automaton.addState()
            states[key] = created
            return created
        }
        let open = style == .json ? grammar.automaton.sequence([punctuation("{"), whitespace()]) : punctuation("(")
        let close = punctuation(style == .json ? "}" : ")")
        grammar.automaton.addEdge(from: open.end, to: state(0, 0, false), label: nil)
        var valueRules: [Int32] = []
        for (position, member) in declared.enumerated() {
            if position & 255 == 255 {
                try checkBudget("compiling the properties at \(node.pointer)")
            }
            valueRules.append(try valueRule(member.schemas))
        }
        var extraMembers: [(key: DFA, rule: Int32)] = []
        for group in extraGroups { extraMembers.append((group.key, try valueRule(group.schemas))) }
        func member(key: (inout ByteNFA) -> Fragment, rule: Int32, first: Bool) -> Fragment {
            var parts: [Fragment] = []
            switch style {
            case .json:
                if !first { parts += [punctuation(","), whitespace()] }
                parts.append(key(&grammar.automaton))
                parts += [whitespace(), punctuation(":"), whitespace(), grammar.automaton.rule(rule), whitespace()]
            case .keywordArguments:
                if !first { parts += [punctuation(","), grammar.automaton.optional(punctuation(" "))] }
                parts += [key(&grammar.automaton), punctuation("="), grammar.automaton.rule(rule)]
            }
            return grammar.automaton.sequence(parts)
        }
        var work: [(Int, Int, Bool)] = [(0, 0, false)]
        var visited: Set<LengthKey> = []
        while let (index, count, other) = work.popLast() {
            guard visited.insert(LengthKey(state: Int32(index * 2 + (other ? 1 : 0)), count: count)).inserted else { continue }
            if visited.count & 255 == 0 {
                try checkBudget("joining the properties at \(node.pointer)")
            }
            let source = state(index, count, other)
            let nextCount = maximum == nil ? min(count + 1, saturation) : count + 1
            let canAdd = maximum.map { count < $0 } ?? true
            if index < declared.count {
                if canAdd {
                    let name = declared[index].name
                    let literal = style == .json ? Lowering.jsonStringLiteral(name) : Array(name.utf8)
                    let piece = member(key: { $0.literal(literal) }, rule: valueRules[index], first: count == 0)
                    let after = other || isOther[index]
                    grammar.automaton.addEdge(from: source, to: piece.start, label: nil)
                    grammar.automaton.addEdge(from: piece.end, to: state(index + 1, nextCount, after), label: nil)
                    work.append((index + 1, nextCount, after))
                }
                if !declared[index].required {
                    grammar.automaton.addEdge(from: source, to: state(index + 1, count, other), label: nil)
                    work.append((index + 1, count, other))
                }
            } else {
                if canAdd {
                    for (position, extra) in extraMembers.enumerated() {
                        let piece = member(key: { extra.key.embed(into: &$0) }, rule: extra.rule, first: count == 0)
                        let after = other || extraIsOther[position]
                        grammar.automaton.addEdge(from: source, to: piece.start, label: nil)
                        grammar.automaton.addEdge(from: piece.end, to: state(index, nextCount, after), label: nil)
                        work.append((index, nextCount, after))
                    }
                }
                if count >= minimum, other || !requiresOther { grammar.automaton.addEdge(from: source, to: close.start, label: nil) }
            }
        }
        return Fragment(start: open.start, end: close.end)
    }

    func budgeted<T>(_ body: () throws(DFA.TooLarge) -> T) throws(GrammarError) -> T {
        do { return try body() } catch { throw error.budgetError ?? .budgetExceeded(what: "automaton states", limit: 1 << 16) }
    }

    /// The quoted keys (canonical JSON strings) in `literals`.
    func literalsLanguage(_ literals: [[UInt8]]) throws(GrammarError) -> DFA {
        var automaton = ByteNFA()
        let pieces = literals.map { automaton.literal($0) }
        let union = pieces.isEmpty ? automaton.nothing() : automaton.union(pieces)
        return try budgeted { () throws(DFA.TooLarge) in try DFA(union, of: automaton) }
    }

    /// Every quoted key.
    mutating func anyKeyLanguage() throws(GrammarError) -> DFA {
        try quotedStringLanguage(SchemaNode(pointer: "#"), boundingLength: true)
    }

    /// Quoted keys matching `pattern` (search semantics).
    mutating func keyLanguage(pattern: String, pointer: String) throws(GrammarError) -> DFA {
        var node = SchemaNode(pointer: pointer)
        node.patterns = [(pattern, pointer + "/" + JSONPointer.escape(pattern))]
        return try quotedStringLanguage(node, boundingLength: true)
    }

    /// What `propertyNames` allows, as quoted keys; `nil` without `propertyNames`.
    mutating func propertyNameLanguage(_ node: SchemaNode) throws(GrammarError) -> DFA? {
        guard !node.propertyNames.isEmpty else { return nil }
        guard let names = try resolvedNode(Subschema.all(node.propertyNames), depth: 1) else { return .empty }
        if let values = names.values {
            var rest = names
            rest.values = nil
            var literals: [[UInt8]] = []
            for value in values {
                if case .string(let text) = value, try admits(value, rest, depth: 1) == true { literals.append(Lowering.jsonStringLiteral(text)) }
            }
            return try literalsLanguage(literals)
        }
        guard names.anyOf.isEmpty, names.oneOf.isEmpty else {
            try report("propertyNames", node.pointer, "combinators inside propertyNames are not supported")
            return nil
        }
        if let types = names.types, !types.contains(.string) { return .empty }
        return try quotedStringLanguage(names, boundingLength: true)
    }
}

extension DFA {
    /// Strings in either language (regular automata).
    static func union(_ a: DFA, _ b: DFA) throws(TooLarge) -> DFA {
        var automaton = ByteNFA()
        let first = a.embed(into: &automaton), second = b.embed(into: &automaton)
        return try DFA(automaton.union([first, second]), of: automaton)
    }
}
