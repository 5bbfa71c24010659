import ArgumentParser
import Foundation
import Typeset

/// What the demo asks for: the blog post's `BrewSummary`, with its `DominantNote`.
@Generable
struct BrewSummary {
    @Guide(description: "One short, plain sentence describing how the coffee tasted. No marketing words.")
    let flavor: String

    @Guide(description: "One concrete thing to try next time, like 'grind finer' or 'lower the water temperature'.")
    let advice: String

    @Guide(description: "Honest overall quality, from 1 (undrinkable) to 5 (excellent).", .range(1...5))
    let rating: Int

    @Guide(description: "The dominant flavor note.")
    let note: DominantNote
}

@Generable
enum DominantNote {
    case fruity, nutty, chocolatey, floral, sour, bitter, balanced
}

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a BrewSummary from sample tasting notes with Qwen2.5-Coder-1.5B-Instruct.",
        discussion: """
        Asks the model for a @Generable BrewSummary (flavor, advice, rating 1–5, dominant \
        note): the reply is held to the type's schema while it is decoded, so it always \
        decodes. Prints the value as Swift and as JSON, with the decoding speed.
        """
    )

    @OptionGroup var progressOptions: ProgressOptions

    @Option(help: "A GGUF file or known model name. Default: $TYPESET_MODEL or Qwen2.5-Coder-1.5B-Instruct (qwen1.5b).")
    var model: String?

    @Option(help: "Tasting notes to summarize.")
    var notes = "Washed Ethiopian, V60, 15 g to 250 g at 94 °C. Bright acidity, blueberry and lemon up front, a little thin in the body, slightly sour finish."

    @Option(parsing: .unconditional, help: "Sampling temperature (0: greedy).")
    var temperature: Float = 0

    @Option(help: "Random seed for sampling.")
    var seed: UInt64 = 0

    @Flag(help: "Do not append the type's JSON Schema to the request (the reply is held to it either way).")
    var noSchemaInPrompt = false

    @Option(parsing: .unconditional, help: "CPU threads (default: 2).")
    var threads: Int?

    func validate() throws {
        try validateThreads(threads)
        try validateNumber(temperature, "--temperature", atLeast: 0)
    }

    func run() async throws {
        let path = try ModelStore.resolve(model, fallback: .demo)
        var runnerOptions = ModelRunner.Options()
        if let threads { runnerOptions.threadCount = threads }
        let reporter = progressOptions.makeReporter()
        let runner = try await ModelRunner.load(from: URL(fileURLWithPath: path), options: runnerOptions, progress: reporter.loadingProgress)
        reporter.clear()
        let conversation = runner.createConversation(
            systemPrompt: "You read freeform coffee tasting notes and extract a structured summary. Be honest about the rating.")
        print("model: \(runner.modelID) (\(path))")
        print("notes: \(notes)")
        reporter.report("reading the notes and generating the summary")
        let response = try await conversation.respond(
            to: "Summarize these tasting notes: \(notes)", generating: BrewSummary.self,
            includeSchemaInPrompt: !noSchemaInPrompt, options: GenerationOptions(temperature: temperature, seed: seed, maxTokens: 256))
        reporter.clear()
        print("")
        print(SwiftValueText.describe(response.content))
        print("")
        print("json: \(response.rawContent.jsonString)")
        let stats = response.stats
        print(String(format: "%d prompt tokens, %d generated at %.1f tok/s (first token after %.0f ms)",
                     stats.promptTokens, stats.completionTokens, stats.tokensPerSecond, stats.timeToFirstToken * 1000))
    }
}

/// A value written the way Swift source would spell it, one property per line:
/// `BrewSummary(\n    flavor: "…",\n    rating: 4,\n    note: .fruity\n)`.
enum SwiftValueText {
    static func describe(_ value: Any, indent: String = "") -> String {
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .struct, .class:
            guard !mirror.children.isEmpty else { return "\(type(of: value))()" }
            let inner = indent + "    "
            let fields = mirror.children.map { "\(inner)\($0.label ?? "_"): \(describe($0.value, indent: inner))" }
            return "\(type(of: value))(\n" + fields.joined(separator: ",\n") + "\n\(indent))"
        case .enum:
            guard let payload = mirror.children.first else { return ".\(value)" }
            return ".\(payload.label ?? "\(value)")(\(describe(payload.value, indent: indent)))"
        case .collection:
            let inner = indent + "    "
            guard !mirror.children.isEmpty else { return "[]" }
            return "[\n" + mirror.children.map { inner + describe($0.value, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .optional:
            return mirror.children.first.map { describe($0.value, indent: indent) } ?? "nil"
        default:
            if let text = value as? String { return GeneratedContent(kind: .string(text)).jsonString }
            return "\(value)"
        }
    }
}
