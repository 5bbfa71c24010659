import Dispatch
import Synchronization

/// The pushdown automaton of a grammar: one `DFA` per rule plus the facts about rules the
/// matcher and the mask precomputation use (which rules can match nothing, which bytes can
/// start or follow each rule).
///
/// A configuration is a stack of frames. The top frame says "inside rule `rule`, at state
/// `state` of its automaton"; each frame below says where its rule continues once the rule
/// above it completes. A byte moves the top frame along a byte edge; a rule edge pushes the
/// called rule's start; reaching a final state may pop. The automaton is nondeterministic
/// (alternatives can call different rules), so the matcher tracks a set of configurations.
struct PushdownAutomaton: Sendable {
    var rules: [DFA]
    var names: [String]
    var root: Int32
    /// Whether rule `r` matches the empty string.
    var nullable: [Bool]
    /// The bytes that can start a non-empty match of rule `r`.
    var first: [ByteSet]
    /// The bytes that can follow a complete match of rule `r`, anywhere in the grammar
    /// (an over-approximation: used only to reject, never to accept).
    var follow: [ByteSet]
    /// Whether `r` has no rule edges (its automaton alone decides it).
    var isTerminal: [Bool]
    /// Rules reachable from the root.
    var reachable: [Bool]
    /// Per rule, the counter of its strings' characters (rules with length bounds; `nil`
    /// for every other). A counted rule is terminal.
    var counters: [LengthCounter?]
    /// Whether any rule counts (so the hot loops can skip asking).
    var hasCounters: Bool
    /// Per rule, whether it is one item of a `uniqueItems` array (`Grammar.Rule.isDistinctItem`):
    /// its frame's count is where the item began, its caller's the items written so far, and
    /// it pops only with an item unequal to them (``FrameStore/adding(itemFrom:to:)``).
    var distinctItems: [Bool]
    /// Whether any rule is an item of a `uniqueItems` array.
    var hasDistinctItems: Bool
    /// Per rule, whether its completion can complete such an item (it is one, or is called
    /// by one at an edge into a final state): where a position's tokens that end the rule
    /// depend on the items written below it.
    var endsDistinctItem: [Bool]
    /// Per rule that can run inside such an item (an item rule, or one it calls, to any
    /// depth), whether each state has only finitely many completions in its rule (no cycle
    /// ahead, every rule it can call of a finite language); empty for the other rules.
    /// A frame there may run out of items its array does not hold (``mayRunOutOfItems(_:)``).
    var itemFiniteStates: [[Bool]]
    /// Per rule, whether it calls an item of finitely many values (a `uniqueItems` array's
    /// rule whose items can run out): ``canGoOn(_:store:)`` then looks past its bytes.
    var callsItemsOfFewValues: [Bool]

    /// An automaton as ``CompiledGrammar/archive(key:)`` stored it.
    init(rules: [DFA], names: [String], root: Int32, nullable: [Bool], first: [ByteSet], follow: [ByteSet], isTerminal: [Bool],
         reachable: [Bool], counters: [LengthCounter?], distinctItems: [Bool]) {
        self.rules = rules
        self.names = names
        self.root = root
        self.nullable = nullable
        self.first = first
        self.follow = follow
        self.isTerminal = isTerminal
        self.reachable = reachable
        self.counters = counters
        hasCounters = counters.contains { $0 != nil }
        self.distinctItems = distinctItems
        hasDistinctItems = distinctItems.contains(true)
        endsDistinctItem = Self.rulesEndingDistinctItems(rules, distinctItems: distinctItems)
        itemFiniteStates = Self.finiteStatesInsideItems(rules, distinctItems: distinctItems)
        callsItemsOfFewValues = Self.rulesCallingItemsOfFewValues(rules, distinctItems: distinctItems, itemFiniteStates: itemFiniteStates)
    }

    /// ``endsDistinctItem``: the item rules, and what they (or such a rule) call at an edge
    /// into a final state, to a fixpoint.
    static func rulesEndingDistinctItems(_ rules: [DFA], distinctItems: [Bool]) -> [Bool] {
        var ends = distinctItems
        var changed = distinctItems.contains(true)
        while changed {
            changed = false
            for (caller, dfa) in rules.enumerated() where ends[caller] {
                for edges in dfa.ruleEdges {
                    for edge in edges where dfa.isFinal[Int(edge.target)] && !ends[Int(edge.rule)] {
                        ends[Int(edge.rule)] = true
                        changed = true
                    }
                }
            }
        }
        return ends
    }

    /// ``itemFiniteStates``: the rules that items reach through rule edges, and per state
    /// whether its completions are finitely many. A rule's language is finite when its start
    /// state is, which is found to a fixpoint (a rule that calls itself stays endless).
    static func finiteStatesInsideItems(_ rules: [DFA], distinctItems: [Bool]) -> [[Bool]] {
        var inside = distinctItems
        var work = distinctItems.indices.filter { distinctItems[$0] }
        while let rule = work.popLast() {
            for edges in rules[rule].ruleEdges {
                for edge in edges where !inside[Int(edge.rule)] {
                    inside[Int(edge.rule)] = true
                    work.append(Int(edge.rule))
                }
            }
        }
        var finiteLanguage = [Bool](repeating: false, count: rules.count)
        var states = [[Bool]](repeating: [], count: rules.count)
        var changed = true
        while changed {
            changed = false
            for rule in rules.indices where inside[rule] {
                states[rule] = rules[rule].statesWithFinitelyManyCompletions { finiteLanguage[Int($0)] }
                if !finiteLanguage[rule], states[rule].first == true {
                    finiteLanguage[rule] = true
                    changed = true
                }
            }
        }
        return states
    }

    /// ``callsItemsOfFewValues``: the rules with an edge to an item rule whose start has
    /// finitely many completions.
    static func rulesCallingItemsOfFewValues(_ rules: [DFA], distinctItems: [Bool], itemFiniteStates: [[Bool]]) -> [Bool] {
        rules.map { dfa in
            dfa.ruleEdges.contains { edges in
                edges.contains { distinctItems[Int($0.rule)] && itemFiniteStates[Int($0.rule)].first == true }
            }
        }
    }

    /// - Parameter threads: how many threads may determinize rules at once (a grammar of a
    ///   few thousand states uses one).
    init(_ grammar: Grammar, stateLimit: Int, threads: Int = 1) throws(GrammarError) {
        names = grammar.rules.map(\.name)
        root = grammar.root
        var compiled = try Self.determinize(grammar, stateLimit: stateLimit, threads: threads)
        let meter = CompilationMeter.current
        let total = compiled.reduce(0) { $0 + $1.stateCount }
        // Counters of the rules with length bounds. A counted rule is terminal, so its trimmed,
        // minimal automaton is final here and the counter's states stay its states; one whose
        // bounds leave no string is unproductive like any empty rule.
        var counters = [LengthCounter?](repeating: nil, count: compiled.count)
        var countedPairs = 0
        for (index, rule) in grammar.rules.enumerated() {
            guard let bounds = rule.lengthBounds else { continue }
            let dfa = compiled[index]  // trimmed and minimised when determinized
            let found: LengthCounter?
            do throws(DFA.TooLarge) {
                found = try LengthCounter(dfa, minimum: bounds.minimum, maximum: bounds.maximum)
            } catch {
                throw error.budgetError ?? .budgetExceeded(what: "states × characters counted (rule '\(rule.name)')", limit: LengthCounter.pairLimit)
            }
            guard let found else {
                throw .invalidSchema(pointer: "#", message: "rule '\(rule.name)' counts characters but is not a language of quoted strings")
            }
            countedPairs += found.distances.count
            guard countedPairs <= LengthCounter.pairLimit else {
                throw .budgetExceeded(what: "states × characters counted (rule '\(rule.name)')", limit: LengthCounter.pairLimit)
            }
            if found.isLive(0, 0) {
                compiled[index] = dfa
                counters[index] = found
            } else {
                compiled[index] = .empty
            }
        }
        // The fixpoints below visit rules in the order their facts flow (callees before
        // callers for productive, nullable and first; callers first for follow), and use each
        // fact as soon as it is known, so a chain of rules declared caller first (as grammar
        // texts and schemas declare them) settles in one or two passes instead of one per rule.
        // Each pass is checked against the compilation's budget.
        func pass(_ name: String) throws(GrammarError) {
            try meter?.check(bytes: total * CompilationMeter.bytesPerDFAState, "finding the \(name) rules")
        }
        // Productive rules: those that match at least one string, given the others.
        var productive = [Bool](repeating: false, count: compiled.count)
        var changed = true
        while changed {
            changed = false
            try pass("productive")
            for index in compiled.indices.reversed() where !productive[index] && compiled[index].reachesFinal(calling: productive) {
                productive[index] = true
                changed = true
            }
        }
        guard productive[Int(root)] else {
            throw grammar.isFromJSONSchema ? .emptyLanguage(pointer: "#") : .emptyGrammar(rule: grammar.rules[Int(root)].name)
        }
        // Each automaton is trimmed and minimal already, unless it calls a rule that matches
        // nothing.
        let rules = compiled.map { dfa in
            dfa.ruleEdges.allSatisfy { $0.allSatisfy { productive[Int($0.rule)] } } ? dfa : dfa.trimmedAndMinimized(productiveRules: productive)
        }
        self.rules = rules
        self.counters = counters
        hasCounters = counters.contains { $0 != nil }
        let count = rules.count
        var nullable: [Bool], first: [ByteSet], follow: [ByteSet]
        // Nullable rules (fixpoint).
        nullable = [Bool](repeating: false, count: count)
        changed = true
        while changed {
            changed = false
            try pass("nullable")
            for index in (0 ..< count).reversed() where !nullable[index] {
                if Self.statesReachedWithoutBytes(rules[index], from: 0, nullable: nullable).contains(where: { rules[index].isFinal[Int($0)] }) {
                    nullable[index] = true
                    changed = true
                }
            }
        }
        // Left recursion: rule r calls s before consuming anything.
        var calls = [[Int32]](repeating: [], count: count)
        for index in 0 ..< count {
            for state in Self.statesReachedWithoutBytes(rules[index], from: 0, nullable: nullable) {
                calls[index] += rules[index].ruleEdges[Int(state)].map(\.rule)
            }
        }
        if let cycle = Self.findCycle(calls) { throw .leftRecursion(rule: grammar.rules[Int(cycle)].name) }
        // First bytes (fixpoint).
        first = [ByteSet](repeating: ByteSet(), count: count)
        changed = true
        while changed {
            changed = false
            try pass("first bytes of the")
            for index in (0 ..< count).reversed() {
                let bytes = Self.firstBytes(rules[index], from: 0, nullable: nullable, first: first)
                if bytes != first[index] { first[index] = bytes; changed = true }
            }
        }
        // Follow bytes (fixpoint over every call site).
        follow = [ByteSet](repeating: ByteSet(), count: count)
        changed = true
        while changed {
            changed = false
            try pass("following bytes of the")
            for caller in 0 ..< count {
                let dfa = rules[caller]
                for state in 0 ..< dfa.stateCount {
                    for edge in dfa.ruleEdges[state] {
                        var bytes = Self.firstBytes(dfa, from: edge.target, nullable: nullable, first: first)
                        if Self.statesReachedWithoutBytes(dfa, from: edge.target, nullable: nullable).contains(where: { dfa.isFinal[Int($0)] }) {
                            bytes.formUnion(follow[caller])
                        }
                        let merged = follow[Int(edge.rule)].union(bytes)
                        if merged != follow[Int(edge.rule)] { follow[Int(edge.rule)] = merged; changed = true }
                    }
                }
            }
        }
        self.nullable = nullable
        self.first = first
        self.follow = follow
        distinctItems = grammar.rules.map(\.isDistinctItem)
        hasDistinctItems = distinctItems.contains(true)
        endsDistinctItem = Self.rulesEndingDistinctItems(rules, distinctItems: distinctItems)
        itemFiniteStates = Self.finiteStatesInsideItems(rules, distinctItems: distinctItems)
        callsItemsOfFewValues = Self.rulesCallingItemsOfFewValues(rules, distinctItems: distinctItems, itemFiniteStates: itemFiniteStates)
        isTerminal = rules.map { !$0.hasRuleEdges }
        reachable = [Bool](repeating: false, count: count)
        var stack = [root]
        reachable[Int(root)] = true
        while let rule = stack.popLast() {
            for edges in rules[Int(rule)].ruleEdges {
                for edge in edges where !reachable[Int(edge.rule)] {
                    reachable[Int(edge.rule)] = true
                    stack.append(edge.rule)
                }
            }
        }
    }

    /// States of `dfa` reachable from `state` through edges of nullable rules only.
    /// O(states reached + their rule edges); no hashing while they are few (the usual one
    /// or two: the fixpoints ask at every call site).
    static func statesReachedWithoutBytes(_ dfa: DFA, from state: Int32, nullable: [Bool]) -> [Int32] {
        var reached = [state]
        var seen: Set<Int32>? = nil
        var cursor = 0
        while cursor < reached.count {
            let current = reached[cursor]
            cursor += 1
            for edge in dfa.ruleEdges[Int(current)] where nullable[Int(edge.rule)] {
                if seen == nil, reached.count >= 16 { seen = Set(reached) }
                let isKnown = seen.map { $0.contains(edge.target) } ?? reached.contains(edge.target)
                guard !isKnown else { continue }
                seen?.insert(edge.target)
                reached.append(edge.target)
            }
        }
        return reached
    }

    static func firstBytes(_ dfa: DFA, from state: Int32, nullable: [Bool], first: [ByteSet]) -> ByteSet {
        var bytes = ByteSet()
        for current in statesReachedWithoutBytes(dfa, from: state, nullable: nullable) {
            bytes.formUnion(dfa.outgoingBytes(current))
            for edge in dfa.ruleEdges[Int(current)] { bytes.formUnion(first[Int(edge.rule)]) }
        }
        return bytes
    }

    /// A rule on a cycle of `graph`, if any.
    static func findCycle(_ graph: [[Int32]]) -> Int32? {
        var color = [UInt8](repeating: 0, count: graph.count)  // 0 new, 1 on stack, 2 done
        for start in graph.indices where color[start] == 0 {
            var stack: [(node: Int, next: Int)] = [(start, 0)]
            color[start] = 1
            while let top = stack.last {
                if top.next < graph[top.node].count {
                    stack[stack.count - 1].next += 1
                    let target = Int(graph[top.node][top.next])
                    if color[target] == 1 { return Int32(target) }
                    if color[target] == 0 { color[target] = 1; stack.append((target, 0)) }
                } else {
                    color[top.node] = 2
                    stack.removeLast()
                }
            }
        }
        return nil
    }

    var stateCount: Int { rules.reduce(0) { $0 + $1.stateCount } }
}

// MARK: - Configurations

/// One frame of a stack: inside `rule` at `state`, below it `parent` (-1: the bottom).
struct PushdownFrame: Hashable, Sendable {
    var rule: Int32
    var state: Int32
    /// The characters read so far when `rule` counts them (`LengthCounter`); 0 otherwise.
    var count: Int32
    var parent: Int32

    init(rule: Int32, state: Int32, count: Int32 = 0, parent: Int32) {
        self.rule = rule
        self.state = state
        self.count = count
        self.parent = parent
    }
}

/// Where frames live while configurations are stepped: interned for the matcher (equal
/// stacks share one index, so sets of configurations deduplicate), or a scratch stack for
/// mask precomputation and one-token checks (truncated when the walk backs up).
///
/// A store also knows what the items of `uniqueItems` arrays are: where the reading stands
/// (an item frame's count is where its item began), and which items an array's frame holds.
protocol FrameStore {
    mutating func push(_ frame: PushdownFrame) -> Int32
    func frame(_ index: Int32) -> PushdownFrame
    /// Bytes read so far: where an item called now begins.
    var position: Int32 { get }
    /// The items `items` (a set numbered in this store; 0 is the empty set) with the item
    /// read from `start` up to ``position`` added; `nil` when it equals one of them, or when
    /// the store cannot tell (the mask precomputation, which leaves such tokens undecided).
    mutating func adding(itemFrom start: Int32, to items: Int32) -> Int32?
    /// The bytes read from `start` up to ``position`` (empty where the store keeps none).
    func text(from start: Int32) -> [UInt8]
    /// Whether the items `items` hold the item keyed `key` (`WrittenItems.key(of:)`).
    func items(_ items: Int32, hold key: [UInt8]) -> Bool
}

struct InternedFrames: FrameStore, Sendable {
    var frames: [PushdownFrame] = []
    var index: [PushdownFrame: Int32] = [:]
    /// The output read so far, and the sets of items written.
    var written = WrittenItems()

    var position: Int32 { Int32(written.text.count) }

    mutating func adding(itemFrom start: Int32, to items: Int32) -> Int32? {
        guard let key = WrittenItems.key(of: written.text[Int(start)...]) else { return nil }
        return written.adding(key, to: items)
    }

    func text(from start: Int32) -> [UInt8] { Array(written.text[Int(start)...]) }

    func items(_ items: Int32, hold key: [UInt8]) -> Bool {
        WrittenItems.set(items, holds: key) { written.sets[Int($0)] }
    }

    mutating func push(_ frame: PushdownFrame) -> Int32 {
        if let known = index[frame] { return known }
        let id = Int32(frames.count)
        frames.append(frame)
        index[frame] = id
        return id
    }

    func frame(_ index: Int32) -> PushdownFrame { frames[Int(index)] }
}

/// Frames pushed for a walk on top of `base` (the matcher's interned frames, read only and
/// never copied), numbered after it; `truncate(to:)` drops what a backed-up walk pushed.
struct ScratchFrames: FrameStore {
    let base: [PushdownFrame]
    private(set) var pushed: [PushdownFrame] = []
    /// The matcher's output and items, when a token is checked against them; `nil` in the
    /// mask precomputation, where no item can be told new or not.
    let written: WrittenItems?
    /// The token being checked, and how many of its bytes were read.
    var token: [UInt8] = []
    var consumed = 0
    /// Sets of items made during the walk, numbered after `written`'s.
    private var addedSets: [WrittenItems.Link] = []
    /// Whether the precomputation met an item's end it could not decide.
    var metItemEnd = false

    init(base: [PushdownFrame] = [], written: WrittenItems? = nil) {
        self.base = base
        self.written = written
    }

    var position: Int32 { Int32((written?.text.count ?? 0) + consumed) }

    mutating func adding(itemFrom start: Int32, to items: Int32) -> Int32? {
        guard let written else {
            metItemEnd = true
            return nil
        }
        guard let key = WrittenItems.key(of: text(from: start)), !self.items(items, hold: key) else { return nil }
        addedSets.append(WrittenItems.Link(parent: items, value: key))
        return Int32(written.sets.count + addedSets.count - 1)
    }

    func text(from start: Int32) -> [UInt8] {
        guard let written else { return [] }
        let start = Int(start), textCount = written.text.count
        return start >= textCount ? Array(token[(start - textCount) ..< consumed]) : Array(written.text[start...]) + token[..<consumed]
    }

    func items(_ items: Int32, hold key: [UInt8]) -> Bool {
        guard let written else { return true }
        // Sets made here are numbered after the matcher's.
        return WrittenItems.set(items, holds: key) { number in
            Int(number) >= written.sets.count ? addedSets[Int(number) - written.sets.count] : written.sets[Int(number)]
        }
    }

    /// Frames in the store, `base` included: the index the next push gets.
    var count: Int { base.count + pushed.count }

    mutating func push(_ frame: PushdownFrame) -> Int32 {
        pushed.append(frame)
        return Int32(count - 1)
    }

    func frame(_ index: Int32) -> PushdownFrame {
        Int(index) < base.count ? base[Int(index)] : pushed[Int(index) - base.count]
    }

    /// Drops the frames pushed after the store held `count` frames.
    mutating func truncate(to count: Int) {
        let kept = max(0, count - base.count)
        if pushed.count > kept { pushed.removeSubrange(kept...) }
    }
}

extension PushdownAutomaton {
    /// Adds to `configurations` (from `start` on) everything reachable without consuming a
    /// byte: calls push the called rule, final states pop into the frame below. Returns
    /// whether some configuration completed the bottom frame (popped past `parent == -1`).
    ///
    /// Configurations are frames whose `parent` is the rest of the stack. `isRoot[i]` marks
    /// those not produced by a push (the ones whose precomputed mask covers the others).
    @inline(__always)
    func close<Store: FrameStore>(_ configurations: inout [PushdownFrame], roots isRoot: inout [Bool], from start: Int,
                                   store: inout Store, limit: Int = 4096) -> Bool {
        var completed = false
        var cursor = start
        while cursor < configurations.count {
            let configuration = configurations[cursor]
            cursor += 1
            let dfa = rules[Int(configuration.rule)]
            if dfa.isFinal[Int(configuration.state)] {
                if configuration.parent < 0 {
                    completed = true
                } else if let below = popped(configuration, store: &store), !configurations[start...].contains(below), configurations.count < limit {
                    configurations.append(below)
                    isRoot.append(true)
                }
            }
            for edge in dfa.ruleEdges[Int(configuration.state)] {
                guard configurations.count < limit else { break }
                let returnFrame = store.push(PushdownFrame(rule: configuration.rule, state: edge.target, count: configuration.count, parent: configuration.parent))
                let called = calledFrame(edge.rule, returningTo: returnFrame, store: store)
                if !configurations[start...].contains(called) {
                    configurations.append(called)
                    isRoot.append(false)
                }
            }
        }
        return completed
    }

    /// The frame below `frame` (complete, `parent >= 0`) once `frame`'s rule returns into it:
    /// an item of a `uniqueItems` array joins the items its array's frame holds, and `nil`
    /// when it equals one of them.
    @inline(__always)
    func popped<Store: FrameStore>(_ frame: PushdownFrame, store: inout Store) -> PushdownFrame? {
        var below = store.frame(frame.parent)
        if hasDistinctItems, distinctItems[Int(frame.rule)] {
            guard let items = store.adding(itemFrom: frame.count, to: below.count) else { return nil }
            below.count = items
        }
        return below
    }

    /// The frame at the start of `rule`, called with `returnFrame` below it: an item of a
    /// `uniqueItems` array counts where it begins.
    @inline(__always)
    func calledFrame<Store: FrameStore>(_ rule: Int32, returningTo returnFrame: Int32, store: Store) -> PushdownFrame {
        PushdownFrame(rule: rule, state: 0, count: hasDistinctItems && distinctItems[Int(rule)] ? store.position : 0, parent: returnFrame)
    }

    /// Whether `frame` can go on: read a byte, call a rule, or complete into a frame that can
    /// (items of `uniqueItems` arrays checked on the way), or complete the whole output.
    /// Only items can make a configuration a dead end: elsewhere every frame can go on, and
    /// so does an item with endlessly many completions ahead (see `SchemaCompiler.distinctItems`).
    /// Where the completions are finitely many (``mayRunOutOfItems(_:)``), one that is not
    /// written yet is looked for.
    func canGoOn<Store: FrameStore>(_ frame: PushdownFrame, store: inout Store) -> Bool {
        var frame = frame
        while true {
            if mayRunOutOfItems(frame) { return canFinishNewItem(frame, store: &store) }
            let dfa = rules[Int(frame.rule)]
            if hasDistinctItems, callsItemsOfFewValues[Int(frame.rule)] {
                if canMoveWithoutRepeating(frame, store: store) || (frame.parent < 0 && dfa.isFinal[Int(frame.state)]) { return true }
            } else if !dfa.outgoingBytes(frame.state).isEmpty || frame.parent < 0 || dfa.callsRules[Int(frame.state)] {
                return true
            }
            guard dfa.isFinal[Int(frame.state)], let below = popped(frame, store: &store) else { return false }
            frame = below
        }
    }

    /// Whether `frame` may stand inside an item of a `uniqueItems` array with only finitely
    /// many completions ahead, all of which the array may hold already: its state has
    /// finitely many completions in its rule (``itemFiniteStates``), or it is a bounded
    /// string's at its maximum length (only the rest of its last character and the closing
    /// quote can follow). The mask precomputation leaves tokens that end there undecided.
    @inline(__always)
    func mayRunOutOfItems(_ frame: PushdownFrame) -> Bool {
        guard hasDistinctItems else { return false }
        let finite = itemFiniteStates[Int(frame.rule)]
        if !finite.isEmpty, finite[Int(frame.state)] { return true }
        guard hasCounters, endsDistinctItem[Int(frame.rule)], let maximum = counters[Int(frame.rule)]?.maximum else { return false }
        return frame.count >= maximum
    }

    /// Whether some completion of `frame` (see ``mayRunOutOfItems(_:)``) finishes an item its
    /// array does not hold yet. The frames below it up to the item's must have finitely many
    /// completions too, or there is surely a new one.
    private func canFinishNewItem<Store: FrameStore>(_ frame: PushdownFrame, store: inout Store) -> Bool {
        var item = frame
        while !distinctItems[Int(item.rule)] {
            guard item.parent >= 0 else { return true }  // not inside an item
            item = store.frame(item.parent)
            let finite = itemFiniteStates[Int(item.rule)]
            guard distinctItems[Int(item.rule)] || (!finite.isEmpty && finite[Int(item.state)]) else { return true }
        }
        guard item.parent >= 0 else { return true }
        return hasNewCompletion(from: frame, items: store.frame(item.parent).count, text: store.text(from: item.count), store: store)
    }

    /// Whether `frame`, of a rule that calls items of finitely many values (an array's), can
    /// move on in its rule without repeating an item: through its bytes (`,`, whitespace,
    /// `]`) to a final state, or to a call of a rule that goes on — any rule but such an
    /// item, and such an item when one of its values is not among the items `frame` holds.
    /// Whitespace between `,` and the item is no way on when every value is written.
    ///
    /// - Complexity: O(states of the rule × 256), and one walk of the item's completions.
    private func canMoveWithoutRepeating<Store: FrameStore>(_ frame: PushdownFrame, store: Store) -> Bool {
        let dfa = rules[Int(frame.rule)]
        var itemsChecked: [Int32] = []
        var seen: Set<Int32> = [frame.state]
        var work = [frame.state]
        while let state = work.popLast() {
            if state != frame.state, dfa.isFinal[Int(state)] { return true }
            for edge in dfa.ruleEdges[Int(state)] {
                guard distinctItems[Int(edge.rule)], itemFiniteStates[Int(edge.rule)].first == true else { return true }
                guard !itemsChecked.contains(edge.rule) else { continue }
                itemsChecked.append(edge.rule)
                let start = PushdownFrame(rule: edge.rule, state: 0, count: store.position, parent: -1)
                if hasNewCompletion(from: start, items: frame.count, text: [], store: store) { return true }
            }
            dfa.forEachRun(of: Int(state)) { _, target in
                if seen.insert(target).inserted { work.append(target) }
            }
        }
        return false
    }

    /// Whether a completion of `frame`, inside an item that began with `text`, makes an item
    /// that the set `items` does not hold. The frames below `frame` up to the item's (its
    /// `parent` chain, which ends at an item rule's frame) have finitely many completions.
    ///
    /// The completions are walked depth-first in byte order (rule edges after bytes), with
    /// the rules they call on a stack of their own, so every string explored is a prefix of
    /// an item held or of the first completion found new.
    ///
    /// - Complexity: O((bytes of the items held + the completion found) × 256).
    private func hasNewCompletion<Store: FrameStore>(from frame: PushdownFrame, items: Int32, text: [UInt8], store: Store) -> Bool {
        var text = text
        var returns: [(frame: PushdownFrame, caller: Int)] = []
        var path = [CompletionWalkPlace(frame: frame, caller: -1, textCount: text.count, move: -1)]
        while let place = path.last {
            let top = path.count - 1
            text.removeSubrange(place.textCount...)
            let dfa = rules[Int(place.frame.rule)]
            let state = Int(place.frame.state)
            if place.move < 0 {
                path[top].move = 0
                guard dfa.isFinal[state] else { continue }
                if distinctItems[Int(place.frame.rule)] {
                    if let key = WrittenItems.key(of: text), !store.items(items, hold: key) { return true }
                } else if place.caller >= 0 {
                    let (caller, below) = returns[place.caller]
                    path.append(CompletionWalkPlace(frame: caller, caller: below, textCount: text.count, move: -1))
                } else {
                    path.append(CompletionWalkPlace(frame: store.frame(place.frame.parent), caller: -1, textCount: text.count, move: -1))
                }
                continue
            }
            var move = place.move
            var next: PushdownFrame? = nil
            while move < 256, next == nil {
                next = step(place.frame, UInt8(move), in: dfa)
                move += 1
            }
            if let next {
                path[top].move = move
                text.append(UInt8(move - 1))
                path.append(CompletionWalkPlace(frame: next, caller: place.caller, textCount: text.count, move: -1))
                continue
            }
            let edges = dfa.ruleEdges[state]
            guard move - 256 < edges.count else {
                path.removeLast()
                continue
            }
            let edge = edges[move - 256]
            path[top].move = move + 1
            returns.append((PushdownFrame(rule: place.frame.rule, state: edge.target, count: place.frame.count, parent: place.frame.parent), place.caller))
            path.append(CompletionWalkPlace(frame: PushdownFrame(rule: edge.rule, state: 0, count: 0, parent: -1), caller: returns.count - 1, textCount: text.count, move: -1))
        }
        return false
    }

    /// The frame after `frame` reads `byte` along a byte edge of its rule (`dfa`), its count
    /// moved and checked; `nil` when the rule cannot read it there.
    @inline(__always)
    func step(_ frame: PushdownFrame, _ byte: UInt8, in dfa: DFA) -> PushdownFrame? {
        moved(frame, to: dfa.next(frame.state, byte), reading: byte)
    }

    /// ``step(_:_:in:)`` in `frame`'s own rule, read in place (no copy of the rule's automaton,
    /// whose arrays a copy would retain and release on every byte of a hot loop).
    @inline(__always)
    func step(_ frame: PushdownFrame, _ byte: UInt8) -> PushdownFrame? {
        moved(frame, to: rules[Int(frame.rule)].transitions[DFA.transitionIndex(Int(frame.state), Int(byte))], reading: byte)
    }

    /// `frame` moved to `target` (−1: no move) by reading `byte`, its count moved and checked.
    @inline(__always)
    private func moved(_ frame: PushdownFrame, to target: Int32, reading byte: UInt8) -> PushdownFrame? {
        guard target >= 0 else { return nil }
        var moved = frame
        moved.state = target
        if hasCounters, let counter = counters[Int(frame.rule)] {
            moved.count = counter.count(after: frame.count, at: frame.state, reading: byte)
            guard counter.isLive(target, moved.count) else { return nil }
        }
        return moved
    }

    /// The bytes `frame` can read along its rule's byte edges.
    func outgoingBytes(_ frame: PushdownFrame) -> ByteSet {
        let dfa = rules[Int(frame.rule)]
        guard hasCounters, counters[Int(frame.rule)] != nil else { return dfa.outgoingBytes(frame.state) }
        var bytes = ByteSet()
        for byte in dfa.outgoingBytes(frame.state).bytes where step(frame, byte, in: dfa) != nil { bytes.insert(byte) }
        return bytes
    }

    /// Whether `bytes[index...]` can be consumed starting from `frame` (its `parent` the rest
    /// of the stack; depth-first, scratch frames).
    /// With items of `uniqueItems` arrays, the store's `token` must be `bytes`: it reads the
    /// items' text there, and the walk must end where the output can go on.
    func accepts(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, frame: PushdownFrame,
                 store: inout ScratchFrames, emptyMoves: Int = 0) -> Bool {
        // A loop while there is one way on (a byte edge alone, or a completion alone), a
        // recursion where there are several; rules are read in place, not copied.
        var index = start, frame = frame, emptyMoves = emptyMoves
        while true {
            store.consumed = index
            if index == bytes.count { return !hasDistinctItems || canGoOn(frame, store: &store) }
            guard emptyMoves < 256 else { return false }
            let byte = bytes[index]
            let rule = Int(frame.rule), state = Int(frame.state)
            let callCount = rules[rule].ruleEdges[state].count
            let completes = frame.parent >= 0 && rules[rule].isFinal[state]
            if let moved = step(frame, byte) {
                if callCount == 0, !completes {
                    (frame, index, emptyMoves) = (moved, index + 1, 0)
                    continue
                }
                if accepts(bytes, from: index + 1, frame: moved, store: &store) { return true }
            }
            for call in 0 ..< callCount {
                let edge = rules[rule].ruleEdges[state][call]
                guard first[Int(edge.rule)].contains(byte) || nullable[Int(edge.rule)] else { continue }
                let mark = store.count
                store.consumed = index
                let returnFrame = store.push(PushdownFrame(rule: frame.rule, state: edge.target, count: frame.count, parent: frame.parent))
                let found = accepts(bytes, from: index, frame: calledFrame(edge.rule, returningTo: returnFrame, store: store),
                                    store: &store, emptyMoves: emptyMoves + 1)
                store.truncate(to: mark)
                if found { return true }
            }
            guard completes else { return false }
            store.consumed = index
            guard let below = popped(frame, store: &store) else { return false }
            (frame, emptyMoves) = (below, emptyMoves + 1)
        }
    }
}

// MARK: Determinizing the rules

extension PushdownAutomaton {
    /// Grammars from this many NFA states on determinize their rules on several threads
    /// (below it, starting a thread costs more than it saves).
    static let parallelStateThreshold = 4096

    /// Each rule's automaton: the one it was defined by, or its body determinized, trimmed and
    /// minimised. With `threads` > 1 and a large grammar, rules are taken one at a time by
    /// that many threads, each with its own ε-closure over the shared automaton; the
    /// automata are the same whichever thread builds them. Past a limit, the rules are
    /// determinized again one by one, so the error names the rule a single thread would.
    static func determinize(_ grammar: Grammar, stateLimit: Int, threads: Int) throws(GrammarError) -> [DFA] {
        // One reading of the rules' shared automaton for all of them.
        let reachable = ReachableNFA(everythingIn: grammar.automaton, ends: grammar.rules.map(\.body.end))
        if threads > 1, reachable.stateCount >= parallelStateThreshold,
           let built = determinizeInParallel(grammar, reachable: reachable, stateLimit: stateLimit, threads: threads) {
            return built
        }
        var compiled: [DFA] = []
        var total = 0
        let meter = CompilationMeter.current
        var closure = EpsilonClosure(reachable)
        for rule in grammar.rules {
            do throws(DFA.TooLarge) {
                let dfa: DFA
                if let automaton = rule.automaton { dfa = automaton } else { dfa = try DFA(rule.body, closure: &closure, stateLimit: stateLimit) }
                total += dfa.stateCount
                guard total <= stateLimit else { throw DFA.TooLarge() }
                compiled.append(dfa)
                try meter?.checkConstruction(bytes: total * CompilationMeter.bytesPerDFAState, "determinizing rule '\(rule.name)'")
            } catch {
                throw error.budgetError ?? .budgetExceeded(what: "automaton states (rule '\(rule.name)')", limit: stateLimit)
            }
        }
        return compiled
    }

    /// ``determinize(_:stateLimit:threads:)`` on `threads` threads; `nil` when a rule went
    /// past a limit (the caller then finds which, on one thread).
    private static func determinizeInParallel(_ grammar: Grammar, reachable: ReachableNFA<ByteLabel>, stateLimit: Int, threads: Int) -> [DFA]? {
        let meter = CompilationMeter.current
        let rules = grammar.rules
        let pending = rules.indices.filter { rules[$0].automaton == nil }
        let built = Mutex([DFA?](repeating: nil, count: rules.count))
        let next = Atomic<Int>(0), total = Atomic<Int>(rules.reduce(0) { $0 + ($1.automaton?.stateCount ?? 0) })
        let failed = Atomic<Bool>(false)
        DispatchQueue.concurrentPerform(iterations: min(threads, pending.count)) { _ in
            // The meter is a task-local: bound again on each thread.
            CompilationMeter.$current.withValue(meter) {
                var closure = EpsilonClosure(reachable)
                while !failed.load(ordering: .relaxed) {
                    let taken = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard taken < pending.count else { return }
                    let rule = pending[taken]
                    do {
                        let dfa = try DFA(rules[rule].body, closure: &closure, stateLimit: stateLimit)
                        let states = total.wrappingAdd(dfa.stateCount, ordering: .relaxed).newValue
                        guard states <= stateLimit else { throw DFA.TooLarge() }
                        try meter?.checkConstruction(bytes: states * CompilationMeter.bytesPerDFAState, "determinizing rule '\(rules[rule].name)'")
                        built.withLock { $0[rule] = dfa }
                    } catch {
                        failed.store(true, ordering: .relaxed)
                    }
                }
            }
        }
        guard !failed.load(ordering: .relaxed) else { return nil }
        return built.withLock { automata in rules.indices.map { automata[$0] ?? rules[$0].automaton! } }
    }
}

/// A place on ``PushdownAutomaton``'s walk through an item's completions: a frame, its
/// callers on the walk's own stack, the text's length there, and the next move to try (−1:
/// whether it completes; 0–255: bytes; from 256: rule edges).
private struct CompletionWalkPlace {
    var frame: PushdownFrame
    var caller: Int
    var textCount: Int
    var move: Int
}
