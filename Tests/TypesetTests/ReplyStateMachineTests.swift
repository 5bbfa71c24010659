import Testing
@testable import Typeset
import TypesetGrammar
import TypesetTokenizer

/// The reply state machine (free text, thinking, JSON Schema values, Hermes and bare JSON
/// function calls, the rules after a call, closing within `maxTokens`, cancellation) driven by
/// a scripted writer over a byte-level vocabulary: each case says what the model wants to
/// write and checks what the reply becomes.
@Suite struct ReplyStateMachineTests {
    static let prompt = ScriptedReply.prompt
    static let weather = FunctionDefinition(
        name: "get_weather", description: "The weather in a city.",
        parameters: try! JSONValue(parsing: #"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#))
    static let city = ScriptedReply.citySchema

    struct Run {
        var reply: Reply
        var events: [MessageResponse]
        var source: ScriptedSource
        var text: String { reply.message.content }
        var calls: [FunctionCall] { reply.message.functionCalls }
        var streamedCalls: [[FunctionCall]] {
            events.compactMap { if case .functionCalls(let calls) = $0 { calls } else { nil } }
        }
    }

    static func grammar(
        _ schema: JSONValue, options: JSONSchemaOptions = .generation, tokenizer: Tokenizer = ByteVocabulary.tokenizer
    ) throws -> CompiledGrammar {
        try CompiledGrammar(try Grammar(jsonSchema: schema, options: options), vocabulary: GrammarVocabulary(tokenizer.vocabulary))
    }

    /// The reply to `prompt` from a model that wants to write `text` (or from `source`, over
    /// `tokenizer`).
    static func reply(
        writing text: String, options: GenerationOptions = GenerationOptions(), schema: String? = nil,
        functions: [FunctionDefinition] = [], allowsSeveralCalls: Bool = true, forbidsCallOpening: Bool = false,
        cancelAfterChunks: Int? = nil, tokenizer: Tokenizer = ByteVocabulary.tokenizer, source: ScriptedSource? = nil
    ) throws -> Run {
        let source = source ?? ByteVocabulary.writer(text, promptLength: prompt.count)
        let callGrammar = functions.isEmpty ? nil
            : try grammar(
                ChatPromptRenderer.callSchema(functions), options: options.callFormat.callGrammarOptions(several: allowsSeveralCalls),
                tokenizer: tokenizer)
        let constraint = try schema.map { try grammar(try JSONValue(parsing: $0)) }
        let calls = callGrammar.map {
            ReplyPlan.Calls(grammar: $0, startsWithCall: options.functionCallMode == .required, firstNumber: 1, allowsSeveral: allowsSeveralCalls)
        }
        let plan = ReplyPlan(
            prompt: prompt, options: constraint != nil || calls != nil ? options.writingJSON() : options,
            constraint: constraint.map(GrammarMatcher.init),
            routing: ReplyPlan.Routing(options: options, constrained: constraint != nil, calls: calls, forbidsCallOpening: forbidsCallOpening),
            cacheOwner: nil)
        let cancellation = CancellationFlag()
        var events: [MessageResponse] = []
        var chunks = 0
        let decoder = ReplyDecoder(plan: plan, tokenizer: tokenizer, cancellation: cancellation) { event in
            events.append(event)
            if case .chunk = event {
                chunks += 1
                if chunks == cancelAfterChunks { cancellation.cancel() }
            }
        }
        let loop = TokenLoop(source: source, maxTokens: options.maxTokens ?? Int.max, isEndOfGeneration: { tokenizer.vocabulary.isEndOfGeneration($0) })
        let reply = decoder.finish(try loop.run(prompt: prompt, opening: decoder.opening, stepper: decoder))
        return Run(reply: reply, events: events, source: source)
    }

    // MARK: Free text

    @Test func freeTextIsStreamedWhole() throws {
        let run = try Self.reply(writing: "Paris is the capital.")
        #expect(run.text == "Paris is the capital.")
        #expect(run.reply.finishReason == .stop)
        #expect(run.reply.stats.completionTokens == 21)
        let streamed = run.events.compactMap { if case .chunk(let text) = $0 { text } else { nil } }.joined()
        #expect(streamed == run.text)
    }

    @Test func thinkingGoesToReasoning() throws {
        let run = try Self.reply(writing: "<think>Capitals: Paris.</think>Paris.")
        #expect(run.reply.message.reasoning == "Capitals: Paris.")
        #expect(run.text == "Paris.")
        #expect(run.events.contains { if case .reasoningChunk = $0 { true } else { false } })
        // Thinking off: the tags are text.
        var options = GenerationOptions()
        options.enableThinking = false
        #expect(try Self.reply(writing: "<think>x</think>y", options: options).text == "<think>x</think>y")
    }

    @Test func maxTokensCutsFreeText() throws {
        let run = try Self.reply(writing: "Paris is the capital.", options: GenerationOptions(maxTokens: 5))
        #expect(run.text == "Paris")
        #expect(run.reply.finishReason == .maxTokens)
        // The fifth token was not computed: nothing would read its logits.
        #expect(run.source.count == Self.prompt.count + 4)
    }

    @Test func cancellationStopsWithinOneToken() throws {
        let run = try Self.reply(writing: "Paris is the capital.", cancelAfterChunks: 3)
        #expect(run.reply.finishReason == .interrupted)
        #expect(run.text == "Par")
        #expect(!run.reply.appendsToHistory)
    }

    // MARK: JSON Schema values

    @Test func aSchemaValueEndsWhenComplete() throws {
        let run = try Self.reply(writing: #"{"city":"Paris"} and more"#, schema: Self.city)
        #expect(run.text == #"{"city":"Paris"}"#)
        #expect(run.reply.finishReason == .stop)
        // Complete, with only the end allowed after it: no step for the end of generation.
        #expect(run.source.count == Self.prompt.count + 15)
    }

    @Test func forcedBytesGoInWithTheSampledToken() throws {
        let run = try Self.reply(writing: #"{"city":"Paris"}"#, schema: Self.city)
        #expect(run.text == #"{"city":"Paris"}"#)
        // After `{` the grammar forces `"city":"`: its eight bytes are appended with `{` and
        // computed in one pass (no byte token starts with `"` and goes on, so the last one
        // cannot merge with what follows).
        #expect(run.source.evaluations.dropFirst().first == Array(#"{"city":""#.utf8).map(Int.init))
        var options = GenerationOptions()
        options.jumpsForward = false
        let plain = try Self.reply(writing: #"{"city":"Paris"}"#, options: options, schema: Self.city)
        #expect(plain.text == run.text && plain.reply.stats.completionTokens == run.reply.stats.completionTokens)
        #expect(plain.source.evaluations.count == run.source.evaluations.count + 8)
        // The streamed text is the reply's, forced bytes included.
        let streamed = run.events.compactMap { if case .chunk(let text) = $0 { text } else { nil } }.joined()
        #expect(streamed == run.text)
    }

    @Test func aSchemaValueClosesWithinMaxTokens() throws {
        let run = try Self.reply(writing: #"{"city":"A city whose name goes on and on"}"#, options: GenerationOptions(maxTokens: 16), schema: Self.city)
        #expect(run.reply.finishReason == .stop)
        #expect(run.reply.stats.completionTokens <= 16)
        let value = try JSONValue(parsing: run.text)
        guard case .string(let name)? = value["city"] else { Issue.record("no city in \(run.text)"); return }
        #expect("A city whose name goes on and on".hasPrefix(name))
    }

    @Test func aSchemaValueCutShortIsAConstraintFinish() throws {
        var options = GenerationOptions(maxTokens: 6)
        options.closesWithinMaxTokens = false
        let run = try Self.reply(writing: #"{"city":"Paris"}"#, options: options, schema: Self.city)
        #expect(run.reply.finishReason == .constraint)
        #expect(run.text == #"{"city"#)
    }

    // MARK: Function calls

    static let call = #"{"name":"get_weather","arguments":{"city":"Paris"}}"#

    @Test func aHermesCallBecomesTypedArguments() throws {
        let run = try Self.reply(writing: "<tool_call>\n" + Self.call + "\n</tool_call>", functions: [Self.weather])
        #expect(run.calls == [FunctionCall(id: "call_1", name: "get_weather", arguments: .object([("city", .string("Paris"))]))])
        #expect(run.streamedCalls == [run.calls])
        #expect(run.text.isEmpty)
        #expect(run.reply.finishReason == .stop)
    }

    @Test func forcedBytesOfACallGoInWithTheSampledToken() throws {
        let text = "<tool_call>\n" + Self.call + "\n</tool_call>"
        let run = try Self.reply(writing: text, functions: [Self.weather])
        var options = GenerationOptions()
        options.jumpsForward = false
        let plain = try Self.reply(writing: text, options: options, functions: [Self.weather])
        #expect(run.calls == plain.calls && run.calls.count == 1)
        #expect(run.source.held == plain.source.held)
        // Whitespace may come between a call's tokens, so only what follows an opening quote
        // is forced: `name"`, `get_weather"` (the one function), `arguments"` and `city"`,
        // 32 bytes computed in the passes of the quotes before them.
        #expect(run.source.evaluations.contains(Array(#""get_weather""#.utf8).map(Int.init)))
        #expect(plain.source.evaluations.count == run.source.evaluations.count + 32)
        // Within a budget (jumps on, as by default): `aCallAndItsClosingFitWithinMaxTokens`.
    }

    @Test func nothingButAnotherCallFollowsACall() throws {
        // The model would go on in words after its call: only the end (or another call) may follow.
        let run = try Self.reply(writing: "<tool_call>\n" + Self.call + "\n</tool_call>\nIt is sunny.", functions: [Self.weather])
        #expect(run.calls.count == 1)
        #expect(run.text.isEmpty)
        #expect(run.reply.finishReason == .stop)
        // Two calls in a row are both kept.
        let twice = "<tool_call>\n" + Self.call + "\n</tool_call>\n<tool_call>\n" + Self.call + "\n</tool_call>"
        #expect(try Self.reply(writing: twice, functions: [Self.weather]).calls.map(\.id) == ["call_1", "call_2"])
    }

    @Test func aBareJSONCallEndsTheReply() throws {
        var options = GenerationOptions()
        options.functionCallFormat = .json
        let run = try Self.reply(writing: Self.call + " trailing words", options: options, functions: [Self.weather])
        #expect(run.calls.map(\.name) == ["get_weather"])
        #expect(run.reply.finishReason == .stop)
        #expect(run.source.count == Self.prompt.count + Self.call.utf8.count - 1)
    }

    @Test func aRequiredCallIsOpenedForTheModel() throws {
        var options = GenerationOptions()
        options.functionCallMode = .required
        let run = try Self.reply(writing: "<tool_call>\n" + Self.call + "\n</tool_call>", options: options, functions: [Self.weather])
        #expect(run.calls.map(\.name) == ["get_weather"])
        // The marker was prefilled with the prompt.
        #expect(run.source.evaluations.first?.count == Self.prompt.count + "<tool_call>\n".utf8.count)
    }

    @Test func aCallCutShortStaysText() throws {
        var options = GenerationOptions(maxTokens: 24)
        options.closesWithinMaxTokens = false
        let run = try Self.reply(writing: "<tool_call>\n" + Self.call, options: options, functions: [Self.weather])
        #expect(run.reply.finishReason == .constraint)
        #expect(run.calls.isEmpty && run.streamedCalls.isEmpty)
        #expect(run.text == "<tool_call>\n" + String(Self.call.prefix(12)))
    }

    /// The marker and newline (12 tokens), the call's JSON (51 with "Paris", 46 at least) and
    /// the closing markup Typeset writes (13) in 72 tokens: the city is cut to one letter so
    /// that the closing fits too.
    @Test func aCallAndItsClosingFitWithinMaxTokens() throws {
        let run = try Self.reply(writing: "<tool_call>\n" + Self.call, options: GenerationOptions(maxTokens: 72), functions: [Self.weather])
        #expect(run.calls == [FunctionCall(id: "call_1", name: "get_weather", arguments: .object([("city", .string("P"))]))])
        #expect(run.reply.stats.completionTokens == 72)
        #expect(run.streamedCalls.count == 1)
        // In 71 the city is empty; in 70 no call fits: the reply is cut, the call kept as text.
        let empty = try Self.reply(writing: "<tool_call>\n" + Self.call, options: GenerationOptions(maxTokens: 71), functions: [Self.weather])
        #expect(empty.calls.map(\.arguments) == [.object([("city", .string(""))])])
        let short = try Self.reply(writing: "<tool_call>\n" + Self.call, options: GenerationOptions(maxTokens: 70), functions: [Self.weather])
        #expect(short.reply.finishReason == .constraint && short.calls.isEmpty)
        #expect(short.text == "<tool_call>\n")
    }

    // MARK: LFM's calls

    static let lfm: GenerationOptions = {
        var options = GenerationOptions()
        options.functionCallFormat = .lfm
        return options
    }()
    static let lfmCalls = #"[get_weather(city="Paris"), get_weather(city="Rome")]"#

    @Test func anLFMCallListBecomesTypedCalls() throws {
        let run = try Self.reply(
            writing: "<|tool_call_start|>" + Self.lfmCalls + "<|tool_call_end|>", options: Self.lfm, functions: [Self.weather])
        #expect(run.calls == [
            FunctionCall(id: "call_1", name: "get_weather", arguments: .object([("city", .string("Paris"))])),
            FunctionCall(id: "call_2", name: "get_weather", arguments: .object([("city", .string("Rome"))])),
        ])
        #expect(run.streamedCalls == [run.calls])
        #expect(run.text.isEmpty)
        #expect(run.reply.finishReason == .stop)
    }

    @Test func onlyTheEndFollowsAnLFMCallList() throws {
        // Every call is in the one list: after it, words and a second list are both cut off.
        for after in [" It is sunny.", "<|tool_call_start|>[get_weather(city=\"Oslo\")]<|tool_call_end|>"] {
            let run = try Self.reply(
                writing: "Checking. <|tool_call_start|>" + Self.lfmCalls + "<|tool_call_end|>" + after, options: Self.lfm, functions: [Self.weather])
            #expect(run.calls.count == 2)
            #expect(run.text == "Checking.")
            #expect(run.reply.finishReason == .stop)
        }
    }

    @Test func anLFMCallIsHeldToItsSchema() throws {
        // A JSON literal where Python's belongs: the grammar gives the model `True`'s path instead.
        let function = FunctionDefinition(
            name: "set_alarm", description: "",
            parameters: try JSONValue(parsing: #"{"type":"object","properties":{"at":{"type":"string"},"loud":{"type":"boolean"}},"required":["at","loud"]}"#))
        var options = Self.lfm
        options.functionCallMode = .required
        let run = try Self.reply(
            writing: #"<|tool_call_start|>[set_alarm(at="7", loud=true)]"#, options: options, functions: [function], allowsSeveralCalls: false)
        // Of the letters left, the lowest wins the scripted model's tie: `False`.
        #expect(run.calls.map(\.arguments) == [.object([("at", .string("7")), ("loud", .bool(false))])])
        // The marker was written for the model, with no newline after it.
        #expect(run.source.evaluations.first?.count == Self.prompt.count + "<|tool_call_start|>".utf8.count)
    }

    @Test func lfmMarkupAsControlTokens() throws {
        // A vocabulary where the markup is two control tokens, as in LFM's: the model writes
        // the opening token; Typeset writes the closing one.
        let start = 257, end = 258
        let body = Array(#"[get_weather(city="Paris")]"#.utf8).map(Int.init)
        let script = [start] + body + [end]
        let source = ScriptedSource { held in
            var logits = [Float](repeating: 0, count: 259)
            let written = Array(held.dropFirst(Self.prompt.count))
            logits[written.count < script.count && Array(script.prefix(written.count)) == written ? script[written.count] : ByteVocabulary.endOfGeneration] = 10
            return logits
        }
        let run = try Self.reply(writing: "", options: Self.lfm, functions: [Self.weather], tokenizer: ByteVocabulary.lfmTokenizer, source: source)
        #expect(run.calls == [FunctionCall(id: "call_1", name: "get_weather", arguments: .object([("city", .string("Paris"))]))])
        #expect(run.text.isEmpty)
        #expect(Array(source.held.dropFirst(Self.prompt.count)) == script)
        #expect(ModelRunner.functionCallFormat(of: ByteVocabulary.lfmTokenizer) == .lfm)
        #expect(ModelRunner.functionCallFormat(of: ByteVocabulary.tokenizer) == .hermes)
        // Gemma 4's call markers, whose format is not parsed: requests with functions are refused.
        #expect(ModelRunner.writesGemmaCalls(ByteVocabulary.gemmaCallTokenizer))
        #expect(!ModelRunner.writesGemmaCalls(ByteVocabulary.tokenizer) && !ModelRunner.writesGemmaCalls(ByteVocabulary.channelTokenizer))
    }

    @Test func theLastRoundMayNotOpenACall() throws {
        let run = try Self.reply(writing: Self.call, functions: [Self.weather], forbidsCallOpening: true)
        #expect(run.calls.isEmpty)
        #expect(!run.text.hasPrefix("{"))
        #expect(run.reply.finishReason == .stop)
    }
}
