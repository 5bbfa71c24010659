import Foundation
import GGUF
import Kernels

/// A decoder-only transformer ready to run: its configuration and its weights. Matrices whose
/// type has packed kernels are repacked once at load (``PackedMatrix``: same size, same codes,
/// the mapping's pages of them released afterwards); the others are read in place from the
/// GGUF mapping, and only the small norm vectors are decoded into memory.
///
/// One block, as both supported families run it (bracketed steps are Gemma 3's):
///
///     x ─► RMSNorm ─► Q K V ─► [RMSNorm per head on Q, K] ─► RoPE ─► causal attention
///       │                                   (Gemma: sliding window on 5 of every 6 blocks)
///       │                                                          │
///       │                                   output projection ─► [RMSNorm]
///       └──────────────────────────────────────────────────────── + ◄┘
///     x ─► RMSNorm ─► gate, up ─► act(gate) · up ─► down ─► [RMSNorm] ─► + x
///
/// with SiLU for Llama and tanh-GELU for Gemma, and Gemma's embeddings scaled by √width.
/// The per-family differences live in `ModelArchitecture.traits`, so a third family is a new
/// set of traits (and any tensors it adds), not a copy of the forward pass.
///
/// A model is immutable and `Sendable`; each generation brings its own `KVCache`.
public final class TransformerModel: Sendable {
    public let configuration: ModelConfiguration
    public let file: GGUFFile
    let traits: _ArchitectureTraits
    let tokenEmbedding: GGUFTensor
    let output: WeightMatrix
    let outputNorm: [Float]
    let layers: [_LayerWeights]

    /// Reads the configuration and finds every weight, checking names, shapes and types, and
    /// packs the matrices the packed kernels cover (on every processor), and faults in the
    /// pages of the others. `progress` receives the fraction of matrix bytes prepared, from 0
    /// to 1. `packsWeights: false` keeps every matrix in the mapping (the row kernels then
    /// compute the products).
    ///
    /// - Throws: `ModelLoadError` naming the missing or malformed tensor.
    public init(file: GGUFFile, packsWeights: Bool = true, progress: ((Double) -> Void)? = nil) throws(ModelLoadError) {
        let configuration: ModelConfiguration
        do { configuration = try ModelConfiguration(metadata: file.metadata) } catch { throw .configuration(error) }
        self.configuration = configuration
        self.file = file
        let traits = configuration.architecture.traits
        self.traits = traits
        // The attention reads keys, values and queries in groups of 16 dimensions (`KVCache`).
        guard configuration.headDimension > 0, configuration.headDimension % 16 == 0 else {
            throw .unsupportedHeadDimension(configuration.headDimension)
        }
        let width = configuration.embeddingLength
        let queryWidth = configuration.headCount * configuration.headDimension
        let keyWidth = configuration.headCountKV * configuration.headDimension

        func tensor(_ name: String, shape: [Int]) throws(ModelLoadError) -> GGUFTensor {
            guard file.tensorInfo(named: name) != nil else { throw .missingTensor(name) }
            let tensor: GGUFTensor
            do { tensor = try file.tensor(named: name) } catch { throw .file(error) }
            guard tensor.shape == shape else { throw .shapeMismatch(name, expected: shape, found: tensor.shape) }
            guard Dequantization.supportedTypes.contains(tensor.type) else { throw .unsupportedType(name, tensor.type) }
            return tensor
        }
        let matrixBytes = max(1, file.tensorInfos.filter { $0.shape.count == 2 }.reduce(0) { $0 + $1.byteCount })
        var preparedBytes = 0
        func matrix(_ name: String, shape: [Int]) throws(ModelLoadError) -> WeightMatrix {
            let weights = try tensor(name, shape: shape)
            let prepared: WeightMatrix
            do {
                prepared = try WeightMatrix(weights, packing: packsWeights, threadCount: KernelThreadPool.shared.threadCount)
            } catch { throw .kernel(error) }
            if prepared.packed != nil {
                weights.releaseResidentPages()
            } else {
                // Fault the mapped pages in now rather than during the first token.
                var checksum: UInt8 = 0
                for offset in stride(from: 0, to: weights.bytes.count, by: 4096) { checksum &+= weights.bytes[offset] }
                withExtendedLifetime(checksum) {}
            }
            preparedBytes += weights.info.byteCount
            progress?(min(1, Double(preparedBytes) / Double(matrixBytes)))
            return prepared
        }
        func vector(_ name: String, count: Int) throws(ModelLoadError) -> [Float] {
            let weights = try tensor(name, shape: [count])
            do { return try Dequantization.dequantize(weights) } catch { throw .kernel(error) }
        }

        tokenEmbedding = try tensor("token_embd.weight", shape: [width, configuration.vocabularySize])
        output = try matrix(file.tensorInfo(named: "output.weight") != nil ? "output.weight" : "token_embd.weight",  // tied embeddings
                            shape: [width, configuration.vocabularySize])
        outputNorm = try vector("output_norm.weight", count: width)
        var layers: [_LayerWeights] = []
        for block in 0 ..< configuration.blockCount {
            let prefix = "blk.\(block)."
            layers.append(_LayerWeights(
                attentionNorm: try vector(prefix + "attn_norm.weight", count: width),
                query: try matrix(prefix + "attn_q.weight", shape: [width, queryWidth]),
                key: try matrix(prefix + "attn_k.weight", shape: [width, keyWidth]),
                value: try matrix(prefix + "attn_v.weight", shape: [width, keyWidth]),
                attentionOutput: try matrix(prefix + "attn_output.weight", shape: [queryWidth, width]),
                queryNorm: traits.normalizesQueriesAndKeys ? try vector(prefix + "attn_q_norm.weight", count: configuration.headDimension) : nil,
                keyNorm: traits.normalizesQueriesAndKeys ? try vector(prefix + "attn_k_norm.weight", count: configuration.headDimension) : nil,
                postAttentionNorm: traits.hasPostNorms ? try vector(prefix + "post_attention_norm.weight", count: width) : nil,
                feedForwardNorm: try vector(prefix + "ffn_norm.weight", count: width),
                gate: try matrix(prefix + "ffn_gate.weight", shape: [width, configuration.feedForwardLength]),
                up: try matrix(prefix + "ffn_up.weight", shape: [width, configuration.feedForwardLength]),
                down: try matrix(prefix + "ffn_down.weight", shape: [configuration.feedForwardLength, width]),
                postFeedForwardNorm: traits.hasPostNorms ? try vector(prefix + "post_ffw_norm.weight", count: width) : nil,
                isLocal: traits.isLocal(block: block),
                ropeBase: Float(traits.isLocal(block: block) ? traits.localRopeBase ?? configuration.ropeFrequencyBase
                                                            : configuration.ropeFrequencyBase)))
        }
        self.layers = layers
    }

    /// Opens the model file at `path` (memory-mapped) and reads it.
    public convenience init(contentsOf path: String) throws(ModelLoadError) {
        let file: GGUFFile
        do { file = try GGUFFile(contentsOf: path) } catch { throw .file(error) }
        try self.init(file: file)
    }

    /// A cache for up to `contextLength` tokens (clamped to the trained context length).
    public func makeCache(contextLength: Int) -> KVCache {
        KVCache(
            contextLength: max(1, min(contextLength, configuration.trainedContextLength)),
            layerCount: configuration.blockCount,
            keyWidth: configuration.headCountKV * configuration.headDimension)
    }

    /// Which positions' logits `evaluate` returns.
    public enum Logits: Sendable {
        /// Only the last token's (generation).
        case last
        /// Every token's, row after row (perplexity, parity checks).
        case all
    }

    /// Runs `tokens` at the positions following what `cache` holds, appends their keys and
    /// values to it, and returns the logits asked for (`vocabularySize` floats per position).
    ///
    /// Prompts run as one batch through the matrix-matrix kernels; a single token through the
    /// matrix-vector kernels.
    ///
    /// - Throws: ``ModelError/contextOverflow(needed:available:)`` before any work when the
    ///   tokens do not fit, ``ModelError/tokenOutOfRange(_:position:)`` for an id outside the
    ///   vocabulary.
    public func evaluate(_ tokens: [Int], cache: KVCache, threadCount: Int = 1, logits: Logits = .last) throws(ModelError) -> [Float] {
        guard !tokens.isEmpty else { return [] }
        guard cache.count + tokens.count <= cache.contextLength else {
            throw .contextOverflow(needed: cache.count + tokens.count, available: cache.contextLength)
        }
        for (position, token) in tokens.enumerated() where !(0 ..< configuration.vocabularySize).contains(token) {
            throw .tokenOutOfRange(token, position: position)
        }
        do {
            return try _forward(tokens, cache: cache, threadCount: max(1, threadCount), logits: logits)
        } catch {
            throw .kernel(error)
        }
    }
}

/// The weights of one block.
struct _LayerWeights: Sendable {
    let attentionNorm: [Float]
    let query, key, value, attentionOutput: WeightMatrix
    let queryNorm, keyNorm, postAttentionNorm: [Float]?
    let feedForwardNorm: [Float]
    let gate, up, down: WeightMatrix
    let postFeedForwardNorm: [Float]?
    /// Whether the block attends only within the sliding window.
    let isLocal: Bool
    let ropeBase: Float
}

// MARK: - Architectures

/// What distinguishes one transformer family from another, for the shared forward pass.
struct _ArchitectureTraits: Sendable {
    var rotaryPairing: _RotaryPairing
    var activation: _Activation
    /// Multiply token embeddings by √width (Gemma).
    var scalesEmbeddings = false
    /// RMSNorm each query and key head before RoPE (Gemma 3).
    var normalizesQueriesAndKeys = false
    /// RMSNorm the attention and feed-forward outputs before the residual add (Gemma 2/3).
    var hasPostNorms = false
    /// Every `n`-th block attends globally, the others within the sliding window (Gemma 3: 6).
    var globalBlockPeriod: Int?
    /// RoPE base of the sliding-window blocks (Gemma 3: 10,000).
    var localRopeBase: Double?
    /// Multiply queries by the attention scale after RoPE instead of the scores (Gemma 3, as
    /// llama.cpp's graph does; it changes where the queries' rounding to half happens).
    var scalesQueriesBeforeAttention = false

    func isLocal(block: Int) -> Bool {
        guard let period = globalBlockPeriod else { return false }
        return (block + 1) % period != 0
    }
}

/// The feed-forward activation, applied to the gate and multiplied by the up projection.
enum _Activation: Sendable {
    /// SiLU (SwiGLU): `_swiGLU`.
    case silu
    /// GELU, tanh approximation, through ggml's half-precision table (GeGLU): `_gelu`.
    case gelu
}

extension ModelArchitecture {
    var traits: _ArchitectureTraits {
        switch self {
        case .llama:
            _ArchitectureTraits(rotaryPairing: .adjacent, activation: .silu)
        case .gemma3:
            _ArchitectureTraits(
                rotaryPairing: .halves, activation: .gelu, scalesEmbeddings: true, normalizesQueriesAndKeys: true,
                hasPostNorms: true, globalBlockPeriod: 6, localRopeBase: 10_000, scalesQueriesBeforeAttention: true)
        }
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
    case kernel(KernelError)

    public var description: String {
        switch self {
        case let .file(error): "\(error)"
        case let .configuration(error): "\(error)"
        case let .missingTensor(name): "the model has no tensor '\(name)'"
        case let .shapeMismatch(name, expected, found): "tensor '\(name)' has shape \(found), expected \(expected)"
        case let .unsupportedType(name, type): "tensor '\(name)' has type \(type.name), which Typeset cannot compute with"
        case let .unsupportedHeadDimension(width): "the attention head width \(width) is not a positive multiple of 16, which Typeset's attention needs"
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
