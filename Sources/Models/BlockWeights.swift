import GGUF
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
    /// Gemma 4 E2B/E4B: the block's share of the per-layer token embeddings, added after the
    /// feed-forward network.
    let perLayerInput: PerLayerInputWeights?
    /// Gemma 4: multiplies the block's output (the whole residual) at its end
    /// (`layer_output_scale`).
    let outputScale: Float?
    /// This block's storage in the cache: its key/value slot for attention (an earlier
    /// block's where it reads that block's keys and values), its input history for a short
    /// convolution, its state in ``RecurrentState`` for a Gated DeltaNet or a Mamba2.
    let cacheSlot: Int
}

/// Gemma 4's per-layer token embeddings (E2B, E4B): besides the token embedding, each token
/// has a vector of `width` floats per block, and each block adds its share to the residual
/// through a gate:
///
///     per-layer input  p = (RMSNorm_w(P · x₀ / √d) + E[token] · √width) / √2      all blocks at once
///                      (x₀ the scaled embedding, P `per_layer_model_proj`, E `per_layer_token_embd`)
///     each block       x ← x + RMSNorm(proj · (gelu(gate · x) ⊙ p[block]))
///
/// The embedding table (`width × blocks` per token, as large as the rest of a small model) is
/// read a row at a time from the mapping, never copied.
struct PerLayerEmbeddings: Sendable {
    /// `per_layer_token_embd`: one row of `blocks × width` per token.
    let tokenEmbedding: GGUFTensor
    /// `per_layer_model_proj`: the residual's share, `blocks × width` rows.
    let projection: Projection
    /// `per_layer_proj_norm`, applied to each block's `width` floats.
    let norm: [Float]
    let width: Int
}

/// One block's use of ``PerLayerEmbeddings``: `inp_gate` (`width` rows), `proj` back to the
/// residual's width and its norm (`post_norm`).
struct PerLayerInputWeights: Sendable {
    let gate: Projection
    let projection: Projection
    let norm: [Float]
}

/// What a block mixes positions with.
enum TokenMixer: Sendable {
    case attention(AttentionWeights)
    case shortConvolution(ShortConvolutionWeights)
    case gatedDeltaNet(GatedDeltaNetWeights)
    /// Granite 4's Mamba2 selective state space, its state in ``RecurrentState``.
    case mamba2(Mamba2Weights)
}

/// Causal self-attention's weights and per-block parameters.
struct AttentionWeights: Sendable {
    /// Queries, keys and values: three projections, or one whose output rows are the queries,
    /// then the keys, then the values (Phi-3's `attn_qkv`).
    enum Inputs: Sendable {
        /// A `nil` value projection: the keys' projection, before their norm, serves as the
        /// values (Gemma 4's full blocks in 26B and 31B).
        case separate(query: Projection, key: Projection, value: Projection?)
        case fused(Projection)
        /// Queries only: the block attends to the keys and values an earlier block stored
        /// (Gemma 4's shared-KV blocks; ``BlockWeights/cacheSlot`` is that block's).
        case queries(Projection)
    }

    let inputs: Inputs
    let output: Projection
    /// RMSNorm weights applied to each query and key head before RoPE (Qwen 3, Gemma 3, LFM2).
    let queryNorm: [Float]?
    let keyNorm: [Float]?
    /// Gemma 4: the values are RMS-normalized per head without a weight (these are ones, so
    /// the norm's one code serves), for a block with values of its own.
    let valueNorm: [Float]?
    let keyValueHeadCount: Int
    /// Width of each query, key and value head.
    let headWidth: Int
    /// Index into the model's rotary embeddings, `nil` for a block without RoPE (SmolLM3).
    let rotary: Int?
    /// Positions attended to before the current one, plus one; `nil` for the whole context.
    let window: Int?
    /// A logit per query head that joins each row's softmax without a value (gpt-oss's
    /// `attn_sinks`): it raises the denominator, so a head may attend to little.
    let sinks: [Float]?
    /// The query projection gives each head `headWidth` queries then `headWidth` gate logits,
    /// and the attention's output is multiplied by their sigmoid (Qwen 3.5).
    var gatesOutput = false
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

/// A block's feed-forward network: one, a mixture of experts, or both side by side.
enum FeedForward: Sendable {
    case dense(FeedForwardWeights)
    case experts(ExpertWeights)
    /// Granite 4's MoE blocks (H-Tiny, H-Small): the mixture and a shared expert on the same
    /// normalized input, their outputs added (`experts(x) + shared(x)`, as llama.cpp adds them).
    case expertsAndSharedExpert(ExpertWeights, shared: FeedForwardWeights)
    case denseAndExperts(DenseAndExpertWeights)
}

/// Gemma 4's MoE blocks (26B-A4B): a dense network and a mixture of experts on the same
/// input, each with norms of its own, summed (the block's `ffn_norm` is the dense one's input
/// norm, `post_ffw_norm` follows the sum):
///
///     y = RMSNorm₁(dense(RMSNorm(x))) + RMSNorm₂(experts(RMSNorm₀(x)))
///
/// the mixture's router reading `RMSNorm(x) · scale / √d` (``routerNorm``).
struct DenseAndExpertWeights: Sendable {
    let dense: FeedForwardWeights
    /// The router's input norm: `ffn_gate_inp.scale / √d` (the router reads the block's input
    /// normalized with it, not the experts' input).
    let routerNorm: [Float]
    /// `post_ffw_norm_1`.
    let densePostNorm: [Float]
    /// `pre_ffw_norm_2`.
    let expertsNorm: [Float]
    let experts: ExpertWeights
    /// `post_ffw_norm_2`.
    let expertsPostNorm: [Float]
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
    /// Gemma 4: each expert's output is multiplied by its scale (`ffn_down_exps.scale`) before
    /// its weight.
    let outputScales: [Float]?
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

    /// Width of the hidden layer (the gate's and the up projection's outputs).
    var hiddenWidth: Int {
        switch inputs {
        case let .separate(gate, _): gate.outputWidth
        case let .fused(projection): projection.outputWidth / 2
        }
    }
}
