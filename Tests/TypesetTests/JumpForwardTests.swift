import Foundation
import Testing
@testable import Typeset
import TypesetGrammar
import TypesetTestSupport

/// Jump-forward decoding on the two tokenizer families of the real models, GPT-2-style
/// byte-level BPE (SmolLM2) and SentencePiece-style BPE (Gemma 3): replies held to the seed
/// schemas stay valid, take fewer forward passes than tokens, and every forced token is the
/// one the tokenizer writes after the sampled token.
@Suite(.serialized) struct JumpForwardTests {
    static let schemas = ["brew_summary.json", "event.json", "city_fact.json"]

    @Test(arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName])
    func repliesStayValidInFewerPasses(model: String) async throws {
        guard TestModels.shouldRun(model) else { return }
        let runner = try ModelRunner(url: URL(fileURLWithPath: TestModels.path(of: model)), options: ModelRunner.Options(contextLength: 1024))
        for file in Self.schemas {
            let schema = try Fixtures.seedSchema(file)
            var passes: [Bool: (steps: Int, tokens: Int)] = [:]
            for jumps in [false, true] {
                var options = GenerationOptions(temperature: 0, maxTokens: 160, jsonSchema: schema)
                options.jumpsForward = jumps
                let conversation = runner.createConversation(systemPrompt: "You answer with JSON.")
                let before = runner.activity.steps
                var text = "", streamed = "", finish: FinishReason?, tokens = 0
                for try await response in conversation.generateResponse(to: "Make up an example for \(file).", options: options) {
                    switch response {
                    case .chunk(let piece): streamed += piece
                    case .complete(let message, let reason, let stats):
                        text = message.content
                        finish = reason
                        tokens = stats.completionTokens
                    default: break
                    }
                }
                #expect(finish == .stop, "\(model) \(file): \(text)")
                #expect(streamed == text)
                #expect(try JSONSchemaValidator(schemaText: schema).problems(in: text) == [], "\(model) \(file): \(text)")
                // One pass computes the prompt (it fits one chunk); each later pass, a step.
                passes[jumps] = (runner.activity.steps - before - 1, tokens)
            }
            let plain = try #require(passes[false]), jumping = try #require(passes[true])
            // Without jumps, a pass per token but the last (the value is complete with it).
            #expect(plain.steps == plain.tokens - 1, "\(model) \(file): one pass per token without jumps")
            #expect(jumping.steps < jumping.tokens, "\(model) \(file): \(jumping.steps) passes for \(jumping.tokens) tokens")
        }
    }

    /// Provisional tokens (the last token of a forced text, computed in its pass) change no
    /// token of a reply, greedy or sampled, alone or decoded beside others; they only save
    /// passes.
    @Test(arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName])
    func provisionalTokensChangeNoToken(model: String) async throws {
        guard TestModels.shouldRun(model) else { return }
        let runner = try ModelRunner(
            url: URL(fileURLWithPath: TestModels.path(of: model)),
            options: ModelRunner.Options(contextLength: 1024, maximumConcurrentGenerations: Self.schemas.count))
        let schemas = try Self.schemas.map { try Fixtures.seedSchema($0) }
        struct Reply: Equatable { var text: String; var passes: Int; var saved: Int }
        @Sendable func reply(_ schema: String, provisional: Bool, temperature: Float) async throws -> Reply {
            var options = GenerationOptions(temperature: temperature, seed: 7, maxTokens: 120, jsonSchema: schema)
            options.computesBoundaryTokensAhead = provisional
            for try await response in runner.createConversation().generateResponse(to: "Make up an example.", options: options) {
                if case .complete(let message, _, let stats) = response {
                    return Reply(text: message.content, passes: stats.decodePasses, saved: stats.passesSavedByProvisionalTokens)
                }
            }
            throw CancellationError()
        }
        var saved = 0
        for temperature: Float in [0, 0.8] {
            var plain: [Reply] = []
            for schema in schemas { plain.append(try await reply(schema, provisional: false, temperature: temperature)) }
            #expect(plain.allSatisfy { $0.saved == 0 })
            // All at once: each reply is decoded in the same forward passes as the others.
            let together = try await withThrowingTaskGroup(of: (Int, Reply).self) { group in
                for (index, schema) in schemas.enumerated() {
                    group.addTask { (index, try await reply(schema, provisional: true, temperature: temperature)) }
                }
                var replies = [Reply?](repeating: nil, count: schemas.count)
                for try await (index, reply) in group { replies[index] = reply }
                return replies.map { $0! }
            }
            for (index, (alone, batched)) in zip(plain, together).enumerated() {
                #expect(batched.text == alone.text, "\(model) \(Self.schemas[index]) at \(temperature)")
                #expect(batched.passes == alone.passes - batched.saved, "\(model) \(Self.schemas[index]): \(alone) \(batched)")
                saved += batched.saved
            }
        }
        #expect(saved > 0, "\(model): no provisional token saved a pass")
    }

    /// A function call's forced parts (its keys, the function's name) are appended without a
    /// pass each, and its arguments still validate against the function's parameters.
    @Test(arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName])
    func callsJumpForward(model: String) async throws {
        guard TestModels.shouldRun(model) else { return }
        let runner = try ModelRunner(url: URL(fileURLWithPath: TestModels.path(of: model)), options: ModelRunner.Options(contextLength: 1024))
        let function = try FunctionDefinition(
            name: "log_brew", description: "Records a coffee brew.",
            parametersJSON: #"{"type":"object","properties":{"method":{"enum":["pour_over","french_press","espresso"]},"dose_grams":{"type":"integer","minimum":5,"maximum":40},"notes":{"type":"string","maxLength":60}},"required":["method","dose_grams","notes"],"additionalProperties":false}"#)
        var passes: [Bool: (steps: Int, tokens: Int)] = [:]
        for jumps in [false, true] {
            var options = GenerationOptions(temperature: 0, maxTokens: 120, functionCallMode: .required)
            options.jumpsForward = jumps
            let conversation = runner.createConversation(systemPrompt: "You log coffee brews with the tool.")
            try conversation.register(function: function)
            let before = runner.activity.steps
            var calls: [FunctionCall] = [], finish: FinishReason?, tokens = 0
            for try await response in conversation.generateResponse(to: "I just made a pour over with 18 grams. Log it.", options: options) {
                if case .complete(let message, let reason, let stats) = response {
                    calls = message.functionCalls
                    finish = reason
                    tokens = stats.completionTokens
                }
            }
            #expect(finish == .stop, "\(model)")
            let call = try #require(calls.first, "\(model): no call")
            #expect(call.name == "log_brew")
            #expect(try JSONSchemaValidator(schemaText: function.parameters.compactText).problems(in: call.argumentsText) == [], "\(model): \(call.argumentsText)")
            passes[jumps] = (runner.activity.steps - before - 1, tokens)
        }
        let plain = try #require(passes[false]), jumping = try #require(passes[true])
        // Tokens without a pass of their own: the closing markup and the end without jumps;
        // with them, the name and the keys too.
        #expect(jumping.tokens - jumping.steps >= plain.tokens - plain.steps + 6, "\(model): \(plain) without jumps, \(jumping) with")
    }

    /// The tokens forced after the first sampled token are the tokenizer's own encoding of
    /// the text the grammar forces (less the last token when the model might merge it with
    /// what it writes next).
    @Test(arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName])
    func forcedTokensAreTheTokenizersOwn(model: String) throws {
        guard TestModels.shouldRun(model) else { return }
        let runner = try ModelRunner(url: URL(fileURLWithPath: TestModels.path(of: model)), options: ModelRunner.Options(contextLength: 256))
        let tokenizer = runner.tokenizer
        let schema = try JSONValue(parsing: #"{"type":"object","properties":{"temperature_celsius":{"type":"integer"}},"required":["temperature_celsius"]}"#)
        let grammar = try runner.compiledGrammar(schema: schema, options: .generation)
        // Everything up to the integer is forced; the model's first token is the encoding's first.
        let canonical = tokenizer.encode(#"{"temperature_celsius":"#, addingSpecialTokens: false)
        try #require(canonical.count >= 4)
        let plan = ReplyPlan(
            prompt: [], options: GenerationOptions().writingJSON(), constraint: GrammarMatcher(grammar),
            routing: ReplyPlan.Routing(options: GenerationOptions(), constrained: true, calls: nil, forbidsCallOpening: false), cacheOwner: nil)
        let decoder = ReplyDecoder(plan: plan, tokenizer: tokenizer, cancellation: CancellationFlag()) { _ in }
        var logits = [Float](repeating: -10, count: tokenizer.vocabulary.count)
        logits[canonical[0]] = 10
        let decision = decoder.step(&logits, TokenStepContext(history: [], completionTokens: 0, remainingTokens: 100))
        guard case .append(let token, let forced, let provisional) = decision else { Issue.record("\(decision)"); return }
        #expect(token == canonical[0])
        // All of them, or all but the last when a longer token could start with it; that one
        // is then computed provisionally.
        let all = Array(canonical.dropFirst())
        #expect(forced == all && provisional == nil || forced == all.dropLast() && provisional == all.last,
                "\(model): forced \(forced.map { tokenizer.vocabulary.tokens[$0] }), provisional \(provisional.map { tokenizer.vocabulary.tokens[$0] } ?? "none")")
    }
}
