/// Cuts text at special tokens before the BPE sees it, with llama.cpp's semantics
/// (`tokenizer_st_partition`): special tokens are taken one at a time, longest text first (ties
/// by id), and each is cut out of every stretch of text still unclaimed, leftmost occurrence
/// first, occurrences not overlapping. User-defined tokens are always cut out; control and
/// unknown tokens only when special tokens are parsed.
///
/// Only the tokens that occur somewhere in the text are processed: one pass over the text
/// walks a byte trie of all special tokens to find them, so the cost does not grow with the
/// number of special tokens in the vocabulary (Gemma 3 has about 6,400).
struct SpecialTokenSplitter: Sendable {
    /// A stretch of the input: text to encode, or a special token.
    struct Fragment: Equatable {
        var start: Int
        var end: Int
        /// The special token, or -1 for text.
        var token: Int32
    }

    /// Special tokens in processing order.
    private let ids: [Int32]
    private let texts: [[UInt8]]
    /// Whether token `order` is cut out even when special tokens are not parsed.
    private let isUserDefined: [Bool]
    /// Trie over the token texts: node 0 is the root.
    private var childStart: [Int32] = []
    private var childBytes: [UInt8] = []
    private var childNodes: [Int32] = []
    private var terminal: [Int32] = []
    private var startsSomeToken = [Bool](repeating: false, count: 256)

    var isEmpty: Bool { ids.isEmpty }

    init(vocabulary: Vocabulary) {
        var candidates: [(id: Int32, text: [UInt8], userDefined: Bool)] = []
        for id in 0 ..< vocabulary.count {
            let attributes = vocabulary.attributes[id]
            guard !attributes.isDisjoint(with: [.control, .userDefined, .unknown]) else { continue }
            let text = Array(vocabulary.tokens[id].utf8)
            guard !text.isEmpty else { continue }
            candidates.append((Int32(id), text, attributes.isDisjoint(with: .special)))
        }
        candidates.sort { $0.text.count != $1.text.count ? $0.text.count > $1.text.count : $0.id < $1.id }
        ids = candidates.map(\.id)
        texts = candidates.map(\.text)
        isUserDefined = candidates.map(\.userDefined)
        buildTrie()
    }

    private mutating func buildTrie() {
        // Build with per-node dictionaries, then flatten to sorted child lists.
        var children: [[UInt8: Int32]] = [[:]]
        var terminals: [Int32] = [-1]
        for (order, text) in texts.enumerated() {
            var node = 0
            for byte in text {
                if let child = children[node][byte] {
                    node = Int(child)
                } else {
                    children.append([:])
                    terminals.append(-1)
                    children[node][byte] = Int32(children.count - 1)
                    node = children.count - 1
                }
            }
            if terminals[node] < 0 { terminals[node] = Int32(order) }
            startsSomeToken[Int(text[0])] = true
        }
        childStart = [0]
        for node in children.indices {
            for (byte, child) in children[node].sorted(by: { $0.key < $1.key }) {
                childBytes.append(byte)
                childNodes.append(child)
            }
            childStart.append(Int32(childBytes.count))
        }
        terminal = terminals
    }

    @inline(__always)
    private func child(of node: Int, byte: UInt8) -> Int? {
        var index = Int(childStart[node])
        let end = Int(childStart[node + 1])
        while index < end {
            if childBytes[index] == byte { return Int(childNodes[index]) }
            index += 1
        }
        return nil
    }

    /// The fragments of `text`, in order.
    func split(_ text: UnsafeBufferPointer<UInt8>, parseSpecialTokens: Bool) -> [Fragment] {
        guard !text.isEmpty else { return [] }
        var fragments = [Fragment(start: 0, end: text.count, token: -1)]
        guard !ids.isEmpty else { return fragments }

        // Which special tokens occur at all (each possibly several times).
        var occurs = [Bool](repeating: false, count: ids.count)
        var anyOccurs = false
        for position in 0 ..< text.count where startsSomeToken[Int(text[position])] {
            var node = 0
            var index = position
            while index < text.count, let next = child(of: node, byte: text[index]) {
                node = next
                index += 1
                let order = Int(terminal[node])
                if order >= 0 && (parseSpecialTokens || isUserDefined[order]) {
                    occurs[order] = true
                    anyOccurs = true
                }
            }
        }
        guard anyOccurs else { return fragments }

        var next: [Fragment] = []
        for order in ids.indices where occurs[order] {
            let needle = texts[order]
            let token = ids[order]
            next.removeAll(keepingCapacity: true)
            for fragment in fragments {
                guard fragment.token < 0 else { next.append(fragment); continue }
                var start = fragment.start
                while let match = Self.find(needle, in: text, from: start, to: fragment.end) {
                    if match > start { next.append(Fragment(start: start, end: match, token: -1)) }
                    next.append(Fragment(start: match, end: match + needle.count, token: token))
                    start = match + needle.count
                }
                if start < fragment.end { next.append(Fragment(start: start, end: fragment.end, token: -1)) }
            }
            swap(&fragments, &next)
        }
        return fragments
    }

    /// The first occurrence of `needle` lying entirely inside `text[from ..< to]`.
    private static func find(_ needle: [UInt8], in text: UnsafeBufferPointer<UInt8>, from: Int, to: Int) -> Int? {
        let length = needle.count
        guard to - from >= length else { return nil }
        let first = needle[0]
        var position = from
        let last = to - length
        return needle.withUnsafeBufferPointer { needle in
            while position <= last {
                if text[position] == first {
                    var index = 1
                    while index < length && text[position + index] == needle[index] { index += 1 }
                    if index == length { return position }
                }
                position += 1
            }
            return nil
        }
    }
}
