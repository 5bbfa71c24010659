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
/// allow a prefix that cannot be finished. So uniqueness is enforced only for items whose
/// every unfinished prefix has endlessly many distinct completions: strings without `enum`
/// or `const` whose pattern and format leave them room to grow, and integers without bounds
/// or `multipleOf`; and plain strings with a `maxLength`, whose last completions the matcher
/// tries against the items written. Other items (objects, arrays, numbers, patterned bounded
/// strings, bounded integers, more than a few values) are refused with the reason, or
/// dropped under the lenient option.
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
    /// dropped) when the items are neither a few values nor ones the matcher can keep apart.
    mutating func distinctItems(_ node: SchemaNode, itemSchemas: [[Subschema]]) throws(GrammarError) -> DistinctItems {
        guard node.uniqueItems, itemSchemas.count >= 2, (node.maximumItems ?? 2) >= 2 else { return .notEnforced }
        var obstacle: String? = nil
        if !node.requiredItems.isEmpty {
            obstacle = "unique items together with 'contains' or a negated 'items' are not supported"
        } else if node.prefixItems.isEmpty, let values = try finiteValues(of: node.items) {
            guard values.count > Self.distinctValueLimit else { return .amongValues(values) }
            obstacle = "unique items are enforced for values drawn from at most \(Self.distinctValueLimit) (these have \(values.count))"
        } else {
            for schemas in itemSchemas {
                if let found = try distinctItemObstacle(schemas) { obstacle = found; break }
            }
        }
        guard let obstacle else { return .byMatcher }
        try report("uniqueItems", node.pointer, obstacle)
        return .notEnforced
    }

    /// The values items of `schemas` can take when they are few and known (`enum`, `const`,
    /// booleans and null), distinct as JSON values; `nil` otherwise, or when a value's
    /// verdict against the other keywords is not known here.
    private mutating func finiteValues(of schemas: [Subschema]) throws(GrammarError) -> [JSONValue]? {
        guard !schemas.isEmpty, let item = try resolvedNode(Subschema.all(schemas), depth: 1) else { return nil }
        var rest = item
        let candidates: [JSONValue]
        if let values = item.values {
            candidates = values
            rest.values = nil
        } else if let types = item.types, types.isSubset(of: [.boolean, .null]) {
            candidates = [.bool(true), .bool(false), .null]
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

    /// Why items of `schemas` cannot be kept distinct by the matcher; `nil` when they can.
    private mutating func distinctItemObstacle(_ schemas: [Subschema]) throws(GrammarError) -> String? {
        let scope = "unique items are enforced for strings and integers that can always grow"
        guard !schemas.isEmpty else { return "\(scope); these items may be any value" }
        guard let item = try resolvedNode(Subschema.all(schemas), depth: 1) else { return nil }  // no item at all
        guard item.values == nil else { return "\(scope); these items are an 'enum' or 'const'" }
        guard item.anyOf.isEmpty, item.oneOf.isEmpty, item.negations.isEmpty, item.conditionals.isEmpty else {
            return "\(scope); these items have 'anyOf', 'oneOf', 'not' or 'if'"
        }
        let types = item.types ?? Set(JSONType.allCases)
        let others = types.subtracting([.string, .integer])
        guard others.isEmpty else {
            let names = JSONType.allCases.filter(others.contains).map(\.rawValue).joined(separator: ", ")
            return "\(scope); these items may be of type \(names)"
        }
        if types.contains(.string) {
            guard item.maximumLength == nil || Self.hasOnlyLengthBounds(item) else {
                return "\(scope); these items have a 'maxLength' beside a pattern or format"
            }
            let language = try quotedStringLanguage(item, boundingLength: false)
            guard language.completionsAreEndlessWhereverItReads else {
                return "\(scope); the pattern or format of these items leaves some strings no room to grow"
            }
        }
        if types.contains(.integer) {
            guard item.minimum.isEmpty, item.exclusiveMinimum.isEmpty, item.maximum.isEmpty, item.exclusiveMaximum.isEmpty,
                  item.multipleOf.isEmpty, item.excludedMultiples.isEmpty, !item.excludedValues.contains(where: { if case .number = $0 { true } else { false } })
            else { return "\(scope); these integers are bounded, excluded or a 'multipleOf'" }
        }
        return nil
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

extension DFA {
    /// Whether every state with a byte edge has endlessly many completions, that is reaches
    /// a cycle (the automaton is trimmed, so every cycle leads to a final state): no prefix
    /// that can go on has only finitely many ways to.
    ///
    /// - Complexity: O(states × 256).
    var completionsAreEndlessWhereverItReads: Bool {
        // Peel off, from the end, the states whose every successor has finitely many
        // completions; those left reach a cycle.
        var successors = [Int](repeating: 0, count: stateCount)
        var predecessors = [[Int32]](repeating: [], count: stateCount)
        for state in 0 ..< stateCount {
            var targets = Set<Int32>()
            for byte in 0 ... 255 {
                let target = transitions[state << 8 | byte]
                if target >= 0 { targets.insert(target) }
            }
            for edge in ruleEdges[state] { targets.insert(edge.target) }
            successors[state] = targets.count
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
        return (0 ..< stateCount).allSatisfy { state in !finite[state] || outgoingBytes(Int32(state)).isEmpty }
    }
}
