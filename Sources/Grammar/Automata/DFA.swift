/// A deterministic automaton over bytes whose edges may also be labelled by rules: the
/// compiled form of one grammar rule, and of every regular language the compiler combines.
///
/// State 0 is the start. `transitions[state << 8 | byte]` is the next state or -1. Rule
/// edges say "match rule `rule` here, then continue at `target`"; there is at most one edge
/// per rule from a state. A trimmed automaton has no state from which no final state can
/// be reached.
struct DFA: Sendable {
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
        transitions[Int(state) << 8 | Int(byte)]
    }

    /// The bytes with an edge out of `state`.
    func outgoingBytes(_ state: Int32) -> ByteSet {
        var set = ByteSet()
        let base = Int(state) << 8
        for byte in 0 ..< 256 where transitions[base + byte] >= 0 { set.insert(UInt8(byte)) }
        return set
    }

    /// The language with no string at all.
    static let empty = DFA(transitions: [Int32](repeating: -1, count: 256), ruleEdges: [[]], isFinal: [false])

    // MARK: Construction

    /// Subset construction from `part` of `automaton`, then trimming and minimisation.
    ///
    /// - Throws: `DFA.TooLarge` past `stateLimit` states.
    init(_ part: Fragment, of automaton: ByteNFA, stateLimit: Int = 1 << 16) throws(TooLarge) {
        var transitions: [Int32] = []
        var ruleEdges: [[RuleEdge]] = []
        var isFinal: [Bool] = []
        var index: [[Int32]: Int32] = [:]
        var queue: [[Int32]] = []
        let meter = CompilationMeter.current
        // What the construction holds: its rows and, twice (queue and index), its state sets.
        var setElements = 0
        func intern(_ set: [Int32]) throws(TooLarge) -> Int32 {
            if let known = index[set] { return known }
            if queue.count >= stateLimit { throw TooLarge() }
            setElements += set.count
            if let meter, queue.count & 63 == 63 {
                try meter.checkConstruction(
                    bytes: queue.count * CompilationMeter.bytesPerDFAState + setElements * 8,
                    "determinizing an automaton of \(automaton.stateCount) states")
            }
            let id = Int32(queue.count)
            index[set] = id
            queue.append(set)
            return id
        }
        _ = try intern(automaton.epsilonClosure([part.start]))
        var cursor = 0
        var buckets = [[Int32]](repeating: [], count: 256)
        while cursor < queue.count {
            let set = queue[cursor]
            cursor += 1
            for byte in 0 ..< 256 { buckets[byte].removeAll(keepingCapacity: true) }
            var rules: [Int32: [Int32]] = [:]
            for state in set {
                for edge in automaton.edges[Int(state)] {
                    switch edge.label {
                    case .bytes(let bytes)?:
                        bytes.forEachMember { buckets[Int($0)].append(edge.target) }
                    case .rule(let rule)?:
                        rules[rule, default: []].append(edge.target)
                    case nil:
                        break
                    }
                }
            }
            var row = [Int32](repeating: -1, count: 256)
            var closures: [[Int32]: Int32] = [:]
            for byte in 0 ..< 256 where !buckets[byte].isEmpty {
                let targets = buckets[byte]
                // Neighbouring bytes usually go to the same place (ranges): no hashing then.
                if byte > 0, row[byte - 1] >= 0, buckets[byte - 1] == targets { row[byte] = row[byte - 1]; continue }
                if let known = closures[targets] { row[byte] = known; continue }
                let id = try intern(automaton.epsilonClosure(targets))
                closures[targets] = id
                row[byte] = id
            }
            transitions += row
            var edges: [RuleEdge] = []
            for (rule, targets) in rules.sorted(by: { $0.key < $1.key }) {
                edges.append(RuleEdge(rule: rule, target: try intern(automaton.epsilonClosure(targets))))
            }
            ruleEdges.append(edges)
            isFinal.append(set.contains(part.end))
        }
        self.init(transitions: transitions, ruleEdges: ruleEdges, isFinal: isFinal)
        self = trimmed(productiveRules: nil).minimized()
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

    // MARK: Trimming and minimisation

    /// Keeps the states reachable from the start and from which a final state is reachable,
    /// renumbered in breadth-first order; edges to rules outside `productiveRules` (when
    /// given) are dropped first. The result of an empty language is `DFA.empty`.
    func trimmed(productiveRules: Set<Int32>?) -> DFA {
        let count = stateCount
        var edgesOut = ruleEdges
        if let productiveRules {
            for state in 0 ..< count { edgesOut[state].removeAll { !productiveRules.contains($0.rule) } }
        }
        // Co-reachability through reversed edges.
        var reverse = [[Int32]](repeating: [], count: count)
        for state in 0 ..< count {
            for byte in 0 ..< 256 {
                let target = transitions[state << 8 | byte]
                if target >= 0 { reverse[Int(target)].append(Int32(state)) }
            }
            for edge in edgesOut[state] { reverse[Int(edge.target)].append(Int32(state)) }
        }
        var alive = [Bool](repeating: false, count: count)
        var stack: [Int32] = []
        for state in 0 ..< count where isFinal[state] { alive[state] = true; stack.append(Int32(state)) }
        while let state = stack.popLast() {
            for source in reverse[Int(state)] where !alive[Int(source)] {
                alive[Int(source)] = true
                stack.append(source)
            }
        }
        guard count > 0, alive[0] else { return .empty }
        var renumber = [Int32](repeating: -1, count: count)
        var order: [Int32] = [0]
        renumber[0] = 0
        var cursor = 0
        while cursor < order.count {
            let state = Int(order[cursor])
            cursor += 1
            func visit(_ target: Int32) {
                if target >= 0, alive[Int(target)], renumber[Int(target)] < 0 {
                    renumber[Int(target)] = Int32(order.count)
                    order.append(target)
                }
            }
            for byte in 0 ..< 256 { visit(transitions[state << 8 | byte]) }
            for edge in edgesOut[state] { visit(edge.target) }
        }
        var newTransitions = [Int32](repeating: -1, count: order.count << 8)
        var newRules = [[RuleEdge]](repeating: [], count: order.count)
        var newFinal = [Bool](repeating: false, count: order.count)
        for (newState, old) in order.enumerated() {
            let oldState = Int(old)
            newFinal[newState] = isFinal[oldState]
            for byte in 0 ..< 256 {
                let target = transitions[oldState << 8 | byte]
                if target >= 0, renumber[Int(target)] >= 0 { newTransitions[newState << 8 | byte] = renumber[Int(target)] }
            }
            newRules[newState] = edgesOut[oldState].compactMap {
                renumber[Int($0.target)] >= 0 ? RuleEdge(rule: $0.rule, target: renumber[Int($0.target)]) : nil
            }
        }
        return DFA(transitions: newTransitions, ruleEdges: newRules, isFinal: newFinal)
    }

    /// Merges equivalent states: Hopcroft's partition refinement, over byte classes (bytes
    /// that every state treats alike are one symbol) and one symbol per called rule, with a
    /// dead state added so every symbol goes somewhere. O(symbols × n log n): a counted chain
    /// such as `[^.]{10,1000}` (thousands of states, each split off one round after the next
    /// in Moore's refinement) costs no more than its size. States keep breadth-first order
    /// from the start, so equal languages give equal automata.
    func minimized() -> DFA {
        let count = stateCount
        guard count > 1 else { return self }
        let classes = Hopcroft(self).partition()
        return quotient(classes)
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
            for byte in 0 ..< 256 { visit(transitions[state << 8 | byte]) }
            for edge in ruleEdges[state] { visit(edge.target) }
        }
        var newTransitions = [Int32](repeating: -1, count: order.count << 8)
        var newRules = [[RuleEdge]](repeating: [], count: order.count)
        var newFinal = [Bool](repeating: false, count: order.count)
        for (newState, cls) in order.enumerated() {
            let state = representative[Int(cls)]
            newFinal[newState] = isFinal[state]
            for byte in 0 ..< 256 {
                let target = transitions[state << 8 | byte]
                if target >= 0 { newTransitions[newState << 8 | byte] = renumber[Int(classes[Int(target)])] }
            }
            newRules[newState] = ruleEdges[state].map { RuleEdge(rule: $0.rule, target: renumber[Int(classes[Int($0.target)])]) }
        }
        return DFA(transitions: newTransitions, ruleEdges: newRules, isFinal: newFinal)
    }

    /// One byte of each class of bytes that every state sends to the same place.
    func byteClassRepresentatives() -> [Int] {
        var seen: [[Int32]: Int] = [:]
        var representatives: [Int] = []
        var previous: [Int32] = []
        for byte in 0 ..< 256 {
            var column = [Int32](repeating: -1, count: stateCount)
            for state in 0 ..< stateCount { column[state] = transitions[state << 8 | byte] }
            // Neighbouring bytes usually fall in one class (ranges): no hashing then.
            if column == previous { continue }
            previous = column
            if seen[column] == nil {
                seen[column] = byte
                representatives.append(byte)
            }
        }
        return representatives
    }

    // MARK: Regular-language operations (automata without rule edges)

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
    private func product(_ other: DFA, final: (Bool, Bool) -> Bool, keepOnlyIfSelf: Bool, stateLimit: Int) throws(TooLarge) -> DFA {
        precondition(!hasRuleEdges && !other.hasRuleEdges, "products are for regular automata")
        struct Pair: Hashable { var a: Int32; var b: Int32 }   // b == -1: `other` is dead
        var index: [Pair: Int32] = [Pair(a: 0, b: 0): 0]
        var queue = [Pair(a: 0, b: 0)]
        var transitions: [Int32] = []
        var isFinal: [Bool] = []
        let meter = CompilationMeter.current
        var cursor = 0
        while cursor < queue.count {
            let pair = queue[cursor]
            cursor += 1
            if let meter, cursor & 63 == 0 {
                try meter.checkConstruction(bytes: queue.count * CompilationMeter.bytesPerDFAState, "combining two automata")
            }
            isFinal.append(final(self.isFinal[Int(pair.a)], pair.b >= 0 && other.isFinal[Int(pair.b)]))
            var row = [Int32](repeating: -1, count: 256)
            for byte in 0 ..< 256 {
                let a = next(pair.a, UInt8(byte))
                guard a >= 0 else { continue }
                let b = pair.b >= 0 ? other.next(pair.b, UInt8(byte)) : -1
                if b < 0 && !keepOnlyIfSelf { continue }
                let target = Pair(a: a, b: b)
                if let known = index[target] {
                    row[byte] = known
                } else {
                    if queue.count >= stateLimit { throw TooLarge() }
                    let id = Int32(queue.count)
                    index[target] = id
                    queue.append(target)
                    row[byte] = id
                }
            }
            transitions += row
        }
        return DFA(transitions: transitions, ruleEdges: [[RuleEdge]](repeating: [], count: isFinal.count), isFinal: isFinal)
            .trimmed(productiveRules: nil).minimized()
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
        for state in 0 ..< stateCount {
            var byTarget: [Int32: ByteSet] = [:]
            for byte in 0 ..< 256 {
                let target = transitions[state << 8 | byte]
                if target >= 0 { byTarget[target, default: ByteSet()].insert(UInt8(byte)) }
            }
            for (target, bytes) in byTarget.sorted(by: { $0.key < $1.key }) {
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

extension CompilationMeter {
    /// ``check(bytes:_:)`` for an automaton construction, whose failures are `DFA.TooLarge`
    /// (the budget's error inside).
    func checkConstruction(bytes: Int, _ what: @autoclosure () -> String) throws(DFA.TooLarge) {
        do { try check(bytes: bytes, what()) } catch { throw DFA.TooLarge(budgetError: error) }
    }
}
