import Foundation
import GGUF
import Kernels

/// A decoder-only transformer ready to run: its configuration and its weights. Matrices whose
/// type has packed kernels are repacked once at load (``PackedMatrix``: same size, same codes,
/// the mapping's pages of them released afterwards); the others are read in place from the
/// GGUF mapping, and only the small norm vectors, biases and convolution kernels are decoded
/// into memory.
///
/// One block, as every supported family runs it (bracketed steps where the family has them):
///
///     x ─► RMSNorm ─► Q K V (+ biases) ─► [RMSNorm per head on Q, K] ─► [RoPE] ─► causal attention
///       │               (LFM2's convolution blocks: in-projection ─► B·x ─► short causal
///       │                convolution ─► C· ─► out-projection, in place of attention)
///       │                                                    output projection ─► [RMSNorm]
///       └─────────────────────────────────────────────────────────────────────── + ◄┘
///     x ─► RMSNorm ─► gate, up ─► act(gate) · up ─► down ─► [RMSNorm] ─► + x
///
/// The per-family differences live in `ModelArchitecture.traits` and in which tensors a file
/// has (biases, fused projections, RoPE frequency factors), so a new family is a new set of
/// traits, not a copy of the forward pass.
///
/// Loading is strict: every tensor of the file must be one the forward pass uses
/// (``ModelLoadError/unusedTensor(_:)`` otherwise), as every metadata key must be one the
/// configuration reads: nothing in a file is silently ignored.
///
/// A model is immutable and `Sendable`; each generation brings its own `KVCache`.
public final class TransformerModel: Sendable {
    public let configuration: ModelConfiguration
    public let file: GGUFFile
    let traits: ArchitectureTraits
    let tokenEmbedding: GGUFTensor
    let output: Projection
    let outputNorm: [Float]
    /// Gemma 4 E2B/E4B's per-layer token embeddings, `nil` for a model without them.
    let perLayerEmbeddings: PerLayerEmbeddings?
    let blocks: [BlockWeights]
    /// The distinct rotary embeddings of the attention blocks (`AttentionWeights.rotary`
    /// indexes them), for contexts up to `longContextThreshold` positions.
    let rotaryEmbeddings: [RotaryEmbedding]
    /// LongRoPE (Phi-3): the same embeddings with the long factors, for caches whose context
    /// exceeds the original one (llama.cpp's choice, made per context, not per position).
    let longContextRotaryEmbeddings: (threshold: Int, embeddings: [RotaryEmbedding])?
    /// Multiplies the scores (or the queries, where the family scales them first).
    let attentionScale: Float
    /// Whether every matrix has a packed copy (a type with packed kernels, rows in groups of
    /// 16): the products then compute each row of a batch with the same arithmetic whatever
    /// the batch, so batched evaluation (``evaluate(_:workspace:threadCount:into:)``) gives
    /// each sequence its logits alone bit for bit. A matrix without (F16, Q5_K, …) is
    /// multiplied by BLAS for batches of more than four rows, whose sums may differ from the
    /// single-row kernels' in the last bits.
    public let everyMatrixIsPacked: Bool

    /// Reads the configuration and finds every weight, checking names, shapes and types, and
    /// packs the matrices the packed kernels cover (on every processor), and faults in the
    /// pages of the others. `progress` receives the fraction of matrix bytes prepared, from 0
    /// to 1. `packsWeights: false` keeps every matrix in the mapping (the row kernels then
    /// compute the products).
    ///
    /// - Throws: `ModelLoadError` naming the missing, malformed or unused tensor.
    public init(file: GGUFFile, packsWeights: Bool = true, progress: ((Double) -> Void)? = nil) throws(ModelLoadError) {
        let configuration: ModelConfiguration
        do { configuration = try ModelConfiguration(metadata: file.metadata) } catch { throw .configuration(error) }
        self.configuration = configuration
        self.file = file
        let traits = configuration.architecture.traits
        self.traits = traits
        // The attention reads keys, values and queries in groups of 16 dimensions (`KVCache`).
        for headWidth in [configuration.headDimension, configuration.localHeadDimension] where headWidth <= 0 || headWidth % 16 != 0 {
            throw .unsupportedHeadDimension(headWidth)
        }
        var loader = WeightLoader(file: file, packsWeights: packsWeights, progress: progress)
        let width = configuration.embeddingLength

        tokenEmbedding = try loader.tensor("token_embd.weight", shape: [width, configuration.vocabularySize])
        let tied = file.tensorInfo(named: "output.weight") == nil
        output = Projection(
            weights: try loader.matrix(tied ? "token_embd.weight" : "output.weight", shape: [width, configuration.vocabularySize]),
            bias: try loader.optionalVector("output.bias", count: configuration.vocabularySize))
        outputNorm = try loader.vector(traits.outputNormName + ".weight", count: width)
        let perLayerWidth = configuration.perLayerEmbeddingLength
        if perLayerWidth > 0 {
            let total = perLayerWidth * configuration.blockCount
            perLayerEmbeddings = PerLayerEmbeddings(
                tokenEmbedding: try loader.tensor("per_layer_token_embd.weight", shape: [total, configuration.vocabularySize]),
                projection: try loader.projection("per_layer_model_proj", shape: [width, total]),
                norm: try loader.vector("per_layer_proj_norm.weight", count: perLayerWidth), width: perLayerWidth)
        } else {
            perLayerEmbeddings = nil
        }

        // RoPE: one embedding per distinct (base, scaling) of the attention blocks.
        let rotary = try Self.rotaryEmbeddings(configuration, traits: traits, loader: &loader)
        var rotaryEmbeddings: [RotaryEmbedding] = []
        var longEmbeddings: [RotaryEmbedding] = []
        func rotaryIndex(local: Bool) -> Int {
            let embedding = local ? rotary.local : rotary.global
            if let index = rotaryEmbeddings.firstIndex(of: embedding) { return index }
            rotaryEmbeddings.append(embedding)
            longEmbeddings.append(local ? rotary.local : rotary.longGlobal ?? rotary.global)
            return rotaryEmbeddings.count - 1
        }

        var blocks: [BlockWeights] = []
        var attentionSlots = 0, convolutionSlots = 0, recurrentSlots = 0
        for (block, kind) in configuration.blockKinds.enumerated() {
            let prefix = "blk.\(block)."
            let mixer: TokenMixer
            let slot: Int
            switch kind {
            case let .attention(keyValueHeads):
                let headWidth = configuration.headDimension(ofBlock: block)
                let queryWidth = configuration.headCount * headWidth, keyWidth = keyValueHeads * headWidth
                // Qwen 3.5: each head's queries, then as many gate logits.
                let projectedQueryWidth = traits.gatesAttentionOutput ? 2 * queryWidth : queryWidth
                // A block reading an earlier block's keys and values (Gemma 4) has neither
                // projections nor a norm for them, and that block's cache slot.
                let source = configuration.keyValueSource(ofBlock: block)
                let inputs: AttentionWeights.Inputs
                if source != block {
                    inputs = .queries(try loader.projection(prefix + "attn_q", shape: [width, projectedQueryWidth]))
                } else if file.tensorInfo(named: prefix + "attn_qkv.weight") != nil {
                    inputs = .fused(try loader.projection(prefix + "attn_qkv", shape: [width, projectedQueryWidth + 2 * keyWidth]))
                } else {
                    let valuesAreKeys = traits.normalizesValues && file.tensorInfo(named: prefix + "attn_v.weight") == nil
                    inputs = .separate(
                        query: try loader.projection(prefix + "attn_q", shape: [width, projectedQueryWidth]),
                        key: try loader.projection(prefix + "attn_k", shape: [width, keyWidth]),
                        value: valuesAreKeys ? nil : try loader.projection(prefix + "attn_v", shape: [width, keyWidth]))
                }
                let local = configuration.localBlocks[block]
                mixer = .attention(AttentionWeights(
                    inputs: inputs,
                    output: try loader.projection(prefix + "attn_output", shape: [queryWidth, width]),
                    queryNorm: traits.normalizesQueriesAndKeys ? try loader.vector(prefix + "attn_q_norm.weight", count: headWidth) : nil,
                    keyNorm: traits.normalizesQueriesAndKeys && source == block
                        ? try loader.vector(prefix + "attn_k_norm.weight", count: headWidth) : nil,
                    valueNorm: traits.normalizesValues && source == block ? Array(repeating: 1, count: headWidth) : nil,
                    keyValueHeadCount: keyValueHeads,
                    headWidth: headWidth,
                    rotary: configuration.usesRotary && traits.usesRotary(block: block) ? rotaryIndex(local: local) : nil,
                    window: local ? configuration.slidingWindow : nil,
                    sinks: traits.hasAttentionSinks ? try loader.vector(prefix + "attn_sinks.weight", count: configuration.headCount) : nil,
                    gatesOutput: traits.gatesAttentionOutput))
                if source != block {
                    slot = blocks[source].cacheSlot
                } else {
                    slot = attentionSlots
                    attentionSlots += 1
                }
            case .shortConvolution:
                let length = configuration.shortConvolutionLength ?? 1
                mixer = .shortConvolution(ShortConvolutionWeights(
                    inputProjection: try loader.projection(prefix + "shortconv.in_proj", shape: [width, 3 * width]),
                    kernel: try loader.vector(prefix + "shortconv.conv.weight", shape: [length, width]),
                    length: length,
                    outputProjection: try loader.projection(prefix + "shortconv.out_proj", shape: [width, width])))
                slot = convolutionSlots
                convolutionSlots += 1
            case .gatedDeltaNet:
                mixer = .gatedDeltaNet(try loader.gatedDeltaNet(prefix, width: width, configuration: configuration))
                slot = recurrentSlots
                recurrentSlots += 1
            case .mamba2:
                mixer = .mamba2(try loader.mamba2(prefix, width: width, configuration: configuration))
                slot = recurrentSlots
                recurrentSlots += 1
            }
            let feedForward: FeedForward
            let hiddenWidth = configuration.feedForwardLengths[block]
            /// A SwiGLU network of separate `ffn_gate{suffix}`, `ffn_up{suffix}` and `ffn_down{suffix}`.
            func separate(_ suffix: String, hiddenWidth: Int) throws(ModelLoadError) -> FeedForwardWeights {
                FeedForwardWeights(
                    inputs: .separate(
                        gate: try loader.projection(prefix + "ffn_gate" + suffix, shape: [width, hiddenWidth]),
                        up: try loader.projection(prefix + "ffn_up" + suffix, shape: [width, hiddenWidth])),
                    down: try loader.projection(prefix + "ffn_down" + suffix, shape: [hiddenWidth, width]))
            }
            func dense() throws(ModelLoadError) -> FeedForwardWeights {
                if file.tensorInfo(named: prefix + "ffn_gate.weight") == nil,
                   file.tensorInfo(named: prefix + "ffn_up.weight")?.shape == [width, 2 * hiddenWidth] {
                    return FeedForwardWeights(
                        inputs: .fused(try loader.projection(prefix + "ffn_up", shape: [width, 2 * hiddenWidth])),
                        down: try loader.projection(prefix + "ffn_down", shape: [hiddenWidth, width]))
                }
                return try separate("", hiddenWidth: hiddenWidth)
            }
            if let experts = configuration.experts, traits.experts == .besideDenseWhereCounted {
                // Gemma 4: the dense network and the mixture side by side.
                feedForward = .denseAndExperts(DenseAndExpertWeights(
                    dense: try dense(),
                    routerNorm: try loader.vector(prefix + "ffn_gate_inp.scale", count: width).map { $0 / Float(width).squareRoot() },
                    densePostNorm: try loader.vector(prefix + "post_ffw_norm_1.weight", count: width),
                    expertsNorm: try loader.vector(prefix + "pre_ffw_norm_2.weight", count: width),
                    experts: try loader.experts(prefix, width: width, experts: experts, selectionBias: false, biases: false,
                                                outputScales: true),
                    expertsPostNorm: try loader.vector(prefix + "post_ffw_norm_2.weight", count: width)))
            } else if let experts = configuration.experts, block >= experts.leadingDenseBlockCount {
                let mixture = try loader.experts(prefix, width: width, experts: experts,
                                                 selectionBias: traits.hasExpertSelectionBias, biases: traits.hasExpertBiases)
                let sharedWidth = experts.sharedFeedForwardLength
                feedForward = sharedWidth == 0 ? .experts(mixture)
                    : .expertsAndSharedExpert(mixture, shared: try separate("_shexp", hiddenWidth: sharedWidth))
            } else {
                feedForward = .dense(try dense())
            }
            blocks.append(BlockWeights(
                mixerNorm: try loader.vector(prefix + "attn_norm.weight", count: width),
                mixer: mixer,
                postMixerNorm: traits.hasPostNorms ? try loader.vector(prefix + "post_attention_norm.weight", count: width) : nil,
                feedForwardNorm: try loader.vector(prefix + traits.feedForwardNormName + ".weight", count: width),
                feedForward: feedForward,
                postFeedForwardNorm: traits.hasPostNorms ? try loader.vector(prefix + "post_ffw_norm.weight", count: width) : nil,
                perLayerInput: perLayerWidth == 0 ? nil : PerLayerInputWeights(
                    gate: try loader.projection(prefix + "inp_gate", shape: [width, perLayerWidth]),
                    projection: try loader.projection(prefix + "proj", shape: [perLayerWidth, width]),
                    norm: try loader.vector(prefix + "post_norm.weight", count: width)),
                outputScale: traits.capsFinalLogits ? try loader.optionalVector(prefix + "layer_output_scale.weight", count: 1)?[0] : nil,
                cacheSlot: slot))
        }
        self.blocks = blocks
        self.rotaryEmbeddings = rotaryEmbeddings
        if let threshold = rotary.longContextThreshold, longEmbeddings != rotaryEmbeddings {
            longContextRotaryEmbeddings = (threshold, longEmbeddings)
        } else {
            longContextRotaryEmbeddings = nil
        }
        // Gemma 3 scales by 1/√(query_pre_attn_scalar): the head width, but the width per head
        // for the 27B model (62 blocks), as llama.cpp's loader has it.
        let scaleWidth = configuration.architecture == .gemma3 && configuration.blockCount == 62
            ? configuration.embeddingLength / configuration.headCount : configuration.headDimension
        attentionScale = configuration.multipliers.attention ?? (traits.leavesScoresUnscaled ? 1 : 1 / Float(scaleWidth).squareRoot())

        everyMatrixIsPacked = loader.everyMatrixIsPacked
        // A multi-token-prediction head's blocks (Qwen 3.5) are carried, not run.
        let predictionBlocks = configuration.blockCount ..< configuration.blockCount + configuration.predictionBlockCount
        loader.accept { name in predictionBlocks.contains { name.hasPrefix("blk.\($0).") } }
        if let unused = loader.unusedTensorName() { throw .unusedTensor(unused) }
    }

    /// The same model computing the logits of the first `rowCount` vocabulary entries only:
    /// a pass reads that part of the output matrix (for a small model with a large
    /// vocabulary, much of what a pass reads), the rest of the weights shared. A draft model
    /// whose guesses are mostly among the frequent tokens (BPE vocabularies number them
    /// first) drafts with it. Every token may still be evaluated; only the logits are fewer.
    ///
    /// - Returns: `nil` when `rowCount` is not within 1 … the vocabulary, or the output
    ///   matrix is packed and `rowCount` is not a multiple of 16.
    public func limitingLogits(to rowCount: Int) -> TransformerModel? {
        guard rowCount > 0, rowCount <= output.outputWidth, output.weights.packed == nil || rowCount % 16 == 0 else { return nil }
        return TransformerModel(
            copying: self, output: Projection(weights: output.weights.rows(0 ..< rowCount), bias: output.bias.map { Array($0.prefix(rowCount)) }))
    }

    private init(copying model: TransformerModel, output: Projection) {
        configuration = model.configuration
        file = model.file
        traits = model.traits
        tokenEmbedding = model.tokenEmbedding
        self.output = output
        outputNorm = model.outputNorm
        perLayerEmbeddings = model.perLayerEmbeddings
        blocks = model.blocks
        rotaryEmbeddings = model.rotaryEmbeddings
        longContextRotaryEmbeddings = model.longContextRotaryEmbeddings
        attentionScale = model.attentionScale
        everyMatrixIsPacked = model.everyMatrixIsPacked
    }

    /// The logits a pass writes per row: the vocabulary's size, unless limited
    /// (``limitingLogits(to:)``).
    public var logitsPerRow: Int { output.outputWidth }

    /// Opens the model file at `path` (memory-mapped) and reads it.
    public convenience init(contentsOf path: String) throws(ModelLoadError) {
        let file: GGUFFile
        do { file = try GGUFFile(contentsOf: path) } catch { throw .file(error) }
        try self.init(file: file)
    }

    /// The global blocks' embedding (with LongRoPE's short factors), the local blocks' (Gemma 3),
    /// and with LongRoPE the global one with the long factors and the context beyond which it
    /// applies.
    private static func rotaryEmbeddings(
        _ configuration: ModelConfiguration, traits: ArchitectureTraits, loader: inout WeightLoader
    ) throws(ModelLoadError) -> (global: RotaryEmbedding, local: RotaryEmbedding, longGlobal: RotaryEmbedding?, longContextThreshold: Int?) {
        let dimensions = configuration.ropeDimensionCount
        let base = Float(configuration.ropeFrequencyBase)
        var global = RotaryEmbedding(pairing: traits.rotaryPairing, dimensionCount: dimensions, base: base)
        global.attentionFactor = Float(configuration.ropeAttentionFactor)
        var longGlobal: RotaryEmbedding?
        var threshold: Int?
        if traits.usesRotaryFrequencyFactors {
            global.frequencyFactors = try loader.optionalVector("rope_freqs.weight", count: dimensions / 2)
        }
        // Interleaved M-RoPE (Qwen 3.5) on text: pair k's sector (k mod the sections' sum) takes
        // the position when it falls in the first three sections' interleaved share, and the
        // fourth position, 0 for text, otherwise: an infinite divisor gives those pairs the
        // angle 0, as ggml computes them.
        if let sections = configuration.ropeSections {
            let total = sections.reduce(0, +)
            let factors = (0 ..< dimensions / 2).map { pair -> Float in
                let sector = pair % total
                let takesPosition = (0 ..< 3).contains { axis in sector % 3 == axis && sector < 3 * sections[axis] }
                return takesPosition ? 1 : .infinity
            }
            if factors.contains(.infinity) { global.frequencyFactors = factors }
        }
        switch configuration.ropeScaling {
        case .none: break
        case let .linear(factor):
            global.frequencyScale = 1 / Float(factor)
        case let .yarn(factor, originalContextLength):
            let scale = 1 / Float(factor)
            global.frequencyScale = scale
            global.yarn = RotaryEmbedding.YaRN(dimensionCount: dimensions, originalContextLength: originalContextLength, base: base)
            // llama.cpp's context: mscale(1/scale), cancelled by the factor rope_yarn applies again.
            let stretch = 1 / scale
            let magnitude: Float = stretch <= 1 ? 1 : 0.1 * logf(stretch) + 1
            global.attentionFactor = magnitude * (1 / (1 + 0.1 * logf(stretch))) * Float(configuration.ropeAttentionFactor)
        case let .longRoPE(originalContextLength):
            let short = try loader.optionalVector("rope_factors_short.weight", count: dimensions / 2)
            let long = try loader.optionalVector("rope_factors_long.weight", count: dimensions / 2)
            global.frequencyFactors = short
            if let long {
                var stretched = global
                stretched.frequencyFactors = long
                longGlobal = stretched
                threshold = originalContextLength
            }
        }
        var local = RotaryEmbedding(pairing: traits.rotaryPairing, dimensionCount: configuration.localRopeDimensionCount,
                                    base: Float(configuration.localRopeFrequencyBase ?? configuration.ropeFrequencyBase))
        local.attentionFactor = Float(configuration.ropeAttentionFactor)
        // gpt-oss's sliding-window blocks rotate as its others (no base of their own).
        return (global, traits.localRopeBase == nil ? global : local, longGlobal, threshold)
    }

    /// A cache for up to `contextLength` tokens (clamped to the trained context length).
    public func makeCache(contextLength: Int) -> KVCache {
        // A slot per block with keys and values of its own (blocks reading another's have none).
        var keyValueHeads: [Int] = [], headWidths: [Int] = []
        for (block, kind) in configuration.blockKinds.enumerated() where configuration.keyValueSource(ofBlock: block) == block {
            guard case let .attention(heads) = kind else { continue }
            keyValueHeads.append(heads)
            headWidths.append(configuration.headDimension(ofBlock: block))
        }
        let convolutions = configuration.blockKinds.filter { $0 == .shortConvolution }.count
        let recurrences = blocks.compactMap { block -> Recurrence? in
            switch block.mixer {
            case let .gatedDeltaNet(deltaNet): .gatedDeltaNet(deltaNet.recurrence)
            case let .mamba2(mamba): .mamba2(mamba.recurrence)
            case .attention, .shortConvolution: nil
            }
        }
        return KVCache(
            contextLength: max(1, min(contextLength, configuration.trainedContextLength)),
            keyValueHeads: keyValueHeads, headWidths: headWidths,
            convolutionCount: convolutions, convolutionWidth: configuration.embeddingLength, recurrences: recurrences)
    }

    /// The rotary embeddings a cache of `contextLength` positions uses (LongRoPE switches to its
    /// long factors beyond the original context, with the context rounded up to 256 as
    /// llama.cpp pads it).
    func rotaryEmbeddings(contextLength: Int) -> [RotaryEmbedding] {
        guard let long = longContextRotaryEmbeddings, (contextLength + 255) / 256 * 256 > long.threshold else { return rotaryEmbeddings }
        return long.embeddings
    }

    /// Which positions' logits `evaluate` returns.
    public enum Logits: Sendable {
        /// Only the last token's (generation).
        case last
        /// Every token's, row after row (perplexity, parity checks).
        case all
        /// The last `n` tokens' (at most as many as are evaluated), row after row: the logits
        /// before a token appended provisionally, which decide whether it stays, then the
        /// logits after it.
        case lastRows(Int)
    }

    /// Runs `tokens` at the positions following what `cache` holds, appends their keys and
    /// values (and convolution inputs) to it, and returns the logits asked for
    /// (`vocabularySize` floats per position).
    ///
    /// Prompts run as one batch through the matrix-matrix kernels; a single token through the
    /// matrix-vector kernels.
    ///
    /// - Throws: ``ModelError/contextOverflow(needed:available:)`` before any work when the
    ///   tokens do not fit, ``ModelError/tokenOutOfRange(_:position:)`` for an id outside the
    ///   vocabulary.
    public func evaluate(_ tokens: [Int], cache: KVCache, threadCount: Int = 1, logits: Logits = .last) throws(ModelError) -> [Float] {
        try evaluate(tokens[...], cache: cache, threadCount: threadCount, logits: logits)
    }

    /// ``evaluate(_:cache:threadCount:logits:)-([Int],_,_,_)`` of a slice of tokens.
    public func evaluate(_ tokens: ArraySlice<Int>, cache: KVCache, threadCount: Int = 1, logits: Logits = .last) throws(ModelError) -> [Float] {
        var result: [Float] = []
        try evaluate(tokens, cache: cache, threadCount: threadCount, logits: logits, into: &result)
        return result
    }

    /// ``evaluate(_:cache:threadCount:logits:)-([Int],_,_,_)`` writing the logits into `result`,
    /// replacing what it held and reusing its storage when it has the size asked for: with the
    /// cache's workspace (allocated with the cache, grown for a larger batch) a decode step
    /// then allocates nothing.
    ///
    /// - Throws: as ``evaluate(_:cache:threadCount:logits:)-([Int],_,_,_)``.
    public func evaluate(
        _ tokens: [Int], cache: KVCache, threadCount: Int = 1, logits: Logits = .last, into result: inout [Float]
    ) throws(ModelError) {
        try evaluate(tokens[...], cache: cache, threadCount: threadCount, logits: logits, into: &result)
    }

    /// ``evaluate(_:cache:threadCount:logits:into:)-([Int],_,_,_,_)`` of a slice of tokens.
    public func evaluate(
        _ tokens: ArraySlice<Int>, cache: KVCache, threadCount: Int = 1, logits: Logits = .last, into result: inout [Float]
    ) throws(ModelError) {
        try evaluate(tokens, cache: cache, threadCount: threadCount, logits: logits, projectingToVocabulary: true, into: &result)
    }

    /// Runs `tokens` as ``evaluate(_:cache:threadCount:logits:into:)-([Int],_,_,_,_)`` does with
    /// `.all`, but stops before the output projection: writes every token's last hidden state,
    /// the output of the final norm (`embeddingLength` floats per token, row after row), into
    /// `result`. These are what embeddings are pooled from (llama.cpp's `result_norm`).
    ///
    /// - Throws: as ``evaluate(_:cache:threadCount:logits:)-([Int],_,_,_)``.
    public func hiddenStates(_ tokens: ArraySlice<Int>, cache: KVCache, threadCount: Int = 1, into result: inout [Float]) throws(ModelError) {
        try evaluate(tokens, cache: cache, threadCount: threadCount, logits: .all, projectingToVocabulary: false, into: &result)
    }

    /// One sequence's pass: its logits, or its last hidden states without the projection.
    private func evaluate(
        _ tokens: ArraySlice<Int>, cache: KVCache, threadCount: Int, logits: Logits, projectingToVocabulary: Bool,
        into result: inout [Float]
    ) throws(ModelError) {
        guard !tokens.isEmpty else { result.removeAll(); return }
        try check(tokens, for: cache)
        let workspace = cache.workspace
        // The list lives in the workspace so that a decode step allocates none; it is emptied
        // after the call (once the pass holding it is gone), so the workspace keeps no cache.
        var rows = SequenceRows(cache: cache, rows: 0 ..< tokens.count, start: cache.count)
        if case .lastRows(let count) = logits { rows.outputRows = min(max(1, count), tokens.count) }
        workspace.sequences.append(rows)
        do {
            let pass = ForwardPass(model: self, sequences: workspace.sequences, tokenCount: tokens.count, workspace: workspace,
                                   threadCount: max(1, threadCount))
            try pass.run(tokens, logits: logits, projectingToVocabulary: projectingToVocabulary, into: &result)
        } catch {
            workspace.sequences.removeAll(keepingCapacity: true)
            throw .kernel(error)
        }
        workspace.sequences.removeAll(keepingCapacity: true)
    }

    /// One sequence's share of a batched evaluation: the tokens that extend its cache, and how
    /// many of the last ones give logits.
    public struct SequenceTokens {
        public var cache: KVCache
        public var tokens: ArraySlice<Int>
        /// The logits of the last `logitRows` tokens are returned (1 ... `tokens.count`).
        public var logitRows: Int

        public init(cache: KVCache, tokens: ArraySlice<Int>, logitRows: Int = 1) {
            self.cache = cache
            self.tokens = tokens
            self.logitRows = logitRows
        }
    }

    /// Runs several sequences in one forward pass: each entry's tokens at the positions
    /// following what its cache holds (appended to it), all rows through the matrix products
    /// together — the weights are read once per call, not once per sequence — and each row
    /// attending to its own cache. Writes the logits after each entry's last `logitRows`
    /// tokens into `logits`, `vocabularySize` floats per row, row after row in entry order
    /// (replacing what it held, its storage reused when it has that size).
    ///
    /// Each sequence gets the logits it would get evaluated alone, bit for bit, whatever else
    /// is in the batch (see `ForwardPass`): a server batching its requests answers each as it
    /// would answer it alone.
    ///
    /// - Parameter workspace: scratch memory, kept by the caller from call to call (a call
    ///   with the same or fewer tokens then allocates none).
    /// - Precondition: every entry has tokens and asks for the logits of 1 to all of them; no two
    ///   entries share a cache.
    /// - Throws: ``ModelError/contextOverflow(needed:available:)`` when an entry's tokens do
    ///   not fit its cache, ``ModelError/tokenOutOfRange(_:position:)``: before any work.
    public func evaluate(
        _ batch: [SequenceTokens], workspace: ForwardWorkspace, threadCount: Int = 1, into logits: inout [Float]
    ) throws(ModelError) {
        guard !batch.isEmpty else { logits.removeAll(); return }
        for (index, entry) in batch.enumerated() {
            precondition(!entry.tokens.isEmpty, "batch entry \(index) has no tokens")
            precondition((1 ... entry.tokens.count).contains(entry.logitRows), "batch entry \(index) asks for \(entry.logitRows) rows of logits")
            precondition(!batch[..<index].contains { $0.cache === entry.cache }, "batch entry \(index) shares a cache with an earlier one")
            try check(entry.tokens, for: entry.cache)
        }
        workspace.sequences.removeAll(keepingCapacity: true)
        workspace.tokens.removeAll(keepingCapacity: true)
        var row = 0
        for entry in batch {
            workspace.tokens += entry.tokens
            workspace.sequences.append(SequenceRows(
                cache: entry.cache, rows: row ..< row + entry.tokens.count, start: entry.cache.count, outputRows: entry.logitRows))
            row += entry.tokens.count
        }
        do {
            let pass = ForwardPass(model: self, sequences: workspace.sequences, tokenCount: row, workspace: workspace,
                                   threadCount: max(1, threadCount))
            try pass.run(workspace.tokens[...], logits: .last, into: &logits)
        } catch {
            workspace.sequences.removeAll(keepingCapacity: true)
            throw .kernel(error)
        }
        workspace.sequences.removeAll(keepingCapacity: true)
    }

    /// Throws unless `tokens` fit after what `cache` holds and are all in the vocabulary.
    private func check(_ tokens: ArraySlice<Int>, for cache: KVCache) throws(ModelError) {
        guard cache.count + tokens.count <= cache.contextLength else {
            throw .contextOverflow(needed: cache.count + tokens.count, available: cache.contextLength)
        }
        for (position, token) in tokens.enumerated() where !(0 ..< configuration.vocabularySize).contains(token) {
            throw .tokenOutOfRange(token, position: position)
        }
    }
}

/// Finds, checks and prepares a file's tensors, remembering which ones were taken.
struct WeightLoader {
    let file: GGUFFile
    let packsWeights: Bool
    let progress: ((Double) -> Void)?
    private var used: Set<String> = []
    private var preparedBytes = 0
    private let matrixBytes: Int
    /// Whether every matrix prepared so far has a packed copy.
    private(set) var everyMatrixIsPacked = true

    init(file: GGUFFile, packsWeights: Bool, progress: ((Double) -> Void)?) {
        self.file = file
        self.packsWeights = packsWeights
        self.progress = progress
        matrixBytes = max(1, file.tensorInfos.filter { $0.shape.count >= 2 }.reduce(0) { $0 + $1.byteCount })
    }

    mutating func tensor(_ name: String, shape: [Int]) throws(ModelLoadError) -> GGUFTensor {
        guard file.tensorInfo(named: name) != nil else { throw .missingTensor(name) }
        let tensor: GGUFTensor
        do { tensor = try file.tensor(named: name) } catch { throw .file(error) }
        guard tensor.shape == shape else { throw .shapeMismatch(name, expected: shape, found: tensor.shape) }
        guard Dequantization.supportedTypes.contains(tensor.type) else { throw .unsupportedType(name, tensor.type) }
        used.insert(name)
        return tensor
    }

    /// A matrix, packed where the kernels allow. `computedRowByRow`: left in the mapping, for
    /// a product the pass computes one row at a time (the same arithmetic whatever the batch,
    /// so it does not count against ``everyMatrixIsPacked``).
    mutating func matrix(_ name: String, shape: [Int], computedRowByRow: Bool = false) throws(ModelLoadError) -> WeightMatrix {
        let weights = try tensor(name, shape: shape)
        let prepared: WeightMatrix
        do {
            prepared = try WeightMatrix(weights, packing: packsWeights && !computedRowByRow, threadCount: KernelThreadPool.shared.threadCount)
        } catch { throw .kernel(error) }
        if prepared.packed != nil {
            weights.releaseResidentPages()
        } else {
            if !computedRowByRow { everyMatrixIsPacked = false }
            // Fault the mapped pages in now rather than during the first token.
            var checksum: UInt8 = 0
            for offset in stride(from: 0, to: weights.bytes.count, by: 4096) { checksum &+= weights.bytes[offset] }
            withExtendedLifetime(checksum) {}
        }
        preparedBytes += weights.info.byteCount
        progress?(min(1, Double(preparedBytes) / Double(matrixBytes)))
        return prepared
    }

    /// `name.weight` and, when the file has it, `name.bias` (one value per output row).
    mutating func projection(_ name: String, shape: [Int]) throws(ModelLoadError) -> Projection {
        Projection(weights: try matrix(name + ".weight", shape: shape), bias: try optionalVector(name + ".bias", count: shape[1]))
    }

    /// A block's mixture of experts: `ffn_gate_inp` (the router), `exp_probs_b.bias` (the
    /// selection bias) for a family that has one (`selectionBias`), the router's and experts'
    /// biases for a family that has them (`biases`: gpt-oss; elsewhere refused as unused), each
    /// expert's output scale where the family may have one (`outputScales`: Gemma 4's
    /// `ffn_down_exps.scale`), and the 3-D `ffn_{gate,up,down}_exps` (gate and up possibly one
    /// `ffn_gate_up_exps`), each expert's matrices a view of the latter's rows.
    mutating func experts(_ prefix: String, width: Int, experts: ExpertConfiguration,
                          selectionBias: Bool, biases: Bool, outputScales: Bool = false) throws(ModelLoadError) -> ExpertWeights {
        let hidden = experts.feedForwardLength, count = experts.count
        // The router stays in the mapping (it is small, often F32): the pass computes it row by
        // row with the matrix-vector kernels, the same arithmetic whatever the batch.
        let router = Projection(weights: try matrix(prefix + "ffn_gate_inp.weight", shape: [width, count], computedRowByRow: true),
                                bias: biases ? try vector(prefix + "ffn_gate_inp.bias", count: count) : nil)
        // Gate and up: two 3-D tensors, or one whose expert `e` has rows `2e·hidden ..<
        // (2e + 1)·hidden` for its gate and the next `hidden` for its up projection.
        let fused = file.tensorInfo(named: prefix + "ffn_gate_up_exps.weight") != nil
        let gates = try matrix(prefix + (fused ? "ffn_gate_up_exps.weight" : "ffn_gate_exps.weight"),
                               shape: [width, fused ? 2 * hidden : hidden, count])
        let ups = fused ? gates : try matrix(prefix + "ffn_up_exps.weight", shape: [width, hidden, count])
        let downs = try matrix(prefix + "ffn_down_exps.weight", shape: [hidden, width, count])
        // A packed tensor's slices start at whole groups of 16 rows.
        guard [gates, ups, downs].allSatisfy({ $0.packed == nil }) || (hidden % 16 == 0 && width % 16 == 0) else {
            throw .shapeMismatch(prefix + "ffn_gate_exps.weight", expected: [width, (hidden + 15) / 16 * 16, count], found: [width, hidden, count])
        }
        guard !fused || !biases else { throw .unusedTensor(prefix + "ffn_gate_up_exps.weight") }
        // Each expert's rows, with its row of the projection's biases (`[rows, experts]`) in a
        // family that has them (gpt-oss).
        func slices(_ matrix: WeightMatrix, _ name: String, rows: Int) throws(ModelLoadError) -> [Projection] {
            let biases = biases ? try vector(prefix + name + ".bias", shape: [rows, count]) : nil
            return (0 ..< count).map { expert in
                let range = expert * rows ..< (expert + 1) * rows
                return Projection(weights: matrix.rows(range), bias: biases.map { Array($0[range]) })
            }
        }
        let bias = selectionBias ? try vector(prefix + "exp_probs_b.bias", count: count) : nil
        // Gemma 4: each expert's output scale.
        let scales = outputScales ? try optionalVector(prefix + "ffn_down_exps.scale", count: count) : nil
        let gateSlices, upSlices: [Projection]
        if fused {
            gateSlices = (0 ..< count).map { Projection(weights: gates.rows(2 * $0 * hidden ..< (2 * $0 + 1) * hidden), bias: nil) }
            upSlices = (0 ..< count).map { Projection(weights: gates.rows((2 * $0 + 1) * hidden ..< (2 * $0 + 2) * hidden), bias: nil) }
        } else {
            gateSlices = try slices(gates, "ffn_gate_exps", rows: hidden)
            upSlices = try slices(ups, "ffn_up_exps", rows: hidden)
        }
        return ExpertWeights(router: router, gating: experts.gating, selectionBias: bias, outputScales: scales,
                             gates: gateSlices, ups: upSlices, downs: try slices(downs, "ffn_down_exps", rows: width),
                             usedCount: experts.usedCount)
    }

    /// A block's Gated DeltaNet (Qwen 3.5, llama.cpp's tensor names): `attn_qkv`, `attn_gate`,
    /// `ssm_alpha` and `ssm_beta` (kept in the mapping, computed row by row), `ssm_conv1d`,
    /// `ssm_dt.bias`, `ssm_a`, `ssm_norm` and `ssm_out`.
    mutating func gatedDeltaNet(_ prefix: String, width: Int, configuration: ModelConfiguration) throws(ModelLoadError) -> GatedDeltaNetWeights {
        let shape = configuration.gatedDeltaNet!
        let heads = shape.valueHeadCount, valueWidth = heads * shape.headWidth
        return GatedDeltaNetWeights(
            inputs: try projection(prefix + "attn_qkv", shape: [width, shape.convolutionWidth]),
            outputGate: try projection(prefix + "attn_gate", shape: [width, valueWidth]),
            decayInput: Projection(weights: try matrix(prefix + "ssm_alpha.weight", shape: [width, heads], computedRowByRow: true), bias: nil),
            updateInput: Projection(weights: try matrix(prefix + "ssm_beta.weight", shape: [width, heads], computedRowByRow: true), bias: nil),
            recurrence: GatedDeltaNetRecurrence(
                shape: shape,
                kernel: try vector(prefix + "ssm_conv1d.weight", shape: [shape.convolutionLength, shape.convolutionWidth]),
                timeStepBias: try vector(prefix + "ssm_dt.bias", count: heads),
                decayRate: try vector(prefix + "ssm_a", count: heads),
                epsilon: Float(configuration.rmsNormEpsilon)),
            norm: try vector(prefix + "ssm_norm.weight", count: shape.headWidth),
            output: try projection(prefix + "ssm_out", shape: [valueWidth, width]))
    }

    /// A block's Mamba2 (Granite 4, llama.cpp's tensor names): `ssm_in`, `ssm_conv1d` (its bias
    /// where the file has one), `ssm_dt.bias`, `ssm_a`, `ssm_d`, `ssm_norm` (one weight per
    /// output, `[inner / groups, groups]`) and `ssm_out`.
    mutating func mamba2(_ prefix: String, width: Int, configuration: ModelConfiguration) throws(ModelLoadError) -> Mamba2Weights {
        let shape = configuration.mamba2!
        let heads = shape.headCount, inner = shape.innerSize
        return Mamba2Weights(
            inputs: try projection(prefix + "ssm_in", shape: [width, shape.inputProjectionWidth]),
            recurrence: Mamba2Recurrence(
                shape: shape,
                kernel: try vector(prefix + "ssm_conv1d.weight", shape: [shape.convolutionLength, shape.convolutionWidth]),
                convolutionBias: try optionalVector(prefix + "ssm_conv1d.bias", count: shape.convolutionWidth),
                timeStepBias: try vector(prefix + "ssm_dt.bias", count: heads),
                decayRate: try vector(prefix + "ssm_a", shape: [1, heads]),
                skip: try vector(prefix + "ssm_d", shape: [1, heads])),
            norm: try vector(prefix + "ssm_norm.weight", shape: [inner / shape.groupCount, shape.groupCount]),
            output: try projection(prefix + "ssm_out", shape: [inner, width]))
    }

    mutating func vector(_ name: String, count: Int) throws(ModelLoadError) -> [Float] {
        try vector(name, shape: [count])
    }

    mutating func vector(_ name: String, shape: [Int]) throws(ModelLoadError) -> [Float] {
        let weights = try tensor(name, shape: shape)
        do { return try Dequantization.dequantize(weights) } catch { throw .kernel(error) }
    }

    mutating func optionalVector(_ name: String, count: Int) throws(ModelLoadError) -> [Float]? {
        file.tensorInfo(named: name) == nil ? nil : try vector(name, count: count)
    }

    /// Marks the tensors `isCarried` picks as taken without reading them: weights of a part
    /// of the file the forward pass does not run (a draft head).
    mutating func accept(_ isCarried: (String) -> Bool) {
        for info in file.tensorInfos where isCarried(info.name) {
            used.insert(info.name)
            if info.shape.count >= 2 { preparedBytes += info.byteCount }
        }
        progress?(min(1, Double(preparedBytes) / Double(matrixBytes)))
    }

    /// The first tensor of the file, in file order, that nothing took.
    func unusedTensorName() -> String? {
        file.tensorInfos.first { !used.contains($0.name) }?.name
    }
}

// MARK: - Errors

/// Why a model cannot be loaded.
public enum ModelLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    case file(GGUFError)
    case configuration(ModelConfigurationError)
    case missingTensor(String)
    case shapeMismatch(String, expected: [Int], found: [Int])
    case unsupportedType(String, GGMLType)
    /// A head width the attention cannot run: it must be a positive multiple of 16.
    case unsupportedHeadDimension(Int)
    /// A tensor the forward pass of the file's family does not use: running without it would
    /// compute something else than the model.
    case unusedTensor(String)
    case kernel(KernelError)

    public var description: String {
        switch self {
        case let .file(error): "\(error)"
        case let .configuration(error): "\(error)"
        case let .missingTensor(name): "the model has no tensor '\(name)'"
        case let .shapeMismatch(name, expected, found): "tensor '\(name)' has shape \(found), expected \(expected)"
        case let .unsupportedType(name, type): "tensor '\(name)' has type \(type.name), which Typeset cannot compute with"
        case let .unsupportedHeadDimension(width): "the attention head width \(width) is not a positive multiple of 16, which Typeset's attention needs"
        case let .unusedTensor(name):
            "the model has a tensor '\(name)' that Typeset's forward pass for its architecture does not use; running without it would compute something else"
        case let .kernel(error): "\(error)"
        }
    }
}

/// Why evaluating tokens failed.
public enum ModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The tokens do not fit in the cache: `needed` positions, `available` in all.
    case contextOverflow(needed: Int, available: Int)
    /// Generation was asked to continue a prompt with no tokens.
    case emptyPrompt
    case tokenOutOfRange(Int, position: Int)
    case kernel(KernelError)

    public var description: String {
        switch self {
        case let .contextOverflow(needed, available): "the input needs \(needed) positions but the context holds \(available)"
        case .emptyPrompt: "the prompt has no tokens"
        case let .tokenOutOfRange(token, position): "token \(token) at position \(position) is outside the vocabulary"
        case let .kernel(error): "\(error)"
        }
    }
}
