import Foundation
import GGUF
import Testing
import Typeset
import TypesetTokenizer
import Models
import TypesetTestSupport

extension Sampler {
    /// `sample` on a copy of `logits` (these tests reuse theirs).
    mutating func sampled(_ logits: [Float], history: [Int], replyStart: Int = 0) -> Int? {
        var copy = logits
        return sample(&copy, history: history, replyStart: replyStart)
    }
}

@Suite struct SamplerTests {
    static let logits: [Float] = [2.0, 1.0, 0.5, -1.0, 3.0, -.infinity, 0.0]

    @Test func greedyTakesTheLargestAndSkipsMaskedTokens() {
        var sampler = Sampler(options: .greedy)
        #expect(sampler.sampled(Self.logits, history: []) == 4)
        #expect(sampler.sampled([-.infinity, -.infinity], history: []) == nil)
        // Ties go to the lowest id.
        #expect(sampler.sampled([1, 5, 5, 0], history: []) == 1)
    }

    @Test func sameSeedSameTokens() {
        let options = SamplingOptions(temperature: 1.2, topP: 0.95, seed: 42)
        var first = Sampler(options: options), second = Sampler(options: options)
        let a = (0 ..< 200).map { _ in first.sampled(Self.logits, history: [])! }
        let b = (0 ..< 200).map { _ in second.sampled(Self.logits, history: [])! }
        #expect(a == b)
        var other = Sampler(options: SamplingOptions(temperature: 1.2, topP: 0.95, seed: 43))
        #expect((0 ..< 200).map { _ in other.sampled(Self.logits, history: [])! } != a)
    }

    /// Draw frequencies follow softmax(logits / T) (a test that fails if the distribution is off).
    @Test func drawsFollowTheTemperedDistribution() {
        let temperature: Float = 0.8
        var sampler = Sampler(options: SamplingOptions(temperature: temperature, seed: 7))
        var counts = [Int](repeating: 0, count: Self.logits.count)
        let draws = 40_000
        for _ in 0 ..< draws { counts[sampler.sampled(Self.logits, history: [])!] += 1 }
        let weights = Self.logits.map { $0 == -.infinity ? 0 : exp(Double($0 / temperature)) }
        let total = weights.reduce(0, +)
        for (token, weight) in weights.enumerated() {
            let expected = weight / total
            let observed = Double(counts[token]) / Double(draws)
            #expect(abs(observed - expected) < 0.012, "token \(token): observed \(observed), expected \(expected)")
        }
        #expect(counts[5] == 0)
    }

    /// The distribution a draw came from, as llama-server's `post_sampling_probs` lists it:
    /// softmax(logits / T) over what top-k kept, computed here from the logits; a greedy pick
    /// is certain.
    @Test func lastDistributionIsTheOneDrawnFrom() {
        let temperature: Float = 0.7
        var sampler = Sampler(options: SamplingOptions(temperature: temperature, topK: 3, seed: 5))
        let token = sampler.sampled(Self.logits, history: [])!
        let kept = [4, 0, 1]
        let weights = kept.map { exp(Double(Self.logits[$0] / temperature)) }
        let expected = weights.map { $0 / weights.reduce(0, +) }
        let (probability, likeliest) = sampler.lastDistribution(chose: token, count: 5)
        #expect(likeliest.map(\.token) == kept)
        for (entry, value) in zip(likeliest, expected) { #expect(abs(Double(entry.probability) - value) < 1e-5) }
        #expect(abs(Double(probability) - expected[kept.firstIndex(of: token)!]) < 1e-5)
        #expect(sampler.lastDistribution(chose: token, count: 2).likeliest.map(\.token) == [4, 0])
        var greedy = Sampler(options: .greedy)
        let chosen = greedy.sampled(Self.logits, history: [])!
        let certain = greedy.lastDistribution(chose: chosen, count: 3)
        #expect(certain.probability == 1 && certain.likeliest.map(\.token) == [4] && certain.likeliest.map(\.probability) == [1])
    }

    @Test func filtersKeepOnlyTheirTokens() {
        var topK = Sampler(options: SamplingOptions(temperature: 5, topK: 2, seed: 1))
        #expect(Set((0 ..< 500).map { _ in topK.sampled(Self.logits, history: [])! }) == [4, 0])
        // Probabilities (T=1): token 4 ≈ 0.61, 0 ≈ 0.22, 1 ≈ 0.08, … top-p 0.8 keeps {4, 0}.
        var topP = Sampler(options: SamplingOptions(temperature: 1, topP: 0.8, seed: 1))
        #expect(Set((0 ..< 500).map { _ in topP.sampled(Self.logits, history: [])! }) == [4, 0])
        // min-p 0.3: tokens at least 0.3 × p(4): only 4 and 0 (0.22/0.61 = 0.37).
        var minP = Sampler(options: SamplingOptions(temperature: 1, minP: 0.3, seed: 1))
        #expect(Set((0 ..< 500).map { _ in minP.sampled(Self.logits, history: [])! }) == [4, 0])
    }

    /// The chain holds the stages the options turn on, in llama.cpp's order; greedy has none
    /// after the penalties.
    @Test func chainFollowsTheOptions() {
        let options = SamplingOptions(temperature: 0.7, topK: 40, topP: 0.9, minP: 0.05, repetitionPenalty: 1.1, dry: .standard)
        #expect(Sampler(options: options).stages == [
            .repetitionPenalty(1.1, window: 64), .dry(.standard), .topK(40), .topP(0.9), .minP(0.05), .temperature(0.7),
        ])
        #expect(Sampler(options: .greedy).stages.isEmpty)
        // Filters mean nothing without a temperature: greedy ignores them.
        #expect(Sampler(options: SamplingOptions(topK: 5, repetitionPenalty: 1.3)).stages == [.repetitionPenalty(1.3, window: 64)])
        #expect(Sampler(options: SamplingOptions(temperature: 1, topK: 0, topP: 1, minP: 0)).stages == [.temperature(1)])
    }

    /// A token seen several times in the window is penalized once, and only the window counts.
    @Test func repetitionPenaltyCountsEachTokenOnce() {
        var sampler = Sampler(options: SamplingOptions(repetitionPenalty: 2, repetitionWindow: 3))
        var logits = Self.logits
        sampler.applyPenalties(to: &logits, history: [1, 4, 4, 0])
        var expected = Self.logits
        expected[4] = 1.5
        expected[0] = 1
        #expect(logits == expected)
    }

    /// Frequency and presence penalties as llama.cpp's penalties sampler applies them, against
    /// the formula written out: after the repetition penalty, each token of the window loses
    /// `frequency × count + presence`; tokens outside the window keep their logit.
    @Test func frequencyAndPresencePenaltiesFollowTheFormula() {
        let options = SamplingOptions(repetitionPenalty: 2, repetitionWindow: 4, frequencyPenalty: 0.5, presencePenalty: 0.25)
        var sampler = Sampler(options: options)
        #expect(sampler.stages == [.repetitionPenalty(2, window: 4), .frequencyAndPresence(frequency: 0.5, presence: 0.25, window: 4)])
        let history = [2, 1, 4, 4, 0, 4]   // the window: 4, 4, 0, 4
        var logits = Self.logits
        sampler.applyPenalties(to: &logits, history: history)
        var expected = Self.logits
        for token in Set(history.suffix(4)) {
            let count = Float(history.suffix(4).filter { $0 == token }.count)
            let repeated = expected[token] > 0 ? expected[token] / 2 : expected[token] * 2
            expected[token] = repeated - (count * 0.5 + 0.25)
        }
        #expect(logits == expected)
        #expect(logits[2] == Self.logits[2] && logits[1] == Self.logits[1])
    }

    /// A logit bias comes first and adds to the logit; −∞ bans a token, even the likeliest.
    @Test func logitBiasAddsBeforeThePenalties() {
        var sampler = Sampler(options: SamplingOptions(repetitionPenalty: 2, logitBias: [4: -.infinity, 1: 3]))
        #expect(sampler.stages == [.logitBias([.init(token: 1, bias: 3), .init(token: 4, bias: -.infinity)]), .repetitionPenalty(2, window: 64)])
        var logits = Self.logits
        sampler.applyPenalties(to: &logits, history: [1])
        #expect(logits[4] == -.infinity)
        #expect(logits[1] == (Self.logits[1] + 3) / 2)
        #expect(sampler.sampled(Self.logits, history: []) == 1)
    }

    @Test func repetitionPenaltyDemotesRecentTokens() {
        var sampler = Sampler(options: SamplingOptions(repetitionPenalty: 2))
        // 3.0 / 2 = 1.5 < 2.0: token 0 wins once 4 was seen recently.
        #expect(sampler.sampled(Self.logits, history: [4]) == 0)
        #expect(sampler.sampled(Self.logits, history: []) == 4)
    }

    /// Sampling penalizes the logits in place (no copy of the vocabulary per token); drawing
    /// again from them does not penalize twice.
    @Test func penaltiesApplyInPlaceOnce() {
        var sampler = Sampler(options: SamplingOptions(repetitionPenalty: 2))
        var logits = Self.logits
        sampler.applyPenalties(to: &logits, history: [4, 3])
        var expected = Self.logits
        expected[4] = 1.5
        expected[3] = -2
        #expect(logits == expected)
        var drawing = sampler
        #expect(drawing.draw(from: logits) == 0)
        #expect(logits == expected)
    }
}

/// The DRY penalty against its definition, evaluated by brute force: a candidate's repeat
/// length is the longest `n` such that the last `n` tokens, followed by the candidate, occur
/// earlier in the window, with no breaker among them.
@Suite struct DRYPenaltyTests {
    static func referenceLengths(_ history: [Int], window: Int?, from replyStart: Int = 0, breakers: Set<Int>) -> [Int: Int] {
        let end = history.count
        let start = max(window.map { max(0, end - $0) } ?? 0, replyStart)
        var longest: [Int: Int] = [:]
        guard let last = history.last, !breakers.contains(last) else { return [:] }
        for n in 1 ... min(end - 1, DRYPenalty.maximumMatchLength) {
            let tail = history[(end - n)...]
            if tail.contains(where: breakers.contains) { break }
            for first in start ..< max(start, end - n) where first + n <= end - 1 {
                let candidate = history[first + n]
                if !breakers.contains(candidate), history[first ..< first + n].elementsEqual(tail) {
                    longest[candidate] = max(longest[candidate] ?? 0, n)
                }
            }
        }
        return longest
    }

    /// Seeds 0–5 search the prompt too, 6–11 the reply only (from a random start).
    @Test(arguments: 0 ..< 12) func penaltiesMatchTheDefinition(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let dry = DRYPenalty(multiplier: 0.8, base: 1.75, allowedLength: 2, window: seed % 2 == 0 ? nil : 40, searchesPrompt: seed < 6)
        let breakers: Set<Int> = [0]
        for _ in 0 ..< 200 {
            // A small alphabet and pasted copies make long repeats common.
            var history = (0 ..< Int.random(in: 2 ... 30, using: &random)).map { _ in Int.random(in: 0 ... 4, using: &random) }
            if history.count > 6 {
                let from = Int.random(in: 0 ..< history.count - 3, using: &random)
                history += history[from ..< min(history.count, from + Int.random(in: 2 ... 60, using: &random))]
            }
            let replyStart = Int.random(in: 0 ... history.count, using: &random)
            let expected = Self.referenceLengths(history, window: dry.window, from: dry.searchesPrompt ? 0 : replyStart, breakers: breakers)
                .filter { $0.value >= dry.allowedLength }
                .mapValues { dry.multiplier * pow(dry.base, Float($0 - dry.allowedLength)) }
            let penalties = dry.penalties(after: history, replyStart: replyStart, isBreaker: breakers.contains)
            #expect(Set(penalties.keys) == Set(expected.keys), "\(history)")
            for (token, amount) in expected {
                #expect(abs((penalties[token] ?? 0) - amount) <= amount * 1e-5, "\(history), token \(token)")
            }
        }
    }

    /// Greedy decoding that would copy a phrase takes the runner-up once the copy is long
    /// enough, and only then; a multiplier of 0 turns DRY off.
    @Test func greedyDecodingLeavesALongCopy() {
        let history = [5, 6, 7, 8, 9, 1, 5, 6, 7, 8]  // "5 6 7 8" again: 9 would extend a 4-token repeat
        var logits = [Float](repeating: 0, count: 10)
        logits[9] = 2.5
        logits[3] = 1.0
        var dry = Sampler(options: SamplingOptions(dry: DRYPenalty()))
        // Penalty on 9: 0.8 × 1.75² = 2.45 → 0.05 < 1.0.
        #expect(dry.sampled(logits, history: history) == 3)
        // A 2-token repeat (penalty 0.8) leaves 9 ahead.
        #expect(dry.sampled(logits, history: [7, 8, 9, 1, 7, 8]) == 9)
        var off = Sampler(options: SamplingOptions(dry: DRYPenalty(multiplier: 0)))
        #expect(off.sampled(logits, history: history) == 9)
    }

    /// The JSON setting leaves a reply free to restate the prompt (an extracted name is a
    /// copy of it) and penalizes the reply repeating itself; the standard one penalizes both.
    @Test func theJSONSettingSearchesTheReplyOnly() {
        // Prompt: "… 5 6 7 8 …"; reply so far: "5 6 7" — a copy of the prompt, 8 next.
        let prompt = [1, 5, 6, 7, 8, 2]
        let copying = prompt + [5, 6, 7]
        let breakers: (Int) -> Bool = { _ in false }
        #expect(DRYPenalty.json.penalties(after: copying, replyStart: prompt.count, isBreaker: breakers).isEmpty)
        #expect(DRYPenalty.standard.penalties(after: copying, replyStart: prompt.count, isBreaker: breakers)[8] != nil)
        // The reply "5 6 7 9 5 6 7": 9 would repeat the reply's own four tokens.
        let looping = prompt + [5, 6, 7, 9, 5, 6, 7]
        let penalties = DRYPenalty.json.penalties(after: looping, replyStart: prompt.count, isBreaker: breakers)
        #expect(penalties.keys.sorted() == [9])
        #expect(abs(penalties[9]! - 0.8 * 1.75) < 1e-6)
        // Through the sampler, greedy: the reply may copy the prompt's 8, not its own 9.
        var logits = [Float](repeating: 0, count: 10)
        logits[8] = 1; logits[9] = 1.2; logits[3] = 0.5
        var sampler = Sampler(options: SamplingOptions(dry: .json))
        #expect(sampler.sampled(logits, history: looping, replyStart: prompt.count) == 8)
        #expect(sampler.sampled(logits, history: looping, replyStart: 0) == 3)
    }

    /// Breakers come from the vocabulary's text: SmolLM2's tokens containing a newline, a
    /// colon, a quote or an asterisk, found here by a substring search on their UTF-8 text.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func breakersAreTheTokensContainingABreakerText() throws {
        let vocabulary = try Vocabulary(metadata: try GGUFFile(contentsOf: TestModels.smolLM2Path).metadata)
        let breakers = DRYPenalty.standard.breakerTokens(in: vocabulary)
        let expected = (0 ..< vocabulary.count).map { id in
            let text = String(decoding: vocabulary.bytes(of: id), as: UTF8.self)
            return ["\n", ":", "\"", "*"].contains { text.range(of: $0, options: .literal) != nil }
        }
        #expect(breakers == expected)
        #expect(breakers.filter { $0 }.count > 100)
    }

    /// In a JSON array of strings that repeats an item, the JSON setting penalizes the next
    /// copy's words from its start on (the repeat spans the quotes between the items), where
    /// the standard one, whose breakers include `"`, lets the copy's first two words through.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func theJSONSettingSeesRepeatsAcrossArrayItems() throws {
        let file = try GGUFFile(contentsOf: TestModels.smolLM2Path)
        let vocabulary = try Vocabulary(metadata: file.metadata)
        let tokenizer = try Tokenizer(metadata: file.metadata)
        let item = tokenizer.encode("She leaves the village.", addingSpecialTokens: false)
        let history = tokenizer.encode(#"{"plot":["She leaves the village.", "She leaves the village.", "She"#, addingSpecialTokens: false)
        // The copies' words tokenize as the item's (its final `.` merges with the quote that
        // follows), and the history ends with the third copy's first word: the item's second
        // token is the one a copy would continue with.
        let words = item.dropLast()
        let copies = (0 ... history.count - words.count).filter { history[$0 ..< $0 + words.count].elementsEqual(words) }
        #expect(copies.count == 2)
        #expect(history.last == item[0])
        func penalty(_ dry: DRYPenalty, after history: [Int]) -> Float? {
            let breakers = dry.breakerTokens(in: vocabulary)
            return dry.penalties(after: history, isBreaker: { breakers[$0] })[item[1]]
        }
        // The repeat: `She` then, across `.", "`, the whole item before it — well past the
        // allowed length, so the penalty is large.
        let json = try #require(penalty(.json, after: history))
        #expect(json > 5)
        #expect(penalty(.standard, after: history) == nil)
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
        #expect(result.finishReason == .stop)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func reusesTheCachedPrefix() throws {
        let generator = try Self.generator()
        let tokenizer = generator.tokenizer
        let first = Self.chatML(system: "Answer briefly.", user: "Name a color.", tokenizer: tokenizer)
        let firstResult = try generator.generate(prompt: first, maxTokens: 8)
        #expect(firstResult.stats.cachedPromptTokens == 0)
        // A second request that extends the first conversation reuses everything before it.
        let second = first + firstResult.tokens + tokenizer.encode("<|im_end|>\n<|im_start|>user\nAnother one?<|im_end|>\n<|im_start|>assistant\n",
                                                                   addingSpecialTokens: false, parsingSpecialTokens: true)
        let reused = try generator.generate(prompt: second, maxTokens: 8)
        #expect(reused.stats.cachedPromptTokens >= first.count)
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
        #expect(result.finishReason == .exceededContext)
        #expect(result.tokens.count == 5)  // positions 20…23 evaluated, the fifth token sampled last
    }

    /// Prompt lookup's drafts change the passes, never the tokens: greedy and sampled, alone
    /// and batched, on a reply that copies from its prompt (drafts kept) and one that does not.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func promptLookupGivesTheSameTokens() throws {
        let generator = try Self.generator(contextLength: 512)
        let tokenizer = generator.tokenizer
        let copying = Self.chatML(
            system: nil,
            user: "Repeat this list exactly: Maria Okafor, order A-20931, 14 Elm Street, Springfield; Li Wei, order B-77120, 3 Harbour Road, Portsmouth.",
            tokenizer: tokenizer)
        let free = Self.chatML(system: nil, user: "Write a short poem about the sea.", tokenizer: tokenizer)
        for sampling in [SamplingOptions.greedy, SamplingOptions(temperature: 0.9, topP: 0.95, seed: 11)] {
            for prompt in [copying, free] {
                let plain = try generator.generate(prompt: prompt, maxTokens: 60, sampling: sampling)
                let drafted = try generator.generate(prompt: prompt, maxTokens: 60, sampling: sampling, lookup: PromptLookup())
                let text = (try? tokenizer.decode(plain.tokens)) ?? ""
                #expect(drafted.tokens == plain.tokens, "\(sampling.temperature): \(text)")
                #expect(drafted.finishReason == plain.finishReason)
                if prompt == copying && sampling.temperature == 0 {
                    #expect(drafted.stats.acceptedDraftTokens >= 10 && drafted.stats.decodePasses < plain.stats.decodePasses,
                            "kept \(drafted.stats.acceptedDraftTokens) of \(drafted.stats.draftedTokens)")
                }
            }
        }
        let batched = try TextGenerator.generate(model: generator.model, tokenizer: tokenizer, prompts: [copying, free], maxTokens: 40,
                                                 lookup: PromptLookup(), contextLength: 512)
        for (prompt, result) in zip([copying, free], batched) {
            #expect(result.tokens == (try generator.generate(prompt: prompt, maxTokens: 40)).tokens)
        }
    }

    /// Qwen 3.5's recurrent state through speculation: a refused draft is taken back within
    /// the pass that evaluated it (``KVCache`` restores the state after the kept tokens), so
    /// the drafted reply is the plain one token for token, greedy and sampled; and a second
    /// prompt sharing the first's start reuses the cache up to the checkpoint the loop keeps
    /// before the prompt's end. On the random-weight model with every matrix packed.
    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func recurrentStateFollowsDraftsAndReuse() throws {
        let file = try TestModels.packableSynthetic(of: "qwen35")
        let model = try TransformerModel(file: file)
        let generator = TextGenerator(model: model, tokenizer: try Tokenizer(metadata: file.metadata), contextLength: 256, threadCount: 2)
        // A prompt that repeats itself, and the reply held to its tokens (the random model's
        // own choices, among them), so the lookup finds drafts, some right and some refused.
        let prompt = Array(repeating: [510, 2244, 3101, 87, 510, 2244, 9015], count: 6).flatMap { $0 }
        let promptTokens = Set(prompt)
        let hold: (inout [Float]) -> Void = { logits in
            for index in logits.indices where !promptTokens.contains(index) { logits[index] = -.infinity }
        }
        for sampling in [SamplingOptions.greedy, SamplingOptions(temperature: 0.8, seed: 5)] {
            let plain = try generator.generate(prompt: prompt, maxTokens: 48, sampling: sampling, logitsProcessor: hold)
            let drafted = try generator.generate(prompt: prompt, maxTokens: 48, sampling: sampling, lookup: PromptLookup(),
                                                 logitsProcessor: hold)
            #expect(drafted.tokens == plain.tokens, "temperature \(sampling.temperature)")
            #expect(drafted.stats.draftedTokens > drafted.stats.acceptedDraftTokens && drafted.stats.acceptedDraftTokens > 0,
                    "kept \(drafted.stats.acceptedDraftTokens) of \(drafted.stats.draftedTokens)")
        }
        // The next prompt ends differently: the cache restarts at the checkpoint 4 tokens before
        // the first one's end, and the reply is a fresh generator's.
        let next = Array(prompt.dropLast(2)) + [4411, 77, 19]
        let reused = try generator.generate(prompt: next, maxTokens: 16)
        #expect(reused.stats.cachedPromptTokens == prompt.count - 4)
        let fresh = TextGenerator(model: model, tokenizer: generator.tokenizer, contextLength: 256, threadCount: 2)
        #expect(reused.tokens == (try fresh.generate(prompt: next, maxTokens: 16)).tokens)
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
