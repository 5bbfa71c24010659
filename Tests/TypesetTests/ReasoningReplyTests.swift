import Foundation
import GGUF
import TypesetTestSupport
import Testing
@testable import Typeset
import TypesetGrammar
import TypesetTokenizer

/// Replies of a model that thinks (`<think>` … `</think>` as tokens of its vocabulary): the
/// reasoning streams as reasoning, never as content or as the value; under a JSON Schema the
/// grammar holds only what follows `</think>`; a reasoning budget forces `</think>`. Driven by
/// a scripted writer over the byte vocabulary with the two markers.
@Suite struct ReasoningReplyTests {
    static let prompt = ScriptedReply.prompt
    static let tokenizer = ByteVocabulary.thinkingTokenizer
    static let markers = ThinkingMarkers(tokenizer.vocabulary)!
    static let city = ScriptedReply.citySchema

    typealias Run = ScriptedReply

    /// A model that reasons `reasoning` between `<think>` and `</think>` and, after a
    /// `</think>` wherever it comes (the model's own or a budget's), answers `answer`.
    static func thinker(reasoning: String, answer: String) -> ScriptedSource {
        let thought = ByteVocabulary.thinkingTokens("<think>" + reasoning + "</think>")
        let answer = ByteVocabulary.thinkingTokens(answer)
        let size = tokenizer.vocabulary.count
        return ScriptedSource { held in
            var logits = [Float](repeating: 0, count: size)
            let written = held.dropFirst(prompt.count)
            let (target, done) = written.firstIndex(of: ByteVocabulary.thinkClose).map { (answer, written[($0 + 1)...]) } ?? (thought, written)
            let next = done.count < target.count && target.starts(with: done) ? target[done.count] : ByteVocabulary.endOfGeneration
            logits[next] = 10
            return logits
        }
    }

    /// The reply of a model that wants to write `text` (`<think>` and `</think>` as tokens),
    /// or of `source`, held to `schema` when one is given; `thinking` says where the prompt
    /// left it.
    static func reply(
        writing text: String = "", source: ScriptedSource? = nil, schema: String? = nil, options: GenerationOptions = GenerationOptions(),
        thinking: ReplyThinking = .possible, tokenizer: Tokenizer = Self.tokenizer
    ) throws -> Run {
        let markers = ThinkingMarkers(tokenizer.vocabulary)!
        let source = source ?? ByteVocabulary.writer(
            tokens: tokenizer.encode(text, addingSpecialTokens: false, parsingSpecialTokens: true), promptLength: prompt.count,
            size: tokenizer.vocabulary.count)
        var options = options
        if options.reasoningBudget == 0 { options.enableThinking = false }
        let value = try schema.map {
            GrammarMatcher(try CompiledGrammar(
                try Grammar(jsonSchema: try JSONValue(parsing: $0), options: .generation),
                vocabulary: GrammarVocabulary(tokenizer.vocabulary)))
        }
        let constraint: (any TokenConstraint & Sendable)? = value.map { value -> any TokenConstraint & Sendable in
            guard thinking != .off else { return value }
            return ReasoningThenValue(
                value: value, markers: markers, vocabulary: tokenizer.vocabulary, startsInReasoning: thinking == .opened,
                budget: options.reasoningBudget, reserve: ReasoningThenValue.valueReserve(tokens: options.maxTokens ?? 4096))
        }
        var routing = ReplyPlan.Routing(
            options: options, constrained: constraint != nil, calls: nil, forbidsCallOpening: false, thinking: thinking)
        routing.thinkingMarkers = markers
        let plan = ReplyPlan(
            prompt: prompt, options: schema == nil ? options : options.writingJSON(), constraint: constraint, routing: routing,
            cacheOwner: nil)
        var events: [MessageResponse] = []
        let decoder = ReplyDecoder(plan: plan, tokenizer: tokenizer, cancellation: CancellationFlag()) { events.append($0) }
        let loop = TokenLoop(
            source: source, maxTokens: options.maxTokens ?? Int.max, isEndOfGeneration: { tokenizer.vocabulary.isEndOfGeneration($0) })
        let reply = decoder.finish(try loop.run(prompt: prompt, opening: decoder.opening, stepper: decoder))
        return Run(reply: reply, events: events, source: source, promptLength: prompt.count)
    }

    static func city(in run: Run) -> String? {
        guard case .string(let name)? = (try? JSONValue(parsing: run.content))?["city"] else { return nil }
        return name
    }

    // MARK: Under a schema

    @Test func theValueFollowsTheReasoning() throws {
        let run = try Self.reply(writing: "<think>\nThe user lives in Paris.\n</think>\n\n{\"city\":\"Paris\"}", schema: Self.city)
        #expect(run.content == #"{"city":"Paris"}"#)
        #expect(run.reasoning == "The user lives in Paris.")
        #expect(run.reply.finishReason == .stop)
        // Streamed as they were written: the reasoning as reasoning, the value as content, the
        // markers and the separator as neither.
        #expect(run.streamedReasoning == "\nThe user lives in Paris.\n")
        #expect(run.streamedContent == run.content)
        #expect(run.written.first == ByteVocabulary.thinkOpen)
    }

    @Test func bracesInTheReasoningOpenNothing() throws {
        // Without the reasoning phase the grammar would take `{"city": "Lyon"` as the value.
        let run = try Self.reply(
            writing: "<think>Maybe {\"city\": \"Lyon\"}? No: the letter says Paris.</think>{\"city\":\"Paris\"}", schema: Self.city)
        #expect(Self.city(in: run) == "Paris")
        #expect(run.reasoning == #"Maybe {"city": "Lyon"}? No: the letter says Paris."#)
    }

    @Test func aModelThatDoesNotThinkWritesTheValueAtOnce() throws {
        let run = try Self.reply(writing: #"{"city":"Paris"}"#, schema: Self.city)
        #expect(run.content == #"{"city":"Paris"}"#)
        #expect(run.reasoning == nil)
        // Jump-forward still forces the key after the first token.
        #expect(run.source.evaluations.dropFirst().first == Array(#"{"city":""#.utf8).map(Int.init))
    }

    @Test func reasoningThatNeverEndsIsClosedInTimeForTheValue() throws {
        let endless = Self.thinker(reasoning: String(repeating: "and then ", count: 40), answer: #"{"city":"Paris"}"#)
        let run = try Self.reply(source: endless, schema: Self.city, options: GenerationOptions(maxTokens: 48))
        #expect(run.reply.finishReason == .stop)
        #expect(run.reply.stats.completionTokens <= 48)
        #expect(run.written.contains(ByteVocabulary.thinkClose))
        #expect(run.reasoning?.hasPrefix("and then") == true)
        // The closing came while a quarter of the tokens were left for the value, so it is whole.
        #expect(Self.city(in: run) == "Paris", "the value is \(run.content)")
        // Not holding the value within maxTokens, reasoning that never ends is cut short.
        var unbounded = GenerationOptions(maxTokens: 48)
        unbounded.closesWithinMaxTokens = false
        let cut = try Self.reply(source: Self.thinker(reasoning: String(repeating: "and then ", count: 40), answer: "{}"),
                                 schema: Self.city, options: unbounded)
        #expect(cut.reply.finishReason == .constraint)
        #expect(cut.content.isEmpty)
    }

    @Test func theBudgetForcesTheClosing() throws {
        var options = GenerationOptions()
        options.reasoningBudget = 6
        let run = try Self.reply(
            source: Self.thinker(reasoning: "Paris, surely, since the letter", answer: #"{"city":"Paris"}"#), schema: Self.city,
            options: options)
        #expect(run.reasoning == "Paris,")
        let expected: [Int] = ByteVocabulary.thinkingTokens("<think>Paris,</think>")
        #expect(Array(run.written.prefix(8)) == expected)
        #expect(run.content == #"{"city":"Paris"}"#)
        #expect(run.reply.finishReason == .stop)
    }

    @Test func aTemplateThatOpensTheReasoningStartsInIt() throws {
        let run = try Self.reply(writing: "Paris.</think>\n{\"city\":\"Paris\"}", schema: Self.city, thinking: .opened)
        #expect(run.reasoning == "Paris.")
        #expect(run.content == #"{"city":"Paris"}"#)
    }

    @Test func withThinkingOffTheGrammarStartsAtOnce() throws {
        var options = GenerationOptions()
        options.enableThinking = false
        let run = try Self.reply(writing: "<think>x</think>{\"city\":\"Paris\"}", schema: Self.city, options: options, thinking: .off)
        // `<think>` is not a value's first token: the model is held to the value.
        #expect(run.reasoning == nil)
        #expect(!run.written.contains(ByteVocabulary.thinkOpen))
        #expect((try? JSONValue(parsing: run.content)) != nil)
    }

    // MARK: Free text

    @Test func theBudgetEndsFreeReasoning() throws {
        var options = GenerationOptions()
        options.reasoningBudget = 4
        let run = try Self.reply(source: Self.thinker(reasoning: "Long thoughts", answer: "Paris."), options: options)
        #expect(run.reasoning == "Long")
        #expect(run.content == "Paris.")
        let expected: [Int] = ByteVocabulary.thinkingTokens("<think>Long</think>")
        #expect(Array(run.written.prefix(6)) == expected)
        let free = try Self.reply(writing: "<think>Long thoughts</think>Paris.")
        #expect(free.reasoning == "Long thoughts")
        #expect(free.content == "Paris.")
    }

    @Test func markersThatAreControlTokensStillRoute() throws {
        // `<think>` and `</think>` as control tokens detokenize to nothing; the reply's text is
        // routed by the markers' tokens, so the budget's closing ends the reasoning.
        let control = ByteVocabulary.controlThinkingTokenizer
        #expect(try control.decode([ByteVocabulary.thinkOpen, ByteVocabulary.thinkClose]).isEmpty)
        var options = GenerationOptions()
        options.reasoningBudget = 4
        let run = try Self.reply(source: Self.thinker(reasoning: "Long thoughts", answer: "Paris."), options: options, tokenizer: control)
        #expect(run.reasoning == "Long")
        #expect(run.content == "Paris.")
    }

    /// Gemma 4 reasons in a thought channel, `<|channel>thought` … `<channel|>`: its label is
    /// markup, the rest reasoning, and the value (or the content) follows the closing.
    @Test func gemmasThoughtChannelIsReasoning() throws {
        let channel = ByteVocabulary.channelTokenizer
        #expect(ThinkingMarkers(channel.vocabulary)?.syntax == .channel)
        let value = try Self.reply(
            writing: "<|channel>thought\nThe user lives in Paris.<channel|>{\"city\":\"Paris\"}", schema: Self.city, tokenizer: channel)
        #expect(value.content == #"{"city":"Paris"}"#)
        #expect(value.reasoning == "The user lives in Paris.")
        #expect(value.streamedReasoning == "The user lives in Paris.")
        let free = try Self.reply(writing: "<|channel>thought\nA capital.\n<channel|>Paris is.", tokenizer: channel)
        #expect(free.reasoning == "A capital.")
        #expect(free.content == "Paris is.")
        // A thought that is only the label is no reasoning; text that merely starts like it is.
        #expect(try Self.reply(writing: "<|channel>thought\n<channel|>Paris.", tokenizer: channel).reasoning == nil)
        #expect(try Self.reply(writing: "<|channel>thoughtful<channel|>Paris.", tokenizer: channel).reasoning == "thoughtful")
        let held = try Self.reply(writing: "<|channel>thoughtful<channel|>{\"city\":\"Paris\"}", schema: Self.city, tokenizer: channel)
        #expect(held.reasoning == "thoughtful" && held.streamedReasoning == "thoughtful")
        #expect(try Self.reply(writing: "<|channel>thought<channel|>{\"city\":\"Paris\"}", schema: Self.city, tokenizer: channel).reasoning == nil)
        // Gemma 4's template writes an empty channel when thinking is off: the reply starts after it.
        #expect(ReplyThinking(promptText: "<|turn>model\n<|channel>thought\n<channel|>", options: GenerationOptions(), syntax: .channel) == .off)
        #expect(ReplyThinking(promptText: "<|turn>model\n", options: GenerationOptions(), syntax: .channel) == .possible)
        #expect(ReplyThinking(promptText: "<|turn>model\n<|channel>thought\n", options: GenerationOptions(), syntax: .channel) == .opened)
    }

    /// Where the prompt leaves the reply: the template's last marker decides before the options.
    @Test func thePromptsEndDecidesWhereTheReplyStarts() {
        var off = GenerationOptions()
        off.enableThinking = false
        #expect(ReplyThinking(promptText: "<|im_start|>assistant\n", options: GenerationOptions()) == .possible)
        #expect(ReplyThinking(promptText: "<|im_start|>assistant\n", options: off) == .off)
        #expect(ReplyThinking(promptText: "<|im_start|>assistant\n<think>\n\n</think>\n\n", options: GenerationOptions()) == .off)
        // A template that opens the block whatever it is told: the reply starts inside it.
        #expect(ReplyThinking(promptText: "<|im_start|>assistant\n<think>\n", options: off) == .opened)
        var inline = GenerationOptions()
        inline.inlineThinkingTags = true
        #expect(ReplyThinking(promptText: "<|im_start|>assistant\n<think>\n", options: inline) == .off)
    }

    /// A budget of 0 where the template opened the reasoning anyway: `</think>` at once, free
    /// or under a schema.
    @Test func aBudgetOfZeroClosesReasoningTheTemplateOpened() throws {
        var budget = GenerationOptions()
        budget.reasoningBudget = 0
        let options = budget.filled(from: GenerationOptions())
        #expect(options.enableThinking == false)
        let thinking = ReplyThinking(promptText: "assistant\n<think>\n", options: options)
        #expect(thinking == .opened)
        let free = try Self.reply(source: Self.thinker(reasoning: "Long thoughts", answer: "Paris."), options: options, thinking: thinking)
        #expect(free.written.first == ByteVocabulary.thinkClose)
        #expect(free.content == "Paris.")
        #expect(free.reasoning?.isEmpty != false)
        let value = try Self.reply(
            source: Self.thinker(reasoning: "Long thoughts", answer: #"{"city":"Paris"}"#), schema: Self.city, options: options,
            thinking: thinking)
        #expect(value.written.first == ByteVocabulary.thinkClose)
        #expect(value.content == #"{"city":"Paris"}"#)
    }

    @Test func freeTextStartsInReasoningTheTemplateOpened() throws {
        let run = try Self.reply(writing: "Capitals.</think>Paris.", thinking: .opened)
        #expect(run.reasoning == "Capitals.")
        #expect(run.content == "Paris.")
    }

    // MARK: The constraint

    /// Every prefix of a reply rolled back to from its end gives the masks and states of the
    /// same prefix accepted afresh: drafts and the grammar's rollback stay exact through the
    /// reasoning, its end and the value.
    @Test func rollbackRestoresEveryPrefix() throws {
        let grammar = try CompiledGrammar(
            try Grammar(jsonSchema: try JSONValue(parsing: Self.city), options: .generation),
            vocabulary: GrammarVocabulary(Self.tokenizer.vocabulary))
        let tokens = ByteVocabulary.thinkingTokens("<think>a {b</think>\n\n{\"city\":\"P\"}")
        func fresh() -> ReasoningThenValue {
            ReasoningThenValue(value: GrammarMatcher(grammar), markers: Self.markers, vocabulary: Self.tokenizer.vocabulary,
                               startsInReasoning: false, budget: nil)
        }
        ConstraintChecks.expectRollbackRestoresEveryPrefix(of: tokens, fresh, state: \.stage)
        // The end of generation is never reasoning, and a second opening is refused.
        var reasoning = fresh()
        let accepted = [ByteVocabulary.thinkOpen, ByteVocabulary.endOfGeneration, ByteVocabulary.thinkOpen, Int(UInt8(ascii: "{"))]
            .map { reasoning.accept(token: $0) }
        #expect(accepted == [true, false, false, true])
        #expect(reasoning.stage == .reasoning)
    }
}

/// The same on a model: the random-weight qwen3 with two of its special tokens made Qwen 3's
/// `<think>` and `</think>` (user-defined tokens, as Qwen 3's GGUF files have them), loaded
/// by a runner and asked for a value of a schema. A logit bias makes it open its reasoning; the
/// budget closes it; the value after it must validate.
@Suite(.serialized) struct ReasoningModelTests {
    static let schema = #"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}"#

    /// The random-weight qwen3 whose tokens 3 and 4 are `<think>` and `</think>`, written once.
    static let thinkingModel = Result { () throws -> URL in
        let file = try GGUFFile(contentsOf: TestModels.syntheticPath(of: "qwen3"))
        var writer = GGUFWriter()
        for entry in file.metadata.entries where !entry.key.hasPrefix("GGUF.") {
            var value = entry.value
            if case .array(let array) = entry.value, entry.key == "tokenizer.ggml.tokens" || entry.key == "tokenizer.ggml.token_type" {
                var elements = Array(array)
                if entry.key == "tokenizer.ggml.tokens" {
                    (elements[3], elements[4]) = (.string("<think>"), .string("</think>"))
                } else {
                    (elements[3], elements[4]) = (.int32(4), .int32(4))
                }
                value = .array(try GGUFArray(elementType: array.elementType, elements: elements))
            }
            writer.setValue(value, forKey: entry.key)
        }
        for tensor in file.tensors {
            try writer.addTensor(name: tensor.name, shape: tensor.shape, type: tensor.type, data: Array(tensor.bytes))
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("typeset-thinking-qwen3-\(getpid()).gguf")
        try Data(try writer.encoded()).write(to: url)
        return url
    }

    struct Outcome {
        var message: ChatMessage
        var finishReason: FinishReason
        var streamed: [MessageResponse]
    }

    static func reply(_ options: GenerationOptions) async throws -> Outcome {
        let runner = try await ModelRunner.load(from: try thinkingModel.get(), options: ModelRunner.Options(contextLength: 512))
        #expect(runner.thinkingMarkers?.opening == 3 && runner.thinkingMarkers?.closing == 4)
        var streamed: [MessageResponse] = []
        for try await response in runner.createConversation().generateResponse(to: "Ada Lovelace is 36.", options: options) {
            if case let .complete(message, reason, _) = response { return Outcome(message: message, finishReason: reason, streamed: streamed) }
            streamed.append(response)
        }
        throw CancellationError()
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func theValueComesAfterTheBudgetedReasoning() async throws {
        var options = GenerationOptions(temperature: 0, maxTokens: 96, jsonSchema: Self.schema)
        options.logitBias = [3: 100]
        options.reasoningBudget = 8
        let outcome = try await Self.reply(options)
        #expect(outcome.finishReason == .stop)
        #expect(try JSONSchemaValidator(schemaText: Self.schema).problems(in: outcome.message.content).isEmpty, "\(outcome.message.content)")
        #expect(outcome.message.reasoning?.isEmpty == false)
        // Every piece of reasoning streamed before the first piece of the value.
        let kinds = outcome.streamed.compactMap { response -> Bool? in
            switch response {
            case .reasoningChunk: true
            case .chunk: false
            default: nil
            }
        }
        #expect(kinds.first == true && kinds.drop { $0 }.allSatisfy { !$0 })
        // The markers are neither reasoning nor value (the bias makes `<think>` text inside the
        // value's strings, where it is a string's bytes like any other).
        #expect(outcome.message.reasoning?.contains("think>") == false)
        #expect(outcome.message.content.hasPrefix("{"))

        // Thinking off: the value from the first token (`<think>` is not a value's), whatever the bias.
        options.enableThinking = false
        let direct = try await Self.reply(options)
        #expect(direct.message.reasoning == nil)
        #expect(try JSONSchemaValidator(schemaText: Self.schema).problems(in: direct.message.content).isEmpty)
    }
}
