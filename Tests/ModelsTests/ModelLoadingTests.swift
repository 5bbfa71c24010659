import Foundation
import GGUF
import Models
import Testing
import TypesetTestSupport

/// Loading is strict: every tensor must be one the forward pass uses and every
/// `<architecture>.*` key one the configuration reads. Each case rewrites one of the synthetic
/// models (`Fixtures/make_synthetic_models.py`) with one thing added or changed.
@Suite struct ModelLoadingTests {
    /// The synthetic model `name`, rewritten with `changes` applied to its metadata and tensors.
    static func rewritten(
        _ name: String, setting values: [String: GGUFValue] = [:], removing keys: Set<String> = [],
        addingTensor extra: (name: String, shape: [Int])? = nil, droppingTensor dropped: String? = nil
    ) throws -> GGUFFile {
        let file = try GGUFFile(contentsOf: TestModels.syntheticPath(of: name))
        var writer = GGUFWriter()
        for entry in file.metadata.entries where !keys.contains(entry.key) && !entry.key.hasPrefix("GGUF.") {
            writer.setValue(values[entry.key] ?? entry.value, forKey: entry.key)
        }
        for (key, value) in values where !file.metadata.contains(key: key) { writer.setValue(value, forKey: key) }
        for tensor in file.tensors where tensor.name != dropped {
            try writer.addTensor(name: tensor.name, shape: tensor.shape, type: tensor.type, data: Array(tensor.bytes))
        }
        if let extra {
            let count = extra.shape.reduce(1, *)
            try writer.addTensor(name: extra.name, shape: extra.shape, type: .f32, data: Array(repeating: 0, count: 4 * count))
        }
        return try GGUFFile(bytes: try writer.encoded())
    }

    static func loadError(_ file: GGUFFile) -> ModelLoadError? {
        do {
            _ = try TransformerModel(file: file, packsWeights: false)
            return nil
        } catch {
            return error
        }
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func rewrittenModelsStillLoad() throws {
        // The rewriting itself changes nothing that matters.
        #expect(Self.loadError(try Self.rewritten("qwen2")) == nil)
        // Optional tensors stay optional: Llama without rope_freqs is SmolLM2's kind of model.
        #expect(Self.loadError(try Self.rewritten("llama3", droppingTensor: "rope_freqs.weight")) == nil)
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func unusedTensorsAreRefused() throws {
        // A mixture-of-experts router, a tensor no supported family reads.
        let router = try Self.rewritten("qwen2", addingTensor: ("blk.1.ffn_gate_inp.weight", [128, 8]))
        #expect(Self.loadError(router) == .unusedTensor("blk.1.ffn_gate_inp.weight"))
        // Llama 3's RoPE factors in a family that has none.
        let factors = try Self.rewritten("qwen3", addingTensor: ("rope_freqs.weight", [16]))
        #expect(Self.loadError(factors) == .unusedTensor("rope_freqs.weight"))
        let description = ModelLoadError.unusedTensor("rope_freqs.weight").description
        #expect(description.contains("rope_freqs.weight") && description.contains("does not use"))
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func keysThatChangeTheArithmeticAreRefused() throws {
        let cases: [(String, String, GGUFValue)] = [
            ("qwen2", "qwen2.attention.scale", .float32(0.1)),
            ("qwen2", "qwen2.rope.scaling.type", .string("longrope")),
            ("llama3", "llama.attention.sliding_window", .uint32(4096)),
            ("qwen3", "qwen3.final_logit_softcapping", .float32(30)),
            ("smollm3", "smollm3.expert_count", .uint32(8)),
            ("qwen2-yarn", "qwen2.rope.scaling.yarn_beta_fast", .float32(16)),
        ]
        for (name, key, value) in cases {
            let error = Self.loadError(try Self.rewritten(name, setting: [key: value]))
            guard case let .configuration(.unsupportedKey(reported, _))? = error else {
                Issue.record("\(name) with \(key): \(String(describing: error))")
                continue
            }
            #expect(reported == key)
        }
        // Values that leave the arithmetic unchanged are accepted.
        #expect(Self.loadError(try Self.rewritten("qwen2", setting: ["qwen2.rope.scaling.type": .string("none")])) == nil)
        #expect(Self.loadError(try Self.rewritten("qwen2-yarn", setting: ["qwen2.rope.scaling.yarn_beta_fast": .float32(32)])) == nil)
        #expect(Self.loadError(try Self.rewritten("phi3", setting: ["phi3.attention.sliding_window": .uint32(0)])) == nil)
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func malformedFamilyParametersAreTypedErrors() throws {
        // LFM2's per-block key/value head counts must have one entry per block.
        let short = try Self.rewritten("lfm2", setting: ["lfm2.attention.head_count_kv": .array(try GGUFArray(elementType: .int32, elements: [.int32(0), .int32(0), .int32(2)]))])
        guard case .configuration(.invalid(key: "lfm2.attention.head_count_kv", _, _))? = Self.loadError(short) else {
            Issue.record("\(String(describing: Self.loadError(short)))")
            return
        }
        // Phi-3 rotates part of each head; an odd or too large count is refused.
        let odd = try Self.rewritten("phi3", setting: ["phi3.rope.dimension_count": .uint32(33)])
        guard case .configuration(.invalid(key: "phi3.rope.dimension_count", _, _))? = Self.loadError(odd) else {
            Issue.record("\(String(describing: Self.loadError(odd)))")
            return
        }
        // Elsewhere RoPE must rotate whole heads, as llama.cpp requires.
        let partial = try Self.rewritten("qwen2", setting: ["qwen2.rope.dimension_count": .uint32(16)])
        guard case .configuration(.invalid(key: "qwen2.rope.dimension_count", _, _))? = Self.loadError(partial) else {
            Issue.record("\(String(describing: Self.loadError(partial)))")
            return
        }
        // A convolution block needs its kernel.
        #expect(Self.loadError(try Self.rewritten("lfm2", droppingTensor: "blk.3.shortconv.conv.weight"))
                == .missingTensor("blk.3.shortconv.conv.weight"))
    }

    /// The fuzzer's tiny gpt-oss, Gemma 4, Qwen 3.5 and Granite 4 seeds are models the loader accepts, so
    /// their mutations reach the expert keys, the 3-D tensors and MXFP4's blocks, the per-block
    /// arrays, the recurrent blocks' keys; and each runs (logits finite).
    @Test func theFuzzersModelSeedLoads() throws {
        let model = try TransformerModel(file: try GGUFFile(bytes: Array(try Fixtures.data("fuzz-seeds/tiny-gpt-oss.gguf"))))
        let logits = try model.evaluate([5, 6, 7, 5], cache: model.makeCache(contextLength: 16), threadCount: 1)
        #expect(logits.count == 8 && logits.allSatisfy(\.isFinite))
        // The Gemma 4 seed: every kind of block it has, a prompt longer than its window.
        let gemma = try TransformerModel(file: try GGUFFile(bytes: Array(try Fixtures.data("fuzz-seeds/tiny-gemma4.gguf"))))
        #expect(gemma.configuration.localBlocks == [true, true, false, true] && gemma.configuration.keyValueSource(ofBlock: 3) == 1)
        let gemmaLogits = try gemma.evaluate(Array(repeating: [5, 9, 11, 3], count: 4).flatMap { $0 },
                                             cache: gemma.makeCache(contextLength: 32), threadCount: 1)
        #expect(gemmaLogits.count == 14 && gemmaLogits.allSatisfy { $0.isFinite && abs($0) <= 30 })
        // The Qwen 3.5 seed: three Gated DeltaNets, gated attention, a prediction block carried.
        let qwen = try TransformerModel(file: try GGUFFile(bytes: Array(try Fixtures.data("fuzz-seeds/tiny-qwen35.gguf"))))
        #expect(qwen.configuration.blockCount == 4 && qwen.configuration.predictionBlockCount == 1)
        let qwenLogits = try qwen.evaluate([4, 5, 6, 7, 4, 5], cache: qwen.makeCache(contextLength: 16), threadCount: 1)
        #expect(qwenLogits.count == 8 && qwenLogits.allSatisfy(\.isFinite))
        // The Granite 4 seed: two Mamba2 blocks around an attention block, the multipliers.
        let granite = try TransformerModel(file: try GGUFFile(bytes: Array(try Fixtures.data("fuzz-seeds/tiny-granite-hybrid.gguf"))))
        #expect(granite.configuration.blockKinds == [.mamba2, .attention(keyValueHeadCount: 1), .mamba2])
        let graniteLogits = try granite.evaluate([3, 4, 5, 6, 3, 4], cache: granite.makeCache(contextLength: 16), threadCount: 1)
        #expect(graniteLogits.count == 8 && graniteLogits.allSatisfy(\.isFinite))
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func malformedMixturesOfExpertsAreTypedErrors() throws {
        func invalidKey(_ file: GGUFFile) -> String? {
            if case let .configuration(.invalid(key, _, _))? = Self.loadError(file) { return key }
            return nil
        }
        // More experts used than there are, none used, a file claiming 10,000 experts.
        #expect(invalidKey(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_used_count": .uint32(9)])) == "qwen3moe.expert_used_count")
        #expect(invalidKey(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_used_count": .uint32(0)])) == "qwen3moe.expert_used_count")
        #expect(invalidKey(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_count": .uint32(10_000)])) == "qwen3moe.expert_count")
        // Metadata that disagrees with the expert tensors' third dimension (or their hidden width).
        #expect(Self.loadError(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_count": .uint32(16)]))
                == .shapeMismatch("blk.0.ffn_gate_inp.weight", expected: [128, 16], found: [128, 8]))
        #expect(Self.loadError(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_feed_forward_length": .uint32(32)]))
                == .shapeMismatch("blk.0.ffn_gate_exps.weight", expected: [128, 32, 8], found: [128, 64, 8]))
        #expect(Self.loadError(try Self.rewritten("qwen3moe", removing: ["qwen3moe.expert_count"]))
                == .configuration(.missing("qwen3moe.expert_count")))
        // An expert tensor missing, and a key the family does not read.
        #expect(Self.loadError(try Self.rewritten("qwen3moe", droppingTensor: "blk.2.ffn_down_exps.weight"))
                == .missingTensor("blk.2.ffn_down_exps.weight"))
        guard case .configuration(.unsupportedKey("qwen3moe.expert_shared_count", _))?
                = Self.loadError(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_shared_count": .uint32(1)])) else {
            Issue.record("a shared expert count was not refused")
            return
        }
        // LFM2 MoE: a gating function Typeset does not implement, none at all, more leading
        // dense blocks than blocks, and leading dense counts that disagree with the tensors.
        #expect(Self.loadError(try Self.rewritten("lfm2moe", setting: ["lfm2moe.expert_gating_func": .uint32(4)]))
                == .configuration(.unsupportedKey("lfm2moe.expert_gating_func", value: "4")))
        #expect(Self.loadError(try Self.rewritten("lfm2moe", removing: ["lfm2moe.expert_gating_func"]))
                == .configuration(.missing("lfm2moe.expert_gating_func")))
        #expect(invalidKey(try Self.rewritten("lfm2moe", setting: ["lfm2moe.leading_dense_block_count": .uint32(7)]))
                == "lfm2moe.leading_dense_block_count")
        #expect(Self.loadError(try Self.rewritten("lfm2moe", setting: ["lfm2moe.leading_dense_block_count": .uint32(2)]))
                == .missingTensor("blk.1.ffn_gate.weight"))
        #expect(Self.loadError(try Self.rewritten("lfm2moe", removing: ["lfm2moe.leading_dense_block_count"]))
                == .missingTensor("blk.0.ffn_gate_inp.weight"))
        // 0 leading dense blocks is a count like any other (the key's absence means the same).
        #expect(Self.loadError(try Self.rewritten("lfm2moe", setting: ["lfm2moe.leading_dense_block_count": .uint32(0)]))
                == .missingTensor("blk.0.ffn_gate_inp.weight"))
        // LFM2 MoE's selection bias is required, as llama.cpp loads it; Qwen 3 MoE has none
        // (llama.cpp never reads one) and fixes its gating to softmax.
        #expect(Self.loadError(try Self.rewritten("lfm2moe", droppingTensor: "blk.2.exp_probs_b.bias"))
                == .missingTensor("blk.2.exp_probs_b.bias"))
        #expect(Self.loadError(try Self.rewritten("qwen3moe", addingTensor: ("blk.1.exp_probs_b.bias", [8])))
                == .unusedTensor("blk.1.exp_probs_b.bias"))
        #expect(Self.loadError(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_gating_func": .uint32(2)]))
                == .configuration(.unsupportedKey("qwen3moe.expert_gating_func", value: "2")))
        #expect(Self.loadError(try Self.rewritten("qwen3moe", setting: ["qwen3moe.expert_gating_func": .uint32(1)])) == nil)
        // gpt-oss: its sinks, its window and its expert biases are part of the arithmetic; a
        // gating function key is not one it reads (llama.cpp fixes softmax-of-the-chosen).
        #expect(Self.loadError(try Self.rewritten("gpt-oss", droppingTensor: "blk.1.attn_sinks.weight"))
                == .missingTensor("blk.1.attn_sinks.weight"))
        #expect(Self.loadError(try Self.rewritten("gpt-oss", removing: ["gpt-oss.attention.sliding_window"]))
                == .configuration(.missing("gpt-oss.attention.sliding_window")))
        guard case .configuration(.unsupportedKey("gpt-oss.expert_gating_func", _))?
                = Self.loadError(try Self.rewritten("gpt-oss", setting: ["gpt-oss.expert_gating_func": .uint32(3)])) else {
            Issue.record("a gating function key was not refused for gpt-oss")
            return
        }
        // Its router's and experts' biases are required; other families refuse them as unused.
        #expect(Self.loadError(try Self.rewritten("gpt-oss", droppingTensor: "blk.3.ffn_down_exps.bias"))
                == .missingTensor("blk.3.ffn_down_exps.bias"))
        #expect(Self.loadError(try Self.rewritten("qwen3moe", addingTensor: ("blk.0.ffn_up_exps.bias", [64, 8])))
                == .unusedTensor("blk.0.ffn_up_exps.bias"))
        #expect(Self.loadError(try Self.rewritten("gpt-oss", setting: ["gpt-oss.expert_feed_forward_length": .uint32(32)]))
                == .shapeMismatch("blk.0.ffn_gate_exps.weight", expected: [128, 32, 8], found: [128, 64, 8]))
    }

    /// Qwen 3.5's shape, read from its keys: which blocks are Gated DeltaNets (listed, or by
    /// the interval), their state's sizes, the M-RoPE sections; and the ways a file can get
    /// them wrong, each a typed error naming the key or tensor.
    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func qwen35RecurrentBlocksAndTheirState() throws {
        let model = try TransformerModel(contentsOf: TestModels.syntheticPath(of: "qwen35"))
        let configuration = model.configuration
        #expect(configuration.blockKinds == [.gatedDeltaNet, .gatedDeltaNet, .gatedDeltaNet, .attention(keyValueHeadCount: 2),
                                             .gatedDeltaNet, .gatedDeltaNet])
        let shape = try #require(configuration.gatedDeltaNet)
        #expect(shape.convolutionLength == 4 && shape.headWidth == 32 && shape.keyHeadCount == 2 && shape.valueHeadCount == 4)
        #expect(shape.convolutionWidth == 256 && shape.stateFloatCount == 3 * 256 + 4 * 32 * 32)
        #expect(configuration.ropeSections == [0, 3, 3, 2] && configuration.ropeDimensionCount == 16)
        #expect(model.makeCache(contextLength: 64).hasRecurrentState)

        func invalidKey(_ file: GGUFFile) -> String? {
            if case let .configuration(.invalid(key, _, _))? = Self.loadError(file) { return key }
            return nil
        }
        let flags = { (values: [Bool]) in GGUFValue.array(try GGUFArray(elementType: .bool, elements: values.map(GGUFValue.bool))) }
        // Without the list, the interval decides: every second block attends, so block 1's
        // fused projection is read as an attention block's (gated queries, keys and values).
        #expect(Self.loadError(try Self.rewritten("qwen35", setting: ["qwen35.full_attention_interval": .uint32(2)],
                                                  removing: ["qwen35.attention.recurrent_layers"]))
                == .shapeMismatch("blk.1.attn_qkv.weight", expected: [128, 2 * 256 + 2 * 128], found: [128, 256]))
        #expect(Self.loadError(try Self.rewritten("qwen35", removing: ["qwen35.attention.recurrent_layers"])) == nil)
        // A list with a flag too few; state sizes that do not multiply out; value heads that are
        // not a multiple of the key heads; a convolution of one tap, or longer than the context.
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.attention.recurrent_layers": try flags([true, false])]))
                == "qwen35.attention.recurrent_layers")
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.ssm.inner_size": .uint32(96)])) == "qwen35.ssm.inner_size")
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.ssm.time_step_rank": .uint32(3), "qwen35.ssm.inner_size": .uint32(96)]))
                == "qwen35.ssm.time_step_rank")
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.ssm.conv_kernel": .uint32(1)])) == "qwen35.ssm.conv_kernel")
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.ssm.conv_kernel": .uint32(8), "qwen35.context_length": .uint32(6)]))
                == "qwen35.ssm.conv_kernel")
        #expect(Self.loadError(try Self.rewritten("qwen35", removing: ["qwen35.ssm.state_size"]))
                == .configuration(.missing("qwen35.ssm.state_size")))
        // Sections: four of them, not all empty, and required.
        let sections = { (values: [Int]) in GGUFValue.array(try GGUFArray(elementType: .int32, elements: values.map { .int32(Int32($0)) })) }
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.rope.dimension_sections": try sections([0, 0, 0, 0])]))
                == "qwen35.rope.dimension_sections")
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.rope.dimension_sections": try sections([4, 4])]))
                == "qwen35.rope.dimension_sections")
        #expect(Self.loadError(try Self.rewritten("qwen35", removing: ["qwen35.rope.dimension_sections"]))
                == .configuration(.missing("qwen35.rope.dimension_sections")))
        // Every tensor of a recurrent block is required, its convolution of the right shape,
        // and a tensor it does not use is refused.
        #expect(Self.loadError(try Self.rewritten("qwen35", droppingTensor: "blk.4.ssm_a")) == .missingTensor("blk.4.ssm_a"))
        #expect(Self.loadError(try Self.rewritten("qwen35", droppingTensor: "blk.0.ssm_dt.bias")) == .missingTensor("blk.0.ssm_dt.bias"))
        #expect(Self.loadError(try Self.rewritten("qwen35", setting: ["qwen35.ssm.conv_kernel": .uint32(3)]))
                == .shapeMismatch("blk.0.ssm_conv1d.weight", expected: [3, 256], found: [4, 256]))
        #expect(Self.loadError(try Self.rewritten("qwen35", addingTensor: ("blk.2.ssm_ba.weight", [128, 8])))
                == .unusedTensor("blk.2.ssm_ba.weight"))
        // The multi-token-prediction block the converter appends is carried, not run (block
        // 6 of 7); without `nextn_predict_layers` it would be a block of the model, whose
        // `nextn.*` tensors nothing reads.
        #expect(configuration.blockCount == 6 && configuration.predictionBlockCount == 1)
        #expect(Self.loadError(try Self.rewritten("qwen35", setting: ["qwen35.nextn_predict_layers": .uint32(0)]))
                == .unusedTensor("blk.6.nextn.eh_proj.weight"))
        #expect(invalidKey(try Self.rewritten("qwen35", setting: ["qwen35.nextn_predict_layers": .uint32(7)]))
                == "qwen35.nextn_predict_layers")
    }

    /// Granite 4's hybrid, read from its keys: Mamba2 blocks where the key/value head count is
    /// 0, their shape, Granite's multipliers, attention without RoPE; and the ways a file can
    /// get them wrong.
    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func graniteHybridMamba2BlocksAndMultipliers() throws {
        let name = "granite-hybrid"
        let model = try TransformerModel(contentsOf: TestModels.syntheticPath(of: name))
        let configuration = model.configuration
        #expect(configuration.architecture == .graniteHybrid)
        #expect(configuration.blockKinds == [.mamba2, .mamba2, .mamba2, .attention(keyValueHeadCount: 2), .mamba2, .mamba2])
        let shape = try #require(configuration.mamba2)
        #expect(shape.convolutionLength == 4 && shape.stateSize == 64 && shape.groupCount == 2 && shape.headCount == 16)
        #expect(shape.innerSize == 256 && shape.headWidth == 16 && shape.convolutionWidth == 512 && shape.inputProjectionWidth == 784)
        #expect(configuration.multipliers == GraniteMultipliers(embedding: 2, residual: 0.5, attention: 0.09, logits: 2))
        #expect(!configuration.usesRotary && model.makeCache(contextLength: 64).hasRecurrentState)

        func invalidKey(_ file: GGUFFile) -> String? {
            if case let .configuration(.invalid(key, _, _))? = Self.loadError(file) { return key }
            return nil
        }
        // Heads not a multiple of the groups; an inner width not a multiple of the heads; a
        // convolution of one tap, or longer than the context; a negative multiplier.
        #expect(invalidKey(try Self.rewritten(name, setting: ["granitehybrid.ssm.group_count": .uint32(3)])) == "granitehybrid.ssm.time_step_rank")
        #expect(invalidKey(try Self.rewritten(name, setting: ["granitehybrid.ssm.time_step_rank": .uint32(24)])) == "granitehybrid.ssm.inner_size")
        #expect(invalidKey(try Self.rewritten(name, setting: ["granitehybrid.ssm.conv_kernel": .uint32(1)])) == "granitehybrid.ssm.conv_kernel")
        #expect(invalidKey(try Self.rewritten(name, setting: ["granitehybrid.ssm.conv_kernel": .uint32(8), "granitehybrid.context_length": .uint32(6)]))
                == "granitehybrid.ssm.conv_kernel")
        #expect(invalidKey(try Self.rewritten(name, setting: ["granitehybrid.residual_scale": .float32(-1)])) == "granitehybrid.residual_scale")
        #expect(Self.loadError(try Self.rewritten(name, removing: ["granitehybrid.ssm.state_size"]))
                == .configuration(.missing("granitehybrid.ssm.state_size")))
        // A state size the tensors do not have; every tensor of a Mamba2 block required but the
        // convolution's bias; a tensor the block does not use refused.
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.ssm.state_size": .uint32(32)]))
                == .shapeMismatch("blk.0.ssm_in.weight", expected: [128, 656], found: [128, 784]))
        #expect(Self.loadError(try Self.rewritten(name, droppingTensor: "blk.4.ssm_d")) == .missingTensor("blk.4.ssm_d"))
        #expect(Self.loadError(try Self.rewritten(name, droppingTensor: "blk.1.ssm_norm.weight")) == .missingTensor("blk.1.ssm_norm.weight"))
        #expect(Self.loadError(try Self.rewritten(name, droppingTensor: "blk.0.ssm_conv1d.bias")) == nil)
        #expect(Self.loadError(try Self.rewritten(name, addingTensor: ("blk.2.ssm_dt.weight", [16, 16]))) == .unusedTensor("blk.2.ssm_dt.weight"))
        // An expert count makes every block's network a mixture, which needs its other keys.
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.expert_count": .uint32(8)]))
                == .configuration(.missing("granitehybrid.expert_used_count")))
        // RoPE where the file says so: the attention block then rotates.
        let rotating = try TransformerModel(file: try Self.rewritten(name, setting: ["granitehybrid.rope.scaling.finetuned": .bool(true)]))
        #expect(rotating.configuration.usesRotary)
    }

    /// Granite 4's mixtures of experts (H-Tiny, H-Small): a mixture in every block, its experts
    /// as wide as `feed_forward_length`, a softmax router, and a shared expert where
    /// `expert_shared_feed_forward_length` is given; and the ways a file can get them wrong.
    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func graniteHybridMixtureOfExpertsWithSharedExpert() throws {
        let name = "granite-hybrid-moe"
        let model = try TransformerModel(contentsOf: TestModels.syntheticPath(of: name))
        let experts = try #require(model.configuration.experts)
        #expect(experts.count == 8 && experts.usedCount == 2 && experts.gating == .softmax)
        #expect(experts.feedForwardLength == 64 && experts.sharedFeedForwardLength == 128 && experts.leadingDenseBlockCount == 0)
        // The shared expert's tensors are required where its width is given, refused where not.
        #expect(Self.loadError(try Self.rewritten(name, droppingTensor: "blk.5.ffn_down_shexp.weight"))
                == .missingTensor("blk.5.ffn_down_shexp.weight"))
        let withoutWidth = Self.loadError(try Self.rewritten(name, removing: ["granitehybrid.expert_shared_feed_forward_length"]))
        if case let .unusedTensor(tensor)? = withoutWidth {
            #expect(tensor.hasSuffix("_shexp.weight"))
        } else {
            Issue.record("a shared expert without its width loaded as \(String(describing: withoutWidth)), not an unused tensor")
        }
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.expert_shared_feed_forward_length": .uint32(96)]))
                == .shapeMismatch("blk.0.ffn_gate_shexp.weight", expected: [128, 96], found: [128, 128]))
        // The experts' width is the feed-forward length: a file saying otherwise does not load.
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.feed_forward_length": .uint32(32)]))
                == .shapeMismatch("blk.0.ffn_gate_exps.weight", expected: [128, 32, 8], found: [128, 64, 8]))
        // llama.cpp's Granite graph fixes the softmax router and reads no expert width or weight
        // scale: another gating function, or either key, is refused by name.
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.expert_gating_func": .uint32(2)]))
                == .configuration(.unsupportedKey("granitehybrid.expert_gating_func", value: "2")))
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.expert_gating_func": .uint32(1)])) == nil)
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.expert_weights_scale": .float32(2.5)]))
                == .configuration(.unsupportedKey("granitehybrid.expert_weights_scale", value: "2.5")))
        #expect(Self.loadError(try Self.rewritten(name, setting: ["granitehybrid.expert_feed_forward_length": .uint32(64)]))
                == .configuration(.unsupportedKey("granitehybrid.expert_feed_forward_length", value: "64")))
        #expect(Self.loadError(try Self.rewritten(name, droppingTensor: "blk.3.ffn_gate_inp.weight")) == .missingTensor("blk.3.ffn_gate_inp.weight"))
    }

    /// Gemma 4's shape, read from its keys: which blocks attend within the window, their head
    /// widths, which blocks read whose keys and values (and so have no cache of their own), the
    /// feed-forward widths per block; and the ways a file can get them wrong.
    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func gemma4BlocksAndSharedKeysAndValues() throws {
        let model = try TransformerModel(contentsOf: TestModels.syntheticPath(of: "gemma4"))
        let configuration = model.configuration
        #expect(configuration.localBlocks == [true, true, false, true, false, true, false])
        #expect((0 ..< 7).map(configuration.headDimension(ofBlock:)) == [32, 32, 64, 32, 64, 32, 64])
        #expect((0 ..< 7).map(configuration.keyValueSource(ofBlock:)) == [0, 1, 2, 3, 4, 3, 4])
        #expect(configuration.feedForwardLengths == [256, 256, 256, 256, 256, 512, 512] && configuration.feedForwardLength == 512)
        #expect(configuration.perLayerEmbeddingLength == 32 && configuration.finalLogitSoftCapping == 15)
        #expect(configuration.localRopeDimensionCount == 32 && configuration.ropeDimensionCount == 64)
        // Five blocks with keys and values of their own: three of one 32-wide head, two of one
        // 64-wide head, keys and values in halves.
        #expect(model.makeCache(contextLength: 64).byteCount == 64 * 2 * (3 * 32 + 2 * 64) * 2)

        func invalidKey(_ file: GGUFFile) -> String? {
            if case let .configuration(.invalid(key, _, _))? = Self.loadError(file) { return key }
            return nil
        }
        let flags = { (values: [Bool]) in GGUFValue.array(try GGUFArray(elementType: .bool, elements: values.map(GGUFValue.bool))) }
        // A pattern with a flag too few; shared blocks whose sources are not a sliding-window
        // block then a full one.
        #expect(invalidKey(try Self.rewritten("gemma4", setting: ["gemma4.attention.sliding_window_pattern": try flags([true, false])]))
                == "gemma4.attention.sliding_window_pattern")
        #expect(invalidKey(try Self.rewritten("gemma4", setting: ["gemma4.attention.shared_kv_layers": .uint32(3)]))
                == "gemma4.attention.shared_kv_layers")
        #expect(invalidKey(try Self.rewritten("gemma4", setting: ["gemma4.attention.shared_kv_layers": .uint32(7)]))
                == "gemma4.attention.shared_kv_layers")
        // Without sharing, blocks 5 and 6 need keys of their own; without per-layer inputs the
        // per-layer tables are unused; a block's per-layer projection is required.
        #expect(Self.loadError(try Self.rewritten("gemma4", setting: ["gemma4.attention.shared_kv_layers": .uint32(0)]))
                == .missingTensor("blk.5.attn_k.weight"))
        #expect(Self.loadError(try Self.rewritten("gemma4", setting: ["gemma4.embedding_length_per_layer_input": .uint32(0)]))
                == .unusedTensor("per_layer_token_embd.weight"))
        #expect(Self.loadError(try Self.rewritten("gemma4", droppingTensor: "blk.3.proj.weight")) == .missingTensor("blk.3.proj.weight"))
        // A shared block with keys of its own would be ignored: refused.
        #expect(Self.loadError(try Self.rewritten("gemma4", addingTensor: ("blk.6.attn_k.weight", [128, 64])))
                == .unusedTensor("blk.6.attn_k.weight"))
        #expect(invalidKey(try Self.rewritten("gemma4", setting: ["gemma4.final_logit_softcapping": .float32(-3)]))
                == "gemma4.final_logit_softcapping")
        // The mixture's router scale is required, and its gating is a softmax.
        #expect(Self.loadError(try Self.rewritten("gemma4-moe", droppingTensor: "blk.1.ffn_gate_inp.scale"))
                == .missingTensor("blk.1.ffn_gate_inp.scale"))
        #expect(Self.loadError(try Self.rewritten("gemma4-moe", setting: ["gemma4.expert_gating_func": .uint32(2)]))
                == .configuration(.unsupportedKey("gemma4.expert_gating_func", value: "2")))
    }

    /// LFM2's convolution state lives in the cache as the gated input of every position, so a
    /// truncated cache continues exactly as a fresh one would: prefix reuse and the grammar's
    /// rollback stay exact. A rolling state (the last L − 1 inputs only) would carry the
    /// discarded branch's inputs into the next evaluation and fail this.
    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func convolutionStateFollowsTruncation() throws {
        let model = try TransformerModel(contentsOf: TestModels.syntheticPath(of: "lfm2"))
        let tokens = (0 ..< 40).map { ($0 * 7919 + 13) % 49_152 }
        let branch = (0 ..< 15).map { ($0 * 104_729 + 5) % 49_152 }

        let fresh = model.makeCache(contextLength: 64)
        let whole = try model.evaluate(tokens, cache: fresh, threadCount: 2, logits: .all)

        // The same tokens, evaluated after a discarded branch and a truncation.
        let cache = model.makeCache(contextLength: 64)
        _ = try model.evaluate(Array(tokens[..<25]), cache: cache, threadCount: 2)
        _ = try model.evaluate(branch, cache: cache, threadCount: 2)
        cache.truncate(to: 25)
        let resumed = try model.evaluate(Array(tokens[25...]), cache: cache, threadCount: 2, logits: .all)
        let vocabulary = model.configuration.vocabularySize
        #expect(resumed == Array(whole[25 * vocabulary ..< 40 * vocabulary]))

        // Token by token after a truncation in the middle of a convolution's window.
        cache.truncate(to: 38)
        var last: [Float] = []
        for token in tokens[38...] { last = try model.evaluate([token], cache: cache, threadCount: 2) }
        let expected = Array(whole[39 * vocabulary ..< 40 * vocabulary])
        let worst = zip(last, expected).map { abs($0 - $1) }.max() ?? 0
        // One token goes through the matrix-vector kernels instead of the batched ones: the
        // same integer sums, float sums in another order.
        #expect(worst < 1e-3, "largest difference \(worst)")
        #expect(cache.tokens == tokens)
    }

    /// A cache given another's prefix (`copyPrefix`) resumes exactly as the one that computed
    /// it, attention and convolution state alike, and leaves the other as it was.
    @Test(.enabled(if: TestModels.shouldRunSynthetic), arguments: ["lfm2", "qwen2"])
    func aCopiedPrefixResumesExactly(family: String) throws {
        let model = try TransformerModel(contentsOf: TestModels.syntheticPath(of: family))
        let vocabulary = model.configuration.vocabularySize
        let tokens = (0 ..< 40).map { ($0 * 7919 + 13) % vocabulary }
        let whole = try model.evaluate(tokens, cache: model.makeCache(contextLength: 64), threadCount: 2, logits: .all)

        let original = model.makeCache(contextLength: 64)
        _ = try model.evaluate(Array(tokens[..<30]) + [1, 2, 3], cache: original, threadCount: 2)
        let copy = model.makeCache(contextLength: 64)
        _ = try model.evaluate([5, 6, 7, 8], cache: copy, threadCount: 2)
        copy.copyPrefix(30, of: original)
        #expect(copy.tokens == Array(tokens[..<30]) && copy.highWaterCount == 30)
        let resumed = try model.evaluate(Array(tokens[30...]), cache: copy, threadCount: 2, logits: .all)
        #expect(resumed == Array(whole[30 * vocabulary ..< 40 * vocabulary]))

        // The original still holds its own branch.
        #expect(original.count == 33)
        original.truncate(to: 30)
        #expect(try model.evaluate(Array(tokens[30...]), cache: original, threadCount: 2, logits: .all) == resumed)
    }
}

/// Prefill in chunks (as a long prompt is computed) gives the logits of one batch, bit for
/// bit, on a real model with packed weights, as long as no chunk is a single token.
@Suite struct ChunkedPrefillTests {
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func chunksGiveTheLogitsOfOneBatch() throws {
        let model = try TransformerModel(contentsOf: TestModels.smolLM2Path)
        let tokens = (0 ..< 41).map { ($0 * 7919 + 13) % 49_152 }
        let whole = try model.evaluate(tokens, cache: model.makeCache(contextLength: 64), threadCount: 2)
        for chunks in [[17, 17, 7], [20, 19, 2], [2, 39]] {
            let cache = model.makeCache(contextLength: 64)
            var start = 0, last: [Float] = []
            for length in chunks {
                last = try model.evaluate(Array(tokens[start ..< start + length]), cache: cache, threadCount: 2)
                start += length
            }
            #expect(last == whole, "chunks \(chunks)")
        }
    }
}
