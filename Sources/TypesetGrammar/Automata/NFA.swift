/// A nondeterministic automaton under construction, with edges labelled by `Label` or by
/// nothing (an ε-move). Every regular sub-language of a grammar is built as a `Fragment` of
/// one of these: character classes over `CodePointSet`, then bytes and rule references
/// over `ByteLabel`.
///
/// Fragments follow Thompson's construction: one entry state, one exit state, and the exit
/// has no outgoing edge until the fragment is joined to something else. Combinators take
/// fragments of the same automaton and return a new fragment that owns them.
struct NFA<Label: Hashable>: Sendable where Label: Sendable {
    struct Edge: Hashable, Sendable {
        /// `nil` for an ε-move.
        var label: Label?
        var target: Int32
    }

    /// Every edge in one array, each with the index of the next edge of its state (-1 after
    /// the last): a state's edges are a list through it, in the order they were added. (An
    /// array per state cost an allocation per state and a reference count per visit.) An
    /// edge holds its label's index in `labels` (-1 for an ε-move): an ε-move takes twelve
    /// bytes, where a label in every edge took forty-eight. (Labels are not interned: hashing
    /// each byte set cost more than the memory saved.)
    ///
    ///     firstEdge[s] ──▶ edgeList[i] ──next──▶ edgeList[j] ──next──▶ -1
    ///     lastEdge[s]  ─────────────────────────────▲
    private var edgeList: [(label: Int32, target: Int32, next: Int32)] = []
    /// Each state's first and last edge in `edgeList`, -1 when it has none.
    private var firstEdge: [Int32] = []
    private var lastEdge: [Int32] = []
    /// The labels of the edges that have one, in the order they were added.
    private(set) var labels: [Label] = []

    var stateCount: Int { firstEdge.count }
    var edgeCount: Int { edgeList.count }

    mutating func addState() -> Int32 {
        firstEdge.append(-1)
        lastEdge.append(-1)
        return Int32(firstEdge.count - 1)
    }

    mutating func addEdge(from source: Int32, to target: Int32, label: Label?) {
        var labelIndex: Int32 = -1
        if let label {
            labelIndex = Int32(labels.count)
            labels.append(label)
        }
        let index = Int32(edgeList.count)
        edgeList.append((labelIndex, target, -1))
        let last = lastEdge[Int(source)]
        if last < 0 { firstEdge[Int(source)] = index } else { edgeList[Int(last)].next = index }
        lastEdge[Int(source)] = index
    }

    /// The edge `stored` in `edgeList` stands for, its label read from `labels`.
    fileprivate static func edge(_ stored: (label: Int32, target: Int32, next: Int32), labels: [Label]) -> Edge {
        Edge(label: stored.label < 0 ? nil : labels[Int(stored.label)], target: stored.target)
    }

    /// `state`'s edges in the order they were added.
    func edges(of state: Int32) -> Edges { Edges(list: edgeList, labels: labels, cursor: firstEdge[Int(state)]) }

    /// Calls `body` with the label index (-1 for an ε-move) and target of each of `state`'s
    /// edges, in order.
    @inline(__always)
    func forEachIndexedEdge(of state: Int32, _ body: (_ label: Int32, _ target: Int32) -> Void) {
        var cursor = firstEdge[Int(state)]
        while cursor >= 0 {
            let edge = edgeList[Int(cursor)]
            body(edge.label, edge.target)
            cursor = edge.next
        }
    }

    /// The edges of one state. It holds the automaton's edge array: adding edges while one
    /// is alive copies the array (``forEachEdge(of:_:)`` does not hold it).
    struct Edges: Sequence, IteratorProtocol {
        fileprivate let list: [(label: Int32, target: Int32, next: Int32)]
        fileprivate let labels: [Label]
        fileprivate var cursor: Int32

        mutating func next() -> Edge? {
            guard cursor >= 0 else { return nil }
            let stored = list[Int(cursor)]
            cursor = stored.next
            return NFA.edge(stored, labels: labels)
        }
    }

    /// Calls `body` with each of `state`'s edges in order, reading them one at a time, so
    /// `body` may add states and edges.
    private mutating func forEachEdge(of state: Int32, _ body: (inout NFA, Edge) -> Void) {
        var cursor = firstEdge[Int(state)]
        while cursor >= 0 {
            body(&self, Self.edge(edgeList[Int(cursor)], labels: labels))
            cursor = edgeList[Int(cursor)].next  // read after `body`, which may add edges here
        }
    }

    // MARK: Combinators

    /// Matches the empty string.
    mutating func empty() -> Fragment {
        let state = addState()
        return Fragment(start: state, end: state)
    }

    /// Matches nothing at all (no path from entry to exit).
    mutating func nothing() -> Fragment {
        Fragment(start: addState(), end: addState())
    }

    /// One symbol labelled `label`.
    mutating func symbol(_ label: Label) -> Fragment {
        let start = addState(), end = addState()
        addEdge(from: start, to: end, label: label)
        return Fragment(start: start, end: end)
    }

    /// The fragments one after another.
    mutating func sequence(_ parts: [Fragment]) -> Fragment {
        guard var result = parts.first else { return empty() }
        for part in parts.dropFirst() {
            addEdge(from: result.end, to: part.start, label: nil)
            result.end = part.end
        }
        return result
    }

    /// Any one of the fragments (nothing when `parts` is empty).
    mutating func union(_ parts: [Fragment]) -> Fragment {
        if parts.count == 1 { return parts[0] }
        let start = addState(), end = addState()
        for part in parts {
            addEdge(from: start, to: part.start, label: nil)
            addEdge(from: part.end, to: end, label: nil)
        }
        return Fragment(start: start, end: end)
    }

    mutating func optional(_ part: Fragment) -> Fragment {
        union([part, empty()])
    }

    /// Zero or more repetitions.
    mutating func star(_ part: Fragment) -> Fragment {
        let hub = addState()
        addEdge(from: hub, to: part.start, label: nil)
        addEdge(from: part.end, to: hub, label: nil)
        return Fragment(start: hub, end: hub)
    }

    /// One or more repetitions.
    mutating func plus(_ part: Fragment) -> Fragment {
        let copy = duplicate(part)
        return sequence([part, star(copy)])
    }

    /// Between `minimum` and `maximum` repetitions (`nil`: unbounded). Builds copies of
    /// `part`, so the size grows with the bounds; callers check their budget first.
    mutating func repeating(_ part: Fragment, minimum: Int, maximum: Int?) -> Fragment {
        precondition(minimum >= 0 && (maximum ?? minimum) >= minimum, "bad repetition bounds")
        if maximum == 0 { return empty() }
        var pieces: [Fragment] = []
        var copies = [part]
        let needed = max(minimum, maximum ?? minimum) + (maximum == nil ? 1 : 0)
        while copies.count < needed { copies.append(duplicate(part)) }
        for index in 0 ..< minimum { pieces.append(copies[index]) }
        if let maximum {
            // Nested optionals: (x (x (x)?)?)? keeps the automaton small and unambiguous.
            var tail: Fragment? = nil
            for index in stride(from: maximum - 1, through: minimum, by: -1) {
                let item = copies[index]
                tail = optional(tail.map { sequence([item, $0]) } ?? item)
            }
            if let tail { pieces.append(tail) }
        } else {
            pieces.append(star(copies[minimum]))
        }
        return sequence(pieces)
    }

    /// A fresh copy of `part`'s states (everything reachable from its entry).
    mutating func duplicate(_ part: Fragment) -> Fragment {
        var mapping: [Int32: Int32] = [:]
        var order: [Int32] = [part.start]
        mapping[part.start] = addState()
        var index = 0
        while index < order.count {
            let state = order[index]
            index += 1
            forEachEdge(of: state) { automaton, edge in
                guard mapping[edge.target] == nil else { return }
                mapping[edge.target] = automaton.addState()
                order.append(edge.target)
            }
        }
        for state in order {
            forEachEdge(of: state) { automaton, edge in
                automaton.addEdge(from: mapping[state]!, to: mapping[edge.target]!, label: edge.label)
            }
        }
        if mapping[part.end] == nil { mapping[part.end] = addState() }
        return Fragment(start: mapping[part.start]!, end: mapping[part.end]!)
    }

    /// Copies `part` of `other` into this automaton, relabelling its edges with `convert`
    /// (which may expand one label into a fragment of this automaton).
    mutating func embed<Other>(_ part: Fragment, of other: NFA<Other>, convert: (inout NFA<Label>, Other) -> Fragment) -> Fragment {
        var mapping: [Int32: Int32] = [part.start: addState()]
        var order: [Int32] = [part.start]
        var index = 0
        while index < order.count {
            let state = order[index]
            index += 1
            for edge in other.edges(of: state) where mapping[edge.target] == nil {
                mapping[edge.target] = addState()
                order.append(edge.target)
            }
        }
        for state in order {
            for edge in other.edges(of: state) {
                let source = mapping[state]!, target = mapping[edge.target]!
                if let label = edge.label {
                    let piece = convert(&self, label)
                    addEdge(from: source, to: piece.start, label: nil)
                    addEdge(from: piece.end, to: target, label: nil)
                } else {
                    addEdge(from: source, to: target, label: nil)
                }
            }
        }
        if mapping[part.end] == nil { mapping[part.end] = addState() }
        return Fragment(start: mapping[part.start]!, end: mapping[part.end]!)
    }

}

/// One entry and one exit state of a `NFA`.
struct Fragment: Hashable, Sendable {
    var start: Int32
    var end: Int32
}

/// The label of a byte-level grammar edge: a set of bytes, or a reference to a rule.
enum ByteLabel: Hashable, Sendable {
    case bytes(ByteSet)
    case rule(Int32)
}

typealias ByteNFA = NFA<ByteLabel>
typealias CharacterNFA = NFA<CodePointSet>

extension NFA where Label == ByteLabel {
    /// The bytes in order, as a chain of one state per byte and one more: no ε-moves, so a
    /// subset construction reads one state per byte (a key spelled through `sequence` of
    /// symbols had two states and an ε-move per byte).
    mutating func literal(_ bytes: some Sequence<UInt8>) -> Fragment {
        let start = addState()
        var end = start
        for byte in bytes {
            let next = addState()
            addEdge(from: end, to: next, label: .bytes(ByteSet(byte ... byte)))
            end = next
        }
        return Fragment(start: start, end: end)
    }

    mutating func bytes(_ set: ByteSet) -> Fragment { symbol(.bytes(set)) }

    mutating func rule(_ index: Int32) -> Fragment { symbol(.rule(index)) }
}
