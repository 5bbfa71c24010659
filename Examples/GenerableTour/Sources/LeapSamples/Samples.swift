// The Swift samples of seed 003 (LEAP, "Conversation & generation"), as the seed writes them
// but for the import; what a sample leaves out (a conversation, the app's handlers, a function
// around top-level statements) is marked "context". The seed's interface listings (003_01,
// 003_02, 003_05, 003_06) declare LEAP's own API rather than use it; docs/leap.md maps each
// of their names to Typeset's.
import Foundation
import TypesetLEAP

// context: what 003_03 hands its responses to
final class AudioRenderer: Sendable {
    func enqueue(_ samples: [Float], sampleRate: Int) {}
}
let audioRenderer = AudioRenderer()
nonisolated(unsafe) var receivedCalls: [FunctionCall] = []
func handleFunctionCalls(_ calls: [FunctionCall]) { receivedCalls += calls }

// context: 003_03, in a function that waits for its task
public func streamingLoop(conversation: Conversation) async {
    let user = ChatMessage(role: .user, textContent: "Hello! What can you do?")
    let options = GenerationOptions()
      .with(temperature: 0.3)
      .with(minP: 0.15)
      .with(repetitionPenalty: 1.05)

    let task = Task {
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
    await task.value
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

// context: 003_07, and decoding the reply as LEAP's constrained-generation page does
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
