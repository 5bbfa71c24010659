import Foundation
import Synchronization
import Testing
import Typeset
import TypesetTestSupport

private let sharedRunner: ModelRunner? = try? ModelRunner(
    url: URL(fileURLWithPath: TestModels.smolLM2Path), options: ModelRunner.Options(contextLength: 2048))

private func runner() throws -> ModelRunner {
    try #require(sharedRunner, "SmolLM2 did not load from \(TestModels.smolLM2Path)")
}

/// The blog's tool: the user's average rating per brewing method, from the app's own data.
struct BrewHistoryTool: Tool {
    let name = "lookUpAverageRating"
    let description = "Returns the user's historical average rating (1–5) for a brewing method."
    let ratings: [String: [Int]]
    let calls = Calls()

    final class Calls: Sendable {
        let methods = Mutex<[String]>([])
    }

    @Generable
    struct Arguments {
        @Guide(description: "The brewing method, e.g. 'espresso' or 'V60'.")
        let method: String
    }

    func call(arguments: Arguments) async throws -> String {
        calls.methods.withLock { $0.append(arguments.method) }
        let list = ratings[arguments.method.lowercased()] ?? []
        let average = list.isEmpty ? 0 : Double(list.reduce(0, +)) / Double(list.count)
        return "The user's average \(arguments.method) rating is \(average) out of 5."
    }
}

struct FailingTool: Tool {
    let description = "Always fails."
    struct Broken: Error {}
    @Generable struct Arguments { var reason: String }
    func call(arguments: Arguments) async throws -> String { throw Broken() }
}

/// Whether each snapshot's JSON extends the one before: strings grow at the end, arrays and
/// structures gain elements and properties (their last one extending), nothing complete changes.
func extends(_ later: GeneratedContent, _ earlier: GeneratedContent) -> Bool {
    if earlier.isComplete { return later == earlier }
    switch (earlier.kind, later.kind) {
    case (.string(let a), .string(let b)): return b.hasPrefix(a)
    case (.array(let a), .array(let b)):
        guard b.count >= a.count else { return false }
        return zip(a, b).allSatisfy { extends($1, $0) }
    case (.structure(let a, let aKeys), .structure(let b, let bKeys)):
        guard bKeys.count >= aKeys.count, Array(bKeys.prefix(aKeys.count)) == aKeys else { return false }
        return aKeys.allSatisfy { key in extends(b[key]!, a[key]!) }
    default: return false
    }
}

@Suite(.serialized, .enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
struct TypedGenerationTests {
    static let options = GenerationOptions(maxTokens: 400)

    /// Generates `type` for `prompt` greedily; the value decodes (that is the point) and its
    /// JSON validates under the independent validator.
    func generate<Content: Generable>(_ type: Content.Type, _ prompt: String, system: String? = nil) async throws -> Response<Content> {
        let conversation = try runner().createConversation(systemPrompt: system)
        let response = try await conversation.respond(to: prompt, generating: type, options: Self.options)
        #expect(response.finishReason == .stop)
        #expect(JSONSchemaValidatorCheck.problems(Content.generationSchema.jsonSchema, response.rawContent.jsonString) == [],
                "\(response.rawContent.jsonString)")
        #expect(conversation.history.last?.content == response.rawContent.jsonString)
        #expect(response.messages.count == 2)
        // The request carries the schema (without the type's name, which small models copy).
        #expect(response.messages[0].content.contains(#""additionalProperties":false"#))
        #expect(!response.messages[0].content.contains(#""title":"\#(Content.self)""#))
        return response
    }

    @Test func catProfile() async throws {
        let cat = try await generate(CatProfile.self, "Generate a cute rescue cat").content
        #expect((0...20).contains(cat.age))
        #expect(!cat.name.isEmpty)
    }

    @Test func brewSummary() async throws {
        let response = try await generate(
            BrewSummary.self, "Summarize these tasting notes: bright acidity, blueberry and lemon, a bit thin, slightly sour finish.",
            system: "You read freeform coffee tasting notes and extract a structured summary.")
        #expect((1...5).contains(response.content.rating))
        #expect(try BrewSummary(GeneratedContent(json: response.rawContent.jsonString)) == response.content)
    }

    @Test func recipeDetails() async throws {
        let recipe = try await generate(RecipeDetails.self, "Butter chicken biryani").content
        #expect((5...240).contains(recipe.cookingTime))
    }

    @Test func storyOutline() async throws {
        let outline = try await generate(StoryOutline.self, "Create a story outline about a time-traveling detective",
                                         system: "You are a creative writing assistant.").content
        #expect(outline.plotPoints.count >= 3)
    }

    @Test func eventWithOptionals() async throws {
        let event = try await generate(Event.self, "Schedule a team meeting on 2025-08-27 at 2 PM", system: "You are an event assistant.").content
        #expect(event.date.wholeMatch(of: /[0-9]{4}-[0-9]{2}-[0-9]{2}/) != nil)
    }

    @Test func productReview() async throws {
        let review = try await generate(
            ProductReview.self,
            "Analyze this iPhone 16 Pro: Amazing camera system with 5x optical zoom, excellent build quality, and great performance. Battery life could be better for heavy users and it is quite expensive.",
            system: "You are a helpful product review analyzer.").content
        #expect(review.keyFeatures.count == 3 && (2...5).contains(review.pros.count) && (1...5).contains(review.rating))
    }

    @Test func journalAnalysis() async throws {
        let entry = "Today is my last day in Chiang Mai. There is a storm outside so I am stuck in a cafe working on my book. I hope the storm weakens because I have a flight to Bangkok tonight."
        _ = try await generate(JournalAnalysis.self, entry, system: "You are a thoughtful journaling assistant.")
        let insight = try await generate(DetailedJournalInsight.self, entry, system: "You are an expert journal analyst.").content
        #expect((1...10).contains(insight.emotional.intensity))
    }

    @Test func recipeRecommendation() async throws {
        let recipe = try await generate(RecipeRecommendation.self, "Suggest a quick weeknight dinner.").content
        #expect(!recipe.name.isEmpty && !recipe.instructions.isEmpty)
    }

    @Test func bookRecommendation() async throws {
        let book = try await generate(BookRecommendation.self, "Recommend a book about Swift programming.").content
        #expect(!book.title.isEmpty && !book.author.isEmpty)
    }

    /// The chapter's regex guides hold in the value (checked here by Swift's own regex engine).
    @Test func recipeMetadataFollowsItsPatterns() async throws {
        let metadata = try await generate(RecipeMetadata.self, "Describe the metadata of a simple pancake recipe.").content
        #expect(metadata.difficulty.wholeMatch(of: /Easy|Medium|Hard/) != nil, "\(metadata.difficulty)")
        #expect(metadata.prepTime.wholeMatch(of: /[0-9]{2}:[0-9]{2}/) != nil, "\(metadata.prepTime)")
    }

    @Test func dynamicSchemaResponse() async throws {
        let menu = DynamicGenerationSchema(name: "Menu", properties: [
            .init(name: "dailySoup", schema: DynamicGenerationSchema(name: "Soup", anyOf: ["Tomato", "Chicken Noodle", "Clam Chowder"])),
            .init(name: "sides", schema: DynamicGenerationSchema(arrayOf: .init(type: String.self), minimumElements: 1, maximumElements: 2)),
        ])
        let schema = try GenerationSchema(root: menu, dependencies: [])
        let conversation = try runner().createConversation()
        let response = try await conversation.respond(to: "Plan today's soup menu.", schema: schema, options: Self.options)
        let soup = try response.content.value(String.self, forProperty: "dailySoup")
        #expect(["Tomato", "Chicken Noodle", "Clam Chowder"].contains(soup))
        #expect((1...2).contains(try response.content.value([String].self, forProperty: "sides").count))
    }

    // MARK: Streaming

    @Test func partialSnapshotsGrowMonotonicallyToTheValue() async throws {
        let conversation = try runner().createConversation(systemPrompt: "You are a creative writing assistant.")
        let stream = conversation.streamResponse(to: "Create a story outline for a mystery novel", generating: StoryOutline.self, options: Self.options)
        var snapshots: [ResponseStream<StoryOutline>.Snapshot] = []
        for try await snapshot in stream { snapshots.append(snapshot) }
        let response = try await stream.collect()
        #expect(snapshots.count > 10)
        for (earlier, later) in zip(snapshots, snapshots.dropFirst()) {
            #expect(extends(later.rawContent, earlier.rawContent), "\(earlier.rawContent.jsonString) → \(later.rawContent.jsonString)")
        }
        let last = try #require(snapshots.last)
        #expect(last.rawContent == response.rawContent && last.rawContent.isComplete)
        #expect(last.content.title == response.content.title)
        #expect(last.content.plotPoints?.count == response.content.plotPoints.count)
        #expect(last.content.protagonist?.name == response.content.protagonist.name)
        // Properties fill in order: the title is known before the plot points begin.
        let firstWithPlot = try #require(snapshots.firstIndex { $0.content.plotPoints != nil })
        #expect(snapshots[firstWithPlot].content.title == response.content.title)
        #expect(snapshots.contains { $0.content.title != nil && $0.content.title != response.content.title })
    }

    // MARK: Tools

    @Test func theBlogsBrewHistoryToolRunsAndTheAnswerIsTyped() async throws {
        let tool = BrewHistoryTool(ratings: ["espresso": [4, 2]])
        let conversation = try runner().createConversation(
            systemPrompt: "Summarize the brew, and compare it to the user's usual when relevant.", tools: [tool])
        var options = Self.options
        options.functionCallMode = .required
        let response = try await conversation.respond(
            to: "Espresso this morning: sharp, sour, thin body. Summarize the brew.", generating: BrewSummary.self, options: options)
        #expect(tool.calls.methods.withLock { $0.count } >= 1)
        // request, call, tool output, …, answer
        #expect(response.messages.count >= 4)
        #expect(response.messages[1].functionCalls.first?.name == "lookUpAverageRating")
        #expect(response.messages[2].role == .tool && response.messages[2].content.contains("out of 5"))
        #expect((1...5).contains(response.content.rating))
        #expect(conversation.history.last?.content == response.rawContent.jsonString)
    }

    /// The blog's unit test of the tool: no model, just Swift (the macro's memberwise
    /// `Arguments` initializer, the tool's own output).
    @Test func theBlogsToolIsTestableWithoutAModel() async throws {
        let tool = BrewHistoryTool(ratings: ["espresso": [4, 2]])
        let output = try await tool.call(arguments: .init(method: "espresso"))
        #expect(output.contains("3"))  // (4 + 2) / 2
    }

    /// The blog's session as written (instructions, tools, default options, so the model
    /// decides): SmolLM2 calls the tool on its own, each call's output is fed back before the
    /// model goes on, and the session ends with a BrewSummary. (What a 135M model writes as
    /// the method is its own affair, "tool calling is a capability, not a command", as the
    /// blog says.)
    @Test func theBlogsSessionCallsTheToolOnItsOwn() async throws {
        let tool = BrewHistoryTool(ratings: ["espresso": [4, 2]])
        let conversation = try runner().createConversation(
            systemPrompt: "Summarize the brew, and compare it to the user's usual when relevant.", tools: [tool])
        let response = try await conversation.respond(
            to: "Espresso this morning: sharp, sour, thin body. Summarize the brew.", generating: BrewSummary.self, options: Self.options)
        let methods = tool.calls.methods.withLock { $0 }
        #expect(!methods.isEmpty)
        // request, then (call, output) pairs, then the answer.
        let messages = response.messages
        #expect(messages.count == 2 + 2 * methods.count)
        for (index, method) in methods.enumerated() {
            #expect(messages[1 + 2 * index].functionCalls.first?.name == "lookUpAverageRating")
            #expect(messages[2 + 2 * index].role == .tool && messages[2 + 2 * index].content.contains("average \(method) rating"))
        }
        #expect(messages.last?.content == response.rawContent.jsonString)
        #expect((1...5).contains(response.content.rating))
    }

    @Test func automaticToolUseStillEndsInAValue() async throws {
        let conversation = try runner().createConversation(tools: [BrewHistoryTool(ratings: [:])])
        let response = try await conversation.respond(to: "A V60 of a Kenyan coffee: juicy and sweet. Summarize it.", generating: BrewSummary.self,
                                                      options: Self.options)
        #expect((1...5).contains(response.content.rating))
    }

    @Test func aFailingToolIsATypedError() async throws {
        let conversation = try runner().createConversation(tools: [FailingTool()])
        var options = Self.options
        options.functionCallMode = .required
        await #expect {
            _ = try await conversation.respond(to: "Do it.", generating: CatProfile.self, options: options)
        } throws: { error in
            guard case GenerationError.toolCallFailed(let tool, _, let underlying) = error else { return false }
            return tool == "FailingTool" && underlying is FailingTool.Broken
        }
    }

    @Test func aValueCutShortIsATypedErrorWithTheText() async throws {
        // Too few tokens for any CatProfile: refused before generating, saying how many the
        // shortest one takes.
        var options = Self.options
        options.maxTokens = 3
        await #expect {
            _ = try await runner().createConversation().respond(to: "Generate a cat", generating: CatProfile.self, options: options)
        } throws: { error in
            guard case ConversationError.maxTokensTooSmall(let needed, let maxTokens) = error else { return false }
            return maxTokens == 3 && needed > 3
        }
        // Without the steering the reply is cut mid-value, and the text so far comes with the
        // error: the opening of a CatProfile.
        options.maxTokens = 6
        options.closesWithinMaxTokens = false
        var raw: String?
        await #expect {
            _ = try await runner().createConversation().respond(to: "Generate a cat", generating: CatProfile.self, options: options)
        } throws: { error in
            guard case GenerationError.incompleteValue(.constraint, let text) = error else { return false }
            raw = text
            return true
        }
        let text = try #require(raw)
        #expect(text.hasPrefix(#"{""#) && (try? JSONValue(parsing: text)) == nil, "\(text)")
    }

    /// A value that fits the schema but not the type's own check is a decoding failure that
    /// carries the generated JSON.
    @Test func aValueTheTypeRefusesIsATypedErrorWithTheJSON() async throws {
        let conversation = try runner().createConversation()
        var raw: String?
        await #expect {
            _ = try await conversation.respond(to: "Name a fruit.", generating: HexColor.self, options: Self.options)
        } throws: { error in
            guard case GenerationError.decodingFailure(.typeMismatch(expected: "#RRGGBB", found: _, pointer: ""), let text) = error else { return false }
            raw = text
            return true
        }
        let text = try #require(raw)
        #expect(conversation.history.last?.content == text)
        guard case .string(let fruit)? = try? JSONValue(parsing: text) else {
            Issue.record("the raw content is not a JSON string: \(text)")
            return
        }
        #expect(!fruit.isEmpty && !fruit.hasPrefix("#"))
    }
}

/// A color the schema leaves as any string and the type itself checks (a conformance written
/// by hand, as a library user may).
struct HexColor: Generable {
    var red, green, blue: UInt8
    static var generationSchema: GenerationSchema { String.generationSchema }

    init(_ content: GeneratedContent) throws {
        let text = try String(content)
        let digits = Array(text.utf8.dropFirst())
        guard text.utf8.first == UInt8(ascii: "#"), digits.count == 6, let value = UInt32(String(decoding: digits, as: UTF8.self), radix: 16) else {
            throw GeneratedContentError.typeMismatch(expected: "#RRGGBB", found: text, pointer: "")
        }
        (red, green, blue) = (UInt8(value >> 16), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF))
    }

    var generatedContent: GeneratedContent {
        ("#" + [red, green, blue].map { String($0, radix: 16).leftPadded(to: 2) }.joined()).generatedContent
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// An actor a model can fill in, as Foundation Models allows `@Generable` on actors: its
/// constants are the value's properties.
@Generable(description: "A reading list kept by an actor")
actor ReadingList {
    @Guide(description: "The list's name")
    let name: String
    @Guide(description: "Book titles", .count(1...3))
    let titles: [String]
}

/// The structure of the same shape, whose schema the actor's must equal.
@Generable(description: "A reading list kept by an actor")
struct ReadingListValue {
    @Guide(description: "The list's name")
    let name: String
    @Guide(description: "Book titles", .count(1...3))
    let titles: [String]
}

@Suite struct GenerableActorTests {
    @Test func anActorHasTheSchemaOfItsStructureAndRoundTrips() throws {
        // The same schema but for the title, which is the type's name.
        func untitled(_ schema: JSONValue) -> [(String, JSONValue)] { (schema.members ?? []).filter { $0.0 != "title" } }
        #expect(JSONValue.object(untitled(ReadingList.generationSchema.jsonSchema)) == .object(untitled(ReadingListValue.generationSchema.jsonSchema)))
        #expect(ReadingList.generationSchema.jsonSchema["title"] == .string("ReadingList"))
        let content = try GeneratedContent(json: #"{"name":"Summer","titles":["Dune","Emma"]}"#)
        let list = try ReadingList(content)
        #expect(list.name == "Summer" && list.titles == ["Dune", "Emma"])
        #expect(list.generatedContent == content)
        #expect(throws: GeneratedContentError.self) { try ReadingList(GeneratedContent(json: #"{"name":"Summer"}"#)) }
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func aModelFillsInAnActor() async throws {
        let list = try await runner().createConversation()
            .respond(to: "Make a reading list of classic novels.", generating: ReadingList.self, options: GenerationOptions(temperature: 0))
            .content
        #expect(!list.name.isEmpty && (1...3).contains(list.titles.count))
    }
}
