// MARK: Unique items

/// `uniqueItems: true` over items drawn from a few known values (`enum`, `const`, booleans) is
/// enforced by the automaton, a state per subset of values written. Otherwise it is enforced
/// by the matcher: an array that must hold distinct items is a rule of its own
/// (`distinct-items`) whose frames carry the set of items written so far, and each item is a
/// call of a rule marked ``Grammar/Rule/isDistinctItem``.
/// When such a rule completes, the matcher reads the item's text, compares its value with
/// the earlier items' (strings by their characters, whatever the escapes) and pops into the
/// array only if it is new.
///
///     distinct-items ::= "[" ( item ( "," item )* )? "]"      frame count: the items written
///     item           ::= string                               frame count: where the item began
///
/// A matcher must never stand where every continuation repeats an item: masks would then
/// allow a prefix that cannot be finished. Where an item's completions are endlessly many
/// (an unbounded string or number), one of them is new; where they are finitely many (an
/// `enum` value, a bounded integer, `null`, the end of a string), the matcher looks for a
/// new one among them (`PushdownAutomaton.mayRunOutOfItems`). So the items must be strings,
/// numbers, booleans or null, whose values the grammar writes one way (strings up to their
/// escapes; numbers in their shortest spelling, `writesNumbersOnce`), or an `enum` of
/// strings, booleans and null. A plain string with a `maxLength` counts as endless below it
/// (a character more has 1,112,064 ways); a patterned one is refused. Items of finitely many
/// values must not leave an array stuck: they are refused at `prefixItems` positions, and
/// beside a `minItems` above 1 unless at least that many values are counted (an `enum`'s, a
/// bounded number's, a finite string language's spellings without escapes:
/// `DFA.stringCount(without:)`). Other items (objects, arrays, `anyOf`) are refused with the
/// reason, or dropped under the lenient option.
extension SchemaCompiler {
    /// How an array's `uniqueItems` is enforced.
    enum DistinctItems: Equatable {
        /// Not at all: the keyword is absent, or at most one item can be written (or, under
        /// the lenient option, the items cannot be kept apart).
        case notEnforced
        /// By the matcher, comparing each item with the earlier ones.
        case byMatcher
        /// By the automaton: items drawn from these few values, a state per subset written.
        case amongValues([JSONValue])
    }

    /// The most values items drawn from a finite set may have for the automaton to track
    /// which were written (a state for each subset).
    static let distinctValueLimit = 8

    /// How `node`'s `uniqueItems` is enforced on the items `itemSchemas` describe (those at
    /// the first positions, the prefix's and the first one past it); refused (or, lenient,
    /// dropped) when the matcher cannot keep them apart.
    mutating func distinctItems(_ node: SchemaNode, itemSchemas: [[Subschema]]) throws(GrammarError) -> DistinctItems {
        guard node.uniqueItems, itemSchemas.count >= 2, (node.maximumItems ?? 2) >= 2 else { return .notEnforced }
        var obstacle: String? = nil
        if !node.requiredItems.isEmpty {
            obstacle = "unique items together with 'contains' or a negated 'items' are not supported"
        } else if node.prefixItems.isEmpty, let values = try finiteValues(of: node.items) {
            // More values than the automaton tracks are the matcher's; beyond `minItems`, the
            // automaton's fragment is the array that cannot be.
            guard values.count > Self.distinctValueLimit, node.minimumItems <= values.count else { return .amongValues(values) }
            obstacle = try distinctItemObstacle(node.items, in: node, valueCount: values.count)
        } else {
            for schemas in itemSchemas {
                if let found = try distinctItemObstacle(schemas, in: node) { obstacle = found; break }
            }
        }
        guard let obstacle else { return .byMatcher }
        try report("uniqueItems", node.pointer, obstacle)
        return .notEnforced
    }

    /// The values items of `schemas` can take when they are few and known (`enum`, `const`,
    /// booleans, null, the string of `maxLength` 0), distinct as JSON values; `nil` otherwise,
    /// or when a value's verdict against the other keywords is not known here.
    private mutating func finiteValues(of schemas: [Subschema]) throws(GrammarError) -> [JSONValue]? {
        guard !schemas.isEmpty, let item = try resolvedNode(Subschema.all(schemas), depth: 1) else { return nil }
        var rest = item
        let candidates: [JSONValue]
        if let values = item.values {
            candidates = values
            rest.values = nil
        } else if let types = item.types, types.isSubset(of: [.boolean, .null, .string]), !types.contains(.string) || item.maximumLength == 0 {
            candidates = [.bool(true), .bool(false), .null, .string("")]  // the types' values, filtered below
        } else {
            return nil
        }
        var values: [JSONValue] = []
        for value in candidates where !values.contains(where: { $0.isEqualAsJSON(to: value) }) {
            guard let verdict = try admits(value, rest, depth: 1) else { return nil }
            if verdict { values.append(value) }
        }
        return values
    }

    /// `[` distinct items from `values` `]`, within `minItems` and `maxItems`: the state is
    /// the subset of values written (at most 2^``distinctValueLimit``), each item a call of
    /// its value's rule.
    mutating func distinctValuesFragment(_ node: SchemaNode, values: [JSONValue]) throws(GrammarError) -> Fragment {
        let minimum = node.minimumItems, maximum = min(node.maximumItems ?? values.count, values.count)
        guard minimum <= maximum else { return grammar.automaton.nothing() }
        var rules: [Int32] = []
        for value in values {
            rules.append(try valueRule([Subschema(value: .object([("const", value)]), pointer: node.pointer + "/items")]))
        }
        let open = grammar.automaton.sequence([punctuation("["), whitespace()])
        let close = grammar.automaton.sequence([punctuation("]")])
        var states: [Int: Int32] = [:]
        func state(_ written: Int) -> Int32 {
            if let known = states[written] { return known }
            let created = grammar.automaton.addState()
            states[written] = created
            return created
        }
        grammar.automaton.addEdge(from: open.end, to: state(0), label: nil)
        for written in 0 ..< 1 << values.count {
            let count = written.nonzeroBitCount
            guard count <= maximum else { continue }
            if count >= minimum { grammar.automaton.addEdge(from: state(written), to: close.start, label: nil) }
            guard count < maximum else { continue }
            for (index, rule) in rules.enumerated() where written & (1 << index) == 0 {
                var parts: [Fragment] = []
                if count > 0 { parts += [punctuation(","), whitespace()] }
                parts += [grammar.automaton.rule(rule), whitespace()]
                let piece = grammar.automaton.sequence(parts)
                grammar.automaton.addEdge(from: state(written), to: piece.start, label: nil)
                grammar.automaton.addEdge(from: piece.end, to: state(written | 1 << index), label: nil)
            }
        }
        return Fragment(start: open.start, end: close.end)
    }

    /// Why items of `schemas`, in the array `node`, cannot be kept distinct by the matcher;
    /// `nil` when they can. `valueCount`: how many values they have, when known.
    private mutating func distinctItemObstacle(_ schemas: [Subschema], in node: SchemaNode, valueCount: Int? = nil) throws(GrammarError) -> String? {
        let scope = "unique items are enforced for strings, numbers, booleans and null"
        guard !schemas.isEmpty else { return "\(scope); these items may be any value" }
        guard let item = try resolvedNode(Subschema.all(schemas), depth: 1) else { return nil }  // no item at all
        guard item.anyOf.isEmpty, item.oneOf.isEmpty, item.conditionals.isEmpty else {
            return "\(scope); these items have 'anyOf', 'oneOf' or 'if'"
        }
        if item.values == nil {  // values are checked by the census
            let types = item.types ?? Set(JSONType.allCases)
            let others = types.subtracting([.string, .number, .integer, .boolean, .null])
            guard others.isEmpty else {
                let names = JSONType.allCases.filter(others.contains).map(\.rawValue).joined(separator: ", ")
                return "\(scope); these items may be of type \(names)"
            }
        }
        let known: Int
        var budget = Self.censusNodeLimit
        switch try valueCensus(item, valueCount: valueCount, budget: &budget) {
        case .endless: return nil
        case .refused(let reason): return "\(scope); \(reason)"
        case .finite(let count): known = count
        }
        guard node.prefixItems.isEmpty else {
            return "\(scope); items of finitely many values are not enforced beside 'prefixItems'"
        }
        // With at least `minItems` values, an array of fewer always has a new one to write
        // (the matcher finds it, `mayRunOutOfItems`), however far it has come.
        guard node.minimumItems <= max(known, 1) else {
            let counted = known == 0 ? "these items' values are not counted" : "these items have \(known) known"
            return "\(scope); over items of finitely many values, 'minItems' \(node.minimumItems) needs as many distinct values known, and \(counted)"
        }
        return nil
    }

    /// How many nodes ``valueCensus(_:valueCount:budget:)`` may look at while it expands a
    /// `not` (each alternative a node, and each may hold negations to expand in turn); past
    /// it, the items are refused.
    static let censusNodeLimit = 256

    /// What ``valueCensus(_:valueCount:budget:)`` finds of an item's values.
    private enum ValueCensus {
        /// Endlessly many: the array never runs out.
        case endless
        /// Maybe finitely many, of which `known` distinct ones surely (0: not counted).
        case finite(known: Int)
        /// Values the matcher cannot keep apart, for this reason.
        case refused(String)
    }

    /// The values of `item` (strings, numbers, booleans, null, or an `enum` of `valueCount`
    /// values): whether they may be finitely many, which an array may run out of, and how
    /// many distinct ones they surely have. A `not` is expanded into its alternatives
    /// (finite when each is, counted as the largest), so the bounds it adds are seen.
    private mutating func valueCensus(_ item: SchemaNode, valueCount: Int?, budget: inout Int) throws(GrammarError) -> ValueCensus {
        let tooDeep = "these items' 'not' expands into more alternatives than are checked here (\(Self.censusNodeLimit))"
        if let values = item.values {
            // Literals are written as the schema spells them: a number may have two spellings.
            guard values.allSatisfy({ switch $0 { case .string, .bool, .null: true; default: false } }) else {
                return .refused("this 'enum' or 'const' has numbers, arrays or objects among its values")
            }
            return .finite(known: valueCount ?? 0)
        }
        budget -= 1
        let hasBranches = !item.negations.isEmpty || !item.conditionals.isEmpty || !item.dependencies.isEmpty
        if hasBranches, budget <= 0 { return .refused(tooDeep) }
        if let (rest, alternatives) = try splitConditionalAssertion(item, depth: 1) {
            // Alternatives of no type the item has (`not` of an object keyword) hold nothing.
            let merged = alternatives.map { rest.merged(with: $0) }.filter { $0.types?.isEmpty != true }
            guard merged.count <= budget else { return .refused(tooDeep) }
            var isEndless = false, known = 0
            for alternative in merged {
                switch try valueCensus(alternative, valueCount: nil, budget: &budget) {
                case .refused(let reason): return .refused(reason)
                case .endless: isEndless = true
                case .finite(let count): known = max(known, count)
                }
            }
            return isEndless ? .endless : .finite(known: known)
        }
        guard item.anyOf.isEmpty, item.oneOf.isEmpty else { return .refused("these items have 'anyOf' or 'oneOf'") }
        let types = item.types ?? Set(JSONType.allCases)
        var isEndless = false, known = 0
        if types.contains(.string) {
            // A bounded string's counter can leave few completions below its maximum unless
            // the string is plain; a plain one of `maxLength` 0 is `""` alone.
            if item.maximumLength != nil, !Self.hasOnlyLengthBounds(item) {
                return .refused("these items have a 'maxLength' beside a pattern, a format or an excluded string")
            }
            if item.maximumLength == 0 { return .refused("these items may be strings of 'maxLength' 0, whose one value the matcher does not track") }
            let language = try quotedStringLanguage(item, boundingLength: false)
            if !language.hasFiniteLanguage {
                isEndless = true
            } else if item.minimumLength == 0, item.maximumLength == nil {
                // The grammar writes each string one way, but the count does not rely on it:
                // spellings without an escape are surely values apart. Length bounds, which
                // the matcher counts, may remove some: not counted then.
                known.addSaturating(language.stringCount(without: ByteSet([UInt8(ascii: "\\")])) ?? 0)
            }
        }
        if types.contains(.number) || types.contains(.integer) {
            // The language the item's rule writes: numbers in their shortest spelling, one
            // per value (integers among them when both types are allowed).
            if let language = try? numberLanguage(item, integer: !types.contains(.number), writesEachValueOnce: true) {
                if language.hasFiniteLanguage { known.addSaturating(language.stringCount() ?? 0) } else { isEndless = true }
            }
        }
        if isEndless { return .endless }
        if types.contains(.boolean) { known += [JSONValue.bool(true), .bool(false)].count { !item.excludes($0) } }
        if types.contains(.null), !item.excludes(.null) { known += 1 }
        return .finite(known: known)
    }

    /// The rule of one item of a `uniqueItems` array: a call of `rule`, marked so the
    /// matcher compares what it wrote with the array's earlier items.
    mutating func distinctItemRule(calling rule: Int32) -> Int32 {
        if let known = distinctItemRules[rule] { return known }
        let item = grammar.declareRule(grammar.uniqueName("distinct-item"))
        grammar.define(item, as: grammar.automaton.rule(rule))
        grammar.rules[Int(item)].isDistinctItem = true
        distinctItemRules[rule] = item
        return item
    }
}

extension Int {
    /// Adds `other`, stopping at `Int.max`.
    fileprivate mutating func addSaturating(_ other: Int) {
        let (sum, overflow) = addingReportingOverflow(other)
        self = overflow ? .max : sum
    }
}

extension DFA {
    /// Whether the language is finite (the automaton is trimmed: no cycle at all).
    var hasFiniteLanguage: Bool { statesWithFinitelyManyCompletions { _ in false }.first ?? true }

    /// How many strings of the language hold none of the `excluded` bytes, up to `Int.max`;
    /// `nil` when they are endlessly many or the automaton calls rules.
    ///
    /// - Complexity: O(states × 256).
    func stringCount(without excluded: ByteSet = ByteSet()) -> Int? {
        guard !hasRuleEdges else { return nil }
        var edges = [[(target: Int, ways: Int)]](repeating: [], count: stateCount)
        for state in 0 ..< stateCount {
            forEachRun(of: state) { bytes, target in
                let ways = bytes.count { !excluded.contains(UInt8($0)) }
                if ways > 0 { edges[state].append((Int(target), ways)) }
            }
        }
        // Depth first from the start, each state's count once its successors' are known; a
        // state met again while on the path closes a cycle.
        var counts = [Int?](repeating: nil, count: stateCount)
        var isOnPath = [Bool](repeating: false, count: stateCount)
        var path: [(state: Int, edge: Int)] = [(0, 0)]
        isOnPath[0] = true
        while let (state, edge) = path.last {
            if edge < edges[state].count {
                path[path.count - 1].edge += 1
                let target = edges[state][edge].target
                if isOnPath[target] { return nil }
                if counts[target] == nil {
                    isOnPath[target] = true
                    path.append((target, 0))
                }
                continue
            }
            var count = isFinal[state] ? 1 : 0
            for (target, ways) in edges[state] {
                let (product, overflow) = ways.multipliedReportingOverflow(by: counts[target]!)
                count.addSaturating(overflow ? .max : product)
            }
            counts[state] = count
            isOnPath[state] = false
            path.removeLast()
        }
        return counts[0]
    }

    /// Per state, whether it has only finitely many completions: no cycle ahead of it, and
    /// every rule it can call ahead of it of a finite language (`hasFiniteLanguage(rule)`).
    ///
    /// - Complexity: O(states × 256).
    func statesWithFinitelyManyCompletions(hasFiniteLanguage: (Int32) -> Bool) -> [Bool] {
        // Peel off, from the end, the states whose every successor has finitely many
        // completions; those left reach a cycle or a rule of endless language.
        var successors = [Int](repeating: 0, count: stateCount)
        var predecessors = [[Int32]](repeating: [], count: stateCount)
        for state in 0 ..< stateCount {
            var targets = Set<Int32>()
            forEachRun(of: state) { _, target in targets.insert(target) }
            for edge in ruleEdges[state] {
                targets.insert(edge.target)
                if !hasFiniteLanguage(edge.rule) { successors[state] += 1 }  // never peeled
            }
            successors[state] += targets.count
            for target in targets { predecessors[Int(target)].append(Int32(state)) }
        }
        var finite = [Bool](repeating: false, count: stateCount)
        var work = (0 ..< stateCount).filter { successors[$0] == 0 }
        for state in work { finite[state] = true }
        while let state = work.popLast() {
            for predecessor in predecessors[state] {
                successors[Int(predecessor)] -= 1
                if successors[Int(predecessor)] == 0, !finite[Int(predecessor)] {
                    finite[Int(predecessor)] = true
                    work.append(Int(predecessor))
                }
            }
        }
        return finite
    }
}
