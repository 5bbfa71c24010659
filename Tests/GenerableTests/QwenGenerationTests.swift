import Foundation
import Testing
import Typeset
import TypesetTestSupport

private let qwenRunner: ModelRunner? = try? ModelRunner(
    url: URL(fileURLWithPath: TestModels.qwen05Path), options: ModelRunner.Options(contextLength: 2048))

private func runner() throws -> ModelRunner {
    try #require(qwenRunner, "Qwen2.5-Coder-0.5B-Instruct did not load from \(TestModels.qwen05Path)")
}

/// Typed generation and tool calls with Qwen2.5-Coder-0.5B-Instruct, a `qwen2` model whose
/// chat template describes tools itself (Hermes `<tool_call>` markup, the calls rendered back
/// as `tool_calls`): every seed type validates, and a call the model writes in its own format
/// comes back as typed arguments, runs, and its output reaches the model.
@Suite(.serialized, .enabled(if: TestModels.shouldRun(TestModels.qwen05FileName)))
struct QwenGenerationTests {
    static let options = GenerationOptions(maxTokens: 400)

    /// `type` for `prompt`, greedily: the value decodes and its JSON validates under the
    /// independent validator. Returns the JSON.
    @discardableResult
    func generate<Content: Generable>(_ type: Content.Type, _ prompt: String, system: String? = nil) async throws -> String {
        let conversation = try runner().createConversation(systemPrompt: system)
        let response = try await conversation.respond(to: prompt, generating: type, options: Self.options)
        #expect(response.finishReason == .stop)
        let json = response.rawContent.jsonString
        #expect(JSONSchemaValidatorCheck.problems(Content.generationSchema.jsonSchema, json) == [], "\(Content.self): \(json)")
        return json
    }

    @Test func everySeedTypeValidates() async throws {
        try await generate(CatProfile.self, "Generate a cute rescue cat")
        try await generate(BrewSummary.self, "Summarize these tasting notes: bright acidity, blueberry and lemon, a bit thin, slightly sour finish.",
                           system: "You read freeform coffee tasting notes and extract a structured summary.")
        try await generate(RecipeDetails.self, "Butter chicken biryani")
        try await generate(StoryOutline.self, "Create a story outline about a time-traveling detective", system: "You are a creative writing assistant.")
        try await generate(Event.self, "Schedule a team meeting on 2025-08-27 at 2 PM", system: "You are an event assistant.")
        try await generate(ProductReview.self, "Analyze this iPhone 16 Pro: amazing camera, excellent build, great performance; battery could be better and it is expensive.",
                           system: "You are a helpful product review analyzer.")
        let entry = "Today is my last day in Chiang Mai. There is a storm outside so I am stuck in a cafe working on my book."
        try await generate(JournalAnalysis.self, entry, system: "You are a thoughtful journaling assistant.")
        try await generate(DetailedJournalInsight.self, entry, system: "You are an expert journal analyst.")
        try await generate(RecipeRecommendation.self, "Suggest a quick weeknight dinner.")
        try await generate(BookRecommendation.self, "Recommend a book about Swift programming.")
        try await generate(RecipeMetadata.self, "Describe the metadata of a simple pancake recipe.")
    }

    /// The model decides to call (automatic mode, nothing forces the markup): Qwen's template
    /// lists the tool, the model writes its call (Qwen2.5-Coder-0.5B as a bare JSON object, the
    /// 1.5B model in a code fence, others with `<tool_call>`), the arguments decode as the tool's
    /// `Arguments`, the tool runs, and its output is what the model sees next, rendered by its
    /// own template. (The 0.5B model then calls again with the same arguments, which ends the
    /// tool rounds; the larger model's answer is checked below.)
    @Test func aToolCallRoundTripsWithTypedArguments() async throws {
        let tool = BrewHistoryTool(ratings: ["v60": [5, 4, 3]])
        let conversation = try runner().createConversation(
            systemPrompt: "You answer questions about the user's coffee. Use the tools to look up the user's data.", tools: [tool])
        let response = try await conversation.respond(to: "What is my average rating for the V60?", options: Self.options)
        let methods = tool.calls.methods.withLock { $0 }
        #expect(methods.first?.lowercased() == "v60", "\(response.messages.map(\.content))")
        let roles = response.messages.map(\.role)
        #expect(Array(roles.prefix(3)) == [.user, .assistant, .tool] && roles.last == .assistant, "\(roles)")
        let call = try #require(response.messages[1].functionCalls.first)
        #expect(call.name == "lookUpAverageRating" && response.messages[1].content.isEmpty)
        #expect(JSONSchemaValidatorCheck.problems(BrewHistoryTool.Arguments.generationSchema.jsonSchema, call.argumentsText) == [])
        #expect(response.messages[2].toolCallID == call.id && response.messages[2].content.contains("4.0 out of 5"))
        #expect(response.finishReason == .stop)
    }

    /// With Qwen2.5-Coder-1.5B (`TYPESET_LARGE_MODELS=1`): the call, then an answer in words
    /// that carries the tool's result.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["TYPESET_LARGE_MODELS"] == "1"))
    func theLargerModelAnswersWithTheToolsResult() async throws {
        let runner = try ModelRunner(url: URL(fileURLWithPath: TestModels.path(of: TestModels.qwen15FileName)),
                                     options: ModelRunner.Options(contextLength: 2048))
        let tool = BrewHistoryTool(ratings: ["v60": [5, 4, 3]])
        let conversation = try runner.createConversation(
            systemPrompt: "You answer questions about the user's coffee. Use the tools to look up the user's data.", tools: [tool])
        let response = try await conversation.respond(to: "What is my average rating for the V60?", options: Self.options)
        #expect(tool.calls.methods.withLock { $0 }.first?.lowercased() == "v60")
        #expect(response.content.contains("4.0") || response.content.contains("4 out of"), "\(response.content)")
        #expect(!response.content.contains("{"))
    }
}
