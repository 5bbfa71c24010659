/// The part of an `NFA` reachable from a fragment's entry, renumbered from 0 in the source
/// automaton's order, with every state's edges end to end in one array.
///
/// Subset constructions read a state's edges once per subset holding it, and ε-closures
/// once per closure reaching it; here they are a range of `labels` and `targets`, with no
/// list to follow. Numbering only the reachable part sizes per-state marks by the
/// fragment, not by the whole automaton. A grammar's rules, which share one automaton, read
/// it whole instead (``init(everythingIn:)``): once for all rules, rather than a pass over
/// the whole automaton per rule. Labels stay in the source automaton's array, each edge
/// holding an index into it (ε-closures read four bytes per edge, not forty).
///
///     state:        0       1     2
///     offsets:      0       2     3     4
///     labelIndices: [ε, 0]  [1]   [ε]        labels: ['a', 'b']
///     targets:      [1, 2]  [2]   [0]
struct ReachableNFA<Label: Hashable & Sendable> {
    /// The edges of `state` are `offsets[state] ..< offsets[state + 1]`.
    let offsets: [Int32]
    /// Each edge's label as an index into `labels`, -1 for an ε-move.
    let labelIndices: [Int32]
    /// The source automaton's labels (see `NFA.labels`).
    let labels: [Label]
    /// Each edge's target, renumbered.
    let targets: [Int32]
    /// Each state's number in the source automaton, ascending.
    let original: [Int32]
    /// The fragment's entry, renumbered.
    let start: Int32
    /// The fragment's exit, renumbered, or -1 when it is unreachable from the entry.
    let end: Int32

    var stateCount: Int { original.count }

    /// The part of `automaton` reachable from `part.start`; edges keep their order.
    /// O(states + edges) of that part, plus one bit per state of `automaton`: a state's new
    /// number is the count of reachable states before it (a rank over the bits), so no
    /// table as large as the automaton and no hashing.
    init(_ part: Fragment, of automaton: NFA<Label>) {
        var reached = [UInt64](repeating: 0, count: (automaton.stateCount + 63) >> 6)
        func isReached(_ state: Int32) -> Bool { reached[Int(state) >> 6] & 1 << UInt64(state & 63) != 0 }
        var stack: [Int32] = []
        func reach(_ state: Int32) {
            reached[Int(state) >> 6] |= 1 << UInt64(state & 63)
            stack.append(state)
        }
        reach(part.start)
        while let state = stack.popLast() {
            automaton.forEachIndexedEdge(of: state) { _, target in if !isReached(target) { reach(target) } }
        }
        // Reached states before each word, then the states themselves in order.
        var rankBefore = [Int32](repeating: 0, count: reached.count)
        var original: [Int32] = []
        for (index, word) in reached.enumerated() {
            rankBefore[index] = Int32(original.count)
            var rest = word
            while rest != 0 {
                original.append(Int32(index << 6 | rest.trailingZeroBitCount))
                rest &= rest - 1
            }
        }
        func renumbered(_ state: Int32) -> Int32 {
            let word = reached[Int(state) >> 6]
            return rankBefore[Int(state) >> 6] + Int32((word & ((1 << UInt64(state & 63)) - 1)).nonzeroBitCount)
        }
        var offsets: [Int32] = [0]
        var labelIndices: [Int32] = []
        var targets: [Int32] = []
        offsets.reserveCapacity(original.count + 1)
        for state in original {
            automaton.forEachIndexedEdge(of: state) { label, target in
                labelIndices.append(label)
                targets.append(renumbered(target))
            }
            offsets.append(Int32(targets.count))
        }
        self.offsets = offsets
        self.labelIndices = labelIndices
        labels = automaton.labels
        self.targets = targets
        self.original = original
        start = renumbered(part.start)
        end = isReached(part.end) ? renumbered(part.end) : -1
    }

    /// All of `automaton`, states keeping their numbers (`start` 0, `end` -1): for reading
    /// many fragments of one automaton, where renumbering each would cost a pass over the
    /// whole automaton's states per fragment. O(states + edges).
    init(everythingIn automaton: NFA<Label>) {
        var offsets: [Int32] = [0]
        var labelIndices: [Int32] = []
        var targets: [Int32] = []
        offsets.reserveCapacity(automaton.stateCount + 1)
        labelIndices.reserveCapacity(automaton.edgeCount)
        targets.reserveCapacity(automaton.edgeCount)
        for state in 0 ..< Int32(automaton.stateCount) {
            automaton.forEachIndexedEdge(of: state) { label, target in
                labelIndices.append(label)
                targets.append(target)
            }
            offsets.append(Int32(targets.count))
        }
        self.offsets = offsets
        self.labelIndices = labelIndices
        labels = automaton.labels
        self.targets = targets
        original = Array(0 ..< Int32(automaton.stateCount))
        start = 0
        end = -1
    }

    /// The label of edge `edge`, `nil` for an ε-move.
    @inline(__always)
    func label(_ edge: Int) -> Label? {
        let index = labelIndices[edge]
        return index < 0 ? nil : labels[Int(index)]
    }

    /// Whether edge `edge` is an ε-move.
    @inline(__always)
    func isEpsilon(_ edge: Int) -> Bool { labelIndices[edge] < 0 }

    /// The indices of `state`'s edges in `labelIndices` and `targets`.
    @inline(__always)
    func edges(of state: Int32) -> Range<Int> {
        Int(offsets[Int(state)]) ..< Int(offsets[Int(state) + 1])
    }
}
