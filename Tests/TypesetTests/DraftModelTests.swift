import Foundation
import GGUF
import Models
import Testing
import TypesetTestSupport
import TypesetTokenizer
@testable import Typeset

/// Drafts of a draft model, verified by the target: the same tokens as decoding without them,
/// whether the draft guesses every token (the target drafting for itself) or almost none (a
/// random-weight model of the same vocabulary), through the draft's own cache, the target's
/// recurrent state (lfm2) and the batch scheduler; and the checks at load.
@Suite(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRunSynthetic))
struct DraftModelTests {
    struct Loaded {
        let model: TransformerModel
        let vocabulary: Vocabulary
        let tokenizer: Tokenizer

        init(_ path: String) throws {
            let file = try GGUFFile(contentsOf: path)
            model = try TransformerModel(file: file)
            tokenizer = try Tokenizer(metadata: file.metadata)
            vocabulary = tokenizer.vocabulary
        }
    }

    static let smolLM2 = Result { try Loaded(TestModels.smolLM2Path) }
    /// Random weights, SmolLM2's vocabulary: a draft that is nearly always wrong.
    static let randomLlama = Result { try Loaded(TestModels.syntheticPath(of: "llama3")) }
    /// Random weights with a convolution state, SmolLM2's vocabulary.
    static let randomLFM2 = Result { try Loaded(TestModels.syntheticPath(of: "lfm2")) }

    /// A draft over the whole vocabulary, drafting whatever its probability.
    static func draft(_ draft: Loaded, for target: Loaded, minimumProbability: Float = 0) throws -> DraftModel {
        try DraftModel(model: draft.model, vocabulary: draft.vocabulary, targetModel: target.model,
                       targetVocabulary: target.vocabulary, contextLength: 512, threadCount: 2, minimumProbability: minimumProbability,
                       draftedVocabularyCount: .max)
    }

    static let prompt = "<|im_start|>user\nRepeat after me: the quick brown fox jumps over the lazy dog, the quick brown fox jumps over the lazy dog.<|im_end|>\n<|im_start|>assistant\n"

    /// The reply to `prompt` with and without `draftModel`, as `TextGenerator` decodes it.
    static func replies(_ target: Loaded, draftModel: DraftModel, sampling: SamplingOptions = .greedy, maxTokens: Int = 48)
        throws -> (plain: TextGenerator.Result, drafted: TextGenerator.Result)
    {
        let tokens = target.tokenizer.encode(prompt, addingSpecialTokens: true, parsingSpecialTokens: true)
        let generator = TextGenerator(model: target.model, tokenizer: target.tokenizer, contextLength: 512)
        let plain = try generator.generate(prompt: tokens, maxTokens: maxTokens, sampling: sampling, stopsAtEndOfGeneration: false)
        generator.cache.clear()
        let drafted = try generator.generate(prompt: tokens, maxTokens: maxTokens, sampling: sampling, stopsAtEndOfGeneration: false,
                                             draftModel: draftModel)
        return (plain, drafted)
    }

    @Test func aDraftThatGuessesEveryTokenSavesPassesAndChangesNothing() throws {
        let target = try Self.smolLM2.get()
        let (plain, drafted) = try Self.replies(target, draftModel: try Self.draft(target, for: target))
        #expect(drafted.tokens == plain.tokens)
        // Every drafted token kept (the same model drafts), several per pass.
        #expect(drafted.stats.draftedTokens > 0 && drafted.stats.acceptedDraftTokens == drafted.stats.draftedTokens)
        #expect(drafted.stats.decodePasses * 4 < plain.stats.decodePasses, "passes: \(drafted.stats.decodePasses) of \(plain.stats.decodePasses)")
        #expect(drafted.stats.draftModelPasses >= drafted.stats.draftedTokens)
    }

    @Test(arguments: [SamplingOptions.greedy, SamplingOptions(temperature: 0.9, topK: 40, seed: 7)])
    func aDraftThatGuessesWrongChangesNothing(sampling: SamplingOptions) throws {
        let target = try Self.smolLM2.get()
        let (plain, drafted) = try Self.replies(target, draftModel: try Self.draft(try Self.randomLlama.get(), for: target), sampling: sampling)
        #expect(drafted.tokens == plain.tokens)
        #expect(drafted.stats.draftedTokens > 20 && drafted.stats.acceptedDraftTokens < drafted.stats.draftedTokens / 2)
        // Drafts refused whole pause drafting (1, 2, 4, … steps): far fewer than a draft of
        // eight tokens at each of the 48 steps.
        #expect(drafted.stats.draftModelPasses < 48 * 8 / 3, "draft passes: \(drafted.stats.draftModelPasses)")
    }

    @Test func aRecurrentTargetStaysExactThroughRefusedDrafts() throws {
        // lfm2's convolution state goes back with each refused draft (the cache's truncation);
        // a target drafting for itself with a low bar, and a random draft, both exact.
        let target = try Self.randomLFM2.get()
        for draft in [target, try Self.randomLlama.get()] {
            let (plain, drafted) = try Self.replies(target, draftModel: try Self.draft(draft, for: target))
            #expect(drafted.tokens == plain.tokens)
            #expect(drafted.stats.draftedTokens > 0)
        }
    }

    @Test func batchedSequencesGiveTheirOwnRepliesAndRunNoDraftModel() throws {
        // Two sequences share the scheduler's passes: the draft model, whose passes would hold
        // up both, runs only for a generation alone in its batch.
        let target = try Self.smolLM2.get()
        let prompts = [Self.prompt, "<|im_start|>user\nCount from one to ten.<|im_end|>\n<|im_start|>assistant\n"].map {
            target.tokenizer.encode($0, addingSpecialTokens: true, parsingSpecialTokens: true)
        }
        let alone = try prompts.map { prompt in
            try TextGenerator(model: target.model, tokenizer: target.tokenizer, contextLength: 512)
                .generate(prompt: prompt, maxTokens: 32, stopsAtEndOfGeneration: false).tokens
        }
        let draftModel = try Self.draft(target, for: target)
        let batched = try TextGenerator.generate(
            model: target.model, tokenizer: target.tokenizer, prompts: prompts, maxTokens: 32, stopsAtEndOfGeneration: false,
            draftModel: draftModel, contextLength: 512)
        #expect(batched.map(\.tokens) == alone)
        #expect(batched.allSatisfy { $0.stats.draftModelPasses == 0 })
        // One prompt alone in the batch drafts.
        let single = try TextGenerator.generate(
            model: target.model, tokenizer: target.tokenizer, prompts: [prompts[1]], maxTokens: 32, stopsAtEndOfGeneration: false,
            draftModel: draftModel, contextLength: 512)
        #expect(single[0].tokens == alone[1] && single[0].stats.acceptedDraftTokens > 0)
        #expect(draftModel.idleCacheByteCount > 0)   // its cache given back
    }

    @Test func aLongHistoryForAShortRemainderIsNotDrafted() throws {
        // 8 tokens may still come after a prompt of ~40 the draft has not computed: computing
        // them would cost more than drafting could save.
        let target = try Self.smolLM2.get()
        let tokens = target.tokenizer.encode(Self.prompt, addingSpecialTokens: true, parsingSpecialTokens: true)
        #expect(tokens.count > 2 * 8)
        let generator = TextGenerator(model: target.model, tokenizer: target.tokenizer, contextLength: 512)
        let short = try generator.generate(prompt: tokens, maxTokens: 8, stopsAtEndOfGeneration: false,
                                           draftModel: try Self.draft(target, for: target))
        #expect(short.stats.draftModelPasses == 0)
    }

    @Test func theCheckedDraftReusesAFinishedGenerationsCache() throws {
        let target = try Self.smolLM2.get()
        let draftModel = try Self.draft(target, for: target)
        let tokens = target.tokenizer.encode(Self.prompt, addingSpecialTokens: true, parsingSpecialTokens: true)
        let generator = TextGenerator(model: target.model, tokenizer: target.tokenizer, contextLength: 512)
        let first = try generator.generate(prompt: tokens, maxTokens: 32, stopsAtEndOfGeneration: false, draftModel: draftModel)
        generator.cache.clear()
        let second = try generator.generate(prompt: tokens, maxTokens: 32, stopsAtEndOfGeneration: false, draftModel: draftModel)
        #expect(second.tokens == first.tokens && first.stats.draftedTokens > 0)
        // The second run's first draft found the prompt in the idle cache: it evaluated the
        // draft's tokens only, not the prompt again (a pass per drafted token at most).
        #expect(second.stats.draftModelPasses <= second.stats.draftedTokens + 1)
        #expect(first.stats.draftModelPasses == second.stats.draftModelPasses)
    }

    @Test func limitedLogitsAreTheFirstOnesOfTheWholeVocabulary() throws {
        let target = try Self.smolLM2.get()
        let limited = try #require(target.model.limitingLogits(to: 1024))
        #expect(target.model.limitingLogits(to: 1000) == nil && target.model.limitingLogits(to: 0) == nil)
        let tokens = target.tokenizer.encode(Self.prompt, addingSpecialTokens: true, parsingSpecialTokens: true)
        let whole = try target.model.evaluate(tokens, cache: target.model.makeCache(contextLength: 256), threadCount: 2, logits: .lastRows(2))
        let first = try limited.evaluate(tokens, cache: limited.makeCache(contextLength: 256), threadCount: 2, logits: .lastRows(2))
        let vocabulary = target.model.logitsPerRow
        #expect(limited.logitsPerRow == 1024 && first.count == 2 * 1024)
        #expect(Array(first[..<1024]) == Array(whole[..<1024]) && Array(first[1024...]) == Array(whole[vocabulary ..< vocabulary + 1024]))
        // The default draft, among the first 32,768 tokens: the same reply.
        let draftModel = try DraftModel(model: target.model, vocabulary: target.vocabulary, targetModel: target.model,
                                        targetVocabulary: target.vocabulary, contextLength: 512, threadCount: 2)
        #expect(draftModel.model.logitsPerRow == 32768)
        let (plain, drafted) = try Self.replies(target, draftModel: draftModel)
        #expect(drafted.tokens == plain.tokens && drafted.stats.acceptedDraftTokens > 0)
    }

    @Test func anotherVocabularyIsRefusedNamingTheDifference() throws {
        let target = try Self.smolLM2.get()
        let gemma = try Loaded(TestModels.gemma3Path)
        #expect(throws: DraftModelError.vocabularySize(draft: gemma.vocabulary.count, target: target.vocabulary.count)) {
            try Self.draft(gemma, for: target)
        }
        // A vocabulary of the same size with one token changed.
        var tokens = target.vocabulary.tokens
        tokens[1000] = "⟨changed⟩"
        #expect(throws: DraftModelError.tokenMismatch(id: 1000, draft: "⟨changed⟩", target: target.vocabulary.tokens[1000])) {
            try DraftModel.check(try Self.vocabulary(target, tokens: tokens), against: target.vocabulary)
        }
        let error = DraftModelError.tokenMismatch(id: 1000, draft: "⟨changed⟩", target: "ing")
        #expect(error.description.contains("token 1000") && error.description.contains("share the model's vocabulary"))
    }

    /// SmolLM2's vocabulary with `tokens` in place of its own.
    static func vocabulary(_ loaded: Loaded, tokens: [String]) throws -> Vocabulary {
        let entries = try loaded.model.file.metadata.entries.filter { $0.key.hasPrefix("tokenizer.") }.map { entry in
            guard entry.key == "tokenizer.ggml.tokens" else { return entry }
            return GGUFMetadataEntry(key: entry.key, value: .array(try GGUFArray(elementType: .string, elements: tokens.map { .string($0) })))
        }
        return try Vocabulary(metadata: try GGUFMetadata(entries))
    }

    @Test func aDraftLargerThanTheTargetIsRefused() throws {
        let smolLM2 = try Self.smolLM2.get(), random = try Self.randomLlama.get()
        #expect(throws: DraftModelError.largerThanTarget(
            draftBytes: DraftModel.weightByteCount(of: smolLM2.model), targetBytes: DraftModel.weightByteCount(of: random.model))) {
            try Self.draft(smolLM2, for: random)
        }
    }

    @Test func theRunnerChecksItsDraftAtLoad() async throws {
        let url = URL(fileURLWithPath: TestModels.smolLM2Path)
        var options = ModelRunner.Options(contextLength: 512)
        options.draftModelPath = "/nonexistent/draft.gguf"
        await #expect {
            _ = try await ModelRunner.load(from: url, options: options)
        } throws: { error in
            guard case let ConversationError.loadFailed(path, _) = error else { return false }
            return path == "/nonexistent/draft.gguf"
        }
        options.draftModelPath = TestModels.gemma3Path
        await #expect {
            _ = try await ModelRunner.load(from: url, options: options)
        } throws: { error in
            guard case let ConversationError.loadFailed(path, reason) = error else { return false }
            return path == TestModels.gemma3Path && reason.contains("vocabulary")
        }
    }

    @Test func aConversationsRepliesAreTheSameWithADraftModel() async throws {
        let url = URL(fileURLWithPath: TestModels.smolLM2Path)
        var options = ModelRunner.Options(contextLength: 512)
        let plain = try await ModelRunner.load(from: url, options: options)
        options.draftModelPath = TestModels.syntheticPath(of: "llama3")
        let drafting = try await ModelRunner.load(from: url, options: options)
        options.draftModelPath = TestModels.smolLM2Path
        let drafting2 = try await ModelRunner.load(from: url, options: options)
        for sampling in [GenerationOptions(temperature: 0, maxTokens: 40), GenerationOptions(temperature: 0.8, seed: 3, maxTokens: 40)] {
            var replies: [String] = []
            var stats: [GenerationStats] = []
            for runner in [plain, drafting, drafting2] {
                let conversation = runner.createConversation(systemPrompt: "Answer briefly.")
                for try await response in conversation.generateResponse(to: "Name three colours of the rainbow.", options: sampling) {
                    if case let .complete(message, _, replyStats) = response {
                        replies.append(message.content)
                        stats.append(replyStats)
                    }
                }
            }
            #expect(replies.count == 3 && Set(replies).count == 1, "\(replies)")
            #expect(stats[2].acceptedDraftTokens > 0 && stats[2].decodePasses < stats[0].decodePasses)
        }
    }

    @Test func aValueUnderASchemaIsTheSameWithDrafts() async throws {
        // Drafts are written under the grammar (the draft model's logits masked at each drafted
        // position), and the keys it forces, when the draft holds them, are kept with it.
        let url = URL(fileURLWithPath: TestModels.smolLM2Path)
        var options = ModelRunner.Options(contextLength: 1024)
        let plain = try await ModelRunner.load(from: url, options: options)
        options.draftModelPath = TestModels.smolLM2Path
        let drafting = try await ModelRunner.load(from: url, options: options)
        let schema = #"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"city":{"type":"string"}},"required":["name","age","city"],"additionalProperties":false}"#
        let request = GenerationOptions(temperature: 0, maxTokens: 80, jsonSchema: schema)
        var replies: [(String, GenerationStats)] = []
        for runner in [plain, drafting] {
            let conversation = runner.createConversation()
            for try await response in conversation.generateResponse(to: "Ada Lovelace, 36, lives in London. Give her as JSON.", options: request) {
                if case let .complete(message, reason, stats) = response {
                    #expect(reason == .stop)
                    replies.append((message.content, stats))
                }
            }
        }
        #expect(replies.count == 2 && replies[0].0 == replies[1].0, "\(replies.map(\.0))")
        #expect(try JSONSchemaValidator(schemaText: schema).problems(in: replies[1].0).isEmpty)
        #expect(replies[1].1.acceptedDraftTokens > 0 && replies[1].1.decodePasses < replies[0].1.decodePasses,
                "passes \(replies[1].1.decodePasses) of \(replies[0].1.decodePasses)")
    }
}
