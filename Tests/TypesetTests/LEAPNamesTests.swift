import Foundation
import Testing
import Typeset
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

@available(*, deprecated, message: "exercises LEAP's deprecated spelling")
private func exportedHistory(_ conversation: Conversation) -> String { conversation.exportToJSON() }
