// MARK: Arrays and objects

extension SchemaCompiler {
    /// The rule of "all of these schemas" (any value when empty).
    mutating func valueRule(_ schemas: [Subschema]) throws(GrammarError) -> Int32 {
        schemas.isEmpty ? try anyValue() : try rule(for: Subschema.all(schemas))
    }

    /// The most items an array may be required to have (`contains`, complements of `items`),
    /// and members an object may be required to have: each doubles the states.
    static let requirementLimit = 4
    /// Sets of requirements met are below this (a bit each).
    static let requirementSpace = 1 << requirementLimit

    /// The most classes an object's undeclared names may fall into by the patterns they
    /// match (each a key automaton and a value rule).
    static let keyClassLimit = 256

    /// Every subset of the bits of `mask`, `mask` itself first and none last.
    static func subsets(of mask: Int) -> [Int] {
        var result: [Int] = []
        var subset = mask
        while true {
            result.append(subset)
            if subset == 0 { return result }
            subset = (subset - 1) & mask
        }
    }

    /// `[` items `]` with `prefixItems`, `items`, `minItems`, `maxItems` and required items.
    ///
    /// States count the items so far and remember which required items were seen: state
    /// (i, found) follows the i-th item. Past the prefix and the minimum, an unbounded array
    /// loops on one count. An item may be taken as one that is required (its rule then also
    /// has the requirement's schemas); the array closes only once every requirement is found.
    mutating func arrayFragment(_ node: SchemaNode) throws(GrammarError) -> Fragment {
        let prefixCount = node.prefixItems.count
        let itemsForbidden = node.items.contains { $0.value == .bool(false) }
        var maximum = node.maximumItems
        if itemsForbidden { maximum = min(maximum ?? prefixCount, prefixCount) }
        let minimum = node.minimumItems
        if let maximum, maximum < minimum { return grammar.automaton.nothing() }
        let requirements = node.requiredItems
        guard requirements.count <= Self.requirementLimit else {
            throw .budgetExceeded(what: "items required by 'contains' or a negated 'items' at \(node.pointer)", limit: Self.requirementLimit)
        }
        // Counts are unrolled as far as a requirement starts applying, so the loop meets them all.
        let latestStart = requirements.map(\.from).max() ?? 0
        let unrolled = max(prefixCount, minimum, maximum ?? 0, latestStart)
        guard unrolled <= options.repetitionLimit else {
            throw .budgetExceeded(what: "array items to unroll at \(node.pointer)", limit: options.repetitionLimit)
        }
        let everything = (1 << requirements.count) - 1
        let states = maximum ?? max(prefixCount, minimum, 1, latestStart)
        let loops = maximum == nil && !itemsForbidden
        // The schemas of the item after `index` items; nil where no item may come.
        func itemSchemas(_ index: Int) -> [Subschema]? {
            if index < prefixCount { return node.prefixItems[index] }
            return itemsForbidden || (maximum != nil && index >= states) ? nil : node.items
        }
        let distinctItems = try distinctItems(node, itemSchemas: (0 ..< max(prefixCount + 1, 2)).compactMap(itemSchemas))
        if case .amongValues(let values) = distinctItems { return try distinctValuesFragment(node, values: values) }
        let distinct = distinctItems == .byMatcher
        var itemRules: [Int: Int32] = [:]  // (position, or -1 past the prefix) × requirementSpace + requirements taken
        func itemRule(_ index: Int, _ taken: Int) throws(GrammarError) -> Int32? {
            guard var schemas = itemSchemas(index) else { return nil }
            let key = (index < prefixCount ? index : -1) * Self.requirementSpace + taken
            if let known = itemRules[key] { return known }
            for (bit, requirement) in requirements.enumerated() where taken & (1 << bit) != 0 { schemas += requirement.schemas }
            var rule: Int32
            if distinct {
                // One spelling per value, so the matcher's comparison of texts is one of values.
                let writesNumbersOnce = self.writesNumbersOnce
                self.writesNumbersOnce = true
                defer { self.writesNumbersOnce = writesNumbersOnce }
                rule = distinctItemRule(calling: try valueRule(schemas))
            } else {
                rule = try valueRule(schemas)
            }
            itemRules[key] = rule
            return rule
        }
        let open = grammar.automaton.sequence([punctuation("["), whitespace()])
        let close = grammar.automaton.sequence([punctuation("]")])
        var stateTable: [Int: Int32] = [:]
        func state(_ index: Int, _ found: Int) -> Int32 {
            let key = index * Self.requirementSpace + found
            if let known = stateTable[key] { return known }
            let created = grammar.automaton.addState()
            stateTable[key] = created
            return created
        }
        grammar.automaton.addEdge(from: open.end, to: state(0, 0), label: nil)
        var work = [(0, 0)]
        var visited: Set<Int> = []
        while let (index, found) = work.popLast() {
            guard visited.insert(index * Self.requirementSpace + found).inserted else { continue }
            let source = state(index, found)
            if index >= minimum, found == everything { grammar.automaton.addEdge(from: source, to: close.start, label: nil) }
            let next = index < states ? index + 1 : (loops ? index : nil)
            guard let next, itemSchemas(index) != nil else { continue }
            // Requirements this item may be the one for: applicable here and not found yet.
            var pending = 0
            for (bit, requirement) in requirements.enumerated() where requirement.from <= index && found & (1 << bit) == 0 { pending |= 1 << bit }
            for taken in Self.subsets(of: pending) {
                guard let rule = try itemRule(index, taken) else { continue }
                var parts: [Fragment] = []
                if index > 0 { parts += [punctuation(","), whitespace()] }
                parts += [grammar.automaton.rule(rule), whitespace()]
                let piece = grammar.automaton.sequence(parts)
                grammar.automaton.addEdge(from: source, to: piece.start, label: nil)
                grammar.automaton.addEdge(from: piece.end, to: state(next, found | taken), label: nil)
                work.append((next, found | taken))
            }
        }
        let array = Fragment(start: open.start, end: close.end)
        guard distinct else { return array }
        // A rule of its own, so each array's frame holds its own items written.
        let rule = grammar.declareRule(grammar.uniqueName("distinct-items"))
        grammar.define(rule, as: array)
        return grammar.automaton.rule(rule)
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
    ///
    /// With ``JSONSchemaOptions/PropertyOrder/any``, members come in any order instead: each
    /// a rule of its own (name, colon, value) called from states that remember which required
    /// names were written.
    mutating func objectFragment(_ node: SchemaNode, style: ObjectStyle = .json) throws(GrammarError) -> Fragment {
        var names = node.properties.map(\.name)
        var known = Set(names)
        for name in node.required where known.insert(name).inserted { names.append(name) }
        if options.propertyOrder == .any, style == .json { return try objectFragment(node, names: names, style: style) }
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
        // Each clause (one per object schema merged here) has its patterns; a member takes
        // the schemas of every pattern its name matches, in every clause.
        let clauses = node.memberClauses
        let clausePatterns = try patternKeys(of: clauses, at: node)
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
            let schemas = Self.memberSchemas(name, literal: literal, clauses: clauses, declared: propertySchemas, patternKeys: clausePatterns)
            if schemas.contains(where: { $0.value == .bool(false) }) {
                if isRequired { return grammar.automaton.nothing() }
                continue
            }
            declared.append((name, schemas, isRequired))
        }
        // Other members: keys outside the declared names, each class with its schemas.
        var extraGroups = try undeclaredKeyClasses(node, names: names, clauses: clauses, patternKeys: clausePatterns, nameFilter: nameFilter)

        // Members may be required (complements of `patternProperties` and
        // `additionalProperties`): the state remembers which were written, and the object
        // closes only after all of them. Each declared name and each group of other keys
        // knows which requirements its members may meet.
        let requirements = node.requiredMembers
        guard requirements.count <= Self.requirementLimit else {
            throw .budgetExceeded(what: "members required by negated 'patternProperties' or 'additionalProperties' at \(node.pointer)",
                                  limit: Self.requirementLimit)
        }
        let requirementKeys = try requiredMemberKeys(of: node)
        let declaredMeets: [Int] = declared.map { member in
            let literal = Lowering.jsonStringLiteral(member.name)
            return requirementKeys.indices.reduce(0) { $0 | (requirementKeys[$1].accepts(literal) ? 1 << $1 : 0) }
        }
        var extraMeets = [Int](repeating: 0, count: extraGroups.count)
        for (bit, keys) in requirementKeys.enumerated() {
            var split: [(key: DFA, schemas: [Subschema])] = []
            var meets: [Int] = []
            for (group, met) in zip(extraGroups, extraMeets) {
                let inside = try budgeted { () throws(DFA.TooLarge) in try group.key.intersection(keys) }
                let outside = try budgeted { () throws(DFA.TooLarge) in try group.key.subtracting(keys) }
                for (part, meetsThis) in [(inside, true), (outside, false)] where !part.isEmptyLanguage {
                    split.append((part, group.schemas))
                    meets.append(met | (meetsThis ? 1 << bit : 0))
                }
            }
            extraGroups = split
            extraMeets = meets
        }
        if style == .keywordArguments {
            // Keyword arguments name declared parameters only.
            extraGroups = []
            extraMeets = []
        }
        let everything = (1 << requirements.count) - 1
        // Requirements met by the key alone (any value), taken whenever the key is written.
        let keyOnly = requirements.indices.reduce(0) { $0 | (requirements[$1].schemas.isEmpty ? 1 << $1 : 0) }

        let minimum = node.minimumProperties
        let maximum = node.maximumProperties
        if let maximum, maximum < minimum { return grammar.automaton.nothing() }
        let saturation = maximum ?? max(minimum, 1)
        guard saturation <= options.repetitionLimit else {
            throw .budgetExceeded(what: "property counts at \(node.pointer)", limit: options.repetitionLimit)
        }
        // State (next declared index, members so far, the requirements met so far).
        var states: [LengthKey: Int32] = [:]
        func state(_ index: Int, _ count: Int, _ found: Int) -> Int32 {
            let key = LengthKey(state: Int32(index * Self.requirementSpace + found), count: count)
            if let known = states[key] { return known }
            let created = grammar.automaton.addState()
            states[key] = created
            return created
        }
        let open = style == .json ? grammar.automaton.sequence([punctuation("{"), whitespace()]) : punctuation("(")
        let close = punctuation(style == .json ? "}" : ")")
        grammar.automaton.addEdge(from: open.end, to: state(0, 0, 0), label: nil)
        var valueRules: [Int32] = []
        for (position, member) in declared.enumerated() {
            if position & 255 == 255 {
                try checkBudget("compiling the properties at \(node.pointer)")
            }
            valueRules.append(try valueRule(member.schemas))
        }
        // Other members' keys, one automaton per value rule: classes whose values are alike
        // (patterns with `{}` beside `additionalProperties: true`) are one class, so the
        // object's automaton does not tell apart keys it treats alike. With requirements to
        // meet, classes stay apart (each takes its own schemas with them).
        var extraMembers: [(key: DFA, rule: Int32)] = []
        var mergedGroups: [(key: DFA, schemas: [Subschema])] = []
        var mergedMeets: [Int] = []
        for (group, meets) in zip(extraGroups, extraMeets) {
            let rule = try valueRule(group.schemas)
            if requirements.isEmpty, let same = extraMembers.firstIndex(where: { $0.rule == rule }) {
                let key = try budgeted { () throws(DFA.TooLarge) in try DFA.union(extraMembers[same].key, group.key) }
                extraMembers[same].key = key
                mergedGroups[same].key = key
                continue
            }
            extraMembers.append((group.key, rule))
            mergedGroups.append(group)
            mergedMeets.append(meets)
        }
        extraGroups = mergedGroups
        extraMeets = mergedMeets
        // Each class's keys are a rule of their own, called where such a member may start:
        // the object's automaton holds the declared names, not a copy of every other key's
        // automaton per place one may stand.
        func extraKeyRule(_ position: Int) -> Int32 {
            let key = extraMembers[position].key
            if let known = keyRules[key] { return known }
            let rule = grammar.declareRule(grammar.uniqueName("key"))
            grammar.define(rule, asAutomaton: key)
            keyRules[key] = rule
            return rule
        }
        // The value rules of a member taking on requirements (`taken`, beyond the key-only ones).
        var requiredValueRules: [Int: Int32] = [:]  // (declared index, or -1 - extra index) × requirementSpace + taken
        func memberValueRule(declared index: Int?, extra: Int?, taking taken: Int) throws(GrammarError) -> Int32 {
            let plain = taken & ~keyOnly
            if plain == 0 { return index.map { valueRules[$0] } ?? extraMembers[extra!].rule }
            let key = (index ?? (-1 - extra!)) * Self.requirementSpace + plain
            if let known = requiredValueRules[key] { return known }
            var schemas = index.map { declared[$0].schemas } ?? extraGroups[extra!].schemas
            for (bit, requirement) in requirements.enumerated() where plain & (1 << bit) != 0 { schemas += requirement.schemas }
            let rule = try valueRule(schemas)
            requiredValueRules[key] = rule
            return rule
        }
        // The ways a member meeting `meets` may be read from `found`: the requirements it takes.
        func takings(_ meets: Int, _ found: Int) -> [Int] {
            Self.subsets(of: meets & ~found & ~keyOnly).map { $0 | (meets & keyOnly) }
        }
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
        // In any order, a member is a rule (name, colon, value) called from the object's
        // states, so the states multiply only the calls, not the names' bytes; the position
        // is then the set of required names written (a bit each), or past
        // `requiredPropertiesInAnyOrderLimit` of them, their number.
        let anyOrder = options.propertyOrder == .any && style == .json
        let requiredIndices = declared.indices.filter { declared[$0].required }
        let remembersRequired = requiredIndices.count <= JSONSchemaOptions.requiredPropertiesInAnyOrderLimit
        var requiredBits: [Int: Int] = [:]  // declared index → bit
        if anyOrder, remembersRequired {
            for index in requiredIndices { requiredBits[index] = 1 << requiredBits.count }
        }
        let allRequired = remembersRequired ? requiredBits.values.reduce(0, |) : requiredIndices.count
        // The position after writing declared member `member` from `position`; nil where it may not be written.
        func anyOrderPosition(after member: Int, from position: Int) -> Int? {
            guard declared[member].required else { return position }
            if !remembersRequired { return min(position + 1, allRequired) }
            let bit = requiredBits[member]!
            return position & bit == 0 ? position | bit : nil
        }
        var memberRules: [Int: Int32] = [:]  // (declared index, or -1 - extra index) × requirementSpace + taken
        func memberRule(declared index: Int?, extra: Int?, taking taken: Int) throws(GrammarError) -> Int32 {
            let key = (index ?? (-1 - extra!)) * Self.requirementSpace + (taken & ~keyOnly)
            if let known = memberRules[key] { return known }
            let value = try memberValueRule(declared: index, extra: extra, taking: taken)
            let rule = grammar.declareRule(grammar.uniqueName("member"))
            let name: Fragment
            if let index {
                name = grammar.automaton.literal(Lowering.jsonStringLiteral(declared[index].name))
            } else {
                name = grammar.automaton.rule(extraKeyRule(extra!))
            }
            grammar.define(rule, as: grammar.automaton.sequence([name, whitespace(), punctuation(":"), whitespace(),
                                                                 grammar.automaton.rule(value), whitespace()]))
            memberRules[key] = rule
            return rule
        }
        // Where the members from `source` start: `source` itself before the first member,
        // else past one comma shared by all of them (a comma per member would put every
        // member's copy of it in each subset the determinization builds).
        func membersStart(_ source: Int32, first: Bool) -> Int32 {
            guard !first else { return source }
            let separator = grammar.automaton.sequence([punctuation(","), whitespace()])
            grammar.automaton.addEdge(from: source, to: separator.start, label: nil)
            return separator.end
        }

        var work: [(Int, Int, Int)] = [(0, 0, 0)]
        var visited: Set<LengthKey> = []
        while let (index, count, found) = work.popLast() {
            guard visited.insert(LengthKey(state: Int32(index * Self.requirementSpace + found), count: count)).inserted else { continue }
            if visited.count & 255 == 0 {
                try checkBudget("joining the properties at \(node.pointer)")
            }
            let source = state(index, count, found)
            let nextCount = maximum == nil ? min(count + 1, saturation) : count + 1
            let canAdd = maximum.map { count < $0 } ?? true
            if anyOrder {
                // `index`: the required names written so far (or their number).
                if canAdd {
                    let start = membersStart(source, first: count == 0)
                    for member in declared.indices {
                        guard let after = anyOrderPosition(after: member, from: index) else { continue }
                        for taken in takings(declaredMeets[member], found) {
                            let piece = grammar.automaton.rule(try memberRule(declared: member, extra: nil, taking: taken))
                            grammar.automaton.addEdge(from: start, to: piece.start, label: nil)
                            grammar.automaton.addEdge(from: piece.end, to: state(after, nextCount, found | taken), label: nil)
                            work.append((after, nextCount, found | taken))
                        }
                    }
                    for position in extraMembers.indices {
                        for taken in takings(extraMeets[position], found) {
                            let piece = grammar.automaton.rule(try memberRule(declared: nil, extra: position, taking: taken))
                            grammar.automaton.addEdge(from: start, to: piece.start, label: nil)
                            grammar.automaton.addEdge(from: piece.end, to: state(index, nextCount, found | taken), label: nil)
                            work.append((index, nextCount, found | taken))
                        }
                    }
                }
                if count >= minimum, found == everything, index == allRequired {
                    grammar.automaton.addEdge(from: source, to: close.start, label: nil)
                }
            } else if index < declared.count {
                if canAdd {
                    let name = declared[index].name
                    let literal = style == .json ? Lowering.jsonStringLiteral(name) : Array(name.utf8)
                    for taken in takings(declaredMeets[index], found) {
                        let rule = try memberValueRule(declared: index, extra: nil, taking: taken)
                        let piece = member(key: { $0.literal(literal) }, rule: rule, first: count == 0)
                        grammar.automaton.addEdge(from: source, to: piece.start, label: nil)
                        grammar.automaton.addEdge(from: piece.end, to: state(index + 1, nextCount, found | taken), label: nil)
                        work.append((index + 1, nextCount, found | taken))
                    }
                }
                if !declared[index].required {
                    grammar.automaton.addEdge(from: source, to: state(index + 1, count, found), label: nil)
                    work.append((index + 1, count, found))
                }
            } else {
                if canAdd {
                    for position in extraMembers.indices {
                        for taken in takings(extraMeets[position], found) {
                            let rule = try memberValueRule(declared: nil, extra: position, taking: taken)
                            let keyRule = extraKeyRule(position)
                            let piece = member(key: { $0.rule(keyRule) }, rule: rule, first: count == 0)
                            grammar.automaton.addEdge(from: source, to: piece.start, label: nil)
                            grammar.automaton.addEdge(from: piece.end, to: state(index, nextCount, found | taken), label: nil)
                            work.append((index, nextCount, found | taken))
                        }
                    }
                }
                if count >= minimum, found == everything { grammar.automaton.addEdge(from: source, to: close.start, label: nil) }
            }
        }
        return Fragment(start: open.start, end: close.end)
    }

    /// The keys outside `names` (and the forbidden ones) that an object may have, in classes
    /// by the patterns they match in each clause, each class with the schemas its members
    /// take: refined pattern by pattern, empty classes dropped, and keys a clause forbids (no
    /// pattern of it matches, and it admits no other members) left out.
    private mutating func undeclaredKeyClasses(
        _ node: SchemaNode, names: [String], clauses: [MemberClause],
        patternKeys clausePatterns: [[(dfa: DFA, schemas: [Subschema])]], nameFilter: DFA?
    ) throws(GrammarError) -> [(key: DFA, schemas: [Subschema])] {
        let admitsUnmatched = clauses.map { $0.admitsUnmatched(options) }
        guard clausePatterns.contains(where: { !$0.isEmpty }) || admitsUnmatched.allSatisfy({ $0 }) else { return [] }
        var root = try keys(otherThan: names + node.forbiddenProperties)
        if let nameFilter { root = try budgeted { () throws(DFA.TooLarge) in try root.intersection(nameFilter) } }
        var classes: [(key: DFA, schemas: [Subschema])] = root.isEmptyLanguage ? [] : [(root, [])]
        for (clauseIndex, clause) in clauses.enumerated() {
            let patterns = clausePatterns[clauseIndex]
            var next: [(key: DFA, schemas: [Subschema])] = []
            for keyClass in classes {
                var parts: [(key: DFA, schemas: [Subschema], matched: Bool)] = [(keyClass.key, keyClass.schemas, false)]
                for (patternIndex, pattern) in patterns.enumerated() {
                    let isLast = patternIndex == patterns.count - 1
                    var split: [(key: DFA, schemas: [Subschema], matched: Bool)] = []
                    for part in parts {
                        let inside = try budgeted { () throws(DFA.TooLarge) in try part.key.intersection(pattern.dfa) }
                        if !inside.isEmptyLanguage { split.append((inside, part.schemas + pattern.schemas, true)) }
                        // Keys that match none of the clause's patterns and that it forbids need no class.
                        guard part.matched || !isLast || admitsUnmatched[clauseIndex] else { continue }
                        let outside = try budgeted { () throws(DFA.TooLarge) in try part.key.subtracting(pattern.dfa) }
                        if !outside.isEmptyLanguage { split.append((outside, part.schemas, part.matched)) }
                    }
                    parts = split
                    guard parts.count + next.count <= Self.keyClassLimit else {
                        throw .budgetExceeded(what: "classes of property names by pattern at \(node.pointer)", limit: Self.keyClassLimit)
                    }
                }
                for part in parts {
                    if part.matched {
                        next.append((part.key, part.schemas))
                    } else if admitsUnmatched[clauseIndex] {
                        next.append((part.key, part.schemas + (clause.additional ?? [])))
                    }
                }
            }
            classes = next
        }
        return classes.filter { !$0.schemas.contains(where: { $0.value == .bool(false) }) }
    }

    /// Per member clause (of ``SchemaNode/memberClauses``), its patterns' keys (quoted) with
    /// their schemas. Where keys no pattern matches take any value, a pattern whose keys take
    /// any value too changes nothing and is left out (`"^.{1,255}$": {}` without
    /// `additionalProperties` would otherwise split every key by its length).
    mutating func patternKeys(of clauses: [MemberClause], at node: SchemaNode) throws(GrammarError) -> [[(dfa: DFA, schemas: [Subschema])]] {
        var result: [[(dfa: DFA, schemas: [Subschema])]] = []
        for clause in clauses {
            let unmatchedTakeAnything = clause.admitsUnmatched(options) && (clause.additional ?? []).allSatisfy(\.isTrue)
            var compiled: [(dfa: DFA, schemas: [Subschema])] = []
            for (pattern, schemas) in clause.patterns where !(unmatchedTakeAnything && schemas.allSatisfy(\.isTrue)) {
                compiled.append((try keyLanguage(pattern: pattern, pointer: node.pointer + "/patternProperties"), schemas))
            }
            result.append(compiled)
        }
        return result
    }

    /// What a member named `name` (quoted: `literal`) takes: its declared schemas
    /// and, in each clause, those of the patterns it matches, or the clause's
    /// `additionalProperties` when the clause neither declares nor matches it.
    static func memberSchemas(_ name: String, literal: [UInt8], clauses: [MemberClause], declared: [String: [Subschema]],
                              patternKeys: [[(dfa: DFA, schemas: [Subschema])]]) -> [Subschema] {
        var schemas = declared[name] ?? []
        for (clause, patterns) in zip(clauses, patternKeys) {
            let matched = patterns.filter { $0.dfa.accepts(literal) }
            schemas += matched.flatMap(\.schemas)
            if !clause.names.contains(name), matched.isEmpty { schemas += clause.additional ?? [] }
        }
        return schemas
    }

    /// Per required member of `node`, the quoted keys that may meet it.
    mutating func requiredMemberKeys(of node: SchemaNode) throws(GrammarError) -> [DFA] {
        var result: [DFA] = []
        for requirement in node.requiredMembers {
            switch requirement.names {
            case .matching(let pattern):
                result.append(try keyLanguage(pattern: pattern, pointer: node.pointer + "/not/patternProperties"))
            case .outside(let names, let patterns):
                var inside = try literalsLanguage(names.map { Lowering.jsonStringLiteral($0) })
                for pattern in patterns {
                    let matched = try keyLanguage(pattern: pattern, pointer: node.pointer + "/not/patternProperties")
                    inside = try budgeted { () throws(DFA.TooLarge) in try DFA.union(inside, matched) }
                }
                let anyKey = try anyKeyLanguage()
                result.append(try budgeted { () throws(DFA.TooLarge) in try anyKey.subtracting(inside) })
            }
        }
        return result
    }

    func budgeted<T>(_ body: () throws(DFA.TooLarge) -> T) throws(GrammarError) -> T {
        do { return try body() } catch { throw error.budgetError ?? .budgetExceeded(what: "automaton states", limit: 1 << 16) }
    }

    /// The quoted keys (canonical JSON strings) in `literals`.
    func literalsLanguage(_ literals: [[UInt8]]) throws(GrammarError) -> DFA {
        try budgeted { () throws(DFA.TooLarge) in try DFA(literals: literals) }
    }

    /// Every quoted key but `names`, minimal: the names' trie is subtracted from the key
    /// language directly (``DFA/subtracting(literals:stateLimit:)``), and a key rule takes
    /// the automaton as it is.
    mutating func keys(otherThan names: [String]) throws(GrammarError) -> DFA {
        let names = Array(Set(names)).sorted()
        if let known = keysOtherThan[names] { return known }
        let anyKey = try anyKeyLanguage()
        let keys = try budgeted { () throws(DFA.TooLarge) in try anyKey.subtracting(literals: names.map { Lowering.jsonStringLiteral($0) }) }
        keysOtherThan[names] = keys
        return keys
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

/// A state of a counted construction paired with its count (members or items written so far).
struct LengthKey: Hashable {
    var state: Int32
    var count: Int
}
