import Foundation
import Testing
import TypesetLEAP
import TypesetTestSupport

@Generatable("A short fact about a city")
struct LEAPCityFact: Codable, Equatable {
    @Guide("The city's name")
    let city: String
    @Guide("One fact about it")
    let fact: String
}

private let leapRunner: ModelRunner? = try? ModelRunner(
    url: URL(fileURLWithPath: TestModels.smolLM2Path), options: ModelRunner.Options(contextLength: 2048))

/// LEAP's spellings set the fields Typeset's spellings set, and LEAP's way of reading a
/// streamed reply (`onEnum(of:)`, content parts, `JSONDecoder`) reads what Typeset produced.
@Suite struct LEAPNamesTests {
    @Test func buildersSetTheSameFields() {
        let options = GenerationOptions()
            .with(temperature: 0.3).with(topP: 0.9).with(minP: 0.15).with(repetitionPenalty: 1.05).with(topK: 40)
            .with(rngSeed: -1).with(maxTokens: 512).with(injectSchemaIntoPrompt: false).with(inlineThinkingTags: true)
            .with(enableThinking: true).with(jsonSchema: #"{"type":"string"}"#)
        var expected = GenerationOptions(temperature: 0.3, topP: 0.9, minP: 0.15, topK: 40, repetitionPenalty: 1.05, seed: UInt64.max,
                                         maxTokens: 512, jsonSchema: #"{"type":"string"}"#, injectSchemaIntoPrompt: false, enableThinking: true)
        expected.inlineThinkingTags = true
        #expect(options == expected)
        #expect(options.rngSeed == -1 && options.jsonSchemaConstraint == #"{"type":"string"}"#)
        let leapTopK: Int32 = 40, leapMaxTokens: Int32 = 512
        #expect(GenerationOptions().with(topK: leapTopK).with(maxTokens: leapMaxTokens) == GenerationOptions(topK: 40, maxTokens: 512))
        var typed = GenerationOptions()
        typed.setResponseFormat(type: LEAPCityFact.self)
        #expect(typed.jsonSchema == LEAPCityFact.generationSchema.jsonText)
        #expect(JSONSchemaGenerator.getJSONSchema(for: LEAPCityFact.self) == LEAPCityFact.jsonSchema())
        #expect(LEAPCityFact.generationSchema.jsonSchema["description"] == .string("A short fact about a city"))
        #expect(LEAPCityFact.generationSchema.jsonSchema["properties"]?["city"]?["description"] == .string("The city's name"))
    }

    @Test func messagesAndResponsesReadAsLEAPReadsThem() {
        let message = ChatMessage(role: .user, content: [.text("Hello, "), .text("world")], reasoningContent: "hm")
        #expect(message == ChatMessage(role: .user, content: "Hello, world", reasoning: "hm"))
        #expect(ChatMessage(role: .system, textContent: "Be brief.") == .system("Be brief."))

        let call = FunctionCall(id: "call_1", name: "lookUp", arguments: .object([("city", .string("Oslo"))]))
        let reply = ChatMessage(role: .assistant, content: "Done.", reasoning: "thought", functionCalls: [call])
        let stats = GenerationStats(promptTokens: 12, completionTokens: 3, decodeSeconds: 0.5)
        var seen: [String] = []
        let responses: [MessageResponse] = [
            .chunk("Do"), .reasoningChunk("thought"), .functionCalls([call]), .complete(message: reply, finishReason: .exceededContext, stats: stats),
        ]
        for response in responses {
            switch onEnum(of: response) {
            case .chunk(let c): seen.append("chunk \(c.text)")
            case .reasoningChunk(let r): seen.append("reasoning \(r.reasoning)")
            case .functionCalls(let payload): seen.append("calls \(payload.functionCalls.map(\.name))")
            case .audioSample: seen.append("audio")
            case .complete(let completion):
                let text = completion.fullMessage.content.compactMap { part -> String? in
                    if case let .text(t) = onEnum(of: part) { return t.text }
                    return nil
                }.joined()
                seen.append("complete \(text) \(completion.fullMessage.reasoningContent ?? "") \(completion.finishReason == .exceedContext)")
                #expect(completion.stats?.totalTokens == 15 && completion.stats?.tokenPerSecond == 6)
                #expect(completion.fullMessage.message == reply && completion.fullMessage.functionCalls == [call])
            }
        }
        #expect(seen == ["chunk Do", "reasoning thought", #"calls ["lookUp"]"#, "complete Done. thought true"])
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func aConstrainedReplyDecodesWithJSONDecoder() async throws {
        let runner = try #require(leapRunner)
        let conversation = runner.createConversation(systemPrompt: "You state facts.")
        let options = GenerationOptions().with(temperature: 0).with(maxTokens: 80).with(jsonSchema: LEAPCityFact.jsonSchema())
        var text = ""
        for try await response in conversation.generateResponse(to: "Tell me a fact about Oslo.", options: options) {
            if case .complete(let completion) = onEnum(of: response) {
                text = completion.fullMessage.content.compactMap { part -> String? in
                    if case let .text(t) = onEnum(of: part) { return t.text }
                    return nil
                }.joined()
            }
        }
        let fact = try JSONDecoder().decode(LEAPCityFact.self, from: Data(text.utf8))
        #expect(try LEAPCityFact(GeneratedContent(json: text)) == fact)
        #expect(try runner.promptTokenCount(for: conversation.history) > 10)
        // LEAP exports the history as a JSON array of chat messages.
        guard case .array(let exported) = try JSONValue(parsing: exportedHistory(conversation)) else {
            Issue.record("the export is not an array")
            return
        }
        #expect(exported.map { $0["role"] } == [.string("system"), .string("user"), .string("assistant")])
        #expect(exported.last?["content"] == .string(text))
    }
}

extension LEAPNamesTests {
    static let weather = LeapFunction(
        name: "get_weather", description: "Query the weather of a city",
        parameters: [
            LeapFunctionParameter(name: "city", type: .string(StringType()), description: "The city to query weather for"),
            LeapFunctionParameter(
                name: "temperature_unit", type: .string(StringType(enumValues: ["Fahrenheit", "Celsius", "Kelvin"])),
                description: "Temperature unit", optional: true),
            LeapFunctionParameter(name: "days", type: .integer(IntegerType(enumValues: [1, 3, 7])), description: "", optional: true),
            LeapFunctionParameter(
                name: "stops", type: .array(ArrayType(itemType: .object(ObjectType(
                    properties: ["name": .string(StringType()), "hours": .number(NumberType())], required: ["name"])))),
                description: "Places on the way", optional: true),
        ])

    @Test func leapFunctionsAreFunctionDefinitions() throws {
        let schema = Self.weather.parameters
        #expect(schema["required"] == .array([.string("city")]))
        #expect(schema["additionalProperties"] == .bool(false))
        #expect(schema["properties"]?["temperature_unit"] == .object([
            ("description", .string("Temperature unit")), ("type", .string("string")),
            ("enum", .array([.string("Fahrenheit"), .string("Celsius"), .string("Kelvin")])),
        ]))
        #expect(schema["properties"]?["days"] == .object([("type", .string("integer")), ("enum", .array([.number("1"), .number("3"), .number("7")]))]))
        // Object properties come in the order of their names; the schema validates as JSON Schema.
        let stops = try #require(schema["properties"]?["stops"]?["items"]?["properties"])
        guard case .object(let members) = stops else { throw CancellationError() }
        #expect(members.map(\.0) == ["hours", "name"])
        let validator = try JSONSchemaValidator(schemaText: schema.compactText)
        #expect(try validator.problems(in: #"{"city":"Oslo","stops":[{"name":"Bergen","hours":2.5}]}"#) == [])
        #expect(try !validator.problems(in: #"{"city":"Oslo","days":2}"#).isEmpty)
    }

    @Test func parsersChooseTheCallFormat() throws {
        var options = GenerationOptions()
        #expect(options.functionCallParser?.format == nil)
        options.functionCallParser = HermesFunctionCallParser()
        #expect(options.functionCallFormat == .hermes && options.functionCallParser is HermesFunctionCallParser)
        options.functionCallParser = LFMFunctionCallParser()
        #expect(options.functionCallFormat == .lfm && options.functionCallParser is LFMFunctionCallParser)
        // No parser: the functions are described, the calls stay text.
        options.functionCallParser = nil
        #expect(options.functionCallMode == .unparsed && options.functionCallParser == nil)
        options.functionCallParser = LFMFunctionCallParser()
        #expect(options.functionCallMode == .automatic)
    }

    @Test func legacySpellingsAndExtras() throws {
        var options = legacyOptions()
        options.setLegacyResponseFormat(jsonSchema: #"{"type":"integer"}"#)
        #expect(options.jsonSchema == #"{"type":"integer"}"#)
        #expect(options.extras == nil)
    }

    /// LEAP's function calling on a model: the LFM format, required, through LEAP's spellings.
    /// SmolLM2 was not trained on the format; the grammar writes it for the model, so its
    /// call always parses, and its arguments always validate.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func anLFMCallThroughLEAPsSpellings() async throws {
        let runner = try #require(leapRunner)
        let conversation = runner.createConversation(systemPrompt: "You help with the weather.")
        try register(Self.weather, in: conversation)
        var options = GenerationOptions().with(temperature: 0).with(maxTokens: 60)
        options.functionCallParser = LFMFunctionCallParser()
        options.functionCallMode = .required
        var calls: [LeapFunctionCall] = []
        var completion: MessageResponse.Complete?
        for try await response in conversation.generateResponse(to: "What's the weather in Oslo?", options: options) {
            switch onEnum(of: response) {
            case .functionCalls(let payload): calls += payload.functionCalls
            case .complete(let complete): completion = complete
            default: break
            }
        }
        #expect(completion?.finishReason == .stop)
        let call = try #require(calls.first)
        #expect(call.name == "get_weather")
        #expect(try JSONSchemaValidator(schemaText: Self.weather.parameters.compactText).problems(in: call.argumentsText) == [])
        #expect(conversation.history.last?.functionCalls == calls)
        // Answer the call; the model goes on with the result in its prompt.
        var answer = GenerationOptions().with(temperature: 0).with(maxTokens: 24)
        answer.functionCallParser = LFMFunctionCallParser()
        var finish: FinishReason?
        for try await response in conversation.generateResponse(to: .tool(#"{"temperature": -3}"#, answering: call), options: answer) {
            if case .complete(let complete) = onEnum(of: response) { finish = complete.finishReason }
        }
        #expect(finish == .stop || finish == .maxTokens)
        #expect(conversation.history.map(\.role) == [.system, .user, .assistant, .tool, .assistant])

        // Extras are LEAP's engine's: refused, not ignored.
        var withExtras = GenerationOptions().with(maxTokens: 4)
        withExtras.extras = #"{"n_batch": 8}"#
        await #expect(throws: ConversationError.unsupportedOption(
            name: "extras", reason: "it carries a payload for LEAP's own inference engine, which Typeset does not run")) {
            for try await _ in runner.createConversation().generateResponse(to: "Hi", options: withExtras) {}
        }
    }

    /// Without a parser, the functions are in the prompt and the reply is text.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func withoutAParserCallsStayText() async throws {
        let runner = try #require(leapRunner)
        var options = GenerationOptions().with(temperature: 0).with(maxTokens: 24)
        options.functionCallParser = nil
        var promptTokens: [Int] = []
        for registers in [false, true] {
            let conversation = runner.createConversation(systemPrompt: "You help with the weather.")
            if registers { try register(Self.weather, in: conversation) }
            var sawCalls = false
            for try await response in conversation.generateResponse(to: "What's the weather in Oslo?", options: options) {
                switch response {
                case .functionCalls: sawCalls = true
                case .complete(let message, _, let stats):
                    promptTokens.append(stats.promptTokens)
                    #expect(message.functionCalls.isEmpty)
                default: break
                }
            }
            #expect(!sawCalls)
        }
        #expect(promptTokens[1] > promptTokens[0] + 20)
    }
}

@available(*, deprecated, message: "exercises LEAP's deprecated spelling")
private func register(_ function: LeapFunction, in conversation: Conversation) throws {
    try conversation.registerFunction(function: function)
}

@available(*, deprecated, message: "exercises LEAP's deprecated spelling")
private func legacyOptions() -> GenerationOptionsCompat { GenerationOptionsCompat() }

extension GenerationOptions {
    @available(*, deprecated, message: "exercises LEAP's deprecated spelling")
    fileprivate mutating func setLegacyResponseFormat(jsonSchema: String) { setResponseFormat(jsonSchema: jsonSchema) }
}

@available(*, deprecated, message: "exercises LEAP's deprecated spelling")
private func exportedHistory(_ conversation: Conversation) -> String { conversation.exportToJSON() }
