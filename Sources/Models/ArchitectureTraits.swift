/// What distinguishes one transformer family from another, for the shared forward pass and its
/// loader. A new family is a new set of traits (plus any operation it adds), not a copy of the
/// pass.
///
/// | trait                      | llama | qwen2 | qwen3 | gemma3 | gemma4 | phi3 | lfm2 | smollm3 |
/// |----------------------------|-------|-------|-------|--------|--------|------|------|---------|
/// | RoPE pairing               | adj.  | halves| halves| halves | halves |halves|halves| adj.    |
/// | activation                 | SiLU  | SiLU  | SiLU  | GELU   | GELU   | SiLU | SiLU | SiLU    |
/// | Q/K RMSNorm per head       |       |       | yes   | yes    | yes, V |      | yes  |         |
/// | post norms                 |       |       |       | yes    | yes    |      |      |         |
/// | queries scaled before QKᵀ  |       |       |       | yes    | none   | yes  |      |         |
/// | blocks without RoPE        |       |       |       |        |        |      |      | every 4th |
/// | short convolutions         |       |       |       |        |        |      | yes  |         |
///
/// Qwen 3.5 (`qwen35`): halves, SiLU, Q/K norm, gated attention output, Gated DeltaNet blocks.
/// Granite 4 hybrids (`granitehybrid`): adjacent pairs (where they rotate), SiLU, Mamba2 blocks,
/// Granite's multipliers; H-Tiny and H-Small a mixture of experts in every block with a shared
/// expert beside it.
///
/// Qwen 3 MoE is Qwen 3 with a mixture of experts in every block (`experts`); LFM2 MoE is
/// LFM2 with one in every block after the leading dense ones. gpt-oss attends as Qwen 2 does
/// (NeoX RoPE, biases) with a sink logit per head (`hasAttentionSinks`) and a sliding window in
/// its even blocks, and runs a mixture of experts with biases and OpenAI's clamped SwiGLU
/// behind `post_attention_norm`. Gemma 4 is Gemma 3's block with each block's kind listed
/// (`attention.sliding_window_pattern`), the sliding-window blocks with their own head width
/// and rotated dimensions, values RMS-normalized, an attention scale of 1 and proportional RoPE
/// in the full blocks (`rope_freqs`); E2B and E4B add per-layer token embeddings and blocks that
/// read an earlier block's keys and values, 26B-A4B a mixture of experts beside the dense
/// network. Qwen 3.5 is Qwen 3's attention (its output gated, a quarter of each head rotated)
/// in every fourth block and Gated DeltaNet linear attention in the others, with the norm
/// before the feed-forward network named `post_attention_norm`.
///
/// Biases on any projection, fused query-key-value and fused gate-up projections are read
/// from the tensors a file has, for every family (as llama.cpp's loader does).
struct ArchitectureTraits: Sendable {
    var rotaryPairing: RotaryPairing
    var activation: Activation
    /// Multiply token embeddings by √width (Gemma).
    var scalesEmbeddings = false
    /// RMSNorm each query and key head before RoPE (Qwen 3, Gemma 3, LFM2).
    var normalizesQueriesAndKeys = false
    /// RMSNorm the attention and feed-forward outputs before the residual add (Gemma 2/3).
    var hasPostNorms = false
    /// Every `n`-th block attends globally, the others within the sliding window (Gemma 3: 6).
    var globalBlockPeriod: Int?
    /// RoPE base of the sliding-window blocks (Gemma 3: 10,000).
    var localRopeBase: Double?
    /// Multiply queries by the attention scale after RoPE instead of the scores (Gemma 3, Phi-3,
    /// as llama.cpp's graphs do; it changes where the queries' rounding to half happens).
    var scalesQueriesBeforeAttention = false
    /// Every `n`-th block (1-based) runs without RoPE (SmolLM3: 4, as llama.cpp fixes it).
    var blockWithoutRotaryPeriod: Int?
    /// Blocks whose key/value head count is 0 are short convolutions (LFM2).
    var hasShortConvolutions = false
    /// Where the feed-forward networks are mixtures of experts.
    var experts = ExpertPlacement.none
    /// The gating function of a family that fixes it: `expert_gating_func` may be absent or
    /// must name this one (Qwen 3 MoE: softmax). `nil`: the key is required.
    var fixedExpertGating: ExpertGating?
    /// The mixtures carry a selection bias `exp_probs_b.bias` (LFM2 MoE); a family without one
    /// refuses the tensor as unused.
    var hasExpertSelectionBias = false
    /// The router and every expert projection have biases (`ffn_gate_inp.bias`,
    /// `ffn_{gate,up,down}_exps.bias`: gpt-oss), required; a family without them refuses them.
    var hasExpertBiases = false
    /// Each block's learned logit per query head (`attn_sinks`), which takes part in the
    /// softmax's maximum and denominator and weights no value (gpt-oss).
    var hasAttentionSinks = false
    /// The final norm's tensor (LFM2 stores it as `token_embd_norm`).
    var outputNormName = "output_norm"
    /// The norm before the feed-forward network (gpt-oss names it `post_attention_norm`).
    var feedForwardNormName = "ffn_norm"
    /// What `attention.sliding_window` means for the family.
    var slidingWindow = SlidingWindowUse.unsupported
    /// RoPE may rotate only the first `rope.dimension_count` dimensions of each head (Phi-3).
    var rotatesPartialHeads = false
    /// The global tensor `rope_freqs.weight` divides RoPE's angles (Llama 3).
    var usesRotaryFrequencyFactors = false
    /// `rope_factors_long.weight` / `rope_factors_short.weight` divide RoPE's angles (Phi-3 LongRoPE).
    var usesLongRoPEFactors = false
    /// Blocks whose kind is listed one by one (`attention.sliding_window_pattern`, Gemma 4)
    /// rather than following ``globalBlockPeriod``.
    var listsLocalBlocks = false
    /// The sliding-window blocks may have their own head width, rotated dimensions and
    /// key/value head count (Gemma 4: `attention.key_length_swa`, `rope.dimension_count_swa`).
    var hasLocalAttentionShapes = false
    /// The values are RMS-normalized per head, without a weight, before the cache (Gemma 4);
    /// a block without a value projection uses its keys' projection as values.
    var normalizesValues = false
    /// The scores are not scaled (Gemma 4: 1, where the others multiply by 1/√head width).
    var leavesScoresUnscaled = false
    /// `final_logit_softcapping` is applied (Gemma 4); elsewhere a non-zero value is refused.
    var capsFinalLogits = false
    /// Gated DeltaNet blocks between the attention ones (Qwen 3.5: `ssm.*`, the recurrent
    /// blocks listed or every `full_attention_interval`-th one attention), with M-RoPE sections.
    var hasGatedDeltaNets = false
    /// The query projection gives each head its queries and then as many gate logits, and the
    /// attention's output is multiplied by their sigmoid before the output projection (Qwen 3.5).
    var gatesAttentionOutput = false
    /// Blocks whose key/value head count is 0 are Mamba2 selective state spaces (Granite 4:
    /// `ssm.*`).
    var hasMamba2 = false
    /// Granite's multipliers (``GraniteMultipliers``) and its RoPE switch
    /// (`rope.scaling.finetuned`).
    var hasGraniteMultipliers = false
    /// Keys under `<architecture>.` that the family reads beyond the common ones.
    var additionalKeys: Set<String> = []

    enum ExpertPlacement: Sendable, Equatable {
        /// Dense networks only: `expert_count` is refused.
        case none
        /// A mixture in every block after `leading_dense_block_count` dense ones, each expert
        /// `expert_feed_forward_length` wide (Qwen 3 MoE, LFM2 MoE, gpt-oss).
        case always
        /// Where the file has `expert_count`, a mixture in place of every block's network,
        /// each expert `feed_forward_length` wide, with a shared expert (an ungated SwiGLU
        /// network `expert_shared_feed_forward_length` wide) added where that length is given
        /// (Granite 4 H-Tiny and H-Small); dense networks otherwise.
        case replacingDenseWhereCounted
        /// Where the file has `expert_count`, a mixture beside every block's dense network
        /// (Gemma 4 26B-A4B); dense networks alone otherwise.
        case besideDenseWhereCounted
    }

    enum SlidingWindowUse: Sendable {
        /// The key must be present (Gemma 3).
        case required
        /// Used when present and positive (LFM2: every attention block).
        case optional
        /// Present in files but switched off by llama.cpp for every checkpoint (Phi-3).
        case ignored
        /// A positive window is refused: the family has none.
        case unsupported
    }

    /// Whether block `block` (0-based) attends within the sliding window.
    func isLocal(block: Int, hasWindow: Bool) -> Bool {
        guard hasWindow else { return false }
        guard let period = globalBlockPeriod else { return true }
        return (block + 1) % period != 0
    }

    /// Whether block `block` (0-based) applies RoPE.
    func usesRotary(block: Int) -> Bool {
        guard let period = blockWithoutRotaryPeriod else { return true }
        return (block + 1) % period != 0
    }
}

/// The feed-forward activation, applied to the gate and multiplied by the up projection.
enum Activation: Sendable {
    /// SiLU (SwiGLU): `_swiGLU`.
    case silu
    /// GELU, tanh approximation, through ggml's half-precision table (GeGLU): `_geGLU`.
    case gelu
    /// OpenAI's clamped SwiGLU (gpt-oss): min(gate, 7) · σ(1.702 · min(gate, 7)) ·
    /// (clamp(up, −7, 7) + 1): `_clampedSwiGLU`.
    case clampedSiLU
}

extension ModelArchitecture {
    var traits: ArchitectureTraits {
        switch self {
        case .llama:
            ArchitectureTraits(rotaryPairing: .adjacent, activation: .silu, usesRotaryFrequencyFactors: true)
        case .qwen2:
            ArchitectureTraits(rotaryPairing: .halves, activation: .silu)
        case .qwen3:
            ArchitectureTraits(rotaryPairing: .halves, activation: .silu, normalizesQueriesAndKeys: true)
        case .gemma3:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .gelu, scalesEmbeddings: true, normalizesQueriesAndKeys: true,
                hasPostNorms: true, globalBlockPeriod: 6, localRopeBase: 10_000, scalesQueriesBeforeAttention: true,
                slidingWindow: .required,
                additionalKeys: ["attention.sliding_window", "rope.freq_base_swa", "final_logit_softcapping"])
        case .phi3:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .silu, scalesQueriesBeforeAttention: true, slidingWindow: .ignored,
                rotatesPartialHeads: true, usesLongRoPEFactors: true, additionalKeys: ["attention.sliding_window"])
        case .lfm2:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .silu, normalizesQueriesAndKeys: true, hasShortConvolutions: true,
                outputNormName: "token_embd_norm", slidingWindow: .optional,
                additionalKeys: ["attention.sliding_window", "shortconv.l_cache"])
        case .smollm3:
            ArchitectureTraits(rotaryPairing: .adjacent, activation: .silu, blockWithoutRotaryPeriod: 4)
        case .qwen3moe:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .silu, normalizesQueriesAndKeys: true, experts: .always,
                fixedExpertGating: .softmax, additionalKeys: ["expert_count", "expert_used_count", "expert_feed_forward_length", "expert_gating_func"])
        case .lfm2moe:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .silu, normalizesQueriesAndKeys: true, hasShortConvolutions: true,
                experts: .always, hasExpertSelectionBias: true, outputNormName: "token_embd_norm",
                additionalKeys: ["shortconv.l_cache", "expert_count", "expert_used_count", "expert_feed_forward_length",
                                 "expert_gating_func", "leading_dense_block_count"])
        case .gptOSS:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .clampedSiLU, globalBlockPeriod: 2, experts: .always,
                fixedExpertGating: .softmaxOfChosen, hasExpertBiases: true, hasAttentionSinks: true, feedForwardNormName: "post_attention_norm",
                slidingWindow: .required,
                additionalKeys: ["attention.sliding_window", "expert_count", "expert_used_count", "expert_feed_forward_length"])
        case .gemma4:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .gelu, scalesEmbeddings: true, normalizesQueriesAndKeys: true,
                hasPostNorms: true, localRopeBase: 10_000, experts: .besideDenseWhereCounted, fixedExpertGating: .softmax,
                slidingWindow: .required,
                usesRotaryFrequencyFactors: true, listsLocalBlocks: true, hasLocalAttentionShapes: true, normalizesValues: true,
                leavesScoresUnscaled: true, capsFinalLogits: true,
                additionalKeys: ["attention.sliding_window", "attention.sliding_window_pattern", "attention.key_length_swa",
                                 "attention.value_length_swa", "rope.dimension_count_swa", "rope.freq_base_swa",
                                 "attention.shared_kv_layers", "embedding_length_per_layer_input", "final_logit_softcapping",
                                 "expert_count", "expert_used_count", "expert_feed_forward_length", "expert_gating_func"])
        case .qwen35:
            ArchitectureTraits(
                rotaryPairing: .halves, activation: .silu, normalizesQueriesAndKeys: true, feedForwardNormName: "post_attention_norm",
                rotatesPartialHeads: true, hasGatedDeltaNets: true, gatesAttentionOutput: true,
                additionalKeys: ["ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size",
                                 "full_attention_interval", "attention.recurrent_layers", "rope.dimension_sections", "nextn_predict_layers"])
        case .graniteHybrid:
            ArchitectureTraits(
                rotaryPairing: .adjacent, activation: .silu, experts: .replacingDenseWhereCounted, fixedExpertGating: .softmax,
                hasMamba2: true, hasGraniteMultipliers: true,
                additionalKeys: ["ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank", "ssm.inner_size",
                                 "embedding_scale", "residual_scale", "attention.scale", "logit_scale",
                                 "expert_count", "expert_used_count", "expert_shared_feed_forward_length", "expert_gating_func"])
        }
    }
}
