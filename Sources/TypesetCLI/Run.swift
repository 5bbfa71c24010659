import ArgumentParser
import Foundation
import GGUF
import Models
import Typeset
import TypesetTokenizer

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reply to a prompt through the model's chat template, streaming the answer.",
        discussion: """
        The prompt goes through the Conversation API: it is rendered with the model's chat \
        template (plain text for models without one), and the reply streams to standard output \
        until the model ends its turn, --max-tokens is reached or the context is full. With \
        --schema, the reply is held to a JSON Schema and always parses and validates. Timings \
        go to standard error. Unset sampling flags take the model's defaults (greedy unless \
        its metadata says otherwise).
        """
    )

    @OptionGroup var progressOptions: ProgressOptions

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: ArgumentHelp(
        "The system message.",
        discussion: """
        Defaults to "You are a helpful assistant." rather than nothing: templates such as \
        SmolLM2's put their own default system message in when there is none, and the 135M \
        model answers plain questions with free association under it.
        """))
    var system = "You are a helpful assistant."

    @Option(help: "A JSON Schema file the reply must satisfy.")
    var schema: String?

    @Option(help: "With --schema, whitespace in the JSON: compact, or flexible[:N] (the model places up to N bytes in a row, default 4).")
    var whitespace = "compact"

    @Flag(help: "With --schema, do not put the schema in the prompt.")
    var noSchemaInPrompt = false

    @Option(help: "The most tokens to generate.")
    var maxTokens = 512

    @Option(parsing: .unconditional, help: "Sampling temperature (0: greedy).")
    var temperature: Float?

    @Option(parsing: .unconditional, help: "Keep only the k most likely tokens.")
    var topK: Int?

    @Option(parsing: .unconditional, help: "Nucleus sampling: keep the most likely tokens up to this probability mass.")
    var topP: Float?

    @Option(parsing: .unconditional, help: "Drop tokens less likely than this fraction of the most likely one.")
    var minP: Float?

    @Option(parsing: .unconditional, help: "Penalty for repeating recent tokens (1: none).")
    var repetitionPenalty: Float?

    @Option(parsing: .unconditional, help: "DRY penalty on tokens that extend a repeated sequence (0: off). Default: 0.8 with --schema, on repeats within the reply; off without.")
    var dryMultiplier: Float?

    @Option(parsing: .unconditional, help: "DRY: growth of the penalty per further repeated token.")
    var dryBase: Float = 1.75

    @Option(parsing: .unconditional, help: "DRY: repeats shorter than this go unpenalized.")
    var dryAllowedLength = 2

    @Option(help: "Random seed for sampling.")
    var seed: UInt64?

    @Option(parsing: .unconditional, help: "Threads for the matrix products.")
    var threads = 2

    @Option(help: "Context length in tokens (prompt plus reply).")
    var context = 2048

    @Flag(help: "Draft tokens by prompt lookup (what followed the last few tokens where they occurred before) and verify them in the passes: the same reply, in fewer passes where it copies from the prompt.")
    var lookup = false

    @Option(help: "A smaller model of the same vocabulary (a GGUF file or known model name) whose greedy guesses of the next tokens are verified in the passes: the same reply, in fewer passes where it guesses right.")
    var draft: String?

    @Option(help: "The most tokens a model that thinks may reason before its answer: then its </think> is forced (0: no reasoning). The reasoning goes to standard error.")
    var reasoningBudget: Int?

    @Argument(help: "The prompt.")
    var prompt: String

    @OptionGroup var budgetOptions: CompilationBudgetOptions

    func validate() throws {
        try validateCount(maxTokens, "--max-tokens")
        try validateThreads(threads)
        try validateCount(context, "--context")
        _ = try parseWhitespace(whitespace)
        try validateNumber(temperature, "--temperature", atLeast: 0)
        try validateCount(topK, "--top-k", atLeast: 0)
        try validateNumber(topP, "--top-p", above: 0, atMost: 1)
        try validateNumber(minP, "--min-p", atLeast: 0, atMost: 1)
        try validateNumber(repetitionPenalty, "--repetition-penalty", above: 0)
        try validateNumber(dryMultiplier, "--dry-multiplier", atLeast: 0)
        try validateNumber(dryBase, "--dry-base", above: 1)
        try validateCount(dryAllowedLength, "--dry-allowed-length")
        try validateCount(reasoningBudget, "--reasoning-budget", atLeast: 0)
    }

    func run() async throws {
        let path = try ModelStore.resolve(model)
        let reporter = progressOptions.makeReporter()
        var runnerOptions = ModelRunner.Options(contextLength: context, threadCount: threads, grammarBudget: budgetOptions.budget)
        runnerOptions.draftModelPath = try draft.map { try ModelStore.resolve($0) }
        let runner = try await ModelRunner.load(from: URL(fileURLWithPath: path), options: runnerOptions, progress: reporter.loadingProgress)
        reporter.clear()
        let schemaText = try schema.map { try readText($0, what: "schema") }
        var options = GenerationOptions(
            temperature: temperature, topP: topP, minP: minP, topK: topK, repetitionPenalty: repetitionPenalty,
            dry: dryMultiplier.map { multiplier in
                // With a schema, the JSON setting (the reply only, `"` not a breaker) with these numbers.
                var penalty = schema == nil ? DRYPenalty.standard : .json
                (penalty.multiplier, penalty.base, penalty.allowedLength) = (multiplier, dryBase, dryAllowedLength)
                return penalty
            },
            seed: seed, maxTokens: maxTokens, jsonSchema: schemaText, injectSchemaIntoPrompt: !noSchemaInPrompt)
        options.schemaOptions.whitespace = try parseWhitespace(whitespace)
        if lookup { options.promptLookup = PromptLookup() }
        options.reasoningBudget = reasoningBudget
        let conversation = runner.createConversation(systemPrompt: system)
        conversation.prefillProgress = { computed, total in
            reporter.report("reading the prompt (\(total) tokens)", fraction: Double(computed) / Double(total))
        }
        reporter.report(schemaText == nil ? "reading the prompt" : "compiling the schema and reading the prompt")
        do {
            try await stream(conversation.generateResponse(to: prompt, options: options), reporter: reporter, isValue: schemaText != nil)
        } catch ConversationError.maxTokensTooSmall(let needed, let maxTokens) {
            throw RunError.maxTokensTooSmall(shortestValueTokens: needed, maxTokens: maxTokens)
        }
    }

    /// Writes the reply as it streams: text to standard output, timings to standard error. A
    /// value (`--schema`) that did not complete is an error, not an empty answer.
    private func stream(_ responses: AsyncThrowingStream<MessageResponse, Error>, reporter: ProgressReporter, isValue: Bool) async throws {
        for try await response in responses {
            reporter.clear()
            switch response {
            // Everything goes out unbuffered, so the text, the calls and the statistics on
            // standard error stay in order when both streams go to one place.
            case .chunk(let text):
                FileHandle.standardOutput.write(Data(text.utf8))
            case .reasoningChunk(let text):
                FileHandle.standardError.write(Data(text.utf8))
            case .logprob, .functionCallDelta:
                break   // calls are printed once complete
            case .functionCalls(let calls):
                for call in calls { FileHandle.standardOutput.write(Data("\n[call \(call.name)(\(call.argumentsText))]\n".utf8)) }
            case .complete(_, let finishReason, let stats):
                FileHandle.standardOutput.write(Data("\n".utf8))
                let drafts = lookup || draft != nil
                    ? String(format: "; %d of %d drafted tokens kept", stats.acceptedDraftTokens, stats.draftedTokens) : ""
                writeError(String(
                    format: "[%d prompt tokens; first token after %.0f ms; %d tokens at %.1f tok/s%@; finish: %@]",
                    stats.promptTokens, stats.timeToFirstToken * 1000, stats.completionTokens, stats.tokensPerSecond,
                    drafts, finishReason.rawValue))
                if isValue, finishReason != .stop { throw RunError.incompleteValue(finishReason, completionTokens: stats.completionTokens) }
            }
        }
    }
}

enum RunError: UserFacingError {
    case maxTokensTooSmall(shortestValueTokens: Int, maxTokens: Int)
    case incompleteValue(FinishReason, completionTokens: Int)

    var description: String {
        switch self {
        case let .maxTokensTooSmall(needed, maxTokens):
            "the schema's shortest value takes \(needed) tokens, more than --max-tokens \(maxTokens)"
        case let .incompleteValue(reason, tokens):
            switch reason {
            case .maxTokens, .constraint: "the value was not complete after \(tokens) tokens (finish: \(reason.rawValue)); raise --max-tokens"
            case .exceededContext: "the value was not complete when the context filled up after \(tokens) tokens; raise --context"
            default: "the value was not complete (finish: \(reason.rawValue))"
            }
        }
    }
}

/// A model file with its forward pass and tokenizer.
struct LoadedModel {
    let path: String
    let file: GGUFFile
    let model: TransformerModel
    let tokenizer: Tokenizer

    init(_ name: String?, progress: ProgressReporter? = nil) throws {
        path = try ModelStore.resolve(name)
        file = try GGUFFile(contentsOf: path)
        model = try TransformerModel(file: file) { fraction in progress?.report("loading the model", fraction: fraction) }
        tokenizer = try Tokenizer(metadata: file.metadata)
        progress?.clear()
    }
}
