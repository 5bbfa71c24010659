import Kernels

/// A linear map `y = W·x (+ b)`: a weight matrix (`outputWidth` rows) and, where the file has
/// one, a bias vector added after the product.
struct Projection: Sendable {
    let weights: WeightMatrix
    let bias: [Float]?

    var outputWidth: Int { weights.rowCount }
}

/// The weights of one transformer block:
///
///     x ─► RMSNorm ─► mixer (attention or short convolution) ─► [RMSNorm] ─► + x
///     x ─► RMSNorm ─► gate, up ─► act(gate) · up ─► down ──────► [RMSNorm] ─► + x
///                     (or a mixture of experts, each such a network)
struct BlockWeights: Sendable {
    let mixerNorm: [Float]
    let mixer: TokenMixer
    /// Gemma's norm of the mixer's output before the residual add.
    let postMixerNorm: [Float]?
    let feedForwardNorm: [Float]
    let feedForward: FeedForward
    let postFeedForwardNorm: [Float]?
    /// This block's storage in the cache: its key/value slot for attention, its input history
    /// for a short convolution.
    let cacheSlot: Int
}

/// What a block mixes positions with.
enum TokenMixer: Sendable {
    case attention(AttentionWeights)
    case shortConvolution(ShortConvolutionWeights)
}

/// Causal self-attention's weights and per-block parameters.
struct AttentionWeights: Sendable {
    /// Queries, keys and values: three projections, or one whose output rows are the queries,
    /// then the keys, then the values (Phi-3's `attn_qkv`).
    enum Inputs: Sendable {
        case separate(query: Projection, key: Projection, value: Projection)
        case fused(Projection)
    }

    let inputs: Inputs
    let output: Projection
    /// RMSNorm weights applied to each query and key head before RoPE (Qwen 3, Gemma 3, LFM2).
    let queryNorm: [Float]?
    let keyNorm: [Float]?
    let keyValueHeadCount: Int
    /// Index into the model's rotary embeddings, `nil` for a block without RoPE (SmolLM3).
    let rotary: Int?
    /// Positions attended to before the current one, plus one; `nil` for the whole context.
    let window: Int?
    /// A logit per query head that joins each row's softmax without a value (gpt-oss's
    /// `attn_sinks`): it raises the denominator, so a head may attend to little.
    let sinks: [Float]?
}

/// LFM2's gated short causal convolution:
///
///     B, C, x = split(inputProjection · h)            three rows of `width`
///     u[t]    = B[t] ⊙ x[t]                            kept in the cache, one row per position
///     y[t][c] = Σ_{i<L} u[t − L + 1 + i][c] · kernel[c][i]      (u before position 0 is 0)
///     out     = outputProjection · (C ⊙ y)
struct ShortConvolutionWeights: Sendable {
    let inputProjection: Projection
    /// `width × length` taps, channel after channel, tap 0 for the oldest input.
    let kernel: [Float]
    let length: Int
    let outputProjection: Projection
}

/// A block's feed-forward network: one, or a mixture of experts.
enum FeedForward: Sendable {
    case dense(FeedForwardWeights)
    case experts(ExpertWeights)
}

/// A mixture of experts (llama.cpp's `build_moe_ffn`; Qwen 3 MoE with a softmax router, LFM2
/// MoE with a sigmoid one and a selection bias):
///
///     p      = softmax(router · x)  or  sigmoid(router · x)     one score per expert
///     chosen = the `usedCount` highest p + bias (ties to the lower index; bias 0 when absent)
///     w_e    = p_e / max(Σ_chosen p, 2⁻¹⁴)                      renormalized over the chosen
///     y      = Σ_chosen w_e · down_e(silu(gate_e · x) ⊙ (up_e · x))
///
/// The bias (`exp_probs_b`) only chooses: the weights are the unbiased scores. gpt-oss chooses
/// by the raw router outputs (with the router's bias) and weights by a softmax over the chosen
/// ones (``ExpertGating/softmaxOfChosen``); its experts' projections have biases, and its
/// activation is the clamped SwiGLU.
///
/// Each expert's projections are views of the rows of one 3-D tensor per projection
/// (`ffn_gate_exps` is `[width, hidden, experts]`: expert `e`'s rows are `e·hidden ..<
/// (e+1)·hidden`), packed once with the rest.
struct ExpertWeights: Sendable {
    /// `experts` rows: each expert's score before the gating function.
    let router: Projection
    let gating: ExpertGating
    /// Added to the scores to choose the experts, one per expert (`nil`: none).
    let selectionBias: [Float]?
    let gates: [Projection]
    let ups: [Projection]
    let downs: [Projection]
    let usedCount: Int

    var count: Int { gates.count }
    var hiddenWidth: Int { gates.first?.outputWidth ?? 0 }
}

/// The feed-forward network's weights.
struct FeedForwardWeights: Sendable {
    /// Gate and up: two projections, or one whose first half of output rows is the gate and
    /// second half the up projection (Phi-3's `ffn_up` of twice the hidden width).
    enum Inputs: Sendable {
        case separate(gate: Projection, up: Projection)
        case fused(Projection)
    }

    let inputs: Inputs
    let down: Projection
}
