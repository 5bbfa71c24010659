import Foundation
import Testing
@testable import TypesetLEAP
import TypesetTestSupport

@Generatable("A short fact about a city")
struct LEAPCityFact: Codable, Equatable {
    @Guide("The city's name")
    let city: String
    @Guide("One fact about it")
    let fact: String
}

/// The default model as LEAP's code loads it.
private func leapRunner(_ path: String = TestModels.smolLM2Path) async throws -> ModelRunner {
    try await Leap.load(url: URL(fileURLWithPath: path), options: LiquidInferenceEngineOptions(bundlePath: path, contextSize: 2048))
}

/// The text of a finished reply, as LEAP's pages read it: the text parts of its content.
private func text(of message: ChatMessage) -> String {
    message.content.compactMap { part -> String? in
        if case let .text(t) = onEnum(of: part) { return t.text }
        return nil
    }.joined()
}

/// LEAP's shapes over Typeset: options, messages and responses as LEAP's code writes them set
/// and read what Typeset's do, and LEAP's runners and conversations drive a real model.
@Suite(.serialized) struct LEAPTests {
    @Test func optionsAreLEAPsClassOverTypesetsOptions() {
        // The builders change the options and return them; LEAP's field types throughout.
        let options = GenerationOptions()
        let same = options.with(temperature: 0.3).with(topP: 0.9).with(minP: 0.15).with(repetitionPenalty: 1.05)
            .with(topK: 40).with(rngSeed: -1).with(maxTokens: 512).with(injectSchemaIntoPrompt: false)
            .with(inlineThinkingTags: true).with(enableThinking: true).with(jsonSchema: #"{"type":"string"}"#)
        #expect(same === options)
        let topK: Int32? = options.topK, maxTokens: Int32? = options.maxTokens, seed: Int64? = options.rngSeed
        #expect(topK == 40 && maxTokens == 512 && seed == -1 && options.jsonSchemaConstraint == #"{"type":"string"}"#)
        var expected = Typeset.GenerationOptions(
            temperature: 0.3, topP: 0.9, minP: 0.15, topK: 40, repetitionPenalty: 1.05, seed: UInt64.max, maxTokens: 512,
            jsonSchema: #"{"type":"string"}"#, injectSchemaIntoPrompt: false, enableThinking: true)
        expected.inlineThinkingTags = true
        #expect(options.typesetOptions == expected)
        // LEAP's defaults; the memberwise form of its older pages.
        let defaults = GenerationOptions()
        #expect(defaults.injectSchemaIntoPrompt && !defaults.inlineThinkingTags && !defaults.enableThinking && defaults.maxTokens == nil)
        #expect(GenerationOptions(temperature: 0.3, minP: 0.15, repetitionPenalty: 1.05).typesetOptions
            == Typeset.GenerationOptions(temperature: 0.3, minP: 0.15, repetitionPenalty: 1.05, injectSchemaIntoPrompt: true, enableThinking: false))
        #expect(GenerationOptions(maxTokens: -5).typesetOptions.maxTokens == 0)
        // A type's schema, three ways.
        let typed = GenerationOptions()
        typed.setResponseFormat(type: LEAPCityFact.self)
        #expect(typed.jsonSchemaConstraint == LEAPCityFact.generationSchema.jsonText)
        #expect(JSONSchemaGenerator.getJSONSchema(for: LEAPCityFact.self) == LEAPCityFact.jsonSchema())
        #expect(LEAPCityFact.typeDescription == "A short fact about a city")
        #expect(LEAPCityFact.generationSchema.jsonSchema["properties"]?["city"]?["description"] == .string("The city's name"))
    }

    @Test func parsersChooseTheCallFormat() {
        let options = GenerationOptions()
        #expect(options.functionCallParser is ModelFunctionCallParser)
        #expect(options.typesetOptions.functionCallFormat == nil && options.typesetOptions.functionCallMode == .automatic)
        options.functionCallParser = HermesFunctionCallParser()
        #expect(options.typesetOptions.functionCallFormat == .hermes)
        options.functionCallParser = LFMFunctionCallParser()
        #expect(options.typesetOptions.functionCallFormat == .lfm)
        // No parser: the functions are described, the calls stay text.
        options.functionCallParser = nil
        #expect(options.typesetOptions.functionCallMode == .unparsed)
    }

    @Test func messagesAreLEAPsClassOverTypesetsMessages() throws {
        let message = ChatMessage(role: .user, content: [.text("Hello, "), .text("world")], reasoningContent: "hm")
        #expect(try message.typesetMessage() == Typeset.ChatMessage(role: .user, content: "Hello, world", reasoning: "hm"))
        #expect(ChatMessage(role: .system, textContent: "Be brief.") == ChatMessage(role: .system, content: .text("Be brief.")))
        #expect(ChatMessage.Role.assistant.type == "assistant")
        // Typeset's calls as LEAP's: arguments as Swift values.
        let call = FunctionCall(id: "call_1", name: "lookUp", arguments: try JSONValue(parsing: #"{"city":"Oslo","days":3,"hot":false,"stops":["A",null]}"#))
        let reply = ChatMessage(Typeset.ChatMessage(role: .assistant, content: "", functionCalls: [call]))
        let leapCall = try #require(reply.functionCalls?.first)
        #expect(leapCall.name == "lookUp" && leapCall.arguments["city"] as? String == "Oslo" && leapCall.arguments["days"] as? Int == 3)
        #expect(leapCall.arguments["hot"] as? Bool == false && (leapCall.arguments["stops"] as? [Any?])?.count == 2)
        #expect(try reply.typesetMessage().functionCalls == [call])
        #expect(LeapFunctionCall(name: "lookUp", arguments: ["city": "Oslo", "days": 3, "hot": false, "stops": ["A", nil]]).call.arguments
            == call.arguments)
        // A part a text model cannot read is refused, naming it.
        let image = ChatMessage(role: .user, content: [.text("What is this?"), .fromJPEGData(Data([0xFF, 0xD8]))])
        #expect(throws: ChatMessage.ContentError.self) { try image.typesetMessage() }
        if case .image = onEnum(of: image.content[1]) {} else { Issue.record("not an image part") }
    }

    @Test func finishReasonsAndStatsAsLEAPCountsThem() {
        #expect(GenerationFinishReason(.exceededContext) == .exceedContext && GenerationFinishReason(.maxTokens) == .stop)
        let stats = GenerationStats(Typeset.GenerationStats(promptTokens: 12, cachedPromptTokens: 5, completionTokens: 3, decodeSeconds: 0.5))
        #expect(stats.promptTokens == 7 && stats.cachedPromptTokens == 5 && stats.totalTokens == 10 && stats.tokenPerSecond == 6)
    }

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
        #expect(validator.problems(in: #"{"city":"Oslo","stops":[{"name":"Bergen","hours":2.5}]}"#) == [])
        #expect(!validator.problems(in: #"{"city":"Oslo","days":2}"#).isEmpty)
    }

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

    // MARK: On a model

    /// LEAP's streaming loop and constrained reply on SmolLM2: chunks, then `.complete` with
    /// the text parts, the stats and the history; a value decoded with `JSONDecoder`; the
    /// history exported as LEAP exports it.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func aConstrainedReplyStreamsAndDecodes() async throws {
        let runner = try await leapRunner()
        let conversation = runner.createConversation(systemPrompt: "You state facts.")
        let options = GenerationOptions().with(temperature: 0).with(maxTokens: 80).with(jsonSchema: LEAPCityFact.jsonSchema())
        var streamed = "", final: MessageResponse.Complete?
        for await response in conversation.generateResponse(userTextMessage: "Tell me a fact about Oslo.", generationOptions: options) {
            switch onEnum(of: response) {
            case .chunk(let c): streamed += c.text
            case .complete(let completion): final = completion
            case .reasoningChunk, .functionCalls, .audioSample: Issue.record("unexpected \(response)")
            }
        }
        let completion = try #require(final)
        #expect(completion.finishReason == .stop && completion.error == nil)
        #expect(text(of: completion.fullMessage) == streamed)
        let fact = try JSONDecoder().decode(LEAPCityFact.self, from: Data(streamed.utf8))
        #expect(try LEAPCityFact(GeneratedContent(json: streamed)) == fact)
        #expect((completion.stats?.completionTokens ?? 0) > 5)
        #expect(conversation.history.map(\.role) == [.system, .user, .assistant] && !conversation.isGenerating)
        #expect(await runner.getPromptTokensSize(messages: conversation.history, addBosToken: true) > 10)
        guard case .array(let exported) = try JSONValue(parsing: conversation.exportToJSON()) else {
            Issue.record("the export is not an array")
            return
        }
        #expect(exported.map { $0["role"] } == [.string("system"), .string("user"), .string("assistant")])
        #expect(exported.last?["content"] == .string(streamed))
        // A conversation from that history continues it.
        let resumed = runner.createConversationFromHistory(history: conversation.history)
        #expect(resumed.history == conversation.history)
        resumed.removeLastMessage()
        #expect(resumed.history.count == 2)
    }

    /// Without a parser, the functions are in the prompt and the reply is text.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func withoutAParserCallsStayText() async throws {
        let runner = try await leapRunner()
        let options = GenerationOptions().with(temperature: 0).with(maxTokens: 24)
        options.functionCallParser = nil
        var promptTokens: [Int64] = []
        for registers in [false, true] {
            let conversation = runner.createConversation(systemPrompt: "You help with the weather.")
            if registers { conversation.registerFunction(function: Self.weather) }
            #expect(conversation.functions.count == (registers ? 1 : 0))
            for await response in conversation.generateResponse(userTextMessage: "What's the weather in Oslo?", generationOptions: options) {
                switch onEnum(of: response) {
                case .functionCalls: Issue.record("calls were parsed")
                case .complete(let completion):
                    promptTokens.append(completion.stats?.promptTokens ?? 0)
                    #expect(completion.fullMessage.functionCalls == nil)
                default: break
                }
            }
        }
        #expect(promptTokens[1] > promptTokens[0] + 20)
    }

    /// Qwen calls the function in its own (Hermes) format, which the default parser reads; the
    /// call is LEAP's, its arguments valid; a tool message answers it.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.qwen05FileName)))
    func aCallThroughLEAPsShapes() async throws {
        let runner = try await leapRunner(TestModels.qwen05Path)
        let conversation = runner.createConversation(systemPrompt: "You help with the weather. Use the tools.")
        conversation.registerFunctions(functions: [Self.weather])
        let options = GenerationOptions().with(temperature: 0).with(maxTokens: 80)
        var calls: [LeapFunctionCall] = []
        var finish: GenerationFinishReason?
        for await response in conversation.generateResponse(userTextMessage: "What's the weather in Oslo?", generationOptions: options) {
            switch onEnum(of: response) {
            case .functionCalls(let payload): calls += payload.functionCalls
            case .complete(let completion): finish = completion.finishReason
            default: break
            }
        }
        #expect(finish == .stop)
        let call = try #require(calls.first)
        #expect(call.name == "get_weather" && call.arguments["city"] as? String == "Oslo")
        #expect(try JSONSchemaValidator(schemaText: Self.weather.parameters.compactText).problems(in: call.call.arguments.compactText) == [])
        #expect(conversation.history.last?.functionCalls == calls)
        // The tool's answer, as LEAP's pages send it.
        let answer = ChatMessage(role: .tool, content: [.text(#"{"temperature": -3, "conditions": "snow"}"#)])
        for await response in conversation.generateResponse(message: answer) {
            if case .complete(let completion) = onEnum(of: response) { finish = completion.finishReason }
        }
        #expect(finish == .stop)
        #expect(conversation.history.map(\.role) == [.system, .user, .assistant, .tool, .assistant])
    }

    /// What Typeset cannot honour ends the reply with `.error` and says why, never ignored:
    /// LEAP's engine payload, an image, a function whose schema does not compile.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func whatCannotBeHonouredEndsTheReplyWithItsReason() async throws {
        let runner = try await leapRunner()
        func failure(_ conversation: Conversation, _ message: ChatMessage, _ options: GenerationOptions? = nil) async -> String? {
            var error: String?
            for await response in conversation.generateResponse(message: message, generationOptions: options) {
                if case .complete(let completion) = onEnum(of: response) {
                    #expect(completion.finishReason == .error)
                    error = completion.error.map { "\($0)" }
                }
            }
            return error
        }
        let conversation = runner.createConversation(systemPrompt: nil)
        let hello = ChatMessage(role: .user, textContent: "Hi")
        let extras = GenerationOptions(maxTokens: 4, extras: #"{"n_batch": 8}"#)
        #expect(await failure(conversation, hello, extras)?.contains("extras") == true)
        let image = ChatMessage(role: .user, content: [.fromJPEGData(Data([0xFF, 0xD8]))])
        #expect(await failure(conversation, image)?.contains("image content") == true)
        conversation.registerFunction(function: LeapFunction(name: "", description: "nameless", parameters: []))
        #expect(await failure(conversation, hello)?.contains("name is empty") == true)
        #expect(conversation.history.isEmpty)
        // The reply after a refusal runs.
        var finish: GenerationFinishReason?
        for await response in conversation.generateResponse(message: hello, generationOptions: GenerationOptions(maxTokens: 4)) {
            if case .complete(let completion) = onEnum(of: response) { finish = completion.finishReason }
        }
        #expect(finish == .stop)
        // Options Typeset cannot honour when loading: a vision projector, LEAP's engine payload.
        let path = TestModels.smolLM2Path
        await #expect(throws: LeapError.self) {
            _ = try await Leap.load(url: URL(fileURLWithPath: path), options: LiquidInferenceEngineOptions(bundlePath: path, mmProjPath: "/mmproj.gguf"))
        }
        await #expect(throws: LeapError.self) {
            _ = try await Leap.load(url: URL(fileURLWithPath: path), options: LiquidInferenceEngineOptions(bundlePath: path, extras: "{}"))
        }
    }
}
