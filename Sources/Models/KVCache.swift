import Kernels

/// What a model remembers of the tokens it has seen, so each new token attends to them without
/// recomputing them: the keys and values of every attention block and, for LFM2, the inputs of
/// every short-convolution block.
///
/// Sized for `contextLength` positions when created (`TransformerModel.makeCache`), not for the
/// model's maximum. Keys and values are stored in half precision, as llama.cpp's default cache
/// stores them (and with the same rounding, which its attention then sees): `contextLength ×
/// attentionBlocks × 2 × keyWidth` halves. A convolution block keeps its gated input `B ⊙ x` of
/// every position in `Float` (what llama.cpp's rolling state holds for the last positions):
/// `contextLength × convolutionBlocks × width` floats. Keeping every position rather than a
/// rolling window is what makes truncation exact for convolutions too: after `truncate(to:)`
/// the state at the new end is the stored inputs before it, as if the rest had never been seen.
///
/// Remembers which tokens it holds, so a new request that shares a prefix with them recomputes
/// only the rest (`reusablePrefixLength(for:)` and `truncate(to:)`).
///
/// Layout of keys and values ("paired halves"): position `p` of a block is `keyWidth / 2`
/// 32-bit words; each head's dimensions go in groups of 16, and word `i` of a group holds
/// dimension `i` in its low 16 bits and dimension `i + 8` in its high 16 bits, so that the two
/// halves of a vector of words convert to dimensions 0–7 and 8–15 of the group without shuffles.
///
///     dimensions  0  1  2 …  7 |  8  9 … 15      word 0 = d0 | d8 << 16
///                              |                 word 1 = d1 | d9 << 16 …
///
/// It also owns the forward pass's scratch buffers (a ``ForwardWorkspace``), allocated on the
/// first evaluation and reused by every later one of the same or a smaller batch.
///
/// Not thread-safe: one generation uses a cache at a time.
public final class KVCache {
    public let contextLength: Int
    /// Key (and value) width of each attention slot.
    let keyWidths: [Int]
    /// `keys[slot]`: `contextLength × keyWidth / 2` words, position `p` at `p × keyWidth / 2`.
    var keys: [[UInt32]]
    var values: [[UInt32]]
    /// `convolutionInputs[slot]`: `contextLength × convolutionWidth` floats, position `p` at
    /// `p × convolutionWidth`.
    var convolutionInputs: [[Float]]
    let convolutionWidth: Int
    /// The tokens whose state is stored, in position order.
    public private(set) var tokens: [Int] = []
    /// Scratch memory of the forward pass, kept between calls.
    var workspace: ForwardWorkspace?

    /// Tokens stored.
    public var count: Int { tokens.count }

    /// Bytes of key, value and convolution storage.
    public var byteCount: Int {
        keyWidths.reduce(0) { $0 + 2 * contextLength * $1 * MemoryLayout<UInt16>.size }
            + convolutionInputs.count * contextLength * convolutionWidth * MemoryLayout<Float>.size
    }

    /// - Precondition: every key width is a whole number of 16-dimension groups (every head
    ///   width Typeset loads is a multiple of 16; `TransformerModel` checks it).
    init(contextLength: Int, keyWidths: [Int], convolutionCount: Int = 0, convolutionWidth: Int = 0) {
        precondition(keyWidths.allSatisfy { $0 % 16 == 0 }, "key widths \(keyWidths) are not multiples of 16")
        self.contextLength = contextLength
        self.keyWidths = keyWidths
        keys = keyWidths.map { [UInt32](repeating: 0, count: contextLength * $0 / 2) }
        values = keys
        self.convolutionWidth = convolutionWidth
        convolutionInputs = Array(repeating: [Float](repeating: 0, count: contextLength * convolutionWidth), count: convolutionCount)
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
    /// precision and stores them in slot `slot`'s keys (or values) in the paired layout.
    func store(_ rows: UnsafeBufferPointer<Float>, slot: Int, position: Int, keys storesKeys: Bool) {
        let keyWidth = keyWidths[slot]
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
        if storesKeys { keys[slot].withUnsafeMutableBufferPointer { write($0) } } else { values[slot].withUnsafeMutableBufferPointer { write($0) } }
    }
}

/// The forward pass's scratch buffers for batches of up to `batchCapacity` tokens, and the
/// cache's keys and values widened to floats for attention (grown with the context used).
/// Allocated once per cache and batch size, so decoding a token allocates no activation memory.
final class ForwardWorkspace {
    let batchCapacity: Int
    /// `batchCapacity × width` each.
    let residual, normalized, projected: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × queryWidth`: queries, then the attention's output.
    let queries, attended: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × keyWidth` (the widest attention block's).
    let keys, values: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × hiddenWidth`.
    let gates, ups: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × the widest fused projection` (query-key-value, gate-up, the
    /// convolution's B-C-x); empty when the model has none.
    let fused: UnsafeMutableBufferPointer<Float>
    /// Widened keys and values of the positions attended to: `positionCapacity × keyWidth` each.
    private(set) var wideKeys, wideValues: UnsafeMutableBufferPointer<Float>
    /// The quantized input of the decode-time products, storage reused from token to token.
    var activations = ActivationBuffers()
    /// The angle tables of the model's rotary embeddings for the call's positions.
    var rotaryAngles: [RotaryAngles] = []
    private let keyWidth: Int

    init(batchCapacity: Int, width: Int, queryWidth: Int, keyWidth: Int, hiddenWidth: Int, fusedWidth: Int) {
        func buffer(_ count: Int) -> UnsafeMutableBufferPointer<Float> {
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(1, count))
            buffer.initialize(repeating: 0)
            return buffer
        }
        self.batchCapacity = batchCapacity
        self.keyWidth = keyWidth
        residual = buffer(batchCapacity * width)
        normalized = buffer(batchCapacity * width)
        projected = buffer(batchCapacity * width)
        queries = buffer(batchCapacity * queryWidth)
        attended = buffer(batchCapacity * queryWidth)
        keys = buffer(batchCapacity * keyWidth)
        values = buffer(batchCapacity * keyWidth)
        gates = buffer(batchCapacity * hiddenWidth)
        ups = buffer(batchCapacity * hiddenWidth)
        fused = buffer(batchCapacity * fusedWidth)
        wideKeys = buffer(0)
        wideValues = buffer(0)
    }

    /// Makes room for `positions` widened keys and values (growing by half again, so a
    /// conversation reallocates a logarithmic number of times).
    func reserveWidePositions(_ positions: Int) {
        guard wideKeys.count < positions * keyWidth else { return }
        let capacity = max(positions, wideKeys.count / max(1, keyWidth) * 3 / 2) * keyWidth
        wideKeys.deallocate()
        wideValues.deallocate()
        wideKeys = .allocate(capacity: capacity)
        wideValues = .allocate(capacity: capacity)
    }

    deinit {
        for buffer in [residual, normalized, projected, queries, attended, keys, values, gates, ups, fused, wideKeys, wideValues] {
            buffer.deallocate()
        }
    }
}
