/// What one automaton position decides about every token, computed once per compiled
/// grammar: the context-independent part of the next-token mask.
///
/// For position `(rule, state)` each token is
/// - **accepted** when its bytes can be consumed without popping `rule`'s frame, whatever
///   lies below it on the stack;
/// - **rejected** when no path consumes its bytes and the rule cannot end before a byte
///   that may follow the rule somewhere in the grammar;
/// - **undecided** otherwise: the rule can end inside the token and what comes next depends
///   on the stack. The matcher checks these few tokens against the real stack.
///
/// Accepted tokens are stored in whichever form is smallest: their list, the list of the
/// other tokens (rejected), or a bitset.
struct PositionMask: Sendable {
    enum Accepted: Sendable, Hashable {
        case listed([Int32])
        /// Every text token except these (the rejected and undecided ones).
        case allExcept([Int32])
        case bitset([UInt32])
    }

    var accepted: Accepted
    var undecided: [Int32]
    var acceptedCount: Int
    var rejectedCount: Int
    /// How long the trie walk took (for researchers; not part of the mask's meaning).
    var computeNanoseconds: UInt64 = 0
    /// Accepted tokens taken wholesale from a plain slice rather than walked (for researchers).
    var wholesaleCount = 0

    var storageBytes: Int {
        let body: Int
        switch accepted {
        case .listed(let list), .allExcept(let list): body = list.count * 4
        case .bitset(let words): body = words.count * 4
        }
        return body + undecided.count * 4
    }
}

extension PositionMask {
    /// Walks the vocabulary trie from position `(rule, state)`, with `count` characters read
    /// when the rule counts them, with that frame at the bottom of a scratch stack; popping
    /// past it is the "frontier".
    ///
    /// `unreadableLength` is the length of the shortest plain word `rule`'s byte edges cannot
    /// read from `state` (`PlainTextSlice.unreadableLengths(in:)`). Where it exceeds a slice's
    /// longest token (inside string content, a key, a `.*` pattern) and a counted rule can read
    /// that many more characters, the slice's tokens are accepted without a walk and only the
    /// vocabulary's other tokens are walked; `nil` walks every token (the reference the tests
    /// compare against). Both give the same mask.
    ///
    /// `exactLength`, in a counted rule: tokens longer than this many bytes are left
    /// undecided when the rule's automaton reads them (the mask then serves counts that differ
    /// only farther ahead; see `PositionMasks.CountClasses`).
    static func compute(
        rule: Int32, state: Int32, count: Int32 = 0, exactLength: Int32? = nil, automaton: PushdownAutomaton,
        vocabulary: GrammarVocabulary, unreadableLength: Int32? = nil
    ) -> PositionMask {
        let counter = automaton.counters[Int(rule)]
        if let unreadableLength, let slice = vocabulary.plainSlices.first(where: { slice in
            slice.maximumLength < unreadableLength && Int32(slice.maximumLength) <= exactLength ?? Int32.max
                && (counter?.readsAnyCharacters(Int32(slice.maximumLength), from: count) ?? true)
        }) {
            let (accepted, undecided) = walk(
                rule: rule, state: state, count: count, exactLength: exactLength, automaton: automaton, trie: slice.otherTrie)
            return make(accepted: accepted, undecided: undecided, plain: slice, vocabulary: vocabulary)
        }
        let (accepted, undecided) = walk(
            rule: rule, state: state, count: count, exactLength: exactLength, automaton: automaton, trie: vocabulary.trie)
        return make(accepted: accepted, undecided: undecided, plain: nil, vocabulary: vocabulary)
    }

    /// The tokens of `trie` that position `(rule, state)` with `count` accepts, and those it
    /// leaves undecided (the rest are rejected).
    static func walk(
        rule: Int32, state: Int32, count: Int32 = 0, exactLength: Int32? = nil, automaton: PushdownAutomaton, trie: TokenTrie
    ) -> (accepted: [Int32], undecided: [Int32]) {
        var accepted: [Int32] = []
        var undecided: [Int32] = []
        func markSubtree(_ node: Int, into list: inout [Int32]) {
            let end = Int(trie.subtreeEnds[node])
            list.append(contentsOf: trie.tokenIDs[Int(trie.tokenStarts[node]) ..< Int(trie.tokenStarts[end])])
        }
        // The tokens ending at `node`: none or one mostly, read one by one (a slice of the
        // array per node would retain and release it, most of the walk's time in a string).
        @inline(__always) func appendTokens(endingAt node: Int, to list: inout [Int32]) {
            for index in Int(trie.tokenStarts[node]) ..< Int(trie.tokenStarts[node + 1]) { list.append(trie.tokenIDs[index]) }
        }
        let follow = automaton.follow[Int(rule)]
        let nodeCount = trie.nodeCount
        let depthLimit = trie.maximumDepth + 1
        // Inside an item of a `uniqueItems` array, a token that ends where only finitely many
        // completions go on (the item's completion alone, or a bounded item at its maximum
        // length), is undecided: they may all repeat items written before. So is one that
        // ends an item, where the rule's completion can complete one.
        let endsItem = automaton.hasDistinctItems && automaton.endsDistinctItem[Int(rule)]
        if automaton.isTerminal[Int(rule)] {
            // One deterministic automaton, no stack: one state per depth.
            let dfa = automaton.rules[Int(rule)]
            let counter = automaton.counters[Int(rule)]
            var states = [Int32](repeating: -1, count: depthLimit)
            var counts = [Int32](repeating: 0, count: depthLimit)
            var undecidedBelow = [Bool](repeating: false, count: depthLimit)
            states[0] = state
            counts[0] = count
            // Past `exactLength` bytes the count is not followed: what the automaton reads is undecided.
            let exactDepth = exactLength.map(Int.init) ?? Int.max
            dfa.transitions.withUnsafeBufferPointer { transitions in
                dfa.isFinal.withUnsafeBufferPointer { isFinal in
                    var node = 0
                    while node < nodeCount {
                        let depth = Int(trie.depths[node])
                        let parentState = states[depth - 1]
                        let byte = trie.nodeBytes[node]
                        let undecidedHere = undecidedBelow[depth - 1] || (isFinal[Int(parentState)] && follow.contains(byte))
                        var next = transitions[DFA.transitionIndex(Int(parentState), Int(byte))]
                        if next >= 0, let counter, depth <= exactDepth {
                            let moved = counter.count(after: counts[depth - 1], at: parentState, reading: byte)
                            if counter.isLive(next, moved) { counts[depth] = moved } else { next = -1 }
                        }
                        if next < 0 {
                            if undecidedHere { markSubtree(node, into: &undecided) }
                            node = Int(trie.subtreeEnds[node])
                            continue
                        }
                        states[depth] = next
                        undecidedBelow[depth] = undecidedHere
                        let atItemEnd = automaton.mayRunOutOfItems(PushdownFrame(rule: rule, state: next, count: counts[depth], parent: -1))
                        if depth <= exactDepth, !atItemEnd {
                            appendTokens(endingAt: node, to: &accepted)
                        } else {
                            appendTokens(endingAt: node, to: &undecided)
                        }
                        node += 1
                    }
                }
            }
        } else {
            var configurations: [PushdownFrame] = [PushdownFrame(rule: rule, state: state, count: count, parent: -1)]
            var roots: [Bool] = [true]
            var store = ScratchFrames()
            var completed = [Bool](repeating: false, count: depthLimit)
            var undecidedBelow = [Bool](repeating: false, count: depthLimit)
            var rangeStart = [Int](repeating: 0, count: depthLimit)
            var rangeEnd = [Int](repeating: 0, count: depthLimit)
            var frameMark = [Int](repeating: 0, count: depthLimit)
            completed[0] = automaton.close(&configurations, roots: &roots, from: 0, store: &store)
            undecidedBelow[0] = store.metItemEnd
            rangeEnd[0] = configurations.count
            frameMark[0] = store.count
            var node = 0
            var cachedRule: Int32 = -1
            var dfa = DFA.empty
            while node < nodeCount {
                let depth = Int(trie.depths[node])
                let byte = trie.nodeBytes[node]
                let undecidedHere = undecidedBelow[depth - 1] || (completed[depth - 1] && follow.contains(byte))
                let parentStart = rangeStart[depth - 1], parentEnd = rangeEnd[depth - 1]
                // Fast path: one configuration that moves to a state with no call and no pop
                // (inside a string, a number, a literal): no closure to compute.
                if parentEnd - parentStart == 1 {
                    let configuration = configurations[parentStart]
                    if configuration.rule != cachedRule {
                        cachedRule = configuration.rule
                        dfa = automaton.rules[Int(cachedRule)]
                    }
                    guard let moved = automaton.step(configuration, byte, in: dfa) else {
                        if undecidedHere { markSubtree(node, into: &undecided) }
                        node = Int(trie.subtreeEnds[node])
                        continue
                    }
                    let final = dfa.isFinal[Int(moved.state)]
                    if !dfa.callsRules[Int(moved.state)] && !(final && configuration.parent >= 0) {
                        let slot = parentEnd
                        if configurations.count > slot {
                            configurations[slot] = moved
                            roots[slot] = true
                            if configurations.count > slot + 1 {
                                configurations.removeLast(configurations.count - slot - 1)
                                roots.removeLast(roots.count - slot - 1)
                            }
                        } else {
                            configurations.append(moved)
                            roots.append(true)
                        }
                        store.truncate(to: frameMark[depth - 1])
                        completed[depth] = final
                        rangeStart[depth] = slot
                        rangeEnd[depth] = slot + 1
                        frameMark[depth] = frameMark[depth - 1]
                        undecidedBelow[depth] = undecidedHere
                        if automaton.mayRunOutOfItems(moved) {
                            appendTokens(endingAt: node, to: &undecided)
                        } else {
                            appendTokens(endingAt: node, to: &accepted)
                        }
                        node += 1
                        continue
                    }
                }
                configurations.removeSubrange(parentEnd...)
                roots.removeSubrange(parentEnd...)
                store.truncate(to: frameMark[depth - 1])
                let start = configurations.count
                for index in parentStart ..< parentEnd {
                    let configuration = configurations[index]
                    guard let moved = automaton.step(configuration, byte) else { continue }
                    if !configurations[start...].contains(moved) {
                        configurations.append(moved)
                        roots.append(true)
                    }
                }
                guard configurations.count > start else {
                    if undecidedHere { markSubtree(node, into: &undecided) }
                    node = Int(trie.subtreeEnds[node])
                    continue
                }
                store.metItemEnd = false
                completed[depth] = automaton.close(&configurations, roots: &roots, from: start, store: &store)
                rangeStart[depth] = start
                rangeEnd[depth] = configurations.count
                frameMark[depth] = store.count
                // An item ended inside the token: whether it repeats one is for the matcher.
                let itemEnded = store.metItemEnd
                undecidedBelow[depth] = undecidedHere || itemEnded
                if itemEnded || (endsItem && completed[depth])
                    || (automaton.hasDistinctItems && configurations[start...].contains(where: automaton.mayRunOutOfItems)) {
                    appendTokens(endingAt: node, to: &undecided)
                } else {
                    appendTokens(endingAt: node, to: &accepted)
                }
                node += 1
            }
        }
        return (accepted, undecided)
    }

    /// Picks the smallest storage for the accepted set: `accepted` plus, when `plain` is
    /// given, every plain token (`accepted` then lists only other tokens).
    static func make(accepted: [Int32], undecided: [Int32], plain: PlainTextSlice?, vocabulary: GrammarVocabulary) -> PositionMask {
        let textCount = vocabulary.tokenBytes.count - vocabulary.trie.emptyTokens.count
        let acceptedCount = accepted.count + (plain?.tokens.count ?? 0)
        let notAcceptedCount = textCount - acceptedCount
        let rejectedCount = notAcceptedCount - undecided.count
        let bitsetBytes = (vocabulary.size + 31) / 32 * 4
        let form: Accepted
        if acceptedCount * 4 <= min(bitsetBytes, notAcceptedCount * 4) {
            let sorted = accepted.sorted()
            form = .listed(plain.map { mergedAscending($0.tokens, sorted) } ?? sorted)
        } else {
            var words = plain?.bitset ?? [UInt32](repeating: 0, count: (vocabulary.size + 31) / 32)
            for token in accepted { words[Int(token) >> 5] |= 1 << UInt32(token & 31) }
            if notAcceptedCount * 4 <= bitsetBytes {
                // The text tokens not accepted, ascending: the walked tokens (all of them, or
                // the slice's others) whose bit is clear.
                var others: [Int32] = []
                others.reserveCapacity(notAcceptedCount)
                func keep(_ token: Int32) {
                    if words[Int(token) >> 5] & (1 << UInt32(token & 31)) == 0 { others.append(token) }
                }
                if let plain {
                    for token in plain.others { keep(token) }
                } else {
                    for (id, bytes) in vocabulary.tokenBytes.enumerated() where !bytes.isEmpty { keep(Int32(id)) }
                }
                form = .allExcept(others)
            } else {
                form = .bitset(words)
            }
        }
        return PositionMask(
            accepted: form, undecided: undecided.sorted(), acceptedCount: acceptedCount, rejectedCount: rejectedCount,
            wholesaleCount: plain?.tokens.count ?? 0)
    }

    /// Two ascending, disjoint lists as one ascending list.
    static func mergedAscending(_ a: [Int32], _ b: [Int32]) -> [Int32] {
        var result: [Int32] = []
        result.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i] < b[j]) { result.append(a[i]); i += 1 } else { result.append(b[j]); j += 1 }
        }
        return result
    }
}
