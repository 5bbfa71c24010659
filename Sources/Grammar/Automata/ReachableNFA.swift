/// The part of an `NFA` reachable from a fragment's entry, renumbered from 0 (the entry) in
/// the order found, with every state's edges end to end in one array.
///
/// Subset constructions read a state's edges once per subset holding it, and ε-closures
/// once per closure reaching it. Read from the `NFA`, each read copies the state's edge array
/// (a retain and a release); here it is a range of `labels` and `targets`. Numbering only the
/// reachable part also sizes per-state marks by the fragment, not by the whole automaton
/// (a grammar's rules share one).
///
///     state:     0        1     2
///     offsets:   0        2     3     4
///     labels:    [ε, 'a'] ['b'] [ε]
///     targets:   [1, 2]   [2]   [0]
struct ReachableNFA<Label: Hashable & Sendable> {
    /// The edges of `state` are `offsets[state] ..< offsets[state + 1]`.
    let offsets: [Int32]
    /// Each edge's label, `nil` for an ε-move.
    let labels: [Label?]
    /// Each edge's target, renumbered.
    let targets: [Int32]
    /// Each state's number in the source automaton.
    let original: [Int32]
    /// The fragment's exit, renumbered, or -1 when it is unreachable from the entry.
    let end: Int32

    var stateCount: Int { original.count }

    /// The part of `automaton` reachable from `part.start`; edges keep their order. O(states +
    /// edges) of that part.
    init(_ part: Fragment, of automaton: NFA<Label>) {
        var renumber: [Int32: Int32] = [part.start: 0]
        var original: [Int32] = [part.start]
        var offsets: [Int32] = [0]
        var labels: [Label?] = []
        var targets: [Int32] = []
        var cursor = 0
        while cursor < original.count {
            for edge in automaton.edges[Int(original[cursor])] {
                let target = renumber[edge.target] ?? {
                    original.append(edge.target)
                    renumber[edge.target] = Int32(original.count - 1)
                    return Int32(original.count - 1)
                }()
                labels.append(edge.label)
                targets.append(target)
            }
            offsets.append(Int32(targets.count))
            cursor += 1
        }
        self.offsets = offsets
        self.labels = labels
        self.targets = targets
        self.original = original
        end = renumber[part.end] ?? -1
    }

    /// The indices of `state`'s edges in `labels` and `targets`.
    @inline(__always)
    func edges(of state: Int32) -> Range<Int> {
        Int(offsets[Int(state)]) ..< Int(offsets[Int(state) + 1])
    }
}
