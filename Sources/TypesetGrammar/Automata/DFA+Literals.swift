/// A language less finitely many strings, built minimal directly: what an object's "any
/// other key" is (every quoted key but the declared names), without a trie spelled as rows,
/// a product, or a subset construction and Hopcroft's refinement after it.
///
/// The literals are read into a trie whose nodes each stand at the state of `self` their
/// prefix reaches. A node moves like its state of `self`, except on the bytes that continue a
/// literal, which go to the child; the node that ends a literal is not final. Off the trie,
/// the automaton is `self`.
///
///     self: "any key"           trie of "id", "item"         result
///     q0 -"-> q1 (-x-> q1)     n0 -"-> n1 -i-> n2 -d-> n3     n3 -"-> (no move: "id" is out)
///              q1 -"-> q2             n2 -t-> n4 …            n2 -x-> q1 for other bytes x
///
/// States are merged bottom-up, children before parents: a state's class is found from its
/// finality and its row of classes, hashed as a sum of one term per byte so that a node's
/// hash is its state's hash with the children's terms exchanged (O(children) per node), and
/// confirmed row by row on a hash match. `self`'s states, distinct already, are classes of
/// their own, so a node that behaves as a state of `self` (a literal `self` does not accept
/// past it, say) becomes that state.
extension DFA {
    /// The strings of this language that are not in `literals`, as a trimmed, minimal
    /// automaton numbered breadth-first (equal to `subtracting(DFA(literals: literals))`).
    /// `self` must be trimmed and minimal, without rule edges. O(total bytes of the literals
    /// + states of the result × 256).
    ///
    /// - Throws: `DFA.TooLarge` past `stateLimit` trie nodes, or past the compilation's
    ///   budget.
    func subtracting(literals: [[UInt8]], stateLimit: Int = 1 << 16) throws(TooLarge) -> DFA {
        precondition(!hasRuleEdges, "literals are subtracted from regular automata")
        guard !literals.isEmpty, !isEmptyLanguage else { return self }
        let trie = try LiteralTrie(literals, walking: self, stateLimit: stateLimit)
        // Per state of `self`, its row's hash and its number of bytes with a move; classes
        // 0 ..< stateCount are its states.
        var stateHashes = [UInt64](repeating: 0, count: stateCount), moveCounts = [Int](repeating: 0, count: stateCount)
        for state in 0 ..< stateCount {
            stateHashes[state] = isFinal[state] ? LiteralTrie.finalTerm : 0
            forEachRun(of: state) { bytes, target in
                for byte in bytes { stateHashes[state] &+= LiteralTrie.term(byte, target) }
                moveCounts[state] += bytes.count
            }
        }
        // Each class's representative: a state of `self` (below `stateCount`), or a trie node
        // (`stateCount + node`).
        var representatives = Array(0 ..< Int32(stateCount))
        var classesByHash: [UInt64: [Int32]] = [:]
        for state in 0 ..< stateCount { classesByHash[stateHashes[state], default: []].append(Int32(state)) }
        var nodeClass = [Int32](repeating: -1, count: trie.nodeCount)
        var row = [Int32](repeating: -1, count: 256), other = [Int32](repeating: -1, count: 256)
        let meter = CompilationMeter.current
        for node in (0 ..< trie.nodeCount).reversed() {
            if let meter, node & 1023 == 0 {
                try meter.checkConstruction(bytes: representatives.count * CompilationMeter.bytesPerDFAState, "subtracting literals")
            }
            let state = Int(trie.states[node])
            let isFinal = classIsFinal(stateCount + node, trie: trie)
            var hash = stateHashes[state] &- (self.isFinal[state] ? LiteralTrie.finalTerm : 0) &+ (isFinal ? LiteralTrie.finalTerm : 0)
            var movesLeft = moveCounts[state]
            var child = trie.firstChild[node]
            while child >= 0 {
                let byte = Int(trie.bytes[Int(child)])
                hash &-= LiteralTrie.term(byte, next(Int32(state), UInt8(byte)))
                movesLeft -= 1
                let target = nodeClass[Int(child)]
                if target >= 0 {
                    hash &+= LiteralTrie.term(byte, target)
                    movesLeft += 1
                }
                child = trie.nextSibling[Int(child)]
            }
            guard isFinal || movesLeft > 0 else { continue }  // a dead node: no move leads to it
            var found: Int32? = nil
            if let candidates = classesByHash[hash] {
                classRow(of: stateCount + node, trie: trie, nodeClass: nodeClass, into: &row)
                found = candidates.first { candidate in
                    let representative = Int(representatives[Int(candidate)])
                    classRow(of: representative, trie: trie, nodeClass: nodeClass, into: &other)
                    return classIsFinal(representative, trie: trie) == isFinal && Self.rowsAreEqual(row, other)
                }
            }
            if let found {
                nodeClass[node] = found
            } else {
                nodeClass[node] = Int32(representatives.count)
                classesByHash[hash, default: []].append(Int32(representatives.count))
                representatives.append(Int32(stateCount + node))
            }
        }
        // The classes reachable from the root's, numbered breadth-first in byte order (the
        // order of `RowsAsRuns.quotient(_:)`), each spelled as a row.
        let start = nodeClass[0]
        guard start >= 0 else { return .empty }
        var renumber = [Int32](repeating: -1, count: representatives.count)
        var order: [Int32] = [start]
        renumber[Int(start)] = 0
        var transitions: [Int32] = []
        transitions.reserveCapacity(representatives.count << 8)
        var finals: [Bool] = []
        var cursor = 0
        while cursor < order.count {
            let representative = Int(representatives[Int(order[cursor])])
            cursor += 1
            row.fill(0 ..< 256, with: -1)
            forEachClassRun(of: representative, trie: trie, nodeClass: nodeClass) { bytes, target in
                if renumber[Int(target)] < 0 {
                    renumber[Int(target)] = Int32(order.count)
                    order.append(target)
                }
                row.fill(bytes, with: renumber[Int(target)])
            }
            transitions.append(contentsOf: row)
            finals.append(classIsFinal(representative, trie: trie))
        }
        return DFA(transitions: transitions, ruleEdges: [[RuleEdge]](repeating: [], count: finals.count), isFinal: finals)
    }

    /// The row of classes of `representative` (a state of `self`, or `stateCount + node`).
    private func classRow(of representative: Int, trie: LiteralTrie, nodeClass: [Int32], into row: inout [Int32]) {
        row.fill(0 ..< 256, with: -1)
        forEachClassRun(of: representative, trie: trie, nodeClass: nodeClass) { bytes, target in row.fill(bytes, with: target) }
    }

    /// Calls `body` with the runs of `representative`'s row of classes in byte order: its
    /// state's runs, cut where a child takes a byte (a dead child's byte left out).
    private func forEachClassRun(of representative: Int, trie: LiteralTrie, nodeClass: [Int32], _ body: (_ bytes: Range<Int>, _ target: Int32) -> Void) {
        let node = representative - stateCount
        let state = node < 0 ? representative : Int(trie.states[node])
        var child = node < 0 ? -1 : trie.firstChild[node]
        forEachRun(of: state) { bytes, target in
            var start = bytes.lowerBound
            // Children stand on bytes where the state moves, in ascending order.
            while child >= 0, Int(trie.bytes[Int(child)]) < bytes.upperBound {
                let byte = Int(trie.bytes[Int(child)])
                if start < byte { body(start ..< byte, target) }
                if nodeClass[Int(child)] >= 0 { body(byte ..< byte + 1, nodeClass[Int(child)]) }
                start = byte + 1
                child = trie.nextSibling[Int(child)]
            }
            if start < bytes.upperBound { body(start ..< bytes.upperBound, target) }
        }
    }

    /// Whether two 256-entry rows are equal, sixteen entries at a time.
    private static func rowsAreEqual(_ first: [Int32], _ second: [Int32]) -> Bool {
        first.withUnsafeBytes { first in
            second.withUnsafeBytes { second in
                var differences = SIMD16<Int32>()
                for offset in stride(from: 0, to: 1024, by: 64) {
                    differences |= first.loadUnaligned(fromByteOffset: offset, as: SIMD16<Int32>.self) ^ second.loadUnaligned(fromByteOffset: offset, as: SIMD16<Int32>.self)
                }
                return differences == SIMD16()
            }
        }
    }

    private func classIsFinal(_ representative: Int, trie: LiteralTrie) -> Bool {
        let node = representative - stateCount
        return node < 0 ? isFinal[representative] : isFinal[Int(trie.states[node])] && !trie.endsLiteral[node]
    }
}

/// The trie of a set of literals, each node at the state of an automaton its prefix reaches.
/// Nodes are numbered in the order they are created, so every child comes after its parent;
/// a node's children are a list in ascending byte order. A literal the automaton rejects is
/// followed only as far as the automaton goes.
struct LiteralTrie {
    /// Per node: the automaton's state, the byte that leads to it from its parent, whether a
    /// literal ends there, its first child and next sibling (-1: none).
    var states: [Int32] = [0]
    var bytes: [UInt8] = [0]
    var endsLiteral: [Bool] = [false]
    var firstChild: [Int32] = [-1]
    var nextSibling: [Int32] = [-1]
    var nodeCount: Int { states.count }

    init(_ literals: [[UInt8]], walking automaton: DFA, stateLimit: Int) throws(DFA.TooLarge) {
        var lastChild: [Int32] = [-1]
        let sorted = literals.sorted { $0.lexicographicallyPrecedes($1) }
        let meter = CompilationMeter.current
        // The path of the previous literal: its nodes, by depth.
        var path: [Int32] = [0]
        var previous: [UInt8] = []
        for (index, literal) in sorted.enumerated() {
            if let meter, index & 255 == 255 {
                try meter.checkConstruction(bytes: states.count * 32, "spelling literals")
            }
            // Sorted, a literal shares with the trie exactly its common prefix with the one before.
            var depth = 0
            while depth < literal.count, depth < previous.count, depth + 1 < path.count, literal[depth] == previous[depth] { depth += 1 }
            path.removeSubrange((depth + 1)...)
            var node = path[depth]
            var reached = true
            for byte in literal[depth...] {
                let target = automaton.next(states[Int(node)], byte)
                guard target >= 0 else {
                    reached = false
                    break
                }
                guard states.count < stateLimit else { throw DFA.TooLarge() }
                let child = Int32(states.count)
                states.append(target)
                bytes.append(byte)
                endsLiteral.append(false)
                firstChild.append(-1)
                nextSibling.append(-1)
                lastChild.append(-1)
                if lastChild[Int(node)] >= 0 { nextSibling[Int(lastChild[Int(node)])] = child } else { firstChild[Int(node)] = child }
                lastChild[Int(node)] = child
                path.append(child)
                node = child
            }
            if reached { endsLiteral[Int(node)] = true }
            previous = literal
        }
    }

    static let finalTerm: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// One byte's part of a row's hash: `target` (a class, or -1) at `byte`, mixed (the
    /// SplitMix64 finaliser) so that sums of terms rarely collide.
    static func term(_ byte: Int, _ target: Int32) -> UInt64 {
        guard target >= 0 else { return 0 }
        var z = UInt64(byte) << 32 | UInt64(UInt32(target))
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
