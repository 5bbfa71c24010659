import Foundation
import Testing
import Typeset
import TypesetTestSupport

@Suite struct SamplerTests {
    static let logits: [Float] = [2.0, 1.0, 0.5, -1.0, 3.0, -.infinity, 0.0]

    @Test func greedyTakesTheLargestAndSkipsMaskedTokens() {
        var sampler = Sampler(options: .greedy)
        #expect(sampler.sample(Self.logits, history: []) == 4)
        #expect(sampler.sample([-.infinity, -.infinity], history: []) == nil)
        // Ties go to the lowest id.
        #expect(sampler.sample([1, 5, 5, 0], history: []) == 1)
    }

    @Test func sameSeedSameTokens() {
        let options = SamplingOptions(temperature: 1.2, topP: 0.95, seed: 42)
        var first = Sampler(options: options), second = Sampler(options: options)
        let a = (0 ..< 200).map { _ in first.sample(Self.logits, history: [])! }
        let b = (0 ..< 200).map { _ in second.sample(Self.logits, history: [])! }
        #expect(a == b)
        var other = Sampler(options: SamplingOptions(temperature: 1.2, topP: 0.95, seed: 43))
        #expect((0 ..< 200).map { _ in other.sample(Self.logits, history: [])! } != a)
    }

    /// Draw frequencies follow softmax(logits / T) (a test that fails if the distribution is off).
    @Test func drawsFollowTheTemperedDistribution() {
        let temperature: Float = 0.8
        var sampler = Sampler(options: SamplingOptions(temperature: temperature, seed: 7))
        var counts = [Int](repeating: 0, count: Self.logits.count)
        let draws = 40_000
        for _ in 0 ..< draws { counts[sampler.sample(Self.logits, history: [])!] += 1 }
        let weights = Self.logits.map { $0 == -.infinity ? 0 : exp(Double($0 / temperature)) }
        let total = weights.reduce(0, +)
        for (token, weight) in weights.enumerated() {
            let expected = weight / total
            let observed = Double(counts[token]) / Double(draws)
            #expect(abs(observed - expected) < 0.012, "token \(token): observed \(observed), expected \(expected)")
        }
        #expect(counts[5] == 0)
    }

    @Test func filtersKeepOnlyTheirTokens() {
        var topK = Sampler(options: SamplingOptions(temperature: 5, topK: 2, seed: 1))
        #expect(Set((0 ..< 500).map { _ in topK.sample(Self.logits, history: [])! }) == [4, 0])
        // Probabilities (T=1): token 4 ≈ 0.61, 0 ≈ 0.22, 1 ≈ 0.08, … top-p 0.8 keeps {4, 0}.
        var topP = Sampler(options: SamplingOptions(temperature: 1, topP: 0.8, seed: 1))
        #expect(Set((0 ..< 500).map { _ in topP.sample(Self.logits, history: [])! }) == [4, 0])
        // min-p 0.3: tokens at least 0.3 × p(4): only 4 and 0 (0.22/0.61 = 0.37).
        var minP = Sampler(options: SamplingOptions(temperature: 1, minP: 0.3, seed: 1))
        #expect(Set((0 ..< 500).map { _ in minP.sample(Self.logits, history: [])! }) == [4, 0])
    }

    @Test func repetitionPenaltyDemotesRecentTokens() {
        var sampler = Sampler(options: SamplingOptions(repetitionPenalty: 2))
        // 3.0 / 2 = 1.5 < 2.0: token 0 wins once 4 was seen recently.
        #expect(sampler.sample(Self.logits, history: [4]) == 0)
        #expect(sampler.sample(Self.logits, history: []) == 4)
    }
}

@Suite struct TextGeneratorTests {
    /// A ChatML prompt for SmolLM2, written out (control tokens parsed in the markup only).
    static func chatML(system: String?, user: String, tokenizer: Tokenizer) -> [Int] {
        var tokens: [Int] = []
        func markup(_ text: String) { tokens += tokenizer.encode(text, addingSpecialTokens: false, parsingSpecialTokens: true) }
        func text(_ text: String) { tokens += tokenizer.encode(text, addingSpecialTokens: false) }
        if let system { markup("<|im_start|>system\n"); text(system); markup("<|im_end|>\n") }
        markup("<|im_start|>user\n"); text(user); markup("<|im_end|>\n<|im_start|>assistant\n")
        return tokens
    }

    static func generator(contextLength: Int = 256) throws -> TextGenerator {
        let file = try GGUFFile(contentsOf: TestModels.smolLM2Path)
        return TextGenerator(model: try TransformerModel(file: file), tokenizer: try Tokenizer(metadata: file.metadata),
                             contextLength: contextLength, threadCount: 2)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func answersThroughChatML() throws {
        let generator = try Self.generator()
        let prompt = Self.chatML(system: nil, user: "What is the capital of France?", tokenizer: generator.tokenizer)
        let result = try generator.generate(prompt: prompt, maxTokens: 32)
        #expect(try generator.tokenizer.decode(result.tokens) == "The capital of France is Paris.")
        #expect(result.stopReason == .endOfGeneration)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func reusesTheCachedPrefix() throws {
        let generator = try Self.generator()
        let tokenizer = generator.tokenizer
        let first = Self.chatML(system: "Answer briefly.", user: "Name a color.", tokenizer: tokenizer)
        let firstResult = try generator.generate(prompt: first, maxTokens: 8)
        #expect(firstResult.cachedPromptTokenCount == 0)
        // A second request that extends the first conversation reuses everything before it.
        let second = first + firstResult.tokens + tokenizer.encode("<|im_end|>\n<|im_start|>user\nAnother one?<|im_end|>\n<|im_start|>assistant\n",
                                                                   addingSpecialTokens: false, parsingSpecialTokens: true)
        let reused = try generator.generate(prompt: second, maxTokens: 8)
        #expect(reused.cachedPromptTokenCount >= first.count)
        // …and gives exactly what a fresh generator gives.
        let fresh = try Self.generator().generate(prompt: second, maxTokens: 8)
        #expect(reused.tokens == fresh.tokens)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func contextLimits() throws {
        let generator = try Self.generator(contextLength: 24)
        let long = [Int](repeating: 504, count: 25)
        #expect(throws: ModelError.contextOverflow(needed: 25, available: 24)) {
            try generator.generate(prompt: long, maxTokens: 4)
        }
        #expect(generator.cache.count == 0)  // nothing was computed
        #expect(throws: ModelError.emptyPrompt) { try generator.generate(prompt: [], maxTokens: 4) }
        let result = try generator.generate(prompt: Array(long.prefix(20)), maxTokens: 100)
        #expect(result.stopReason == .contextFull)
        #expect(result.tokens.count == 5)  // positions 20…23 evaluated, the fifth token sampled last
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func logitsHookMasksTokens() throws {
        let generator = try Self.generator()
        let prompt = Self.chatML(system: nil, user: "What is the capital of France?", tokenizer: generator.tokenizer)
        let allowed = Set(generator.tokenizer.encode(" Lyon Lyon Lyon", addingSpecialTokens: false))
        let result = try generator.generate(prompt: prompt, maxTokens: 3, logitsProcessor: { logits in
            for index in logits.indices where !allowed.contains(index) { logits[index] = -.infinity }
        })
        #expect(result.tokens.allSatisfy(allowed.contains))
        #expect(result.tokens.count == 3)
    }
}
