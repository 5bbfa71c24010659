import GGUF

/// The transformer families Typeset can run. Each is read from `general.architecture`; what
/// distinguishes one from another is data (``ModelConfiguration`` and the family's traits),
/// not a separate forward pass.
public enum ModelArchitecture: String, Sendable, CaseIterable {
    /// Llama-style decoder: RMSNorm, RoPE, grouped-query attention, SwiGLU (SmolLM2, Llama 3
    /// with its RoPE frequency factors).
    case llama
    /// Qwen 2 / 2.5: Llama's block with biases on the query, key and value projections and
    /// NeoX-style RoPE.
    case qwen2
    /// Qwen 3: Qwen 2's block without biases, with RMSNorm on each query and key head.
    case qwen3
    /// Gemma 3: QK-norm, interleaved sliding-window and global attention, GeGLU (Gemma 3 270M).
    case gemma3
    /// Phi-3 / Phi-4-mini: fused query-key-value and gate-up projections, queries scaled before
    /// attention, partial rotary dimensions and LongRoPE frequency factors.
    case phi3
    /// Liquid LFM2: short gated causal convolutions interleaved with QK-norm attention.
    case lfm2
    /// SmolLM3: Llama's block without RoPE in every fourth block.
    case smollm3
    /// Qwen 3 MoE (Qwen3-30B-A3B): Qwen 3's attention, and a mixture of experts in place of
    /// every feed-forward network (softmax router, the chosen experts' weights renormalized).
    case qwen3moe
    /// Liquid LFM2 MoE (LFM2-8B-A1B): LFM2's convolutions and attention, dense feed-forward
    /// networks in the leading blocks and a mixture of experts in the others (sigmoid router
    /// with a selection bias).
    case lfm2moe
    /// OpenAI's gpt-oss (gpt-oss-20b, -120b): biases on every attention projection, a learned
    /// sink logit per head in the softmax, a sliding window in every other block, YaRN; a
    /// mixture of experts in every block with a biased router softmaxed over the chosen
    /// experts, MXFP4 experts with biases and a clamped SwiGLU.
    case gptOSS = "gpt-oss"
    /// Google's Gemma 4 (E2B, E4B, 26B-A4B, 31B): Gemma 3's block with sliding-window and full
    /// blocks of their own head widths, RMSNorm on the values and no attention scale; in E2B
    /// and E4B per-layer token embeddings and blocks that attend to an earlier block's keys
    /// and values; in 26B-A4B a mixture of experts beside a dense network; final logit
    /// soft-capping.
    case gemma4
    /// Qwen 3.5 (0.8B … 27B): Gated DeltaNet blocks (a causal convolution and the gated delta
    /// rule's recurrent state, ``GatedDeltaNetConfiguration``) with a full-attention block every
    /// `full_attention_interval` blocks, whose queries carry a sigmoid gate on the attention's
    /// output; per-head Q/K RMSNorm, a quarter of each head rotated (interleaved M-RoPE, which
    /// for text is NeoX RoPE on the pairs its sections give a position).
    case qwen35
    /// IBM's Granite 4 hybrids (Granite-4.0-H: 350M, 1B, Micro, Tiny, Small): Mamba2 blocks
    /// (``Mamba2Configuration``) where `attention.head_count_kv` is 0, attention blocks without
    /// RoPE between them (unless `rope.scaling.finetuned` says otherwise), and Granite's
    /// multipliers: `embedding_scale` on the embeddings, `residual_scale` on each block's two
    /// outputs before their residual adds, `attention.scale` in place of 1/√head width and
    /// `logit_scale` dividing the logits; in H-Tiny and H-Small a mixture of experts in every
    /// block with a shared expert beside it.
    case graniteHybrid = "granitehybrid"
}

/// Qwen 3.5's Gated DeltaNet blocks (llama.cpp's `ssm.*` keys): a linear attention whose
/// state is, per value head, a `headWidth × headWidth` matrix updated by the delta rule at
/// every token, after a short causal convolution over the query, key and value channels.
public struct GatedDeltaNetConfiguration: Sendable, Equatable {
    /// Inputs each convolution sees, the current one included (`ssm.conv_kernel`, 2 … 16).
    public let convolutionLength: Int
    /// Width of each query, key and value head (`ssm.state_size`; `ssm.inner_size` must be
    /// ``valueHeadCount`` of them).
    public let headWidth: Int
    /// Query and key heads (`ssm.group_count`), a divisor of ``valueHeadCount``: value head
    /// `h` reads query and key head `h mod keyHeadCount`, as llama.cpp's kernel does.
    public let keyHeadCount: Int
    /// Value heads (`ssm.time_step_rank`), each with its own state, decay and gate.
    public let valueHeadCount: Int

    /// Channels of the convolution: the queries, the keys and the values.
    public var convolutionWidth: Int { (2 * keyHeadCount + valueHeadCount) * headWidth }
    /// Floats of one block's state: the last `convolutionLength − 1` convolution inputs and a
    /// `headWidth × headWidth` matrix per value head.
    public var stateFloatCount: Int { (convolutionLength - 1) * convolutionWidth + valueHeadCount * headWidth * headWidth }
}

/// Granite 4's Mamba2 blocks (llama.cpp's `ssm.*` keys): a selective state space whose state
/// is, per head, a `headWidth × stateSize` matrix decayed by a scalar per head and token, after
/// a short causal convolution over the inputs `x` and the groups' `B` and `C`.
public struct Mamba2Configuration: Sendable, Equatable {
    /// Inputs each convolution sees, the current one included (`ssm.conv_kernel`, 2 … 16).
    public let convolutionLength: Int
    /// Width of each group's `B` and `C` and of each row of a head's state (`ssm.state_size`).
    public let stateSize: Int
    /// Groups of heads sharing a `B` and a `C` (`ssm.group_count`), a divisor of ``headCount``:
    /// head `h` reads group `h / (headCount / groupCount)`.
    public let groupCount: Int
    /// Heads (`ssm.time_step_rank`), each with its own time step, decay and skip weight.
    public let headCount: Int
    /// Width of `x`, `z` and the output, ``headCount`` heads of ``headWidth`` (`ssm.inner_size`).
    public let innerSize: Int

    public var headWidth: Int { innerSize / headCount }
    /// Channels of the convolution: `x`, then every group's `B`, then every group's `C`.
    public var convolutionWidth: Int { innerSize + 2 * groupCount * stateSize }
    /// Width of the input projection: `z`, the convolution's channels, a time step per head.
    public var inputProjectionWidth: Int { innerSize + convolutionWidth + headCount }
    /// Floats of one block's state: the last `convolutionLength − 1` convolution inputs and a
    /// `headWidth × stateSize` matrix per head.
    public var stateFloatCount: Int { (convolutionLength - 1) * convolutionWidth + innerSize * stateSize }
}

/// Granite's multipliers (`embedding_scale`, `residual_scale`, `attention.scale`,
/// `logit_scale`), each `nil` where the file has none (or 0, which llama.cpp reads as none).
public struct GraniteMultipliers: Sendable, Equatable {
    /// Multiplies the token embeddings.
    public var embedding: Float?
    /// Multiplies each block's mixer output and feed-forward output before their residual adds.
    public var residual: Float?
    /// The attention's score scale, in place of 1/√head width.
    public var attention: Float?
    /// Divides the logits.
    public var logits: Float?

    public init(embedding: Float? = nil, residual: Float? = nil, attention: Float? = nil, logits: Float? = nil) {
        (self.embedding, self.residual, self.attention, self.logits) = (embedding, residual, attention, logits)
    }
}

/// A mixture of experts in place of a block's feed-forward network: a router scores the
/// experts for each token, the `usedCount` best compute their SwiGLU network, and their outputs
/// are summed, weighted by their scores (renormalized over the chosen ones); in some families
/// with a shared expert's output added, a network every token runs.
public struct ExpertConfiguration: Sendable, Equatable {
    /// Experts per block (`expert_count`), at most ``ModelConfiguration/maximumExpertCount``.
    public let count: Int
    /// Experts each token uses (`expert_used_count`, 1 … `count`).
    public let usedCount: Int
    /// Hidden width of each expert's network (`expert_feed_forward_length`; Granite 4's
    /// `feed_forward_length`).
    public let feedForwardLength: Int
    /// How the router's outputs become scores (`expert_gating_func`).
    public let gating: ExpertGating
    /// Blocks at the start whose feed-forward network is dense, of `feed_forward_length`
    /// (`leading_dense_block_count`, 0 when absent).
    public let leadingDenseBlockCount: Int
    /// Hidden width of the shared expert, an ungated SwiGLU network beside the mixture whose
    /// output is added to it (`expert_shared_feed_forward_length`, Granite 4); 0 for none.
    public let sharedFeedForwardLength: Int
}

/// How a mixture's router outputs become the scores experts are chosen and weighted by
/// (llama.cpp's `expert_gating_func`).
public enum ExpertGating: Sendable, Equatable {
    /// Softmax over every expert (1; Qwen 3 MoE).
    case softmax
    /// Each expert's logistic sigmoid on its own (2; LFM2 MoE).
    case sigmoid
    /// The raw router outputs choose; a softmax over the chosen experts' outputs alone weights
    /// them, with no renormalization (3, llama.cpp's `SOFTMAX_WEIGHT`; gpt-oss).
    case softmaxOfChosen
}

/// How RoPE angles are stretched beyond the trained context (`<arch>.rope.scaling.type`).
public enum RotaryScaling: Sendable, Equatable {
    /// Angles as trained.
    case none
    /// Every angle multiplied by `1 / factor` (position interpolation).
    case linear(factor: Double)
    /// YaRN: angles interpolated by `1 / factor` below the correction range and kept above it,
    /// with an attention magnitude correction, over `originalContextLength` positions.
    case yarn(factor: Double, originalContextLength: Int)
    /// LongRoPE (Phi-3 / Phi-4): per-dimension frequency factors, the long set when the context
    /// exceeds `originalContextLength`, the short set otherwise.
    case longRoPE(originalContextLength: Int)
}

/// What a block mixes tokens with.
public enum BlockKind: Sendable, Equatable {
    /// Causal self-attention with `keyValueHeadCount` key/value heads.
    case attention(keyValueHeadCount: Int)
    /// A gated short causal convolution (LFM2), whose state is its inputs at earlier positions.
    case shortConvolution
    /// A Gated DeltaNet linear attention (Qwen 3.5), whose state is a recurrent one
    /// (``GatedDeltaNetConfiguration``).
    case gatedDeltaNet
    /// A Mamba2 selective state space (Granite 4), whose state is a recurrent one
    /// (``Mamba2Configuration``).
    case mamba2
}

/// How an embedding is made of a sequence's last hidden states (the final norm's output, one
/// vector of ``ModelConfiguration/embeddingLength`` floats per token), as llama.cpp's
/// `pooling_type` numbers them: 0 none, 1 mean, 2 cls, 3 last.
public enum EmbeddingPooling: String, Sendable, CaseIterable {
    /// No pooling: one vector per token.
    case none
    /// The average of every token's vector.
    case mean
    /// The first token's vector (BERT's `[CLS]`, or the beginning-of-sequence token).
    case cls
    /// The last token's vector: the one that has seen the whole text in a causal model.
    case last
}

/// A model's shape, read and validated from GGUF metadata before any weight is touched.
///
/// Every field is checked to be positive and consistent (heads divide evenly into key/value
/// groups, head widths multiply out), so later code can size buffers from it without checks.
/// Every `<architecture>.*` key of the file is either read here or refused: a key that could
/// change the arithmetic (a RoPE scaling type, soft-capping, an attention scale, a sliding
/// window where the family has none) and that Typeset does not implement is a
/// ``ModelConfigurationError/unsupportedKey(_:value:)``, never silently ignored.
public struct ModelConfiguration: Sendable, Equatable {
    public let architecture: ModelArchitecture
    /// Width of the residual stream.
    public let embeddingLength: Int
    /// Number of transformer blocks.
    public let blockCount: Int
    /// Blocks the file carries after the model's as a multi-token-prediction draft head
    /// (Qwen 3.5's `nextn_predict_layers`), not run (as llama.cpp's main pass does not run
    /// them): their tensors are accepted and left in the mapping.
    public let predictionBlockCount: Int
    /// Hidden width of the feed-forward network.
    public let feedForwardLength: Int
    /// Query heads per attention block.
    public let headCount: Int
    /// Key/value heads of the attention blocks: the most any block has (Gemma 4's
    /// sliding-window blocks may have more than its full ones; ``blockKinds`` has each block's).
    /// `headCount` is a multiple of every block's.
    public let headCountKV: Int
    /// Width of one attention head (keys, queries and values) of the full-attention blocks,
    /// and of every block but where the sliding-window blocks have their own
    /// (``localHeadDimension``).
    public let headDimension: Int
    /// Width of one head of the sliding-window blocks (Gemma 4: `attention.key_length_swa`;
    /// ``headDimension`` where the family has no width of their own).
    public let localHeadDimension: Int
    /// Dimensions of each head that RoPE rotates, from the first (`headDimension` unless the
    /// family rotates only part of each head, as Phi-4-mini does).
    public let ropeDimensionCount: Int
    /// ``ropeDimensionCount`` of the sliding-window blocks (Gemma 4: `rope.dimension_count_swa`).
    public let localRopeDimensionCount: Int
    /// The context length the model was trained for, in tokens.
    public let trainedContextLength: Int
    public let rmsNormEpsilon: Double
    /// RoPE base frequency of the global-attention layers.
    public let ropeFrequencyBase: Double
    /// RoPE base frequency of the sliding-window layers where the family has its own for them
    /// (Gemma 3: `rope.freq_base_swa`, 10,000 when absent).
    public let localRopeFrequencyBase: Double?
    /// How RoPE angles are scaled (`rope.scaling.type` and its parameters).
    public let ropeScaling: RotaryScaling
    /// Multiplies RoPE's cosines and sines (`rope.scaling.attn_factor`, 1 when absent).
    public let ropeAttentionFactor: Double
    /// Tokens in the vocabulary.
    public let vocabularySize: Int
    /// Width of the local attention window, `nil` for full attention everywhere. Gemma 3 uses
    /// it in five of every six blocks, LFM2 in every attention block.
    public let slidingWindow: Int?
    /// Whether each block attends within ``slidingWindow`` (the family's period, or Gemma 4's
    /// `attention.sliding_window_pattern`); all `false` without a window.
    public let localBlocks: [Bool]
    /// Hidden width of each block's dense feed-forward network (`feed_forward_length`, one
    /// number or one per block: Gemma 4 E2B's shared-key blocks are twice as wide).
    /// ``feedForwardLength`` is the widest.
    public let feedForwardLengths: [Int]
    /// The last blocks that compute no keys and values of their own but attend to an earlier
    /// block's (Gemma 4: `attention.shared_kv_layers`, 0 when absent): see
    /// ``keyValueSource(ofBlock:)``.
    public let sharedKeyValueBlockCount: Int
    /// Width of each block's share of the per-layer token embeddings (Gemma 4 E2B/E4B:
    /// `embedding_length_per_layer_input`), 0 for a model without them.
    public let perLayerEmbeddingLength: Int
    /// Logits become `c · tanh(logits / c)` (Gemma 4: `final_logit_softcapping`); `nil` for
    /// none.
    public let finalLogitSoftCapping: Double?
    /// What each block mixes tokens with: attention everywhere but in LFM2.
    public let blockKinds: [BlockKind]
    /// Inputs each short convolution sees, the current one included (LFM2's `shortconv.l_cache`),
    /// `nil` for families without them.
    public let shortConvolutionLength: Int?
    /// How the model's embeddings are pooled (`pooling_type`): `.none` when the file says
    /// nothing, as for every generative model. A reranker's pooling (4, `rank`), which needs a
    /// classification head, is refused.
    public let pooling: EmbeddingPooling
    /// The mixture of experts of every block, for families that have one (`nil` otherwise).
    public let experts: ExpertConfiguration?
    /// The Gated DeltaNet blocks' shape (Qwen 3.5), `nil` for families without them.
    public let gatedDeltaNet: GatedDeltaNetConfiguration?
    /// Interleaved M-RoPE's sections (`rope.dimension_sections`, Qwen 3.5): which rotated
    /// pairs take the text position (the first three sections' share, interleaved) and which
    /// the fourth, always 0 for text, so that those pairs do not rotate. `nil` without them.
    public let ropeSections: [Int]?
    /// The Mamba2 blocks' shape (Granite 4), `nil` for families without them.
    public let mamba2: Mamba2Configuration?
    /// Granite's multipliers, all `nil` for the other families.
    public let multipliers: GraniteMultipliers
    /// Whether the attention blocks rotate their queries and keys: Granite 4's hybrids do not
    /// (their converter writes `rope.scaling.finetuned` false), every other family does.
    public let usesRotary: Bool

    /// Upper bounds that keep a hostile file from sizing absurd buffers.
    public static let maximumDimension = 1 << 20
    public static let maximumBlockCount = 4096
    /// The most experts a block may have (llama.cpp's `LLAMA_MAX_EXPERTS`).
    public static let maximumExpertCount = 512

    /// Block `block`'s head width: ``localHeadDimension`` in a sliding-window block,
    /// ``headDimension`` elsewhere.
    public func headDimension(ofBlock block: Int) -> Int {
        localBlocks[block] ? localHeadDimension : headDimension
    }

    /// The block whose keys and values block `block` attends to: itself, or for one of the
    /// last ``sharedKeyValueBlockCount`` blocks the last block of its kind (sliding-window or
    /// full) before them, as llama.cpp's Gemma 4 cache maps them.
    public func keyValueSource(ofBlock block: Int) -> Int {
        let firstShared = blockCount - sharedKeyValueBlockCount
        guard block >= firstShared else { return block }
        return firstShared - (localBlocks[block] ? 2 : 1)
    }

    public init(metadata: GGUFMetadata) throws(ModelConfigurationError) {
        func read<T>(_ body: @autoclosure () throws(GGUFError) -> T) throws(ModelConfigurationError) -> T {
            do { return try body() } catch { throw .metadata(error) }
        }
        guard let name = try read(try metadata.architecture) else { throw .missing("general.architecture") }
        guard let architecture = ModelArchitecture(rawValue: name) else { throw .unsupportedArchitecture(name) }
        let traits = architecture.traits
        let parameters = try read(try metadata.hyperparameters)
        try Self.refuseUnknownKeys(metadata, architecture: architecture)

        func required(_ field: String, limit: Int = ModelConfiguration.maximumDimension) throws(ModelConfigurationError) -> Int {
            let key = parameters.key(field)
            guard let value = try read(try metadata.integer(key)) else { throw .missing(key) }
            return try Self.checked(value, key: key, limit: limit)
        }
        func optional(_ field: String, limit: Int = ModelConfiguration.maximumDimension) throws(ModelConfigurationError) -> Int? {
            let key = parameters.key(field)
            return try read(try metadata.integer(key)).map { (value) throws(ModelConfigurationError) in try Self.checked(value, key: key, limit: limit) }
        }
        /// A count that may be 0.
        func countAllowingZero(_ field: String, limit: Int) throws(ModelConfigurationError) -> Int? {
            let key = parameters.key(field)
            guard let value = try read(try metadata.integer(key)) else { return nil }
            guard value >= 0, value <= limit else { throw .invalid(key: key, value: "\(value)", reason: "must be in 0...\(limit)") }
            return value
        }
        func positiveDouble(_ field: String, default fallback: Double? = nil) throws(ModelConfigurationError) -> Double {
            let key = parameters.key(field)
            guard let value = try read(try metadata.double(key)) ?? fallback else { throw .missing(key) }
            guard value.isFinite, value > 0 else { throw .invalid(key: key, value: "\(value)", reason: "must be a positive number") }
            return value
        }

        // Qwen 3.5's converter appends its multi-token-prediction head as the last blocks
        // (`nextn_predict_layers`): a draft head, which llama.cpp's main pass does not run
        // either. The model is the blocks before it; per-block arrays may cover both.
        let fileBlockCount = try required("block_count", limit: Self.maximumBlockCount)
        let predictionBlockCount = traits.hasGatedDeltaNets
            ? try countAllowingZero("nextn_predict_layers", limit: fileBlockCount - 1) ?? 0 : 0
        let blockCount = fileBlockCount - predictionBlockCount
        /// A per-block array's entries for the model's blocks.
        func perBlock<T>(_ values: [T]?, key: String, describing what: String) throws(ModelConfigurationError) -> [T] {
            guard let values, values.count == blockCount || values.count == fileBlockCount else {
                throw .invalid(key: key, value: "an array of \(values?.count ?? 0)", reason: "must hold one \(what) per block (\(blockCount))")
            }
            return Array(values.prefix(blockCount))
        }
        let embeddingLength = try required("embedding_length")
        let headCount = try required("attention.head_count")

        // Key/value heads: one number, or one per block (LFM2 writes 0 for its convolution blocks).
        let keyValueKey = parameters.key("attention.head_count_kv")
        var keyValueHeads: [Int]
        switch metadata[keyValueKey] {
        case nil: keyValueHeads = Array(repeating: headCount, count: blockCount)
        case .array?:
            keyValueHeads = try perBlock(try read(try metadata.integerArray(keyValueKey)), key: keyValueKey, describing: "count")
        default: keyValueHeads = Array(repeating: try required("attention.head_count_kv"), count: blockCount)
        }
        var blockKinds: [BlockKind] = []
        for count in keyValueHeads {
            if count == 0, traits.hasShortConvolutions || traits.hasMamba2 {
                blockKinds.append(traits.hasMamba2 ? .mamba2 : .shortConvolution)
                continue
            }
            guard count > 0, count <= headCount, headCount % count == 0 else {
                throw .invalid(key: keyValueKey, value: "\(count)", reason: "must divide the head count \(headCount)")
            }
            blockKinds.append(.attention(keyValueHeadCount: count))
        }
        // Qwen 3.5: the recurrent blocks listed (`attention.recurrent_layers`), or all but every
        // `full_attention_interval`-th (4 when absent), as llama.cpp's loader reads them.
        if traits.hasGatedDeltaNets {
            let listKey = parameters.key("attention.recurrent_layers")
            let recurrent: [Bool]
            if let listed = try read(try metadata.booleanArray(listKey)) {
                recurrent = try perBlock(listed, key: listKey, describing: "flag")
            } else {
                let interval = try optional("full_attention_interval", limit: Self.maximumBlockCount) ?? 4
                recurrent = (0 ..< blockCount).map { ($0 + 1) % interval != 0 }
            }
            for (block, isRecurrent) in recurrent.enumerated() where isRecurrent { blockKinds[block] = .gatedDeltaNet }
        }
        let attentionHeads = blockKinds.compactMap { if case let .attention(count) = $0 { count } else { nil } }
        guard Set(attentionHeads).count <= 1 || traits.hasLocalAttentionShapes else {
            throw .invalid(key: keyValueKey, value: "\(keyValueHeads)", reason: "attention blocks with different key/value head counts are not supported")
        }

        let headDimension: Int
        if let keyLength = try optional("attention.key_length") {
            headDimension = keyLength
        } else {
            guard embeddingLength % headCount == 0 else {
                throw .invalid(key: parameters.key("embedding_length"), value: "\(embeddingLength)",
                               reason: "must be a multiple of the head count \(headCount)")
            }
            headDimension = embeddingLength / headCount
        }
        if let valueLength = try optional("attention.value_length"), valueLength != headDimension {
            throw .invalid(key: parameters.key("attention.value_length"), value: "\(valueLength)",
                           reason: "must equal the key length \(headDimension)")
        }
        let ropeDimensionCount = try optional("rope.dimension_count") ?? headDimension
        guard ropeDimensionCount % 2 == 0, ropeDimensionCount <= headDimension,
              traits.rotatesPartialHeads || ropeDimensionCount == headDimension else {
            throw .invalid(key: parameters.key("rope.dimension_count"), value: "\(ropeDimensionCount)",
                           reason: traits.rotatesPartialHeads ? "must be even and at most the head width \(headDimension)"
                                                              : "must equal the head width \(headDimension) for \(name)")
        }
        // Gemma 4's sliding-window blocks: a head width and rotated dimensions of their own.
        var localHeadDimension = headDimension, localRopeDimensionCount = ropeDimensionCount
        if traits.hasLocalAttentionShapes {
            localHeadDimension = try optional("attention.key_length_swa") ?? headDimension
            if let valueLength = try optional("attention.value_length_swa"), valueLength != localHeadDimension {
                throw .invalid(key: parameters.key("attention.value_length_swa"), value: "\(valueLength)",
                               reason: "must equal the key length \(localHeadDimension)")
            }
            localRopeDimensionCount = try optional("rope.dimension_count_swa") ?? localHeadDimension
            guard localRopeDimensionCount % 2 == 0, localRopeDimensionCount <= localHeadDimension else {
                throw .invalid(key: parameters.key("rope.dimension_count_swa"), value: "\(localRopeDimensionCount)",
                               reason: "must be even and at most the sliding-window head width \(localHeadDimension)")
            }
        }

        // Qwen 3.5's M-RoPE sections: four counts of rotated pairs.
        var ropeSections: [Int]?
        if traits.hasGatedDeltaNets {
            let sectionsKey = parameters.key("rope.dimension_sections")
            guard let sections = try read(try metadata.integerArray(sectionsKey)) else { throw .missing(sectionsKey) }
            let total = sections.reduce(0) { $0 + max(0, $1) }
            guard sections.count == 4, sections.allSatisfy({ $0 >= 0 }), total > 0, total <= headDimension else {
                throw .invalid(key: sectionsKey, value: "\(sections)",
                               reason: "must be four non-negative counts of rotated pairs, 1 to \(headDimension) in all")
            }
            ropeSections = sections
        }

        let tokens = try read(try metadata.array("tokenizer.ggml.tokens"))
        let vocabularySize = try read(try metadata.integer(parameters.key("vocab_size"))) ?? tokens?.count ?? 0
        guard vocabularySize > 0, vocabularySize <= 1 << 24 else {
            throw .invalid(key: parameters.key("vocab_size"), value: "\(vocabularySize)", reason: "must be in 1...\(1 << 24)")
        }

        let trainedContextLength = try required("context_length", limit: 1 << 24)
        // Feed-forward widths: one number, or one per block.
        let feedForwardKey = parameters.key("feed_forward_length")
        let feedForwardLengths: [Int]
        if case .array? = metadata[feedForwardKey] {
            let lengths = try perBlock(try read(try metadata.integerArray(feedForwardKey)), key: feedForwardKey, describing: "width")
            for length in lengths { _ = try Self.checked(length, key: feedForwardKey, limit: Self.maximumDimension) }
            feedForwardLengths = lengths
        } else {
            feedForwardLengths = Array(repeating: try required("feed_forward_length"), count: blockCount)
        }

        self.architecture = architecture
        self.embeddingLength = embeddingLength
        self.blockCount = blockCount
        self.predictionBlockCount = predictionBlockCount
        self.feedForwardLengths = feedForwardLengths
        self.feedForwardLength = feedForwardLengths.max() ?? 0
        self.headCount = headCount
        self.headCountKV = attentionHeads.max() ?? headCount
        self.headDimension = headDimension
        self.localHeadDimension = localHeadDimension
        self.ropeDimensionCount = ropeDimensionCount
        self.localRopeDimensionCount = localRopeDimensionCount
        self.trainedContextLength = trainedContextLength
        self.rmsNormEpsilon = try positiveDouble("attention.layer_norm_rms_epsilon")
        self.ropeFrequencyBase = try positiveDouble("rope.freq_base", default: 10_000)
        self.vocabularySize = vocabularySize
        self.blockKinds = blockKinds
        self.ropeSections = ropeSections
        // llama.cpp's `ssm.*` keys, which Qwen 3.5's Gated DeltaNets and Granite 4's Mamba2
        // blocks read alike: the state size (a Gated DeltaNet's head width), the groups (its
        // query/key heads), the heads (its value heads), the convolution's taps, the inner width.
        var gatedDeltaNet: GatedDeltaNetConfiguration?, mamba2: Mamba2Configuration?
        if traits.hasGatedDeltaNets || traits.hasMamba2 {
            let stateSize = try required("ssm.state_size", limit: 1024)
            let groups = try required("ssm.group_count", limit: 4096)
            let heads = try required("ssm.time_step_rank", limit: 4096)
            let length = try required("ssm.conv_kernel", limit: 16)
            let innerKey = parameters.key("ssm.inner_size")
            let inner = try required("ssm.inner_size")
            guard length >= 2, length <= trainedContextLength else {
                throw .invalid(key: parameters.key("ssm.conv_kernel"), value: "\(length)",
                               reason: "must be at least 2 and at most the context length \(trainedContextLength)")
            }
            guard heads % groups == 0 else {
                throw .invalid(key: parameters.key("ssm.time_step_rank"), value: "\(heads)",
                               reason: "must be a multiple of the group count \(groups) (ssm.group_count)")
            }
            if traits.hasGatedDeltaNets {
                guard inner == heads * stateSize else {
                    throw .invalid(key: innerKey, value: "\(inner)",
                                   reason: "must be the value heads times the state size (\(heads) × \(stateSize) = \(heads * stateSize))")
                }
                gatedDeltaNet = GatedDeltaNetConfiguration(
                    convolutionLength: length, headWidth: stateSize, keyHeadCount: groups, valueHeadCount: heads)
            } else {
                guard inner % heads == 0 else {
                    throw .invalid(key: innerKey, value: "\(inner)", reason: "must be a multiple of the head count \(heads) (ssm.time_step_rank)")
                }
                mamba2 = Mamba2Configuration(
                    convolutionLength: length, stateSize: stateSize, groupCount: groups, headCount: heads, innerSize: inner)
            }
        }
        (self.gatedDeltaNet, self.mamba2) = (gatedDeltaNet, mamba2)
        if traits.hasGraniteMultipliers {
            /// A multiplier, `nil` when absent or 0 (llama.cpp's "none").
            func multiplier(_ field: String) throws(ModelConfigurationError) -> Float? {
                let key = parameters.key(field)
                guard let value = try read(try metadata.double(key)), value != 0 else { return nil }
                guard value.isFinite, value > 0 else { throw .invalid(key: key, value: "\(value)", reason: "must be a positive number") }
                return Float(value)
            }
            self.multipliers = GraniteMultipliers(
                embedding: try multiplier("embedding_scale"), residual: try multiplier("residual_scale"),
                attention: try multiplier("attention.scale"), logits: try multiplier("logit_scale"))
            self.usesRotary = try read(try metadata.bool(parameters.key("rope.scaling.finetuned"))) ?? true
        } else {
            self.multipliers = GraniteMultipliers()
            self.usesRotary = true
        }
        self.shortConvolutionLength = traits.hasShortConvolutions ? try required("shortconv.l_cache", limit: 64) : nil
        if traits.experts == .always || traits.experts != .none && metadata.contains(key: parameters.key("expert_count")) {
            let count = try required("expert_count", limit: Self.maximumExpertCount)
            let used = try required("expert_used_count", limit: count)
            let gatingKey = parameters.key("expert_gating_func")
            let gating: ExpertGating
            switch (try read(try metadata.integer(gatingKey)), traits.fixedExpertGating) {
            case (nil, let fixed?): gating = fixed
            case (nil, nil): throw .missing(gatingKey)
            case let (code?, fixed):
                // llama.cpp's codes: 1 softmax, 2 sigmoid, 3 softmax of the chosen.
                guard let named = [1: ExpertGating.softmax, 2: .sigmoid, 3: .softmaxOfChosen][code], fixed == nil || fixed == named else {
                    throw .unsupportedKey(gatingKey, value: "\(code)")
                }
                gating = named
            }
            let replacesDense = traits.experts == .replacingDenseWhereCounted
            self.experts = ExpertConfiguration(
                count: count, usedCount: used,
                feedForwardLength: replacesDense ? feedForwardLength : try required("expert_feed_forward_length"), gating: gating,
                leadingDenseBlockCount: try countAllowingZero("leading_dense_block_count", limit: blockCount) ?? 0,
                sharedFeedForwardLength: try countAllowingZero("expert_shared_feed_forward_length", limit: Self.maximumDimension) ?? 0)
        } else {
            self.experts = nil
        }

        // Sliding window: where the family uses it; elsewhere only "none" (0) is accepted, but
        // for Phi-3, whose window llama.cpp switches off for every checkpoint (all blocks attend
        // to the whole context), which is the arithmetic its GGUF files are published against.
        let windowKey = parameters.key("attention.sliding_window")
        let window = try read(try metadata.integer(windowKey)).flatMap { (value) throws(ModelConfigurationError) -> Int? in
            value == 0 ? nil : try Self.checked(value, key: windowKey, limit: 1 << 24)
        }
        switch traits.slidingWindow {
        case .required:
            guard let window else { throw .missing(windowKey) }
            self.slidingWindow = window
        case .optional: self.slidingWindow = window
        case .ignored: self.slidingWindow = nil
        case .unsupported:
            if let window {
                throw .unsupportedKey(windowKey, value: "\(window)")
            }
            self.slidingWindow = nil
        }
        // Which blocks attend within it: Gemma 4 lists them, the others follow a period.
        if traits.listsLocalBlocks {
            let patternKey = parameters.key("attention.sliding_window_pattern")
            guard let pattern = try read(try metadata.booleanArray(patternKey)) else { throw .missing(patternKey) }
            guard pattern.count == blockCount else {
                throw .invalid(key: patternKey, value: "an array of \(pattern.count)", reason: "must hold one flag per block (\(blockCount))")
            }
            localBlocks = slidingWindow == nil ? Array(repeating: false, count: blockCount) : pattern
        } else {
            let hasWindow = slidingWindow != nil
            localBlocks = (0 ..< blockCount).map { traits.isLocal(block: $0, hasWindow: hasWindow) }
        }

        // Blocks attending to an earlier block's keys and values (Gemma 4): the last local and
        // the last global block before them are their sources, so both must exist and be of
        // the kind of the blocks reading them.
        let sharedKey = parameters.key("attention.shared_kv_layers")
        let shared = try countAllowingZero("attention.shared_kv_layers", limit: blockCount) ?? 0
        if shared > 0 {
            let firstShared = blockCount - shared
            guard firstShared >= 2, localBlocks[firstShared - 2], !localBlocks[firstShared - 1] else {
                throw .invalid(key: sharedKey, value: "\(shared)",
                               reason: "the two blocks before the shared ones must be a sliding-window block, then a full one, whose keys and values they read")
            }
            for block in firstShared ..< blockCount {
                let source = firstShared - (localBlocks[block] ? 2 : 1)
                guard blockKinds[block] == blockKinds[source] else {
                    throw .invalid(key: keyValueKey, value: "\(keyValueHeads)",
                                   reason: "block \(block) reads block \(source)'s keys and values and must have its key/value head count")
                }
            }
        }
        self.sharedKeyValueBlockCount = shared
        self.perLayerEmbeddingLength = try countAllowingZero("embedding_length_per_layer_input", limit: Self.maximumDimension) ?? 0

        // RoPE scaling.
        let scalingKey = parameters.key("rope.scaling.type")
        let scalingType = try read(try metadata.string(scalingKey)) ?? "linear"
        let factorKey = metadata.contains(key: parameters.key("rope.scaling.factor")) ? parameters.key("rope.scaling.factor")
                                                                                      : parameters.key("rope.scale_linear")
        let factor = try read(try metadata.double(factorKey)) ?? 0
        guard factor.isFinite, factor >= 0 else { throw .invalid(key: factorKey, value: "\(factor)", reason: "must be a non-negative number") }
        let originalContextLength = try optional("rope.scaling.original_context_length", limit: 1 << 24) ?? trainedContextLength
        switch scalingType {
        // Phi-3's converter writes no scaling type; its long/short factor tensors are LongRoPE.
        case _ where traits.usesLongRoPEFactors && (scalingType == "longrope" || scalingType == "linear" && (factor == 0 || factor == 1)):
            self.ropeScaling = .longRoPE(originalContextLength: originalContextLength)
        case "none": self.ropeScaling = .none
        case "linear": self.ropeScaling = factor == 0 || factor == 1 ? .none : .linear(factor: factor)
        case "yarn":
            guard factor > 0 else { throw .invalid(key: factorKey, value: "\(factor)", reason: "YaRN needs a positive factor") }
            self.ropeScaling = .yarn(factor: factor, originalContextLength: originalContextLength)
        default: throw .unsupportedKey(scalingKey, value: scalingType)
        }
        self.localRopeFrequencyBase = traits.localRopeBase == nil ? nil
            : try positiveDouble("rope.freq_base_swa", default: traits.localRopeBase)
        let softCappingKey = parameters.key("final_logit_softcapping")
        switch try read(try metadata.double(softCappingKey)) {
        case nil, 0?: self.finalLogitSoftCapping = nil
        case let cap? where traits.capsFinalLogits:
            guard cap.isFinite, cap > 0 else { throw .invalid(key: softCappingKey, value: "\(cap)", reason: "must be a positive number") }
            self.finalLogitSoftCapping = cap
        case let cap?: throw .unsupportedKey(softCappingKey, value: "\(cap)")
        }
        let poolingKey = parameters.key("pooling_type")
        switch try read(try metadata.integer(poolingKey)) ?? 0 {
        case 0: self.pooling = .none
        case 1: self.pooling = .mean
        case 2: self.pooling = .cls
        case 3: self.pooling = .last
        case let other: throw .unsupportedKey(poolingKey, value: other == 4 ? "4 (rank)" : "\(other)")
        }
        let attentionFactorKey = parameters.key("rope.scaling.attn_factor")
        self.ropeAttentionFactor = try read(try metadata.double(attentionFactorKey)) ?? 1
        guard ropeAttentionFactor.isFinite, ropeAttentionFactor > 0 else {
            throw .invalid(key: attentionFactorKey, value: "\(ropeAttentionFactor)", reason: "must be a positive number")
        }
    }

    private static func checked(_ value: Int, key: String, limit: Int) throws(ModelConfigurationError) -> Int {
        guard value > 0, value <= limit else { throw .invalid(key: key, value: "\(value)", reason: "must be in 1...\(limit)") }
        return value
    }

    /// Keys every family may carry: read above, or (for the `rope.scaling` bookkeeping keys)
    /// without effect on the arithmetic.
    static let understoodKeys: Set<String> = [
        "context_length", "embedding_length", "block_count", "feed_forward_length", "vocab_size",
        "attention.head_count", "attention.head_count_kv", "attention.key_length", "attention.value_length",
        "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count",
        "rope.scaling.type", "rope.scaling.factor", "rope.scale_linear", "rope.scaling.attn_factor",
        "rope.scaling.original_context_length", "rope.scaling.finetuned", "pooling_type",
    ]

    /// YaRN parameters llama.cpp keeps at fixed values for these families; a file may carry them
    /// only with those values.
    static let fixedYaRNParameters: [String: Double] = [
        "rope.scaling.yarn_beta_fast": 32, "rope.scaling.yarn_beta_slow": 1,
        "rope.scaling.yarn_attn_factor": 1,
    ]

    /// Refuses every `<architecture>.*` key this type does not read (or read as having no effect).
    private static func refuseUnknownKeys(_ metadata: GGUFMetadata, architecture: ModelArchitecture) throws(ModelConfigurationError) {
        let prefix = architecture.rawValue + "."
        let extra = architecture.traits.additionalKeys
        for entry in metadata.entries where entry.key.hasPrefix(prefix) {
            let field = String(entry.key.dropFirst(prefix.count))
            if understoodKeys.contains(field) || extra.contains(field) { continue }
            if let fixed = fixedYaRNParameters[field], entry.value.floatingPointValue ?? entry.value.integerValue.map(Double.init) == fixed { continue }
            throw .unsupportedKey(entry.key, value: entry.value.summary)
        }
    }
}

extension GGUFValue {
    /// A short rendering of the value for error messages (arrays by element type and count).
    var summary: String {
        switch self {
        case let .string(text): "'\(text.count > 60 ? text.prefix(60) + "…" : Substring(text))'"
        case let .array(array): "an array of \(array.count)"
        default: floatingPointValue.map { "\($0)" } ?? integerValue.map { "\($0)" } ?? "\(self)"
        }
    }
}

/// Why a model's configuration cannot be read.
public enum ModelConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    case metadata(GGUFError)
    case unsupportedArchitecture(String)
    case missing(String)
    case invalid(key: String, value: String, reason: String)
    /// A key that may change the model's arithmetic and that Typeset does not implement.
    case unsupportedKey(String, value: String)

    public var description: String {
        switch self {
        case let .metadata(error): "\(error)"
        case let .unsupportedArchitecture(name):
            "unsupported architecture '\(name)' (supported: \(ModelArchitecture.allCases.map(\.rawValue).joined(separator: ", ")))"
        case let .missing(key): "the model has no '\(key)'"
        case let .invalid(key, value, reason): "'\(key)' is \(value): \(reason)"
        case let .unsupportedKey(key, value):
            "the model sets '\(key)' to \(value), which Typeset does not implement; running it without would compute something else"
        }
    }
}
