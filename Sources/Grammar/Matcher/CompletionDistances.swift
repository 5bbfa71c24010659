// MARK: Shortest completions

/// For every rule position, how many bytes at least it takes to finish the rule from there.
///
/// `distance[rule][state]` is the length of the shortest string that leads from `state` of
/// `rule` to one of its final states, where calling rule `r` costs `shortest(r)` =
/// `distance[r][0]`. Computed by relaxation to a fixpoint (Bellman–Ford over the rules'
/// automata, the call edges making it a system of equations); unproductive positions keep
/// `Int32.max`.
///
/// A configuration's shortest completion is then its own distance plus that of every return
/// position on its stack. Generation under a token budget uses it to keep the value finishable.
struct CompletionDistances: Sendable {
    let distance: [[Int32]]

    static let unreachable = Int32.max

    init(_ automaton: PushdownAutomaton) {
        let rules = automaton.rules
        // Each state's distinct byte targets, so a relaxation pass costs edges, not 256 × states.
        let targets: [[[Int32]]] = rules.map { dfa in
            (0 ..< dfa.stateCount).map { state in
                var seen = Set<Int32>()
                let base = state << 8
                for byte in 0 ..< 256 where dfa.transitions[base + byte] >= 0 { seen.insert(dfa.transitions[base + byte]) }
                return Array(seen)
            }
        }
        var distance = rules.map { dfa in dfa.isFinal.map { $0 ? Int32(0) : Self.unreachable } }
        func add(_ a: Int32, _ b: Int32) -> Int32 {
            a == Self.unreachable || b == Self.unreachable ? Self.unreachable : min(Self.unreachable - 1, a &+ b)
        }
        var changed = true
        while changed {
            changed = false
            for rule in rules.indices {
                let dfa = rules[rule]
                for state in 0 ..< dfa.stateCount {
                    var best = distance[rule][state]
                    for target in targets[rule][state] { best = min(best, add(1, distance[rule][Int(target)])) }
                    for edge in dfa.ruleEdges[state] {
                        best = min(best, add(distance[Int(edge.rule)][0], distance[rule][Int(edge.target)]))
                    }
                    if best < distance[rule][state] {
                        distance[rule][state] = best
                        changed = true
                    }
                }
            }
        }
        self.distance = distance
    }

    /// The shortest completion of `frame` and the stack below it in `store`.
    func completion(of frame: PushdownFrame, store: some FrameStore) -> Int {
        var total = Int(distance[Int(frame.rule)][Int(frame.state)])
        guard total != Int(Self.unreachable) else { return Int.max }
        var parent = frame.parent
        var depth = 0
        while parent >= 0, depth < 10_000 {
            let below = store.frame(parent)
            let step = distance[Int(below.rule)][Int(below.state)]
            guard step != Self.unreachable else { return Int.max }
            total += Int(step)
            parent = below.parent
            depth += 1
        }
        return total
    }
}
