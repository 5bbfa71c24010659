import Kernels

/// The keys and values of the tokens a model has seen, per block, so each new token attends to
/// them without recomputing them.
///
/// Sized for `contextLength` positions when created (`TransformerModel.makeCache`), not for the
/// model's maximum. Keys and values are stored in half precision, as llama.cpp's default cache
/// stores them (and with the same rounding, which its attention then sees): `contextLength ×
/// blockCount × 2 × keyWidth` halves. Remembers which tokens it holds, so a new request that
/// shares a prefix with them recomputes only the rest (`reusablePrefixLength(for:)` and
/// `truncate(to:)`).
///
/// Layout ("paired halves"): position `p` of a block is `keyWidth / 2` 32-bit words; each
/// head's dimensions go in groups of 16, and word `i` of a group holds dimension `i` in its
/// low 16 bits and dimension `i + 8` in its high 16 bits, so that the two halves of a vector
/// of words convert to dimensions 0–7 and 8–15 of the group without shuffles.
///
///     dimensions  0  1  2 …  7 |  8  9 … 15      word 0 = d0 | d8 << 16
///                              |                 word 1 = d1 | d9 << 16 …
///
/// Not thread-safe: one generation uses a cache at a time.
public final class KVCache {
    public let contextLength: Int
    let keyWidth: Int
    /// `keys[block]`: `contextLength × keyWidth / 2` words, position `p` at `p × keyWidth / 2`.
    var keys: [[UInt32]]
    var values: [[UInt32]]
    /// The tokens whose keys and values are stored, in position order.
    public private(set) var tokens: [Int] = []

    /// Tokens stored.
    public var count: Int { tokens.count }

    /// Bytes of key and value storage.
    public var byteCount: Int { keys.count * 2 * contextLength * keyWidth * MemoryLayout<UInt16>.size }

    /// - Precondition: `keyWidth` is a whole number of 16-dimension groups (every head width
    ///   Typeset loads is a multiple of 16; `TransformerModel` checks it).
    init(contextLength: Int, layerCount: Int, keyWidth: Int) {
        precondition(keyWidth % 16 == 0, "key width \(keyWidth) is not a multiple of 16")
        self.contextLength = contextLength
        self.keyWidth = keyWidth
        keys = Array(repeating: [UInt32](repeating: 0, count: contextLength * keyWidth / 2), count: layerCount)
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

    /// Rounds `rows` (one `keyWidth`-float row per position, from `position` on) to half
    /// precision and stores them in block `block`'s keys (or values) in the paired layout.
    func store(_ rows: UnsafeBufferPointer<Float>, block: Int, position: Int, keys storesKeys: Bool) {
        let words = keyWidth / 2
        func write(_ destination: UnsafeMutableBufferPointer<UInt32>) {
            for row in 0 ..< rows.count / keyWidth {
                let source = UnsafeRawPointer(rows.baseAddress! + row * keyWidth)
                let target = UnsafeMutableRawPointer(destination.baseAddress! + (position + row) * words)
                for group in 0 ..< keyWidth / 16 {
                    let low = halvesFromFloats(source.loadUnaligned(fromByteOffset: 64 * group, as: SIMD8<Float>.self))
                    let high = halvesFromFloats(source.loadUnaligned(fromByteOffset: 64 * group + 32, as: SIMD8<Float>.self))
                    target.storeBytes(of: low | (high &<< 16), toByteOffset: 32 * group, as: SIMD8<UInt32>.self)
                }
            }
        }
        if storesKeys { keys[block].withUnsafeMutableBufferPointer { write($0) } } else { values[block].withUnsafeMutableBufferPointer { write($0) } }
    }
}
