// MARK: Shortest completions

/// For every rule position, how many bytes at least it takes to finish the rule from there.
///
/// `distance[rule][state]` is the length of the shortest string that leads from `state` of
/// `rule` to one of its final states, where calling rule `r` costs `shortest(r)` =
/// `distance[r][0]`. Computed by relaxation to a fixpoint (Bellman–Ford over the rules'
/// automata, the call edges making it a system of equations); unproductive positions keep
/// `Int32.max`.
///
/// A rule that counts characters takes its distances from its `LengthCounter` (at count 0
/// here; a frame's own count in ``completion(of:in:store:)``), which knows the bounds.
///
/// A configuration's shortest completion is then its own distance plus that of every return
/// position on its stack. Generation under a token budget uses it to keep the value finishable.
struct CompletionDistances: Sendable {
    let distance: [[Int32]]

    static let unreachable = Int32.max

    init(distance: [[Int32]]) { self.distance = distance }

    /// - Throws: `.budgetExceeded` when the relaxation runs past the current compilation's
    ///   budget (rules are visited callees first, so a chain of calls settles in one pass).
    init(_ automaton: PushdownAutomaton) throws(GrammarError) {
        let meter = CompilationMeter.current
        let rules = automaton.rules
        // Each state's distinct byte targets, so a relaxation pass costs edges, not 256 × states:
        // those of `state` are `targets[offsets[state] ..< offsets[state + 1]]`.
        let byteTargets: [(offsets: [Int32], targets: [Int32])] = rules.map { dfa in
            var seen = [Int32](repeating: -1, count: dfa.stateCount)
            var offsets: [Int32] = [0]
            var targets: [Int32] = []
            offsets.reserveCapacity(dfa.stateCount + 1)
            for state in 0 ..< dfa.stateCount {
                dfa.forEachRun(of: state) { _, target in
                    if seen[Int(target)] != Int32(state) {
                        seen[Int(target)] = Int32(state)
                        targets.append(target)
                    }
                }
                offsets.append(Int32(targets.count))
            }
            return (offsets, targets)
        }
        var distance = rules.map { dfa in dfa.isFinal.map { $0 ? Int32(0) : Self.unreachable } }
        for (rule, counter) in automaton.counters.enumerated() {
            guard let counter else { continue }
            distance[rule] = (0 ..< rules[rule].stateCount).map { counter.distance(Int32($0), 0) }
        }
        func add(_ a: Int32, _ b: Int32) -> Int32 {
            a == Self.unreachable || b == Self.unreachable ? Self.unreachable : min(Self.unreachable - 1, a &+ b)
        }
        var changed = true
        while changed {
            changed = false
            try meter?.check("finding the shortest completions")
            for rule in rules.indices.reversed() where automaton.counters[rule] == nil {
                let dfa = rules[rule]
                let (offsets, targets) = byteTargets[rule]
                // States are numbered breadth-first from the start and distances flow back
                // from the final states: the last first.
                for state in (0 ..< dfa.stateCount).reversed() {
                    var best = distance[rule][state]
                    for index in Int(offsets[state]) ..< Int(offsets[state + 1]) {
                        best = min(best, add(1, distance[rule][Int(targets[index])]))
                    }
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

    /// The shortest completion of `frame`'s rule from its position (its count's, in a counted
    /// rule), not counting the stack below it.
    @inline(__always)
    func distance(of frame: PushdownFrame, in automaton: PushdownAutomaton) -> Int32 {
        automaton.counters[Int(frame.rule)]?.distance(frame.state, frame.count) ?? distance[Int(frame.rule)][Int(frame.state)]
    }

    /// The shortest completion of `frame` and the stack below it in `store`.
    func completion(of frame: PushdownFrame, in automaton: PushdownAutomaton, store: some FrameStore) -> Int {
        var total = Int(distance(of: frame, in: automaton))
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

extension CompletionDistances {
    /// A shortest sentence of `rule`: from its start, at each state the first move (bytes in
    /// ascending order, then calls) that stays on a shortest path. `nil` when the rule matches
    /// nothing or its shortest sentence is longer than `maximumBytes`.
    ///
    /// - Complexity: O(length × 256) plus the calls made on the way.
    func shortestSentence(of rule: Int32, in automaton: PushdownAutomaton, maximumBytes: Int) -> [UInt8]? {
        shortestCompletion(of: [PushdownFrame(rule: rule, state: 0, parent: -1)], in: automaton, maximumBytes: maximumBytes)
    }

    /// A shortest completion of the configuration whose frames are `stack` (bottom first;
    /// their `parent`s are ignored), chosen as ``shortestSentence(of:in:maximumBytes:)``
    /// chooses; `nil` when it has none or it is longer than `maximumBytes`.
    func shortestCompletion(of stack: [PushdownFrame], in automaton: PushdownAutomaton, maximumBytes: Int) -> [UInt8]? {
        var total = 0
        for frame in stack {
            let step = distance(of: frame, in: automaton)
            guard step != Self.unreachable else { return nil }
            total += Int(step)
        }
        guard total <= maximumBytes else { return nil }
        var sentence: [UInt8] = []
        sentence.reserveCapacity(total)
        // Where each unfinished call continues; the top is the position being extended.
        var stack = stack
        // Moves that read nothing (calls of rules that match the empty string) are bounded
        // with the rest, so a walk can never go round in circles.
        var movesLeft = 4 * total + 4 * automaton.rules.count + 4 * stack.count + 16
        while let frame = stack.popLast() {
            movesLeft -= 1
            guard movesLeft > 0 else { return nil }
            let rule = frame.rule, state = frame.state
            let dfa = automaton.rules[Int(rule)]
            let here = distance(of: frame, in: automaton)
            if here == 0, dfa.isFinal[Int(state)] { continue }
            var moved = false
            for byte in 0 ..< 256 {
                guard let target = automaton.step(frame, UInt8(byte), in: dfa) else { continue }
                if distance(of: target, in: automaton) == here - 1 {
                    sentence.append(UInt8(byte))
                    stack.append(target)
                    moved = true
                    break
                }
            }
            if moved { continue }
            for edge in dfa.ruleEdges[Int(state)] {
                let called = distance[Int(edge.rule)][0], after = distance[Int(rule)][Int(edge.target)]
                guard called != Self.unreachable, after != Self.unreachable, called + after == here else { continue }
                stack.append(PushdownFrame(rule: rule, state: edge.target, parent: -1))
                stack.append(PushdownFrame(rule: edge.rule, state: 0, parent: -1))
                moved = true
                break
            }
            guard moved else { return nil }
        }
        return sentence
    }
}
