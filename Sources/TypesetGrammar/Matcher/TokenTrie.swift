/// A vocabulary's token byte strings as a trie laid out in depth-first order, so that a
/// grammar can judge every token in one walk, sharing the work for common prefixes and
/// skipping a whole subtree as soon as the grammar rejects the byte at its root.
///
/// Example, tokens `"a"`(0), `"ab"`(1), `"b"`(2), `"abc"`(3), `"ab"`(4):
///
///     node  byte  depth  subtree end  tokens ending here
///     0     a     1      3            0
///     1     b     2      3            1, 4
///     2     c     3      3            3
///     3     b     1      4            2
///
/// Children follow their parent directly and siblings come in byte order, so the state after
/// node `i`'s parent is always the last state computed at depth `depth(i) − 1`, and "skip the
/// subtree of `i`" is "continue at `subtree end(i)`".
///
/// Tokens with no bytes (control tokens render as nothing) have no node; `emptyTokens` lists them.
public struct TokenTrie: Sendable {
    /// Token ids are `0 ..< vocabularySize`.
    public let vocabularySize: Int
    /// The longest token, in bytes (the deepest node).
    public let maximumDepth: Int
    /// Tokens with an empty byte string.
    public let emptyTokens: [Int]

    let nodeBytes: [UInt8]
    let depths: [Int32]
    let subtreeEnds: [Int32]
    /// Tokens ending at node `i`: `tokenIDs[tokenStarts[i] ..< tokenStarts[i + 1]]`.
    let tokenStarts: [Int32]
    let tokenIDs: [Int32]

    /// Nodes in the trie (one per distinct non-empty token prefix).
    public var nodeCount: Int { nodeBytes.count }

    /// Builds the trie of `tokens[id]` for every id.
    ///
    /// - Complexity: O(total bytes × log(vocabulary size)) for the sort.
    public init(tokens: [[UInt8]]) {
        vocabularySize = tokens.count
        var order = tokens.indices.filter { !tokens[$0].isEmpty }
        emptyTokens = tokens.indices.filter { tokens[$0].isEmpty }
        order.sort { a, b in
            tokens[a] == tokens[b] ? a < b : tokens[a].lexicographicallyPrecedes(tokens[b])
        }
        var nodeBytes: [UInt8] = [], depths: [Int32] = [], subtreeEnds: [Int32] = []
        var tokenStarts: [Int32] = [], tokenIDs: [Int32] = []
        var path: [Int] = []  // node index per depth - 1 along the current branch
        var pathBytes: [UInt8] = []
        for id in order {
            let token = tokens[id]
            var shared = 0
            while shared < min(pathBytes.count, token.count), pathBytes[shared] == token[shared] { shared += 1 }
            while path.count > shared {
                subtreeEnds[path.removeLast()] = Int32(nodeBytes.count)
                pathBytes.removeLast()
            }
            for byte in token[shared...] {
                path.append(nodeBytes.count)
                pathBytes.append(byte)
                nodeBytes.append(byte)
                depths.append(Int32(path.count))
                subtreeEnds.append(0)
                tokenStarts.append(Int32(tokenIDs.count))
            }
            // Tokens are sorted, so those ending at this node are appended while it is the
            // newest node: its token range is still open.
            tokenIDs.append(Int32(id))
        }
        while let node = path.popLast() { subtreeEnds[node] = Int32(nodeBytes.count) }
        tokenStarts.append(Int32(tokenIDs.count))
        self.nodeBytes = nodeBytes
        self.depths = depths
        self.subtreeEnds = subtreeEnds
        self.tokenStarts = tokenStarts
        self.tokenIDs = tokenIDs
        self.maximumDepth = Int(depths.max() ?? 0)
    }

    /// Sets, in `mask`, the bit of every token whose bytes a byte-level matcher accepts from
    /// `state`: `advance(state, byte)` returns the state after `byte`, or `nil` when the byte
    /// is not allowed there. Leaves other bits as they are (empty tokens are never set).
    ///
    /// `advance` is called once per trie node reached, not once per token byte: a prefix
    /// shared by many tokens is matched once, and a rejected byte rejects its whole subtree.
    ///
    /// - Precondition: `mask.vocabularySize == vocabularySize`.
    public func allow<State>(into mask: inout TokenBitmask, from state: State, advance: (State, UInt8) -> State?) {
        precondition(mask.vocabularySize == vocabularySize, "the mask and the trie have different vocabularies")
        var states = [State?](repeating: nil, count: maximumDepth + 1)
        states[0] = state
        var node = 0
        let count = nodeBytes.count
        while node < count {
            let depth = Int(depths[node])
            guard let parent = states[depth - 1], let next = advance(parent, nodeBytes[node]) else {
                node = Int(subtreeEnds[node])
                continue
            }
            states[depth] = next
            for index in Int(tokenStarts[node]) ..< Int(tokenStarts[node + 1]) { mask[Int(tokenIDs[index])] = true }
            node += 1
        }
    }
}
