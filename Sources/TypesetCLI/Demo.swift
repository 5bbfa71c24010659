import ArgumentParser
import Foundation
import Typeset

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a BrewSummary from sample tasting notes with the default model.",
        discussion: """
        Asks the model, through the Conversation API, for a BrewSummary (flavor, advice, rating \
        1–5, dominant note) held to its JSON Schema: the reply always parses and validates. \
        Prints the value as JSON with the prompt and decoding speed. (The Swift value comes with \
        the @Generable macros.)
        """
    )

    @Option(help: "A GGUF file or known model name. Default: $TYPESET_MODEL or SmolLM2-135M-Instruct Q4_1.")
    var model: String?

    @Option(help: "Tasting notes to summarize.")
    var notes = "Washed Ethiopian, V60, 15 g to 250 g at 94 °C. Bright acidity, blueberry and lemon up front, a little thin in the body, slightly sour finish."

    @Option(help: "Sampling temperature (0: greedy).")
    var temperature: Float = 0

    @Option(help: "Random seed for sampling.")
    var seed: UInt64 = 0

    static let brewSummarySchema = """
        {"title":"BrewSummary","type":"object","properties":{\
        "flavor":{"type":"string","description":"One short, plain sentence describing how the coffee tasted."},\
        "advice":{"type":"string","description":"One concrete thing to try next time, like 'grind finer'."},\
        "rating":{"type":"integer","minimum":1,"maximum":5,"description":"Overall quality, from 1 (undrinkable) to 5 (excellent)."},\
        "note":{"type":"string","enum":["fruity","nutty","chocolatey","floral","sour","bitter","balanced"]}},\
        "required":["flavor","advice","rating","note"],"additionalProperties":false}
        """

    func run() async throws {
        let path = try ModelStore.resolve(model)
        let runner = try await ModelRunner.load(from: URL(fileURLWithPath: path))
        let conversation = runner.createConversation(systemPrompt: "You are a coffee expert who summarizes tasting notes.")
        let options = GenerationOptions(temperature: temperature, seed: seed, maxTokens: 256, jsonSchema: Self.brewSummarySchema)
        print("model: \(runner.modelID) (\(path))")
        print("notes: \(notes)")
        for try await response in conversation.generateResponse(to: "Summarize these tasting notes: \(notes)", options: options) {
            guard case .complete(let message, let finishReason, let stats) = response else { continue }
            let value = try JSONValue(parsing: message.content)
            print("BrewSummary:")
            for (name, field) in value.members ?? [] { print("  \(name): \(field.compactText)") }
            print("json: \(message.content)")
            print(String(format: "%d prompt tokens, %d generated at %.1f tok/s (first token after %.0f ms), finish: %@",
                         stats.promptTokens, stats.completionTokens, stats.tokensPerSecond, stats.timeToFirstToken * 1000,
                         finishReason.rawValue))
        }
    }
}
