/// A slice of the vocabulary's *plain* tokens — those made only of characters that a JSON
/// string may hold unescaped, in complete UTF-8 — set apart once per vocabulary so that a
/// position inside string content can accept them all at once and walk only the other tokens.
///
/// The idea is llguidance's token slices (`parser/src/earley/slicer.rs`): inside a string,
/// a key or a `.*` pattern almost every token is accepted, and a full trie walk spends its
/// time confirming that. When a rule's own byte edges read every plain word up to the
/// slice's longest token from a position, every token of the slice is accepted there whatever
/// the stack holds, and only the other tokens (quotes, backslashes, control bytes, pieces of
/// UTF-8 characters, longer plain tokens: 672 of SmolLM2's 49,152 for the whole plain slice)
/// need the walk. The mask is the same as a full walk's.
///
/// A token is plain when its bytes are characters from U+0020 to U+10FFFF in well-formed
/// UTF-8 (no overlong forms, no surrogates), other than `"` (0x22), `\` (0x5C) and DEL (0x7F).
struct PlainTextSlice: Sendable {
    /// Plain tokens of at most this many bytes are in the slice.
    let maximumLength: Int
    /// The slice's tokens, ascending.
    let tokens: [Int32]
    /// The slice as a bitset over the vocabulary (bit `id & 31` of word `id >> 5`).
    let bitset: [UInt32]
    /// The other text tokens (non-empty, not in the slice), ascending.
    let others: [Int32]
    /// A trie of `others` only.
    let otherTrie: TokenTrie

    /// The slices of a vocabulary, longest first: all plain tokens, then those of at most
    /// 16, 12 and 8 bytes (where these differ). A position that can read plain words only up
    /// to some length (the end of a `maxLength` string) still takes the shorter slices.
    static func slices(tokenBytes: [[UInt8]]) -> [PlainTextSlice] {
        let lengths = tokenBytes.map { isPlain($0) ? $0.count : 0 }
        guard let longest = lengths.max(), longest > 0 else { return [] }
        return ([longest] + [16, 12, 8].filter { $0 < longest }).map { limit in
            PlainTextSlice(tokenBytes: tokenBytes, plainLengths: lengths, maximumLength: limit)
        }
    }

    private init(tokenBytes: [[UInt8]], plainLengths: [Int], maximumLength: Int) {
        var tokens: [Int32] = [], others: [Int32] = []
        var bitset = [UInt32](repeating: 0, count: (tokenBytes.count + 31) / 32)
        var otherBytes = [[UInt8]](repeating: [], count: tokenBytes.count)
        for (id, bytes) in tokenBytes.enumerated() where !bytes.isEmpty {
            if plainLengths[id] > 0, plainLengths[id] <= maximumLength {
                tokens.append(Int32(id))
                bitset[id >> 5] |= 1 << UInt32(id & 31)
            } else {
                others.append(Int32(id))
                otherBytes[id] = bytes
            }
        }
        self.maximumLength = maximumLength
        self.tokens = tokens
        self.bitset = bitset
        self.others = others
        self.otherTrie = TokenTrie(tokens: otherBytes)
    }

    static func isPlain(_ bytes: [UInt8]) -> Bool {
        var state: Int8 = 0
        for byte in bytes {
            state = PlainUTF8.next(state, byte)
            if state < 0 { return false }
        }
        return state == 0
    }

    /// Whether `dfa` reads every plain character (as its first byte at least) from `state`:
    /// the cheap test that rules out most positions (a number, a literal) before
    /// `unreadableLengths(in:)` is worth computing for the rule.
    static func readsEveryPlainFirstByte(from state: Int32, in dfa: DFA) -> Bool {
        PlainUTF8.edges[0].allSatisfy { dfa.next(state, $0.byte) >= 0 }
    }

    /// For each state of `dfa`, the length in bytes of the shortest plain word (a prefix of
    /// plain well-formed UTF-8) whose last byte `dfa`'s byte edges cannot read from that
    /// state; `Int32.max` when it reads them all. A state whose value exceeds a slice's
    /// `maximumLength` accepts every token of the slice, whatever lies on the stack.
    ///
    /// A breadth-first search backwards over pairs (automaton state, UTF-8 decoder state),
    /// from the pairs that lack an edge.
    ///
    /// - Complexity: O(states × 256).
    static func unreadableLengths(in dfa: DFA) -> [Int32] {
        let width = PlainUTF8.stateCount
        let pairCount = dfa.stateCount * width
        var distance = [Int32](repeating: .max, count: pairCount)
        // Predecessor lists in compressed rows: count, then fill.
        var edges: [(from: Int32, to: Int32)] = []
        var queue: [Int32] = []
        var targets: [Int32] = []
        for state in 0 ..< Int32(dfa.stateCount) {
            for decoder in 0 ..< width {
                let pair = Int32(Int(state) * width + decoder)
                targets.removeAll(keepingCapacity: true)
                for (byte, decoderAfter) in PlainUTF8.edges[decoder] {
                    let target = dfa.next(state, byte)
                    if target < 0 {
                        distance[Int(pair)] = 1
                        break
                    }
                    let successor = Int32(Int(target) * width + Int(decoderAfter))
                    if !targets.contains(successor) { targets.append(successor) }
                }
                if distance[Int(pair)] == 1 {
                    queue.append(pair)
                } else {
                    for successor in targets { edges.append((successor, pair)) }
                }
            }
        }
        var rowStarts = [Int32](repeating: 0, count: pairCount + 1)
        for edge in edges { rowStarts[Int(edge.from) + 1] += 1 }
        for index in 0 ..< pairCount { rowStarts[index + 1] += rowStarts[index] }
        var predecessors = [Int32](repeating: 0, count: edges.count)
        var fill = rowStarts
        for edge in edges {
            predecessors[Int(fill[Int(edge.from)])] = edge.to
            fill[Int(edge.from)] += 1
        }
        var cursor = 0
        while cursor < queue.count {
            let pair = Int(queue[cursor])
            cursor += 1
            for index in Int(rowStarts[pair]) ..< Int(rowStarts[pair + 1]) {
                let predecessor = Int(predecessors[index])
                if distance[predecessor] == .max {
                    distance[predecessor] = distance[pair] + 1
                    queue.append(Int32(predecessor))
                }
            }
        }
        return (0 ..< dfa.stateCount).map { distance[$0 * width] }
    }
}

/// A decoder of well-formed UTF-8 restricted to plain string characters (see
/// `PlainTextSlice`). State 0 is "between characters"; the others count the continuation
/// bytes still due, with the narrower ranges after E0, ED, F0 and F4 (Unicode table 3-7).
enum PlainUTF8 {
    static let stateCount = 8
    // 0: boundary · 1: one continuation due · 2: two due · 3: three due
    // 4: after E0 (A0–BF, then one) · 5: after ED (80–9F, then one)
    // 6: after F0 (90–BF, then two) · 7: after F4 (80–8F, then two)

    /// The state after `byte`, or -1 when the byte cannot come next.
    static func next(_ state: Int8, _ byte: UInt8) -> Int8 {
        switch state {
        case 0:
            switch byte {
            case 0x20 ... 0x7E: return byte == 0x22 || byte == 0x5C ? -1 : 0
            case 0xC2 ... 0xDF: return 1
            case 0xE0: return 4
            case 0xED: return 5
            case 0xE1 ... 0xEF: return 2
            case 0xF0: return 6
            case 0xF1 ... 0xF3: return 3
            case 0xF4: return 7
            default: return -1
            }
        case 1, 2, 3: return (0x80 ... 0xBF).contains(byte) ? state - 1 : -1
        case 4: return (0xA0 ... 0xBF).contains(byte) ? 1 : -1
        case 5: return (0x80 ... 0x9F).contains(byte) ? 1 : -1
        case 6: return (0x90 ... 0xBF).contains(byte) ? 2 : -1
        case 7: return (0x80 ... 0x8F).contains(byte) ? 2 : -1
        default: return -1
        }
    }

    /// For each state, the bytes that may come next with the state after each.
    static let edges: [[(byte: UInt8, state: Int8)]] = (0 ..< stateCount).map { state in
        (0 ... 255).compactMap { byte in
            let after = next(Int8(state), UInt8(byte))
            return after < 0 ? nil : (UInt8(byte), after)
        }
    }
}
