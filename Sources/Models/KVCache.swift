/// The keys and values of the tokens a model has seen, per block, so each new token attends to
/// them without recomputing them.
///
/// Sized for `contextLength` positions when created (`TransformerModel.makeCache`), not for the
/// model's maximum: `contextLength × blockCount × 2 × keyWidth` floats. Remembers which tokens
/// it holds, so a new request that shares a prefix with them recomputes only the rest
/// (`reusablePrefixLength(for:)` and `truncate(to:)`).
///
/// Not thread-safe: one generation uses a cache at a time.
public final class KVCache {
    public let contextLength: Int
    let keyWidth: Int
    /// `keys[block]` is `contextLength × keyWidth` floats; position `p` at offset `p × keyWidth`.
    var keys: [[Float]]
    var values: [[Float]]
    /// The tokens whose keys and values are stored, in position order.
    public private(set) var tokens: [Int] = []

    /// Tokens stored.
    public var count: Int { tokens.count }

    /// Bytes of key and value storage.
    public var byteCount: Int { keys.count * 2 * contextLength * keyWidth * MemoryLayout<Float>.size }

    init(contextLength: Int, layerCount: Int, keyWidth: Int) {
        self.contextLength = contextLength
        self.keyWidth = keyWidth
        keys = Array(repeating: [Float](repeating: 0, count: contextLength * keyWidth), count: layerCount)
        values = keys
    }

    /// How many leading tokens of `prompt` are already in the cache, leaving at least one token
    /// of `prompt` to evaluate (its logits are needed).
    public func reusablePrefixLength(for prompt: [Int]) -> Int {
        var shared = 0
        while shared < min(tokens.count, prompt.count - 1), tokens[shared] == prompt[shared] { shared += 1 }
        return shared
    }

    /// Forgets every token from position `count` on.
    public func truncate(to count: Int) {
        tokens.removeLast(max(0, tokens.count - max(0, count)))
    }

    /// Forgets everything.
    public func clear() { tokens.removeAll(keepingCapacity: true) }

    func append(_ newTokens: [Int]) { tokens += newTokens }
}
