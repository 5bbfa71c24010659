// MARK: The automaton as a picture

extension CompiledGrammar {
    /// The pushdown automaton in Graphviz's DOT language, for `dot -Tsvg`:
    ///
    ///     ┌ rule "root" ────────────────────────────┐
    ///     │ (0) ──'{'──▶ (1) ┄┄string┄┄▶ (2) ──'}'──▶ ((3))
    ///     └──────────────────────────────────────────┘
    ///
    /// - one cluster per rule reachable from the root, one node per state, final states
    ///   doubly circled;
    /// - byte edges labelled with their byte class (`'{'`, `[0-9]`, `[\x00-\x1F]`), one edge
    ///   per pair of states;
    /// - rule calls as dashed edges to the state the call returns to, labelled with the callee;
    /// - per state where a matcher can stand, its mask's accepted, rejected and undecided
    ///   token counts (`✓ 8,131  ✗ 140,102  ? 3`); states without a mask (or whose mask is
    ///   not computed yet) show none;
    /// - a rule that counts its strings' characters has `length min…max` in its label, and
    ///   its states show the masks at count 0 (its other counts' masks differ only near the
    ///   bounds).
    ///
    /// - Complexity: O(states × 256) for the edges.
    public var graphviz: String {
        var lines = [
            "digraph grammar {",
            "  rankdir=LR;",
            "  node [shape=circle, fontname=\"Helvetica\", fontsize=10];",
            "  edge [fontname=\"Helvetica\", fontsize=9];",
            "  start [shape=point];",
            "  start -> r\(automaton.root)s0;",
        ]
        var counts: [Int: [Int: PositionMask]] = [:]
        for position in masks.known() where (position.count ?? 0) == 0 {
            counts[position.rule, default: [:]][position.state] = position.mask
        }
        for (index, dfa) in automaton.rules.enumerated() where automaton.reachable[index] {
            lines.append("  subgraph cluster_r\(index) {")
            var title = automaton.names[index]
            if let counter = automaton.counters[index] {
                title += "  (length \(counter.minimum)…" + (counter.maximum.map { "\($0)" } ?? "") + ")"
            }
            lines.append("    label=\(Self.quoted(title)); style=rounded; color=gray60;")
            for state in 0 ..< dfa.stateCount {
                var label = "\(state)"
                if let mask = counts[index]?[state] {
                    label += "\n✓ \(Self.grouped(mask.acceptedCount))  ✗ \(Self.grouped(mask.rejectedCount))  ? \(Self.grouped(mask.undecided.count))"
                }
                let shape = dfa.isFinal[state] ? ", shape=doublecircle" : ""
                lines.append("    r\(index)s\(state) [label=\(Self.quoted(label))\(shape)];")
            }
            lines.append("  }")
            for state in 0 ..< dfa.stateCount {
                // Byte edges, one per target, with the bytes that lead there.
                var classes: [Int32: ByteSet] = [:]
                var order: [Int32] = []
                for byte in 0 ..< 256 {
                    let target = dfa.next(Int32(state), UInt8(byte))
                    guard target >= 0 else { continue }
                    if classes[target] == nil { order.append(target) }
                    classes[target, default: ByteSet()].insert(UInt8(byte))
                }
                for target in order {
                    lines.append("  r\(index)s\(state) -> r\(index)s\(target) [label=\(Self.quoted(classes[target]!.description))];")
                }
                for edge in dfa.ruleEdges[state] {
                    lines.append("  r\(index)s\(state) -> r\(index)s\(edge.target) "
                                 + "[label=\(Self.quoted(automaton.names[Int(edge.rule)])), style=dashed, color=blue, fontcolor=blue];")
                }
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` as a DOT string literal.
    private static func quoted(_ text: String) -> String {
        var result = "\""
        for character in text {
            switch character {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            default: result.append(character)
            }
        }
        return result + "\""
    }

    /// `value` with thousands separated by commas.
    private static func grouped(_ value: Int) -> String {
        let digits = String(value)
        var result = ""
        for (offset, digit) in digits.enumerated() {
            if offset > 0, (digits.count - offset) % 3 == 0 { result += "," }
            result.append(digit)
        }
        return result
    }
}
