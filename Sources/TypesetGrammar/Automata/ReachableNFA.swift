/// The part of an `NFA` reachable from a fragment's entry, renumbered from 0 in the source
/// automaton's order, with every state's edges end to end in one array.
///
/// Subset constructions read a state's edges once per subset holding it, and ε-closures
/// once per closure reaching it; here they are a range of `labels` and `targets`, with no
/// list to follow. Numbering only the reachable part sizes per-state marks by the
/// fragment, not by the whole automaton. A grammar's rules, which share one automaton, read
/// it whole instead (``init(everythingIn:ends:)``): once for all rules, rather than a pass over
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
        let start = renumbered(part.start)
        let end = isReached(part.end) ? renumbered(part.end) : -1
        Self.bypassPassingStates(&targets, offsets: offsets, labelIndices: labelIndices, keeping: end >= 0 ? [end] : [])
        self.offsets = offsets
        self.labelIndices = labelIndices
        labels = automaton.labels
        self.targets = targets
        self.original = original
        self.start = start
        self.end = end
    }

    /// All of `automaton`, states keeping their numbers (`start` 0, `end` -1): for reading
    /// many fragments of one automaton, where renumbering each would cost a pass over the
    /// whole automaton's states per fragment. O(states + edges).
    ///
    /// `ends` are the fragments' exits the reader will ask about (never bypassed).
    init(everythingIn automaton: NFA<Label>, ends: [Int32]) {
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
        Self.bypassPassingStates(&targets, offsets: offsets, labelIndices: labelIndices, keeping: ends)
        self.offsets = offsets
        self.labelIndices = labelIndices
        labels = automaton.labels
        self.targets = targets
        original = Array(0 ..< Int32(automaton.stateCount))
        start = 0
        end = -1
    }

    /// Points every edge into a passing state (one whose only edge is an ε-move) at the
    /// first state past it that is not one: what the passing state's ε-closure would reach
    /// first anyway. Sequences join their parts by such moves, so closures then read a
    /// state per part instead of a chain, and subsets hold fewer states; the language read
    /// from any state is unchanged. States in `keeping` (exits asked about) stay, and so
    /// do passing states on a cycle of them. O(states + edges).
    ///
    ///     before:   a ──x──▶ p ──ε──▶ q ──ε──▶ r ──y──▶      after:   a ──x──▶ r ──y──▶
    private static func bypassPassingStates(_ targets: inout [Int32], offsets: [Int32], labelIndices: [Int32], keeping: [Int32]) {
        let count = offsets.count - 1
        // The state each state stands for: itself, or (resolved below) past its ε-move.
        var past = [Int32](repeating: -1, count: count)
        for state in 0 ..< count {
            let first = Int(offsets[state])
            past[state] = Int(offsets[state + 1]) - first == 1 && labelIndices[first] < 0 ? targets[first] : Int32(state)
        }
        for state in keeping where state >= 0 && Int(state) < count { past[Int(state)] = state }
        // Resolve each chain of passing states to the state it ends at. A chain that meets
        // itself (a cycle of ε-moves alone) keeps its states.
        var chain: [Int32] = []
        var resolved = [Bool](repeating: false, count: count)
        for state in 0 ..< Int32(count) where !resolved[Int(state)] {
            var current = state
            while !resolved[Int(current)], past[Int(current)] != current {
                resolved[Int(current)] = true
                chain.append(current)
                current = past[Int(current)]
            }
            // `current` stands for itself, or was resolved by an earlier chain, or is on this one.
            let isCycle = chain.contains(current)
            for link in chain { past[Int(link)] = isCycle ? link : past[Int(current)] }
            resolved[Int(current)] = true
            chain.removeAll(keepingCapacity: true)
        }
        for edge in targets.indices { targets[edge] = past[Int(targets[edge])] }
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
