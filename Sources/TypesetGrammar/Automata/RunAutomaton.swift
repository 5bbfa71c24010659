/// An automaton read state by state, each row as its runs (see `DFA+Runs.swift`), with rule
/// edges and final states: what trimming, byte classes, Hopcroft's refinement and quotients
/// read. `DFA` spells its rows as 256 entries; `RunAutomaton` keeps only the runs.
protocol RowsAsRuns {
    var stateCount: Int { get }
    var isFinal: [Bool] { get }
    var ruleEdges: [[DFA.RuleEdge]] { get }
    /// Calls `body` with each run of `state`'s row in byte order: maximal ranges of adjacent
    /// bytes with one target, ranges without a move left out.
    func forEachRun<Failure: Error>(of state: Int, _ body: (_ bytes: Range<Int>, _ target: Int32) throws(Failure) -> Void) throws(Failure)
}

extension DFA: RowsAsRuns {}

extension RowsAsRuns {
    /// Merges equivalent states: Hopcroft's partition refinement, over byte classes (bytes
    /// that every state treats alike are one symbol) and one symbol per called rule, on the
    /// transitions that exist (see `Hopcroft`). O(m log n) in the m transitions: a counted
    /// chain such as `[^.]{10,1000}` (thousands of states, each split off one round after the
    /// next in Moore's refinement) costs no more than its size. States keep breadth-first
    /// order from the start, so equal languages give equal automata.
    func minimized() -> DFA {
        guard stateCount > 1 else { return quotient([Int32](repeating: 0, count: stateCount)) }
        return quotient(Hopcroft(self).partition())
    }

    /// ``DFA/trimmed(productiveRules:)`` then ``minimized()``, the trimmed automaton kept as
    /// runs: only the minimal automaton's states are spelled as 256 entries. O(states + runs)
    /// before the minimisation.
    func trimmedAndMinimized(productiveRules: [Bool]?) -> DFA {
        func keeps(_ edge: DFA.RuleEdge) -> Bool { productiveRules?[Int(edge.rule)] ?? true }
        return RunAutomaton(keeping: statesThatCanFinish(through: keeps), of: self, through: keeps).minimized()
    }

    /// Whether each state reaches a final state through byte edges and the rule edges
    /// `follows` admits. O(states + runs).
    func statesThatCanFinish(through follows: (DFA.RuleEdge) -> Bool) -> [Bool] {
        var moves: [(from: Int32, to: Int32)] = []
        for state in 0 ..< stateCount {
            forEachRun(of: state) { _, target in moves.append((Int32(state), target)) }
            for edge in ruleEdges[state] where follows(edge) { moves.append((Int32(state), edge.target)) }
        }
        return DFA.coReachable(stateCount: stateCount, moves: moves, isFinal: isFinal)
    }

    /// The automaton of the classes of `classes` (one per state; equivalent states share a
    /// class), renumbered breadth-first from the start's class.
    func quotient(_ classes: [Int32]) -> DFA {
        let count = stateCount
        let classCount = Int((classes.max() ?? -1) + 1)
        var representative = [Int](repeating: -1, count: classCount)
        for state in 0 ..< count where representative[Int(classes[state])] < 0 { representative[Int(classes[state])] = state }
        var renumber = [Int32](repeating: -1, count: classCount)
        var order: [Int32] = [classes[0]]
        renumber[Int(classes[0])] = 0
        var cursor = 0
        while cursor < order.count {
            let state = representative[Int(order[cursor])]
            cursor += 1
            func visit(_ target: Int32) {
                guard target >= 0 else { return }
                let cls = classes[Int(target)]
                if renumber[Int(cls)] < 0 {
                    renumber[Int(cls)] = Int32(order.count)
                    order.append(cls)
                }
            }
            forEachRun(of: state) { _, target in visit(target) }
            for edge in ruleEdges[state] { visit(edge.target) }
        }
        var newTransitions = [Int32](repeating: -1, count: order.count << 8)
        var newRules = [[DFA.RuleEdge]](repeating: [], count: order.count)
        var newFinal = [Bool](repeating: false, count: order.count)
        for (newState, cls) in order.enumerated() {
            let state = representative[Int(cls)]
            newFinal[newState] = isFinal[state]
            forEachRun(of: state) { bytes, target in
                newTransitions.fill(newState << 8 + bytes.lowerBound ..< newState << 8 + bytes.upperBound, with: renumber[Int(classes[Int(target)])])
            }
            newRules[newState] = ruleEdges[state].map { DFA.RuleEdge(rule: $0.rule, target: renumber[Int(classes[Int($0.target)])]) }
        }
        return DFA(transitions: newTransitions, ruleEdges: newRules, isFinal: newFinal)
    }

    /// One byte of each class of bytes that every state sends to the same place, in
    /// ascending order. O(runs + states × intervals): the ends of every state's runs cut the
    /// bytes into intervals on which every state is constant; each interval's column of
    /// targets is hashed, intervals are grouped by hash, and a second pass confirms every
    /// interval agrees with its group's first in every row (on a collision, the classes are
    /// found again by comparing columns).
    func byteClassRepresentatives() -> [Int] {
        var cuts = ByteSet([0])
        for state in 0 ..< stateCount {
            forEachRun(of: state) { bytes, _ in
                cuts.insert(UInt8(bytes.lowerBound))
                if bytes.upperBound < 256 { cuts.insert(UInt8(bytes.upperBound)) }
            }
        }
        let starts = cuts.bytes.map(Int.init)
        // The interval holding each byte; a run covers whole intervals.
        var intervalOf = [Int](repeating: 0, count: 257)
        for (interval, start) in starts.enumerated() {
            for byte in start ..< (interval + 1 < starts.count ? starts[interval + 1] : 256) { intervalOf[byte] = interval }
        }
        intervalOf[256] = starts.count
        var row = [Int32](repeating: -1, count: starts.count)  // one state's target per interval
        var columns = [FNV1a](repeating: FNV1a(), count: starts.count)
        for state in 0 ..< stateCount {
            readIntervals(of: state, intervalOf: intervalOf, into: &row)
            for interval in row.indices { columns[interval].combine(row[interval]) }
        }
        var firstWithHash: [UInt64: Int] = [:]
        var representative = [Int](repeating: 0, count: starts.count)  // per interval: its group's first interval
        for interval in starts.indices {
            let hash = columns[interval].value
            if let known = firstWithHash[hash] {
                representative[interval] = known
            } else {
                firstWithHash[hash] = interval
                representative[interval] = interval
            }
        }
        for state in 0 ..< stateCount {
            readIntervals(of: state, intervalOf: intervalOf, into: &row)
            for interval in row.indices where row[interval] != row[representative[interval]] {
                return byteClassRepresentativesComparingColumns()
            }
        }
        return starts.indices.filter { representative[$0] == $0 }.map { starts[$0] }
    }

    /// The states reachable from the start (which must be alive) through alive states, by
    /// byte edges and the rule edges `follows` admits, in breadth-first order, and each
    /// state's number in that order (-1 for the others).
    func breadthFirstOrder(keeping alive: [Bool], through follows: (DFA.RuleEdge) -> Bool) -> (order: [Int32], renumber: [Int32]) {
        var renumber = [Int32](repeating: -1, count: stateCount)
        var order: [Int32] = [0]
        renumber[0] = 0
        var cursor = 0
        while cursor < order.count {
            let state = Int(order[cursor])
            cursor += 1
            forEachRun(of: state) { _, target in
                if alive[Int(target)], renumber[Int(target)] < 0 {
                    renumber[Int(target)] = Int32(order.count)
                    order.append(target)
                }
            }
            for edge in ruleEdges[state] where follows(edge) && alive[Int(edge.target)] && renumber[Int(edge.target)] < 0 {
                renumber[Int(edge.target)] = Int32(order.count)
                order.append(edge.target)
            }
        }
        return (order, renumber)
    }

    /// `state`'s target on each interval of bytes (-1 without a move); `intervalOf[byte]` is
    /// the interval holding `byte` (and the interval count at 256), every run covering whole
    /// intervals.
    private func readIntervals(of state: Int, intervalOf: [Int], into row: inout [Int32]) {
        row.fill(0 ..< row.count, with: -1)
        forEachRun(of: state) { bytes, target in row.fill(intervalOf[bytes.lowerBound] ..< intervalOf[bytes.upperBound], with: target) }
    }

    /// ``byteClassRepresentatives()`` by comparing whole columns (the fallback on a hash
    /// collision). O(states × 256 × classes).
    func byteClassRepresentativesComparingColumns() -> [Int] {
        let rows = (0 ..< stateCount).map { state in
            var row = [Int32](repeating: -1, count: 256)
            forEachRun(of: state) { bytes, target in row.fill(bytes, with: target) }
            return row
        }
        var representatives: [Int] = []
        for byte in 0 ..< 256 where !representatives.contains(where: { other in rows.allSatisfy { $0[other] == $0[byte] } }) {
            representatives.append(byte)
        }
        return representatives
    }
}


/// The subset construction's automaton before minimisation: each state's row as its runs,
/// end to end, so that the states minimisation merges (up to half of them in an object's
/// rule) never get a 256-entry row. A state's runs are
/// `runs[runStarts[state] ..< runStarts[state + 1]]`.
///
///     state 0: (0x22 ..< 0x23 → 1)
///     state 1: (0x20 ..< 0x22 → 1) (0x23 ..< 0x5c → 1) (0x5c ..< 0x5d → 2) …
///     runStarts: [0, 1, …]
///
/// State 0 is the start; every state is reachable from it.
struct RunAutomaton: RowsAsRuns {
    /// One run: bytes `lower ..< upper` go to `target`.
    struct Run {
        var lower: UInt16
        var upper: UInt16
        var target: Int32
    }

    private(set) var runStarts: [Int32] = [0]
    private(set) var runs: [Run] = []
    private(set) var ruleEdges: [[DFA.RuleEdge]] = []
    private(set) var isFinal: [Bool] = []

    var stateCount: Int { isFinal.count }

    /// No state yet: the first ``endState(ruleEdges:isFinal:)`` ends the start.
    init() {}

    /// Appends moves on `bytes` to `target` from the state being built (the last one begun),
    /// extending its last run when that ends where `bytes` begin with the same target. Bytes
    /// come in ascending order. Returns whether a new run began.
    @inline(__always) @discardableResult
    mutating func appendMoves(on bytes: Range<Int>, to target: Int32) -> Bool {
        if Int(runStarts[runStarts.count - 1]) < runs.count, runs[runs.count - 1].upper == bytes.lowerBound, runs[runs.count - 1].target == target {
            runs[runs.count - 1].upper = UInt16(bytes.upperBound)
            return false
        }
        runs.append(Run(lower: UInt16(bytes.lowerBound), upper: UInt16(bytes.upperBound), target: target))
        return true
    }

    /// Ends the state being built: its rule edges and whether it is final.
    mutating func endState(ruleEdges edges: [DFA.RuleEdge], isFinal final: Bool) {
        runStarts.append(Int32(runs.count))
        ruleEdges.append(edges)
        isFinal.append(final)
    }

    @inline(__always)
    func forEachRun<Failure: Error>(of state: Int, _ body: (_ bytes: Range<Int>, _ target: Int32) throws(Failure) -> Void) throws(Failure) {
        for index in Int(runStarts[state]) ..< Int(runStarts[state + 1]) {
            let run = runs[index]
            try body(Int(run.lower) ..< Int(run.upper), run.target)
        }
    }

    /// The states of `automaton` reachable from its start where `alive`, through byte edges
    /// and the rule edges `follows` admits, renumbered in breadth-first order (a start that
    /// is not alive leaves one state without moves: the empty language). Rows stay runs.
    init(keeping alive: [Bool], of automaton: some RowsAsRuns, through follows: (DFA.RuleEdge) -> Bool = { _ in true }) {
        guard alive[0] else {
            endState(ruleEdges: [], isFinal: false)
            return
        }
        let (order, renumber) = automaton.breadthFirstOrder(keeping: alive, through: follows)
        for old in order {
            let state = Int(old)
            // Runs to dead states are dropped; the others keep distinct targets, so they stay maximal.
            automaton.forEachRun(of: state) { bytes, target in
                let renumbered = renumber[Int(target)]
                if renumbered >= 0 { runs.append(Run(lower: UInt16(bytes.lowerBound), upper: UInt16(bytes.upperBound), target: renumbered)) }
            }
            let edges = automaton.ruleEdges[state].compactMap { edge in
                follows(edge) && renumber[Int(edge.target)] >= 0 ? DFA.RuleEdge(rule: edge.rule, target: renumber[Int(edge.target)]) : nil
            }
            endState(ruleEdges: edges, isFinal: automaton.isFinal[state])
        }
    }
}
