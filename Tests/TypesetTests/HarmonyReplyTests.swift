import Foundation
import GGUF
import TypesetTestSupport
import Testing
@testable import Typeset
import TypesetGrammar
import TypesetTokenizer

/// Replies in gpt-oss's Harmony format, driven by scripted writers over the byte vocabulary
/// with Harmony's markers: analysis messages stream as reasoning, final and preamble messages as
/// content, a commentary message to `functions.NAME` is a call whose arguments are held to that
/// function's parameters; under a JSON Schema the grammar holds only the final message's body; a
/// reasoning budget forces `<|end|>` (and, in free text, the final message's header after it).
@Suite struct HarmonyReplyTests {
    static let prompt = ScriptedReply.prompt
    static let tokenizer = ByteVocabulary.harmonyTokenizer
    static let markers = HarmonyMarkers(tokenizer.vocabulary)!
    static let city = ScriptedReply.citySchema
    static let weather = FunctionDefinition(
        name: "get_weather", description: "The weather in a city.",
        parameters: try! JSONValue(parsing: #"{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}"#))

    typealias Run = ScriptedReply

    /// A model that writes `text` (markers as tokens), then ends its turn with `<|return|>`.
    static func writer(_ text: String) -> ScriptedSource {
        ByteVocabulary.writer(tokens: ByteVocabulary.harmonyTokens(text) + [ByteVocabulary.harmonyReturn],
                              promptLength: prompt.count, size: tokenizer.vocabulary.count)
    }

    /// A model that reasons `reasoning` in an analysis message; after its first `<|end|>`
    /// wherever it comes (its own or a budget's) writes `afterEnd` (by default the final
    /// message's header); after a final message's header wherever it comes, answers `answer`.
    static func thinker(reasoning: String, answer: String, afterEnd: String = Harmony.finalHeader) -> ScriptedSource {
        let thought = ByteVocabulary.harmonyTokens("<|channel|>analysis<|message|>" + reasoning + "<|end|>")
        let next = ByteVocabulary.harmonyTokens(afterEnd)
        let header = ByteVocabulary.harmonyTokens(Harmony.channel + "final" + Harmony.message)
        let answer = ByteVocabulary.harmonyTokens(answer) + [ByteVocabulary.harmonyReturn]
        let size = tokenizer.vocabulary.count
        return ScriptedSource { held in
            var logits = [Float](repeating: 0, count: size)
            let written = Array(held.dropFirst(prompt.count))
            var target = thought, done = written[...]
            if let final = written.indices.last(where: { written[$0...].starts(with: header) }) {
                (target, done) = (answer, written[(final + header.count)...])
            } else if let end = written.firstIndex(of: markers.end) {
                (target, done) = (next, written[(end + 1)...])
            }
            let next = done.count < target.count && target.starts(with: done) ? target[done.count] : ByteVocabulary.endOfGeneration
            logits[next] = 10
            return logits
        }
    }

    static func reply(
        source: ScriptedSource, schema: String? = nil, functions: [FunctionDefinition] = [], options: GenerationOptions = GenerationOptions()
    ) throws -> Run {
        let vocabulary = GrammarVocabulary(tokenizer.vocabulary)
        func compiled(_ schema: JSONValue, _ options: JSONSchemaOptions = .generation) throws -> CompiledGrammar {
            try CompiledGrammar(try Grammar(jsonSchema: schema, options: options), vocabulary: vocabulary)
        }
        let constraint: (any TokenConstraint & Sendable)? = try schema.map {
            HarmonyThenValue(value: GrammarMatcher(try compiled(try JSONValue(parsing: $0))), markers: markers,
                             vocabulary: tokenizer.vocabulary, budget: options.reasoningBudget,
                             reserve: ReasoningThenValue.valueReserve(tokens: options.maxTokens ?? 4096))
        }
        var calls: ReplyPlan.Calls?
        if !functions.isEmpty {
            calls = ReplyPlan.Calls(grammar: try compiled(ChatPromptRenderer.callSchema(functions)), startsWithCall: false, firstNumber: 1,
                                    allowsSeveral: true)
            for function in functions { calls?.argumentGrammars[function.name] = try compiled(function.parameters) }
        }
        var routing = ReplyPlan.Routing(options: options, constrained: constraint != nil, calls: calls, forbidsCallOpening: false,
                                        thinking: .off)
        routing.harmony = markers
        let plan = ReplyPlan(prompt: prompt, options: schema == nil ? options : options.writingJSON(), constraint: constraint,
                             routing: routing, cacheOwner: nil)
        var events: [MessageResponse] = []
        let decoder = ReplyDecoder(plan: plan, tokenizer: tokenizer, cancellation: CancellationFlag()) { events.append($0) }
        let loop = TokenLoop(source: source, maxTokens: options.maxTokens ?? Int.max,
                             isEndOfGeneration: { tokenizer.vocabulary.isEndOfGeneration($0) })
        let reply = decoder.finish(try loop.run(prompt: prompt, opening: decoder.opening, stepper: decoder))
        return Run(reply: reply, events: events, source: source, promptLength: prompt.count)
    }

    @Test func theVocabularyTreatsTheMarkersAsLlamaCppDoes() throws {
        let vocabulary = Self.tokenizer.vocabulary
        #expect(vocabulary.isEndOfGeneration(ByteVocabulary.harmonyReturn) && vocabulary.isEndOfGeneration(ByteVocabulary.harmonyCall))
        #expect(!vocabulary.isEndOfGeneration(Self.markers.end))
        #expect(try Self.tokenizer.decode(ByteVocabulary.harmonyTokens("<|channel|>final<|message|>Hi<|end|>")) == "<|channel|>final<|message|>Hi<|end|>")
    }

    // MARK: Free replies

    @Test func analysisIsReasoningAndFinalIsContent() throws {
        let run = try Self.reply(source: Self.writer(
            "<|channel|>analysis<|message|>The user asks {\"x\": 1}.<|end|><|start|>assistant<|channel|>final<|message|>Paris."))
        #expect(run.reasoning == #"The user asks {"x": 1}."#)
        #expect(run.content == "Paris.")
        #expect(run.streamedReasoning == #"The user asks {"x": 1}."#)
        #expect(run.streamedContent == "Paris.")
        #expect(run.reply.finishReason == .stop)
    }

    @Test func aPreambleIsContentAndAReplyWithoutHeadersIsText() throws {
        let preamble = try Self.reply(source: Self.writer(
            "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>final<|message|>Done."))
        #expect(preamble.content == "Checking.Done.")
        #expect(preamble.reasoning == nil)
        let plain = try Self.reply(source: Self.writer("Just text, no channel."))
        #expect(plain.content == "Just text, no channel.")
    }

    /// Both header orders llama.cpp reads: the recipient after the channel, or before it.
    @Test(arguments: ["<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
                      " to=functions.get_weather<|channel|>commentary json<|message|>"])
    func aCommentaryMessageToAFunctionIsACall(header: String) throws {
        let run = try Self.reply(
            source: Self.writer("<|channel|>analysis<|message|>I need the weather.<|end|><|start|>assistant" + header
                                + #"{"city":"Paris","days":2}"#),
            functions: [Self.weather])
        #expect(run.reply.message.functionCalls.map(\.name) == ["get_weather"])
        #expect(run.reply.message.functionCalls.first?.arguments == (try JSONValue(parsing: #"{"city":"Paris","days":2}"#)))
        #expect(run.reasoning == "I need the weather.")
        #expect(run.content.isEmpty)
        // Streamed as calls are: the name, then the arguments.
        let deltas = run.events.compactMap { if case let .functionCallDelta(_, name, arguments) = $0 { (name, arguments) } else { nil } }
        #expect(deltas.first?.0 == "get_weather" && deltas.first?.1 == "")
        #expect(deltas.map(\.1).joined() == #"{"city":"Paris","days":2}"#)
        #expect(run.events.contains { if case .functionCalls = $0 { true } else { false } })
    }

    @Test func aCallsArgumentsAreHeldToItsParameters() throws {
        // The model would name an argument the function does not have; the grammar refuses it.
        let run = try Self.reply(
            source: Self.writer(#"<|channel|>commentary to=functions.get_weather<|message|>{"town":"Paris"}"#),
            functions: [Self.weather])
        let arguments = try #require(run.reply.message.functionCalls.first?.arguments)
        guard case .object(let members) = arguments else { Issue.record("\(arguments)"); return }
        #expect(members.allSatisfy { ["city", "days"].contains($0.0) })
        #expect(members.contains { $0.0 == "city" })
    }

    /// Without functions to call (or with calls not parsed), a message to a function is text,
    /// and so is what follows it.
    @Test func aCallWithoutFunctionsStaysText() throws {
        let run = try Self.reply(source: Self.writer(#"<|channel|>commentary to=functions.get_weather<|message|>{"city":"Paris"} and more"#))
        #expect(run.reply.message.functionCalls.isEmpty)
        #expect(run.content.hasSuffix(#"{"city":"Paris"} and more"#))
    }

    @Test func anUnknownFunctionStaysText() throws {
        let run = try Self.reply(source: Self.writer(#"<|channel|>commentary to=functions.launch<|message|>{"now":true}"#),
                                 functions: [Self.weather])
        #expect(run.reply.message.functionCalls.isEmpty)
        #expect(run.content.contains("launch"))
    }

    @Test func theBudgetEndsTheAnalysisAndOpensTheFinalMessage() throws {
        var options = GenerationOptions()
        options.reasoningBudget = 4
        // A model that would open a second analysis message after the first: the final
        // message's header is forced instead.
        let run = try Self.reply(source: Self.thinker(
            reasoning: "Long thoughts", answer: "Paris.", afterEnd: "<|start|>assistant<|channel|>analysis<|message|>More."), options: options)
        #expect(run.reasoning == "Long")
        #expect(run.content == "Paris.")
        let expected = ByteVocabulary.harmonyTokens("<|channel|>analysis<|message|>Long<|end|>" + Harmony.finalHeader)
        #expect(Array(run.written.prefix(expected.count)) == expected)
    }

    /// The reader gives the same pieces however the text is cut into tokens.
    @Test func theReaderDoesNotDependOnWhereTheTextIsCut() {
        let text = "<|channel|>analysis<|message|>A <|end|>-ish thought<|end|><|start|>assistant<|channel|>final<|message|>Answer<|e"
        func read(_ pieces: [String]) -> (reasoning: String, content: String) {
            var reader = HarmonyReader()
            var reasoning = "", content = ""
            for piece in pieces.flatMap({ reader.read($0) }) + reader.finish() {
                switch piece {
                case .reasoning(let text): reasoning += text
                case .content(let text): content += text
                case .callStarted: Issue.record("no call here")
                }
            }
            return (reasoning, content)
        }
        let whole = read([text])
        #expect(whole.reasoning == "A ")
        #expect(whole.content == "Answer<|e")
        let characters = read(text.map { String($0) })
        #expect(characters == whole)
        // Text that does not begin as a header is content, even with a `<|message|>` in it.
        #expect(read(["Hello<|message|>x"]) == ("", "Hello<|message|>x"))
    }

    // MARK: Under a schema

    @Test func theValueIsTheFinalMessagesBody() throws {
        let run = try Self.reply(
            source: Self.writer(#"<|channel|>analysis<|message|>Maybe {"city": "Lyon"}? No.<|end|><|start|>assistant<|channel|>final<|message|>{"city":"Paris"}"#),
            schema: Self.city)
        #expect(run.content == #"{"city":"Paris"}"#)
        #expect(run.reasoning == #"Maybe {"city": "Lyon"}? No."#)
        #expect(run.streamedContent == run.content)
        #expect(run.reply.finishReason == .stop)
    }

    @Test func aModelMayAnswerWithoutAnalysisAndAnnounceJSON() throws {
        let direct = try Self.reply(source: Self.writer(#"<|channel|>final<|message|>{"city":"Oslo"}"#), schema: Self.city)
        #expect(direct.content == #"{"city":"Oslo"}"#)
        #expect(direct.reasoning == nil)
        let constrained = try Self.reply(source: Self.writer(#"<|channel|>final <|constrain|>json<|message|>{"city":"Oslo"}"#),
                                         schema: Self.city)
        #expect(constrained.content == #"{"city":"Oslo"}"#)
    }

    @Test func theBudgetForcesTheEndUnderASchema() throws {
        var options = GenerationOptions()
        options.reasoningBudget = 6
        let run = try Self.reply(source: Self.thinker(reasoning: "Paris, surely, since", answer: #"{"city":"Paris"}"#),
                                 schema: Self.city, options: options)
        #expect(run.reasoning == "Paris,")
        #expect(run.content == #"{"city":"Paris"}"#)
    }

    /// Reasoning ended by the reply's token budget, by a model that would then open another
    /// analysis message: the final message's header is the only one that still leaves room for
    /// the value, and the value completes.
    @Test(arguments: [40, 52, 64])
    func aSecondAnalysisIsRefusedWhenOnlyTheValueStillFits(maxTokens: Int) throws {
        let run = try Self.reply(
            source: Self.thinker(reasoning: String(repeating: "and then ", count: 40), answer: #"{"city":"Paris"}"#,
                                 afterEnd: "<|start|>assistant<|channel|>analysis<|message|>More"),
            schema: Self.city, options: GenerationOptions(maxTokens: maxTokens))
        #expect(run.reply.finishReason == .stop, "\(run.content)")
        #expect(run.reply.stats.completionTokens <= maxTokens)
        #expect((try? JSONValue(parsing: run.content)) != nil, "the value is \(run.content)")
    }

    @Test func reasoningThatNeverEndsIsClosedInTimeForTheValue() throws {
        let endless = Self.thinker(reasoning: String(repeating: "and then ", count: 40), answer: #"{"city":"Paris"}"#)
        let run = try Self.reply(source: endless, schema: Self.city, options: GenerationOptions(maxTokens: 64))
        #expect(run.reply.stats.completionTokens <= 64)
        #expect(Self.cityName(run.content) == "Paris", "the value is \(run.content)")
    }

    static func cityName(_ content: String) -> String? {
        guard case .string(let name)? = (try? JSONValue(parsing: content))?["city"] else { return nil }
        return name
    }

    /// Every prefix rolled back to gives the masks and stage of the same prefix accepted afresh.
    @Test func rollbackRestoresEveryPrefix() throws {
        let grammar = try CompiledGrammar(try Grammar(jsonSchema: try JSONValue(parsing: Self.city), options: .generation),
                                          vocabulary: GrammarVocabulary(Self.tokenizer.vocabulary))
        let tokens = ByteVocabulary.harmonyTokens(
            #"<|channel|>analysis<|message|>a {b<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>{"city":"P"}"#)
        func fresh() -> HarmonyThenValue {
            HarmonyThenValue(value: GrammarMatcher(grammar), markers: Self.markers, vocabulary: Self.tokenizer.vocabulary, budget: nil)
        }
        ConstraintChecks.expectRollbackRestoresEveryPrefix(of: tokens, fresh, state: \.stage)
        // A header other than analysis or final, and the end of generation in the analysis, are refused.
        var other = fresh()
        var acceptedTokens: [Bool] = []
        for token in ByteVocabulary.harmonyTokens("<|channel|>comm") { acceptedTokens.append(other.accept(token: token)) }
        #expect(acceptedTokens == [true, false, false, false, false])
        var analysis = fresh()
        for token in ByteVocabulary.harmonyTokens("<|channel|>analysis<|message|>x") { _ = analysis.accept(token: token) }
        let refusedReturn = analysis.accept(token: ByteVocabulary.harmonyReturn)
        let refusedMessage = analysis.accept(token: Self.markers.message)
        let acceptedEnd = analysis.accept(token: Self.markers.end)
        #expect(!refusedReturn && !refusedMessage && acceptedEnd)
    }
}

/// The same on a model: the random-weight gpt-oss with seven of its special tokens made
/// Harmony's markers (control tokens, as gpt-oss's GGUF files have them) and gpt-oss's own chat
/// template, loaded by a runner and asked for a value of a schema. A logit bias makes it choose
/// the analysis channel; the budget ends it; the value after it must validate.
@Suite(.serialized) struct HarmonyModelTests {
    static let schema = #"{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}"#
    static let markers = ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"]

    /// The random-weight gpt-oss whose tokens 3 … 9 are Harmony's markers, with gpt-oss's
    /// template (Tests/ChatTemplatingTests/Fixtures/templates/gpt-oss.jinja), written once.
    static let harmonyModel = Result { () throws -> URL in
        let template = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../ChatTemplatingTests/Fixtures/templates/gpt-oss.jinja"), encoding: .utf8)
        let file = try GGUFFile(contentsOf: TestModels.syntheticPath(of: "gpt-oss"))
        var writer = GGUFWriter()
        for entry in file.metadata.entries where !entry.key.hasPrefix("GGUF.") {
            var value = entry.value
            if case .array(let array) = entry.value, entry.key == "tokenizer.ggml.tokens" || entry.key == "tokenizer.ggml.token_type" {
                var elements = Array(array)
                for (offset, marker) in markers.enumerated() {
                    elements[3 + offset] = entry.key == "tokenizer.ggml.tokens" ? .string(marker) : .int32(3)
                }
                value = .array(try GGUFArray(elementType: array.elementType, elements: elements))
            }
            if entry.key == "tokenizer.chat_template" { value = .string(template) }
            writer.setValue(value, forKey: entry.key)
        }
        for tensor in file.tensors {
            try writer.addTensor(name: tensor.name, shape: tensor.shape, type: tensor.type, data: Array(tensor.bytes))
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("typeset-harmony-gpt-oss-\(getpid()).gguf")
        try Data(try writer.encoded()).write(to: url)
        return url
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func theValueIsTheFinalMessageAfterTheBudgetedAnalysis() async throws {
        let runner = try await ModelRunner.load(from: try Self.harmonyModel.get(), options: ModelRunner.Options(contextLength: 1024))
        #expect(runner.harmonyMarkers?.channel == 6 && runner.harmonyMarkers?.end == 4)
        var options = GenerationOptions(temperature: 0, maxTokens: 96, jsonSchema: Self.schema)
        options.logitBias = [try #require(runner.tokenizer.encode("analysis", addingSpecialTokens: false).first): 60]
        options.reasoningBudget = 8
        var streamed: [MessageResponse] = []
        var outcome: (message: ChatMessage, reason: FinishReason)?
        for try await response in runner.createConversation().generateResponse(to: "Ada Lovelace is 36.", options: options) {
            if case let .complete(message, reason, _) = response { outcome = (message, reason) } else { streamed.append(response) }
        }
        let (message, reason) = try #require(outcome)
        #expect(reason == .stop)
        #expect(try JSONSchemaValidator(schemaText: Self.schema).problems(in: message.content).isEmpty, "\(message.content)")
        #expect(message.reasoning?.isEmpty == false)
        // The analysis streamed before the value, and no marker is in either.
        let kinds = streamed.compactMap { response -> Bool? in
            switch response {
            case .reasoningChunk: true
            case .chunk: false
            default: nil
            }
        }
        #expect(kinds.first == true && kinds.drop { $0 }.allSatisfy { !$0 })
        #expect(!(message.reasoning ?? "").contains("<|") && message.content.hasPrefix("{"))
    }
}
