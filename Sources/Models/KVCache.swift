import Kernels

/// What a model remembers of the tokens it has seen, so each new token attends to them without
/// recomputing them: the keys and values of every attention block, for LFM2 the inputs of
/// every short-convolution block, and for Qwen 3.5 the recurrent state of its Gated DeltaNet
/// blocks (``RecurrentState``, which says which earlier positions it can return to).
///
/// Sized for `contextLength` positions when created (`TransformerModel.makeCache`), not for the
/// model's maximum. Keys and values are kept in half precision, as llama.cpp's default F16
/// cache keeps them (so the attention sees the values llama.cpp's sees, and reads half the
/// bytes a float cache would): `contextLength × attentionBlocks × 2 × keyWidth` halves,
/// committed as positions are written. A convolution block keeps its gated input `B ⊙ x` of
/// every position in `Float` (what llama.cpp's rolling state holds for the last positions):
/// `contextLength × convolutionBlocks × width` floats. Keeping every position rather than a
/// rolling window is what makes truncation exact for convolutions too: after `truncate(to:)`
/// the state at the new end is the stored inputs before it, as if the rest had never been seen.
///
/// Remembers which tokens it holds, so a new request that shares a prefix with them recomputes
/// only the rest (`reusablePrefixLength(for:)` and `truncate(to:)`). With recurrent blocks the
/// prefix kept is the longest one whose state can be restored, and ``checkpoint()`` marks a
/// position worth returning to.
///
/// Layout of a block's keys (and values), head-major, so that attention to one key-value head
/// reads one contiguous run of memory:
///
///     head 0: position 0 [d0 … d(w−1)] position 1 […] … position contextLength − 1 […]
///     head 1: position 0 […] …
///
/// head `h`'s position `p` at `(h × contextLength + p) × headWidth` halves, `headWidth` the
/// slot's own (Gemma 4's sliding-window and full blocks have different ones). A block that
/// reads an earlier block's keys and values (Gemma 4's shared-KV blocks) has no slot.
///
/// It also owns the scratch buffers of its own forward passes (a ``ForwardWorkspace``), sized
/// on the first evaluation and reused by every later one of the same or a smaller batch.
///
/// Not thread-safe: one generation uses a cache at a time.
public final class KVCache {
    public let contextLength: Int
    /// Key-value heads of each attention slot.
    let keyValueHeads: [Int]
    /// Dimensions per head of each attention slot (a whole number of 16-dimension groups).
    let headWidths: [Int]
    /// `keys[slot]`: `keyValueHeads[slot] × contextLength × headWidths[slot]` IEEE halves, head-major
    /// (see the layout above).
    /// Allocated, not written, when the cache is made: the system commits pages as positions
    /// are stored, so a cache costs memory for the positions it has held, not its context.
    let keys: [UnsafeMutableBufferPointer<UInt16>]
    let values: [UnsafeMutableBufferPointer<UInt16>]
    /// `convolutionInputs[slot]`: `contextLength × convolutionWidth` floats, position `p` at
    /// `p × convolutionWidth`.
    let convolutionStorage: [UnsafeMutableBufferPointer<Float>]
    let convolutionWidth: Int
    /// The Gated DeltaNet blocks' state (Qwen 3.5), `nil` for a model without them.
    let recurrentState: RecurrentState?
    /// The memory all of them live in.
    private let storage: MappedMemory
    /// The tokens whose state is stored, in position order.
    public private(set) var tokens: [Int] = []
    /// Scratch memory of this cache's own forward passes, kept between calls.
    let workspace = ForwardWorkspace()

    /// Tokens stored.
    public var count: Int { tokens.count }

    /// The most tokens the cache has stored at once: truncating it does not return the pages
    /// those positions committed.
    public private(set) var highWaterCount = 0

    /// Bytes of storage the system has committed for the cache, to within a page per head's run
    /// of positions: ``highWaterCount`` positions of every slot, and the recurrent state.
    public var committedByteCount: Int { highWaterCount * positionByteCount + (recurrentState?.byteCount ?? 0) }

    /// Bytes of key, value and convolution storage, and of the recurrent state with its
    /// checkpoints.
    public var byteCount: Int {
        positionByteCount * contextLength + (recurrentState?.byteCount ?? 0)
    }

    /// Bytes each position takes in the keys, values and convolution inputs.
    private var positionByteCount: Int {
        zip(keyValueHeads, headWidths).reduce(0) { $0 + 2 * $1.0 * $1.1 * MemoryLayout<UInt16>.size }
            + convolutionStorage.count * convolutionWidth * MemoryLayout<Float>.size
    }

    /// Whether the model has recurrent blocks, whose state the cache restores only at some
    /// positions (``RecurrentState``).
    public var hasRecurrentState: Bool { recurrentState != nil }

    /// - Precondition: every head width is a whole number of 16-dimension groups (every head
    ///   width Typeset loads is a multiple of 16; `TransformerModel` checks it), one per slot.
    init(contextLength: Int, keyValueHeads: [Int], headWidths: [Int], convolutionCount: Int = 0, convolutionWidth: Int = 0,
         recurrences: [Recurrence] = []) {
        precondition(headWidths.allSatisfy { $0 % 16 == 0 }, "head widths \(headWidths) are not multiples of 16")
        precondition(headWidths.count == keyValueHeads.count, "a head width per slot")
        self.contextLength = contextLength
        self.keyValueHeads = keyValueHeads
        self.headWidths = headWidths
        self.convolutionWidth = convolutionWidth
        // One anonymous mapping for everything: pages are committed as positions are written,
        // and returned to the system when the cache goes (a heap allocation of this size would
        // keep the pages it ever touched in the process, to be handed to the next cache). The
        // halves first, then the floats (every region a multiple of 32 bytes, so aligned).
        let halfCount = 2 * contextLength * zip(keyValueHeads, headWidths).reduce(0) { $0 + $1.0 * $1.1 }
        let floatCount = convolutionCount * contextLength * convolutionWidth
        storage = MappedMemory(byteCount: halfCount * MemoryLayout<UInt16>.size + floatCount * MemoryLayout<Float>.size,
                               reservingSwap: false)
        var keys: [UnsafeMutableBufferPointer<UInt16>] = [], values = keys
        var nextHalf = storage.bytes.bindMemory(to: UInt16.self, capacity: halfCount)
        for (heads, headWidth) in zip(keyValueHeads, headWidths) {
            let count = heads * contextLength * headWidth
            keys.append(UnsafeMutableBufferPointer(start: nextHalf, count: count))
            values.append(UnsafeMutableBufferPointer(start: nextHalf + count, count: count))
            nextHalf += 2 * count
        }
        (self.keys, self.values) = (keys, values)
        var nextFloat = (storage.bytes + halfCount * MemoryLayout<UInt16>.size).bindMemory(to: Float.self, capacity: floatCount)
        var convolutions: [UnsafeMutableBufferPointer<Float>] = []
        for _ in 0 ..< convolutionCount {
            convolutions.append(UnsafeMutableBufferPointer(start: nextFloat, count: contextLength * convolutionWidth))
            nextFloat += contextLength * convolutionWidth
        }
        convolutionStorage = convolutions
        recurrentState = recurrences.isEmpty ? nil : RecurrentState(recurrences: recurrences)
    }

    /// Slot `slot`'s keys and values (see ``keys``), for the forward pass's jobs, and the
    /// halves from one key-value head's run of positions to the next.
    func storage(slot: Int) -> (keys: UnsafePointer<UInt16>, values: UnsafePointer<UInt16>, headStride: Int) {
        (UnsafePointer(keys[slot].baseAddress!), UnsafePointer(values[slot].baseAddress!), contextLength * headWidths[slot])
    }

    /// Convolution slot `slot`'s gated inputs (see ``convolutionStorage``).
    func convolutionInputs(slot: Int) -> UnsafeMutablePointer<Float> { convolutionStorage[slot].baseAddress! }

    /// How many leading tokens of `prompt` are already in the cache, leaving at least one token
    /// of `prompt` to evaluate (its logits are needed); with recurrent blocks, the longest such
    /// prefix whose state can be restored.
    public func reusablePrefixLength(for prompt: [Int]) -> Int {
        var shared = 0
        while shared < min(tokens.count, prompt.count - 1), tokens[shared] == prompt[shared] { shared += 1 }
        return recurrentState?.restorablePosition(atMost: shared, count: tokens.count) ?? shared
    }

    /// Forgets every token from position `count` on. With recurrent blocks, keeps the longest
    /// prefix of at most `count` tokens whose state can be restored (``RecurrentState``): the
    /// cache may then hold fewer than `count` tokens, which ``count`` says.
    public func truncate(to count: Int) {
        var kept = max(0, min(count, tokens.count))
        if let recurrentState { kept = recurrentState.restore(to: kept, count: tokens.count) }
        tokens.removeLast(tokens.count - kept)
    }

    /// Forgets everything.
    public func clear() {
        tokens.removeAll(keepingCapacity: true)
        recurrentState?.forgetHistory()
    }

    /// Keeps the recurrent blocks' state at the current position, so that a later prompt
    /// sharing this prefix may restart here (``RecurrentState``: at most a few checkpoints, the
    /// oldest dropped). Nothing for a model without recurrent blocks, whose every position
    /// can be returned to.
    public func checkpoint() {
        recurrentState?.checkpoint(at: tokens.count)
    }

    /// Replaces what the cache holds with the first `count` positions of `other` (keys, values,
    /// convolution inputs and tokens), as if it had evaluated them: a new generation starts
    /// from another's prefix and leaves that cache as it was.
    ///
    /// - Precondition: the caches are of one model and context length; `count <= other.count`,
    ///   and with recurrent blocks a position whose state `other` can restore (as
    ///   ``reusablePrefixLength(for:)`` gives).
    /// - Complexity: O(`count`) positions copied, each `byteCount / contextLength` bytes.
    public func copyPrefix(_ count: Int, of other: KVCache) {
        precondition(
            other.contextLength == contextLength && other.keyValueHeads == keyValueHeads && other.headWidths == headWidths
                && other.convolutionStorage.count == convolutionStorage.count && other.convolutionWidth == convolutionWidth,
            "copying between caches of different shapes")
        precondition(count >= 0 && count <= other.count, "copying \(count) positions of a cache holding \(other.count)")
        for slot in keys.indices {
            let headWidth = headWidths[slot], run = contextLength * headWidth
            for head in 0 ..< keyValueHeads[slot] {
                let offset = head * run
                (keys[slot].baseAddress! + offset).update(from: other.keys[slot].baseAddress! + offset, count: count * headWidth)
                (values[slot].baseAddress! + offset).update(from: other.values[slot].baseAddress! + offset, count: count * headWidth)
            }
        }
        for slot in convolutionStorage.indices {
            convolutionStorage[slot].baseAddress!.update(from: other.convolutionStorage[slot].baseAddress!, count: count * convolutionWidth)
        }
        if let recurrentState, let source = other.recurrentState {
            recurrentState.copy(count, of: source, otherCount: other.count)
        }
        tokens.removeAll(keepingCapacity: true)
        tokens.append(contentsOf: other.tokens.prefix(count))
        highWaterCount = max(highWaterCount, count)
    }

    func append(_ token: Int) {
        tokens.append(token)
        highWaterCount = max(highWaterCount, tokens.count)
    }

    /// Rounds `rows` (one row per position, from `position` on, each its heads in order) to
    /// half precision, ties to even (``halfBitPatterns(_:)``, as llama.cpp's F16 cache rounds
    /// them), and stores them in slot `slot`'s keys (or values), each head in its own run.
    func store(_ rows: UnsafeBufferPointer<Float>, slot: Int, position: Int, keys storesKeys: Bool) {
        let heads = keyValueHeads[slot], headWidth = headWidths[slot], contextLength = contextLength
        let base = (storesKeys ? keys[slot] : values[slot]).baseAddress!
        let source = UnsafeRawPointer(rows.baseAddress!)
        for row in 0 ..< rows.count / (heads * headWidth) {
            for head in 0 ..< heads {
                let target = UnsafeMutableRawPointer(base + (head * contextLength + position + row) * headWidth)
                let offset = 4 * (row * heads + head) * headWidth
                for chunk in 0 ..< headWidth / 8 {
                    let values = source.loadUnaligned(fromByteOffset: offset + 32 * chunk, as: SIMD8<Float>.self)
                    target.storeBytes(of: halfBitPatterns(values), toByteOffset: 16 * chunk, as: SIMD8<UInt16>.self)
                }
            }
        }
    }
}

/// Scratch memory of forward passes: the activation buffers of a batch of rows, the quantized
/// input of decode-time products and the rotary angles of the call's positions.
///
/// Sized on first use for the model and the batch that uses it, and grown (never shrunk) when a
/// later batch is larger, so that evaluating the same or a smaller batch
/// again allocates nothing. A ``KVCache`` keeps one for its own evaluations; a caller that
/// evaluates several sequences together (``TransformerModel/evaluate(_:workspace:threadCount:into:)``)
/// keeps one for its batches. Not thread-safe: one forward pass at a time uses a workspace.
public final class ForwardWorkspace {
    /// Rows the buffers hold.
    private(set) var batchCapacity = 0
    /// `batchCapacity × width` each.
    private(set) var residual, normalized, projected: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × queryWidth`: queries, then the attention's output.
    private(set) var queries, attended: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × keyWidth` (the widest attention block's).
    private(set) var keys, values: UnsafeMutableBufferPointer<Float>
    /// `max(batchCapacity, experts used per token) × hiddenWidth`.
    private(set) var gates, ups: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × the widest fused projection` (query-key-value, gate-up, the
    /// convolution's B-C-x); empty when the model has none.
    private(set) var fused: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × expertCount`: the router's scores, then probabilities; empty without experts.
    private(set) var expertScores: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × width`: the rows routed to one expert; `max(batchCapacity, experts used
    /// per token) × width`: its outputs for them, or a decode row's chosen experts' outputs.
    private(set) var expertInputs, expertOutputs: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × width`: the dense network's output beside a mixture (Gemma 4's dense
    /// network, Granite 4's shared expert), empty for a model without both.
    private(set) var denseOutputs: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × blocks × per-layer width`: each row's per-layer inputs (Gemma 4 E2B,
    /// ``PerLayerEmbeddings``), and one row of `blocks × per-layer width` for a token's
    /// embedding; empty for a model without them.
    private(set) var perLayerInputs, perLayerToken: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × 2 × queryWidth`: a gated attention block's query projection, each
    /// head's queries then its output gate logits (Qwen 3.5); empty without.
    private(set) var attentionGates: UnsafeMutableBufferPointer<Float>
    /// `batchCapacity × 2 × value heads`: each row's α, then its β, of a Gated DeltaNet block;
    /// and the scratch of the recurrent blocks (``RecurrenceShape/scratchFloatCount(rows:)``).
    /// Empty without such blocks.
    private(set) var recurrentGates, recurrentScratch: UnsafeMutableBufferPointer<Float>
    /// Per row, the chosen experts and their weights (`usedCount` each), and per expert the
    /// rows routed to it with their weights: kept from call to call.
    var chosenExperts: [Int] = []
    var expertWeights: [Float] = []
    var routedRows: [[(row: Int, weight: Float)]] = []
    /// The quantized input of the decode-time products, storage reused from token to token.
    var activations = ActivationBuffers()
    /// The angle tables of the model's rotary embeddings, one row per row of the call.
    var rotaryAngles: [RotaryAngles] = []
    /// The sequences of the current call (emptied after it, so the workspace holds no cache).
    var sequences: [SequenceRows] = []
    /// The current call's sequences narrowed to the rows whose logits are asked for, for the
    /// last block (emptied after the call, as `sequences`).
    var lastRows: [SequenceRows] = []
    /// A batched call's tokens, every sequence's in row order.
    var tokens: [Int] = []
    /// The widths the buffers were sized for.
    private var widths = Widths()

    struct Widths: Equatable {
        var width = 0, queryWidth = 0, keyWidth = 0, hiddenWidth = 0, perLayerWidth = 0, fusedWidth = 0, expertCount = 0, usedExpertCount = 0
        /// A block runs a dense network beside its mixture (``denseOutputs`` is needed).
        var keepsDenseOutputs = false
        var gatedQueryWidth = 0
        /// The recurrent blocks' shape (one per model).
        var recurrence: RecurrenceShape?
    }

    /// An empty workspace; the first forward pass that uses it sizes it.
    public init() {
        let empty = UnsafeMutableBufferPointer<Float>(start: nil, count: 0)
        (residual, normalized, projected, queries, attended, keys, values, gates, ups, fused)
            = (empty, empty, empty, empty, empty, empty, empty, empty, empty, empty)
        (expertScores, expertInputs, expertOutputs) = (empty, empty, empty)
        (denseOutputs, perLayerInputs, perLayerToken) = (empty, empty, empty)
        (attentionGates, recurrentGates, recurrentScratch) = (empty, empty, empty)
    }

    /// Every buffer, to free them.
    private var buffers: [UnsafeMutableBufferPointer<Float>] {
        [residual, normalized, projected, queries, attended, keys, values, gates, ups, fused, expertScores, expertInputs, expertOutputs,
         denseOutputs, perLayerInputs, perLayerToken, attentionGates, recurrentGates, recurrentScratch]
    }

    /// Makes room for `rows` rows of `model`'s activations (reallocating only when the capacity
    /// or the model's widths change).
    func reserve(rows: Int, for model: TransformerModel) {
        let configuration = model.configuration
        // The query and key widths from the attention blocks (each with its head width and
        // key/value heads), the hidden width from every network.
        var widths = Widths(
            width: configuration.embeddingLength,
            hiddenWidth: max(configuration.feedForwardLength, configuration.perLayerEmbeddingLength),
            perLayerWidth: configuration.perLayerEmbeddingLength * configuration.blockCount)
        func include(_ feedForward: FeedForwardWeights) {
            widths.hiddenWidth = max(widths.hiddenWidth, feedForward.hiddenWidth)
            if case let .fused(projection) = feedForward.inputs { widths.fusedWidth = max(widths.fusedWidth, projection.outputWidth) }
        }
        func include(_ experts: ExpertWeights) {
            widths.hiddenWidth = max(widths.hiddenWidth, experts.hiddenWidth)
            widths.expertCount = max(widths.expertCount, experts.count)
            widths.usedExpertCount = max(widths.usedExpertCount, experts.usedCount)
        }
        for block in model.blocks {
            switch block.mixer {
            case let .attention(attention):
                widths.queryWidth = max(widths.queryWidth, configuration.headCount * attention.headWidth)
                widths.keyWidth = max(widths.keyWidth, attention.keyValueHeadCount * attention.headWidth)
                if case let .fused(projection) = attention.inputs { widths.fusedWidth = max(widths.fusedWidth, projection.outputWidth) }
                if attention.gatesOutput { widths.gatedQueryWidth = max(widths.gatedQueryWidth, 2 * configuration.headCount * attention.headWidth) }
            case let .shortConvolution(convolution): widths.fusedWidth = max(widths.fusedWidth, convolution.inputProjection.outputWidth)
            case let .gatedDeltaNet(deltaNet):
                let shape = deltaNet.recurrence.shape
                widths.fusedWidth = max(widths.fusedWidth, shape.convolutionWidth)
                widths.hiddenWidth = max(widths.hiddenWidth, shape.valueHeadCount * shape.headWidth)
                widths.recurrence = .gatedDeltaNet(shape)
            case let .mamba2(mamba):
                let shape = mamba.recurrence.shape
                widths.fusedWidth = max(widths.fusedWidth, shape.inputProjectionWidth)
                widths.hiddenWidth = max(widths.hiddenWidth, shape.innerSize)
                widths.recurrence = .mamba2(shape)
            }
            switch block.feedForward {
            case let .dense(feedForward): include(feedForward)
            case let .experts(experts): include(experts)
            case let .expertsAndSharedExpert(experts, shared):
                include(experts)
                include(shared)
                widths.keepsDenseOutputs = true
            case let .denseAndExperts(both):
                include(both.dense)
                include(both.experts)
                widths.keepsDenseOutputs = true
            }
        }
        guard rows > batchCapacity || widths != self.widths else { return }
        let capacity = max(rows, batchCapacity)
        func buffer(_ count: Int) -> UnsafeMutableBufferPointer<Float> {
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(1, count))
            buffer.initialize(repeating: 0)
            return buffer
        }
        for buffer in buffers where buffer.baseAddress != nil { buffer.deallocate() }
        residual = buffer(capacity * widths.width)
        normalized = buffer(capacity * widths.width)
        projected = buffer(capacity * widths.width)
        queries = buffer(capacity * widths.queryWidth)
        attended = buffer(capacity * widths.queryWidth)
        keys = buffer(capacity * widths.keyWidth)
        values = buffer(capacity * widths.keyWidth)
        // A decode step's one row takes a row per chosen expert (``ForwardPass/mixtureOfOneRow``).
        gates = buffer(max(capacity, widths.usedExpertCount) * widths.hiddenWidth)
        ups = buffer(max(capacity, widths.usedExpertCount) * widths.hiddenWidth)
        fused = buffer(capacity * widths.fusedWidth)
        let hasExperts = widths.expertCount > 0
        expertScores = buffer(capacity * widths.expertCount)
        expertInputs = buffer(hasExperts ? capacity * widths.width : 0)
        expertOutputs = buffer(hasExperts ? max(capacity, widths.usedExpertCount) * widths.width : 0)
        denseOutputs = buffer(widths.keepsDenseOutputs ? capacity * widths.width : 0)
        perLayerInputs = buffer(capacity * widths.perLayerWidth)
        perLayerToken = buffer(widths.perLayerWidth)
        attentionGates = buffer(capacity * widths.gatedQueryWidth)
        // Mamba2 reads its per-head inputs in place from its projection's rows.
        if case let .gatedDeltaNet(shape)? = widths.recurrence {
            recurrentGates = buffer(capacity * shape.headInputWidth)
        } else {
            recurrentGates = buffer(0)
        }
        recurrentScratch = buffer(widths.recurrence?.scratchFloatCount(rows: capacity) ?? 0)
        batchCapacity = capacity
        self.widths = widths
    }

    deinit {
        for buffer in buffers where buffer.baseAddress != nil { buffer.deallocate() }
    }
}

/// One sequence's rows in a forward call: rows `rows` of the call's batch are its tokens, at
/// cache positions `start ..< start + rows.count`; the logits of its last `outputRows` rows
/// are asked for (with `Logits.last`).
struct SequenceRows {
    let cache: KVCache
    let rows: Range<Int>
    let start: Int
    var outputRows = 1
}
