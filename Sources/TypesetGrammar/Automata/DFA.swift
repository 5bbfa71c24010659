/// A deterministic automaton over bytes whose edges may also be labelled by rules: the
/// compiled form of one grammar rule, and of every regular language the compiler combines.
///
/// State 0 is the start. `transitions[state << 8 | byte]` is the next state or -1. Rule
/// edges say "match rule `rule` here, then continue at `target`"; there is at most one edge
/// per rule from a state. A trimmed automaton has no state from which no final state can
/// be reached.
struct DFA: Sendable, Hashable {
    struct RuleEdge: Hashable, Sendable {
        var rule: Int32
        var target: Int32
    }

    let transitions: [Int32]
    let ruleEdges: [[RuleEdge]]
    let isFinal: [Bool]
    /// Whether state `s` has rule edges (`!ruleEdges[s].isEmpty`, without touching the inner
    /// arrays: the mask walk asks once per trie node).
    let callsRules: [Bool]

    var stateCount: Int { isFinal.count }
    var hasRuleEdges: Bool { ruleEdges.contains { !$0.isEmpty } }

    @inline(__always)
    func next(_ state: Int32, _ byte: UInt8) -> Int32 {
        transitions[Self.transitionIndex(Int(state), Int(byte))]
    }

    /// Where `state`'s entry for `byte` is in a transition table of 256-entry rows (this
    /// automaton's `transitions`, and the tables built alongside it).
    @inline(__always)
    static func transitionIndex(_ state: Int, _ byte: Int) -> Int { state << 8 | byte }

    /// The bytes with an edge out of `state`: its row's runs, a range at a time.
    func outgoingBytes(_ state: Int32) -> ByteSet {
        var set = ByteSet()
        forEachRun(of: Int(state)) { bytes, _ in set.insert(UInt8(bytes.lowerBound) ... UInt8(bytes.upperBound - 1)) }
        return set
    }

    /// A row of 256 entries without a move (-1): appended whole, one copy.
    static let rowWithoutMoves = [Int32](repeating: -1, count: 256)

    /// The language with no string at all.
    static let empty = DFA(transitions: rowWithoutMoves, ruleEdges: [[]], isFinal: [false])

    // MARK: Construction

    /// Subset construction from `part` of `automaton`, then trimming and minimisation. The
    /// subsets' rows are kept as runs (`RunAutomaton`) until minimised: only the minimal
    /// automaton's states are spelled as 256 entries.
    ///
    /// - Throws: `DFA.TooLarge` past `stateLimit` states.
    init(_ part: Fragment, of automaton: ByteNFA, stateLimit: Int = 1 << 16) throws(TooLarge) {
        let reachable = ReachableNFA(part, of: automaton)
        var closure = EpsilonClosure(reachable)
        try self.init(from: reachable.start, to: reachable.end, closure: &closure, sourceStates: automaton.stateCount, stateLimit: stateLimit)
    }

    /// ``init(_:of:stateLimit:)`` for one of many fragments of one automaton (a grammar's
    /// rules): `closure` reads the whole automaton (``ReachableNFA/init(everythingIn:ends:)``), is
    /// built once and serves every fragment, so no fragment pays for renumbering its part.
    init(_ part: Fragment, closure: inout EpsilonClosure<ByteLabel>, stateLimit: Int = 1 << 16) throws(TooLarge) {
        try self.init(from: part.start, to: part.end, closure: &closure, sourceStates: closure.automaton.stateCount, stateLimit: stateLimit)
    }

    /// The subset construction from `start` to `end` (-1: unreachable) of `closure`'s automaton.
    private init(from start: Int32, to end: Int32, closure: inout EpsilonClosure<ByteLabel>, sourceStates: Int, stateLimit: Int) throws(TooLarge) {
        let reachable = closure.automaton
        // Rows as runs until minimised: only the minimal automaton's states get 256 entries.
        var built = RunAutomaton()
        var subsets = Subsets(stateLimit: stateLimit, bytesPerState: CompilationMeter.bytesPerDFAState,
                              source: ("an automaton", sourceStates))
        _ = try subsets.intern(closure.of([start]))
        var cursor = 0
        // A subset's byte edges, read once per subset. The subset's moves are found per
        // elementary interval of their labels (within one, every label holds all bytes or
        // none): a string's "any character but these" is a few intervals, not 200 bytes.
        // Interval `k` is `cuts[k] ..< cuts[k + 1]`.
        var byteEdges: [(bytes: ByteSet, target: Int32)] = []
        var cuts: [Int] = []
        // The target lists of the subset's intervals so far, end to end, and the distinct
        // ones with the subsets they lead to: few per subset, compared in a list.
        var targets: [Int32] = []
        var groups: [(targets: Range<Int>, id: Int32)] = []
        var rules: [(rule: Int32, target: Int32)] = []
        // Every move between states, once per run of bytes: what trimming needs, without
        // reading the table again.
        var moves: [(from: Int32, to: Int32)] = []
        var set: [Int32] = []
        while cursor < subsets.count {
            subsets.copyMembers(of: cursor, into: &set)
            let source = Int32(cursor)
            cursor += 1
            rules.removeAll(keepingCapacity: true)
            byteEdges.removeAll(keepingCapacity: true)
            var read = ByteSet()
            var boundaries = ByteSet(0 ... 0)
            for state in set {
                for edge in reachable.edges(of: state) {
                    switch reachable.label(edge) {
                    case .bytes(let bytes)?:
                        read.formUnion(bytes)
                        boundaries.formUnion(bytes.boundaries)
                        byteEdges.append((bytes, reachable.targets[edge]))
                    case .rule(let rule)?:
                        rules.append((rule, reachable.targets[edge]))
                    case nil:
                        break
                    }
                }
            }
            cuts.removeAll(keepingCapacity: true)
            boundaries.forEachMember { cuts.append(Int($0)) }
            cuts.append(256)
            targets.removeAll(keepingCapacity: true)
            groups.removeAll(keepingCapacity: true)
            var previous: (targets: Range<Int>, id: Int32)? = nil
            for index in 0 ..< cuts.count - 1 {
                let first = UInt8(cuts[index])
                guard read.contains(first) else {
                    previous = nil
                    continue
                }
                let start = targets.count
                for edge in byteEdges where edge.bytes.contains(first) { targets.append(edge.target) }
                let range = start ..< targets.count
                // Neighbouring intervals often go to the same place: no search then.
                let group: (targets: Range<Int>, id: Int32)
                if let previous, targets[previous.targets].elementsEqual(targets[range]) {
                    group = previous
                    targets.removeSubrange(range)
                } else if let known = groups.first(where: { targets[$0.targets].elementsEqual(targets[range]) }) {
                    group = known
                    targets.removeSubrange(range)
                } else {
                    group = (range, try subsets.intern(closure.of(targets[range])))
                    groups.append(group)
                }
                previous = group
                if built.appendMoves(on: cuts[index] ..< cuts[index + 1], to: group.id) { moves.append((source, group.id)) }
            }
            // One edge per rule, to the closure of all its targets.
            rules.sort { $0.rule < $1.rule || ($0.rule == $1.rule && $0.target < $1.target) }
            var edges: [RuleEdge] = []
            var first = 0
            while first < rules.count {
                var last = first + 1
                while last < rules.count, rules[last].rule == rules[first].rule { last += 1 }
                let target = try subsets.intern(closure.of(rules[first ..< last].lazy.map(\.target)))
                edges.append(RuleEdge(rule: rules[first].rule, target: target))
                moves.append((source, target))
                first = last
            }
            built.endState(ruleEdges: edges, isFinal: end >= 0 && set.sortedContains(end))
        }
        // Every subset is reachable from the start; trim only when some cannot finish.
        let canFinish = Self.coReachable(stateCount: built.stateCount, moves: moves, isFinal: built.isFinal)
        self = (canFinish.allSatisfy { $0 } ? built : RunAutomaton(keeping: canFinish, of: built)).minimized()
    }

    /// Which states reach a final state along `moves`. O(states + moves).
    static func coReachable(stateCount: Int, moves: [(from: Int32, to: Int32)], isFinal: [Bool]) -> [Bool] {
        var offsets = [Int32](repeating: 0, count: stateCount + 1)
        for move in moves { offsets[Int(move.to) + 1] += 1 }
        for index in 0 ..< stateCount { offsets[index + 1] += offsets[index] }
        var fill = offsets
        var sources = [Int32](repeating: 0, count: moves.count)
        for move in moves {
            sources[Int(fill[Int(move.to)])] = move.from
            fill[Int(move.to)] += 1
        }
        var alive = isFinal
        var stack = (0 ..< Int32(stateCount)).filter { isFinal[Int($0)] }
        while let state = stack.popLast() {
            for index in offsets[Int(state)] ..< offsets[Int(state) + 1] where !alive[Int(sources[Int(index)])] {
                alive[Int(sources[Int(index)])] = true
                stack.append(sources[Int(index)])
            }
        }
        return alive
    }

    /// Equal automata, state for state (minimal automata numbered breadth-first from the start
    /// are equal exactly when their languages are).
    static func == (left: DFA, right: DFA) -> Bool {
        left.isFinal == right.isFinal && left.transitions == right.transitions && left.ruleEdges == right.ruleEdges
    }

    /// Hashes the size and the first states' rows only (O(1)): automata of one size rarely
    /// agree on their first rows, and `==` settles the rest.
    func hash(into hasher: inout Hasher) {
        hasher.combine(stateCount)
        transitions.withUnsafeBufferPointer { table in
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: table[..<min(table.count, 4 << 8)])))
        }
    }

    init(transitions: [Int32], ruleEdges: [[RuleEdge]], isFinal: [Bool]) {
        self.transitions = transitions
        self.ruleEdges = ruleEdges
        self.isFinal = isFinal
        self.callsRules = ruleEdges.map { !$0.isEmpty }
    }

    /// A construction went past its state limit, or past the compilation's budget (then
    /// `budgetError` says which).
    struct TooLarge: Error {
        var budgetError: GrammarError?

        init(budgetError: GrammarError? = nil) {
            self.budgetError = budgetError
        }
    }

    // MARK: Reachability

    /// Whether a final state is reachable from the start through byte edges and edges to
    /// rules `r` where `callable[r]`. O(states + runs), without building an automaton.
    func reachesFinal(calling callable: [Bool]) -> Bool {
        var seen = [Bool](repeating: false, count: stateCount)
        var stack: [Int32] = [0]
        seen[0] = true
        while let state = stack.popLast() {
            if isFinal[Int(state)] { return true }
            forEachRun(of: Int(state)) { _, target in
                if !seen[Int(target)] { seen[Int(target)] = true; stack.append(target) }
            }
            for edge in ruleEdges[Int(state)] where callable[Int(edge.rule)] && !seen[Int(edge.target)] {
                seen[Int(edge.target)] = true
                stack.append(edge.target)
            }
        }
        return false
    }

    // MARK: Regular-language operations (automata without rule edges)

    /// The language of exactly `literals`, as their trie: one state per distinct prefix,
    /// numbered in the order the literals first reach them. Trimmed (every prefix leads to a
    /// literal) but not minimised: products take it as it is and minimise what they build.
    /// O(total bytes), with no subset construction.
    ///
    /// - Throws: `DFA.TooLarge` past `stateLimit` prefixes, or past the compilation's budget.
    init(literals: [[UInt8]], stateLimit: Int = 1 << 16) throws(TooLarge) {
        guard !literals.isEmpty else {
            self = .empty
            return
        }
        var transitions = Self.rowWithoutMoves
        var isFinal = [false]
        // At most a state per byte: no growth copies of the rows.
        transitions.reserveCapacity((min(literals.reduce(0) { $0 + $1.count }, stateLimit) + 1) << 8)
        let meter = CompilationMeter.current
        for (index, literal) in literals.enumerated() {
            if let meter, index & 255 == 255 {
                try meter.checkConstruction(bytes: isFinal.count * CompilationMeter.bytesPerDFAState, "spelling literals")
            }
            var state = 0
            for byte in literal {
                let entry = Self.transitionIndex(state, Int(byte))
                if transitions[entry] < 0 {
                    guard isFinal.count < stateLimit else { throw TooLarge() }
                    transitions[entry] = Int32(isFinal.count)
                    transitions.append(contentsOf: Self.rowWithoutMoves)
                    isFinal.append(false)
                }
                state = Int(transitions[entry])
            }
            isFinal[state] = true
        }
        self.init(transitions: transitions, ruleEdges: [[RuleEdge]](repeating: [], count: isFinal.count), isFinal: isFinal)
    }

    /// Whether the language is empty (after trimming, only `DFA.empty` is).
    var isEmptyLanguage: Bool { !isFinal.contains(true) }

    /// Whether the whole of `bytes` is in the language.
    func accepts(_ bytes: some Sequence<UInt8>) -> Bool {
        var state: Int32 = 0
        for byte in bytes {
            state = next(state, byte)
            if state < 0 { return false }
        }
        return isFinal[Int(state)]
    }

    /// The product automaton: strings in both (`keepBoth`) or in `self` but not `other`.
    ///
    /// Each pair's row is made from the two rows' runs: a run of `self` is cut where
    /// `other`'s runs begin and end, and each piece goes to one pair.
    private func product(_ other: DFA, final: (Bool, Bool) -> Bool, keepOnlyIfSelf: Bool, stateLimit: Int) throws(TooLarge) -> DFA {
        precondition(!hasRuleEdges && !other.hasRuleEdges, "products are for regular automata")
        struct Pair: Hashable { var a: Int32; var b: Int32 }   // b == -1: `other` is dead
        // Pairs numbered in a table when it is small, else hashed (a product reaches few of
        // its pairs: a table of a million would cost more to clear than to hash).
        let width = other.stateCount + 1
        let pairCount = stateCount * width
        var table = pairCount <= 1 << 16 ? [Int32](repeating: -1, count: pairCount) : []
        var hashed: [Pair: Int32] = [:]
        func record(_ pair: Pair, _ id: Int32) {
            if table.isEmpty { hashed[pair] = id } else { table[Int(pair.a) * width + Int(pair.b) + 1] = id }
        }
        record(Pair(a: 0, b: 0), 0)
        var queue = [Pair(a: 0, b: 0)]
        var built = RunAutomaton()
        var moves: [(from: Int32, to: Int32)] = []
        var selfRuns: [(bytes: Range<Int>, target: Int32)] = []
        var otherRuns: [(bytes: Range<Int>, target: Int32)] = []
        let meter = CompilationMeter.current
        var cursor = 0
        while cursor < queue.count {
            let pair = queue[cursor]
            let source = Int32(cursor)
            cursor += 1
            if let meter, cursor & 63 == 0 {
                try meter.checkConstruction(bytes: queue.count * CompilationMeter.bytesPerDFAState, "combining two automata")
            }
            appendRuns(of: Int(pair.a), to: &selfRuns)
            if pair.b >= 0 { other.appendRuns(of: Int(pair.b), to: &otherRuns) }
            var next = 0  // the first of `otherRuns` not wholly before the piece
            for (bytes, a) in selfRuns {
                var byte = bytes.lowerBound
                while byte < bytes.upperBound {
                    while next < otherRuns.count, otherRuns[next].bytes.upperBound <= byte { next += 1 }
                    let end: Int, b: Int32
                    if next < otherRuns.count, otherRuns[next].bytes.lowerBound <= byte {
                        (end, b) = (min(bytes.upperBound, otherRuns[next].bytes.upperBound), otherRuns[next].target)
                    } else {
                        (end, b) = (min(bytes.upperBound, next < otherRuns.count ? otherRuns[next].bytes.lowerBound : 256), -1)
                    }
                    defer { byte = end }
                    if b < 0 && !keepOnlyIfSelf { continue }
                    let target = Pair(a: a, b: b)
                    let known = table.isEmpty ? hashed[target] ?? -1 : table[Int(target.a) * width + Int(target.b) + 1]
                    let id: Int32
                    if known >= 0 {
                        id = known
                    } else {
                        if queue.count >= stateLimit { throw TooLarge() }
                        id = Int32(queue.count)
                        record(target, id)
                        queue.append(target)
                    }
                    if built.appendMoves(on: byte ..< end, to: id) { moves.append((source, id)) }
                }
            }
            selfRuns.removeAll(keepingCapacity: true)
            otherRuns.removeAll(keepingCapacity: true)
            built.endState(ruleEdges: [], isFinal: final(self.isFinal[Int(pair.a)], pair.b >= 0 && other.isFinal[Int(pair.b)]))
        }
        // Every pair is reachable from the start; trim only when some cannot finish.
        let canFinish = Self.coReachable(stateCount: built.stateCount, moves: moves, isFinal: built.isFinal)
        return (canFinish.allSatisfy { $0 } ? built : RunAutomaton(keeping: canFinish, of: built)).minimized()
    }

    func intersection(_ other: DFA, stateLimit: Int = 1 << 16) throws(TooLarge) -> DFA {
        try product(other, final: { $0 && $1 }, keepOnlyIfSelf: false, stateLimit: stateLimit)
    }

    func subtracting(_ other: DFA, stateLimit: Int = 1 << 16) throws(TooLarge) -> DFA {
        try product(other, final: { $0 && !$1 }, keepOnlyIfSelf: true, stateLimit: stateLimit)
    }

    /// Copies the automaton into `automaton` as a fragment (one NFA state per DFA state).
    func embed(into automaton: inout ByteNFA) -> Fragment {
        let base = automaton.stateCount
        for _ in 0 ..< stateCount { _ = automaton.addState() }
        let end = automaton.addState()
        var byTarget: [(target: Int32, bytes: ByteSet)] = []
        for state in 0 ..< stateCount {
            // A state goes to few targets, each on runs of bytes: a short list, no hashing.
            byTarget.removeAll(keepingCapacity: true)
            forEachRun(of: state) { bytes, target in
                let index = byTarget.firstIndex { $0.target == target } ?? {
                    byTarget.append((target, ByteSet()))
                    return byTarget.count - 1
                }()
                byTarget[index].bytes.insert(UInt8(bytes.lowerBound) ... UInt8(bytes.upperBound - 1))
            }
            for (target, bytes) in byTarget.sorted(by: { $0.target < $1.target }) {
                automaton.addEdge(from: Int32(base + state), to: Int32(base) + target, label: .bytes(bytes))
            }
            for edge in ruleEdges[state] {
                automaton.addEdge(from: Int32(base + state), to: Int32(base) + edge.target, label: .rule(edge.rule))
            }
            if isFinal[state] { automaton.addEdge(from: Int32(base + state), to: end, label: nil) }
        }
        return Fragment(start: Int32(base), end: end)
    }
}

/// The subsets of a subset construction, numbered in the order found, with the checks of its
/// state limit and of the compilation's budget.
///
/// Subsets are stored end to end in one array and found through an open-addressing table of
/// their FNV-1a hashes: no array per subset, and no `Hasher` run per lookup.
struct Subsets {
    /// Subset `id` is `elements[starts[id] ..< starts[id + 1]]`.
    private var elements: [Int32] = []
    private var starts: [Int32] = [0]
    private var hashes: [UInt64] = []
    /// Subset numbers by hash, -1 where empty; a power of two at most half full.
    private var slots = [Int32](repeating: -1, count: 64)
    private let stateLimit: Int
    private let bytesPerState: Int
    private let source: (kind: StaticString, states: Int)
    private let meter = CompilationMeter.current

    /// - Parameters:
    ///   - bytesPerState: what one state of the automaton being built holds, besides its set.
    ///   - source: what is determinized ("an automaton", "a pattern") and its size in states,
    ///     for the budget's error.
    init(stateLimit: Int, bytesPerState: Int, source: (kind: StaticString, states: Int)) {
        self.stateLimit = stateLimit
        self.bytesPerState = bytesPerState
        self.source = source
    }

    /// How many subsets were found.
    var count: Int { hashes.count }

    /// The states of subset `id`, sorted.
    private func members(_ id: Int) -> ArraySlice<Int32> {
        elements[Int(starts[id]) ..< Int(starts[id + 1])]
    }

    /// Replaces `set`'s contents with the states of subset `id`, sorted. (A copy: a slice
    /// of the subsets held while more are added would make each addition copy them all.)
    func copyMembers(of id: Int, into set: inout [Int32]) {
        set.removeAll(keepingCapacity: true)
        set.append(contentsOf: members(id))
    }

    /// The number of `set` (sorted), added when new.
    ///
    /// - Throws: `DFA.TooLarge` past the state limit or the compilation's budget.
    mutating func intern(_ set: [Int32]) throws(DFA.TooLarge) -> Int32 {
        var hasher = FNV1a()
        for state in set { hasher.combine(state) }
        let hash = hasher.value
        var slot = slot(of: hash)
        while slots[slot] >= 0 {
            let id = Int(slots[slot])
            if hashes[id] == hash, members(id).elementsEqual(set) { return Int32(id) }
            slot = (slot + 1) & (slots.count - 1)
        }
        if count >= stateLimit { throw DFA.TooLarge() }
        // What the construction holds: its rows, and its sets once.
        if let meter, count & 63 == 63 {
            try meter.checkConstruction(bytes: count * bytesPerState + elements.count * 4, "determinizing \(source.kind) of \(source.states) states")
        }
        let id = Int32(count)
        elements.append(contentsOf: set)
        starts.append(Int32(elements.count))
        hashes.append(hash)
        slots[slot] = id
        if count * 2 > slots.count { grow() }
        return id
    }

    /// The slot where a probe for `hash` starts: the top bits of the hash mixed once more
    /// (FNV-1a's last multiply carries a small state number's bits only into the middle
    /// bits, which would send all short subsets to a few slots).
    private func slot(of hash: UInt64) -> Int {
        let mixed = (hash ^ hash >> 29) &* 0xbf58_476d_1ce4_e5b9
        return Int(truncatingIfNeeded: (mixed ^ mixed >> 32) >> UInt64(64 - slots.count.trailingZeroBitCount))
    }

    private mutating func grow() {
        slots = [Int32](repeating: -1, count: slots.count * 2)
        for (id, hash) in hashes.enumerated() {
            var slot = slot(of: hash)
            while slots[slot] >= 0 { slot = (slot + 1) & (slots.count - 1) }
            slots[slot] = Int32(id)
        }
    }
}

/// ε-closures in one automaton, with one mark per state reused from closure to closure
/// instead of a set built for each.
struct EpsilonClosure<Label: Hashable & Sendable> {
    let automaton: ReachableNFA<Label>
    private var mark: [UInt32]
    private var generation: UInt32 = 0
    private var stack: [Int32] = []
    /// The last closure's states; reused, so a closure allocates nothing once the caller
    /// has let go of the one before.
    private var result: [Int32] = []

    init(_ automaton: ReachableNFA<Label>) {
        self.automaton = automaton
        mark = [UInt32](repeating: 0, count: automaton.stateCount)
    }

    /// The states reachable from `seeds` by ε-moves alone, `seeds` included, sorted.
    mutating func of(_ seeds: some Sequence<Int32>) -> [Int32] {
        generation &+= 1
        if generation == 0 {
            mark = [UInt32](repeating: 0, count: mark.count)
            generation = 1
        }
        result.removeAll(keepingCapacity: true)
        var lowest = Int32.max, highest = Int32.min
        for seed in seeds where mark[Int(seed)] != generation {
            mark[Int(seed)] = generation
            stack.append(seed)
        }
        while let state = stack.popLast() {
            result.append(state)
            lowest = min(lowest, state)
            highest = max(highest, state)
            for edge in automaton.edges(of: state) where automaton.isEpsilon(edge) {
                let target = automaton.targets[edge]
                if mark[Int(target)] != generation {
                    mark[Int(target)] = generation
                    stack.append(target)
                }
            }
        }
        // Closures are mostly a handful of states: insertion sort, without the general
        // sort's merging machinery, unless there are many. Many states close together (an
        // object's members, all open at once in any order) are read off their marks in
        // order instead, one pass over the span they occupy.
        if result.count > 32 {
            if Int(highest - lowest) < result.count * 16 {
                result.removeAll(keepingCapacity: true)
                for state in lowest ... highest where mark[Int(state)] == generation { result.append(state) }
            } else {
                result.sort()
            }
        } else {
            result.withUnsafeMutableBufferPointer { states in
                for index in states.indices.dropFirst() {
                    let state = states[index]
                    var slot = index
                    while slot > 0, states[slot - 1] > state {
                        states[slot] = states[slot - 1]
                        slot -= 1
                    }
                    states[slot] = state
                }
            }
        }
        return result
    }
}

extension CompilationMeter {
    /// ``check(bytes:_:)`` for an automaton construction, whose failures are `DFA.TooLarge`
    /// (the budget's error inside).
    func checkConstruction(bytes: Int, _ what: @autoclosure () -> String) throws(DFA.TooLarge) {
        do { try check(bytes: bytes, what()) } catch { throw DFA.TooLarge(budgetError: error) }
    }
}
