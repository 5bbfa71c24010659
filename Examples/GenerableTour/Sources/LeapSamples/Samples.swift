// The Swift samples of seeds 003 (LEAP, "Conversation & generation") and 000 (LEAP,
// "Constrained generation"), typed as the pages print them but for the import (`import
// TypesetLEAP` for `import LeapSDK` / `import LeapModelDownloader`). What a sample leaves out —
// a conversation to talk to, the app's handlers, a function around top-level statements — is
// marked "context". Seed 000's page as stored lost its code blocks (only the prose around them
// remains): its samples here (000_01 to 000_06) are LEAP's published constrained-generation
// samples, reconstructed to what that prose describes. The interface listings of 003 (`ModelRunner`, `Conversation`,
// `MessageResponse`, `GenerationOptions`) declare LEAP's API rather than use it: TypesetLEAP
// declares them (docs/leap.md).
import Foundation
import TypesetLEAP

// context: what 003_03 hands its responses to
final class AudioRenderer: Sendable {
    func enqueue(_ samples: [Float], sampleRate: Int) {}
}
let audioRenderer = AudioRenderer()
nonisolated(unsafe) var receivedCalls: [LeapFunctionCall] = []
func handleFunctionCalls(_ calls: [LeapFunctionCall]) { receivedCalls += calls }

// context: a conversation of a model loaded as LEAP loads one (the model-loading line)
public func leapConversation(modelPath: String) async throws -> Conversation {
    let runner = try await Leap.load(url: URL(fileURLWithPath: modelPath))
    return runner.createConversation(systemPrompt: "You are a helpful assistant.")
}

// context: 003_03, in a function that waits until its task has added the reply (or two minutes)
public func streamingLoop(conversation: Conversation) async {
let before = conversation.history.count
let user = ChatMessage(role: .user, textContent: "Hello! What can you do?")
let options = GenerationOptions()
  .with(temperature: 0.3)
  .with(minP: 0.15)
  .with(repetitionPenalty: 1.05)

Task {
  do {
    for try await response in conversation.generateResponse(
      message: user,
      generationOptions: options
    ) {
      switch onEnum(of: response) {
      case .chunk(let c):
        print(c.text, terminator: "")
      case .reasoningChunk(let r):
        print("Reasoning:", r.reasoning)
      case .functionCalls(let payload):
        handleFunctionCalls(payload.functionCalls)
      case .audioSample(let audio):
        // `audio.samples` is a `KotlinFloatArray` from Kotlin/Native — bridge to
        // `[Float]` via NSData if your renderer expects a Swift array:
        //   let nsData = LeapSDK.ArrayConversionsKt.floatArrayToNSData(array: audio.samples)
        //   let floats = nsData.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        audioRenderer.enqueue(audio.samples, sampleRate: Int(audio.sampleRate))
      case .complete(let completion):
        let text = completion.fullMessage.content.compactMap { part -> String? in
          if case let .text(t) = onEnum(of: part) { return t.text }
          return nil
        }.joined()
        print("\nComplete:", text)
        if let stats = completion.stats {
          print("Prompt tokens: \(stats.promptTokens), completion: \(stats.completionTokens)")
        }
      }
    }
  } catch {
    print("Generation failed: \(error)")
  }
}
let deadline = ContinuousClock.now + .seconds(120)
while conversation.history.count < before + 2, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
}

// context: 003_04
public func exported(conversation: Conversation) -> String {
let jsonString: String = conversation.exportToJSON()
return jsonString
}

// context: the @Generatable type 003_07 uses (the page does not show it)
@Generatable("A short fact about a city")
public struct CityFact: Codable {
    @Guide("The city's name")
    public let city: String
    @Guide("The country it is in")
    public let country: String
    @Guide("One surprising fact about it, in one sentence")
    public let fact: String
}

// context: 003_07, and decoding the reply as 000_02 decodes it
public func cityFact(conversation: Conversation, about city: String) async throws -> CityFact {
let options = GenerationOptions()
    .with(temperature: 0.3)
    .with(minP: 0.15)
    .with(repetitionPenalty: 1.05)
    .with(maxTokens: 512)
    .with(jsonSchema: CityFact.jsonSchema())
    var text = ""
    for try await response in conversation.generateResponse(userTextMessage: "Tell me a fact about \(city).", generationOptions: options) {
        if case .complete(let completion) = onEnum(of: response) {
            text = completion.fullMessage.content.compactMap { part -> String? in
                if case let .text(t) = onEnum(of: part) { return t.text }
                return nil
            }.joined()
        }
    }
    return try JSONDecoder().decode(CityFact.self, from: Data(text.utf8))
}

// 000_01
@Generatable("A joke with metadata")
struct Joke: Codable {
    @Guide("The joke text")
    let text: String

    @Guide("The category of humor (pun, dad-joke, programming, etc.)")
    let category: String

    @Guide("Humor rating from 1-10")
    let rating: Int

    @Guide("Whether the joke is suitable for children")
    let kidFriendly: Bool
}

// context: 000_02, in a function
public func programmingJoke(conversation: Conversation) async throws {
var options = GenerationOptions(temperature: 0.3, minP: 0.15, repetitionPenalty: 1.05)
try options.setResponseFormat(type: Joke.self)

let message = ChatMessage(role: .user, content: [.text("Tell me a programming joke")])

for try await response in conversation.generateResponse(
    message: message,
    generationOptions: options
) {
    if case .complete(let completion) = onEnum(of: response) {
        let jsonText = completion.fullMessage.content.compactMap { part -> String? in
            if case let .text(t) = onEnum(of: part) { return t.text }
            return nil
        }.joined()
        guard let data = jsonText.data(using: .utf8) else { continue }
        let joke = try JSONDecoder().decode(Joke.self, from: data)
        print(joke)
    }
}
}

// context: 000_03, in a function
public func schemaInThePrompt() throws -> ChatMessage {
let schemaString = try JSONSchemaGenerator.getJSONSchema(for: Joke.self)
let message = ChatMessage(
    role: .user,
    content: [.text("Tell me a programming joke following this JSON Schema: \(schemaString)")]
)
return message
}

// 000_04
@Generatable("A recipe with ingredients and instructions")
struct Recipe: Codable {
    @Guide("Name of the dish")
    let name: String

    @Guide("List of ingredients with quantities")
    let ingredients: [String]

    @Guide("Step-by-step cooking instructions")
    let instructions: [String]

    @Guide("Cooking time in minutes")
    let cookingTimeMinutes: Int

    @Guide("Number of servings this recipe makes")
    let servings: Int?

    @Guide("Nutritional information if available")
    let nutrition: NutritionInfo?
}

@Generatable("Nutritional information for a recipe")
struct NutritionInfo: Codable {
    @Guide("Calories per serving")
    let caloriesPerServing: Int

    @Guide("Protein in grams")
    let proteinGrams: Double

    @Guide("Carbohydrates in grams")
    let carbsGrams: Double
}

// 000_06
private func parse<T: Codable>(_ jsonText: String, as type: T.Type) -> T? {
    guard let data = jsonText.data(using: .utf8) else { return nil }
    do {
        return try JSONDecoder().decode(type, from: data)
    } catch {
        print("Failed to decode response as \(type): \(error)")
        return nil
    }
}

// context: 000_04's recipe asked for and read with 000_06's parser
public func recipe(conversation: Conversation) async -> String {
    let options = GenerationOptions().with(temperature: 0).with(maxTokens: 400).with(jsonSchema: Recipe.jsonSchema())
    var text = ""
    for await response in conversation.generateResponse(userTextMessage: "Give me a recipe for pancakes.", generationOptions: options) {
        if case .complete(let completion) = onEnum(of: response) {
            text = completion.fullMessage.content.compactMap { part -> String? in
                if case let .text(t) = onEnum(of: part) { return t.text }
                return nil
            }.joined()
        }
    }
    guard let recipe = parse(text, as: Recipe.self) else { return "no recipe: \(text)" }
    precondition(!recipe.ingredients.isEmpty, "a recipe without ingredients")
    return "\(recipe.name): ingredients \(recipe.ingredients.count), steps \(recipe.instructions.count), \(recipe.cookingTimeMinutes) min"
}
