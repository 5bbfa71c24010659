import GGUF
import Models
import TypesetTestSupport
import Testing

@Suite struct ModelConfigurationTests {
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)))
    func realModels() throws {
        let smol = try ModelConfiguration(metadata: try GGUFFile(contentsOf: TestModels.smolLM2Path).metadata)
        #expect(smol.architecture == .llama)
        #expect(smol.embeddingLength == 576 && smol.blockCount == 30 && smol.feedForwardLength == 1536)
        #expect(smol.headCount == 9 && smol.headCountKV == 3 && smol.headDimension == 64)
        #expect(smol.trainedContextLength == 8192 && smol.vocabularySize == 49152)
        #expect(smol.ropeFrequencyBase == 100_000 && smol.slidingWindow == nil)
        #expect(Float(smol.rmsNormEpsilon) == 1e-5)

        let gemma = try ModelConfiguration(metadata: try GGUFFile(contentsOf: TestModels.gemma3Path).metadata)
        #expect(gemma.architecture == .gemma3)
        #expect(gemma.embeddingLength == 640 && gemma.blockCount == 18 && gemma.feedForwardLength == 2048)
        #expect(gemma.headCount == 4 && gemma.headCountKV == 1 && gemma.headDimension == 256)
        #expect(gemma.trainedContextLength == 32768 && gemma.vocabularySize == 262_144)
        #expect(gemma.ropeFrequencyBase == 1_000_000 && gemma.slidingWindow == 512)
    }

    static func llama(_ overrides: [String: GGUFValue] = [:], removing: Set<String> = []) throws -> GGUFMetadata {
        var values: [(String, GGUFValue)] = [
            ("general.architecture", .string("llama")),
            ("llama.embedding_length", .uint32(64)),
            ("llama.block_count", .uint32(2)),
            ("llama.feed_forward_length", .uint32(128)),
            ("llama.attention.head_count", .uint32(4)),
            ("llama.attention.head_count_kv", .uint32(2)),
            ("llama.context_length", .uint32(256)),
            ("llama.attention.layer_norm_rms_epsilon", .float32(1e-5)),
            ("llama.vocab_size", .uint32(100)),
        ]
        values = values.filter { !removing.contains($0.0) }
        var writer = GGUFWriter()
        for (key, value) in values { writer.setValue(overrides[key] ?? value, forKey: key) }
        for (key, value) in overrides where !values.contains(where: { $0.0 == key }) { writer.setValue(value, forKey: key) }
        return try GGUFFile(bytes: try writer.encoded()).metadata
    }

    @Test func syntheticLlama() throws {
        let configuration = try ModelConfiguration(metadata: try Self.llama())
        #expect(configuration.headDimension == 16 && configuration.ropeFrequencyBase == 10_000)
    }

    @Test func poolingIsReadAsLlamaCppNumbersIt() throws {
        #expect(try ModelConfiguration(metadata: try Self.llama()).pooling == .none)
        for (number, pooling) in [(0, EmbeddingPooling.none), (1, .mean), (2, .cls), (3, .last)] {
            #expect(try ModelConfiguration(metadata: try Self.llama(["llama.pooling_type": .uint32(UInt32(number))])).pooling == pooling)
        }
        // A reranker's pooling needs its classification head; an unknown number is not guessed.
        #expect(throws: ModelConfigurationError.unsupportedKey("llama.pooling_type", value: "4 (rank)")) {
            try ModelConfiguration(metadata: try Self.llama(["llama.pooling_type": .uint32(4)]))
        }
        #expect(throws: ModelConfigurationError.unsupportedKey("llama.pooling_type", value: "9")) {
            try ModelConfiguration(metadata: try Self.llama(["llama.pooling_type": .uint32(9)]))
        }
    }

    @Test func invalidConfigurationsAreTypedErrors() throws {
        #expect(throws: ModelConfigurationError.unsupportedArchitecture("falcon-h1")) {
            try ModelConfiguration(metadata: try Self.llama(["general.architecture": .string("falcon-h1")]))
        }
        #expect(throws: ModelConfigurationError.missing("general.architecture")) {
            try ModelConfiguration(metadata: try Self.llama(removing: ["general.architecture"]))
        }
        #expect(throws: ModelConfigurationError.missing("llama.block_count")) {
            try ModelConfiguration(metadata: try Self.llama(removing: ["llama.block_count"]))
        }
        #expect(throws: ModelConfigurationError.invalid(key: "llama.attention.head_count_kv", value: "3", reason: "must divide the head count 4")) {
            try ModelConfiguration(metadata: try Self.llama(["llama.attention.head_count_kv": .uint32(3)]))
        }
        #expect(throws: ModelConfigurationError.invalid(key: "llama.embedding_length", value: "0", reason: "must be in 1...\(ModelConfiguration.maximumDimension)")) {
            try ModelConfiguration(metadata: try Self.llama(["llama.embedding_length": .uint32(0)]))
        }
        #expect(throws: ModelConfigurationError.invalid(key: "llama.block_count", value: "1000000", reason: "must be in 1...\(ModelConfiguration.maximumBlockCount)")) {
            try ModelConfiguration(metadata: try Self.llama(["llama.block_count": .uint32(1_000_000)]))
        }
        #expect(throws: ModelConfigurationError.metadata(.typeMismatch(key: "llama.context_length", expected: "an integer", found: "string"))) {
            try ModelConfiguration(metadata: try Self.llama(["llama.context_length": .string("4k")]))
        }
        #expect(throws: ModelConfigurationError.invalid(key: "llama.attention.layer_norm_rms_epsilon", value: "-1.0", reason: "must be a positive number")) {
            try ModelConfiguration(metadata: try Self.llama(["llama.attention.layer_norm_rms_epsilon": .float32(-1)]))
        }
    }
}
