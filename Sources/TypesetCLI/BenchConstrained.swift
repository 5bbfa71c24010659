import ArgumentParser
import Foundation
import Typeset

/// Constrained against free decoding, side by side in one process: what the grammar costs.
struct BenchConstrained: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "constrained",
        abstract: "Decode tokens/s with and without a JSON Schema constraint, on the same prompt and model.",
        discussion: """
        Alternates free and constrained replies (greedy, --max-tokens each) to the same prompt \
        (the request with the schema instruction `injectSchemaIntoPrompt` would add) through the \
        Conversation API, each in a fresh conversation, and reports the median decode tokens/s \
        of each, their ratio, the forward passes each kind of reply took after the prompt's (with \
        jump-forward decoding, the tokens the grammar forces are computed in the pass of the token \
        before them), and the time the grammar itself took per constrained token (masks, \
        acceptance, steering), which does not depend on how long each reply happened to be. The schema's compilation happens once, before the first timed \
        run (repeated schemas are cached).
        """
    )

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: "The JSON Schema file (default: the schema of the demo's BrewSummary type).")
    var schema: String?

    @Option(help: "The prompt.")
    var prompt = "Tasting notes: bright acidity, blueberry and lemon, a bit thin, slightly sour finish. Summarize this brew."

    @Option(help: "Tokens per reply.")
    var maxTokens = 64

    @Option(help: "Timed runs of each kind.")
    var runs = 7

    @Option(parsing: .unconditional, help: "Threads for the matrix products.")
    var threads = 2

    @Flag(inversion: .prefixedNo, help: "Jump-forward decoding in the constrained replies (tokens the grammar forces appended without sampling).")
    var jumpForward = true

    @Flag(inversion: .prefixedNo, help: "With jump-forward, the last forced token the model may merge with what follows computed provisionally in the forced tokens' pass (the same replies; fewer passes).")
    var provisional = true

    @Flag(help: "Drafts by prompt lookup in both kinds of reply (the same replies; fewer passes where they copy from the prompt), with the drafted and kept tokens.")
    var lookup = false

    @Option(help: "A smaller model of the same vocabulary (a GGUF file or known model name) drafting in both kinds of reply (under the schema in the constrained one), with the drafted and kept tokens.")
    var draft: String?

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func validate() throws {
        try validateThreads(threads)
        try validateCount(maxTokens, "--max-tokens")
        try validateCount(runs, "--runs")
    }

    func run() async throws {
        let path = try ModelStore.resolve(model)
        var runnerOptions = ModelRunner.Options(threadCount: threads)
        runnerOptions.draftModelPath = try draft.map { try ModelStore.resolve($0) }
        let runner = try await ModelRunner.load(from: URL(fileURLWithPath: path), options: runnerOptions)
        let schemaText = try schema.map { try readText($0, what: "schema") }
            ?? BrewSummary.generationSchema.jsonSchema.compactText
        // The same prompt for both: the schema instruction is written into it, not injected.
        let prompt = Conversation.instructedRequest(self.prompt, schema: schemaText)
        var free = GenerationOptions(temperature: 0, maxTokens: maxTokens)
        if lookup { free.promptLookup = PromptLookup() }
        var constrained = GenerationOptions(temperature: 0, maxTokens: maxTokens, jsonSchema: schemaText, injectSchemaIntoPrompt: false)
        constrained.jumpsForward = jumpForward
        constrained.computesBoundaryTokensAhead = provisional
        constrained.promptLookup = free.promptLookup
        var constrainedReply = ""
        func measure(_ options: GenerationOptions) async throws -> GenerationStats {
            var last: GenerationStats?
            for try await response in runner.createConversation().generateResponse(to: prompt, options: options) {
                if case .complete(let message, _, let stats) = response {
                    last = stats
                    if options.jsonSchema != nil { constrainedReply = message.content }
                }
            }
            return last!
        }
        _ = try await measure(free)          // warm-up (page faults, caches)
        _ = try await measure(constrained)   // warm-up and the schema's compilation
        var freeRates: [Double] = [], constrainedRates: [Double] = []
        var freeTokens = 0, constrainedTokens = 0, freePasses = 0, constrainedPasses = 0, passesSaved = 0
        var freeDrafts = DraftCounts(), constrainedDrafts = DraftCounts()
        var grammarShares: [Double] = [], grammarMicrosecondsPerToken: [Double] = []
        for _ in 0 ..< runs {
            let a = try await measure(free)
            let b = try await measure(constrained)
            freePasses = a.decodePasses
            constrainedPasses = b.decodePasses
            passesSaved = b.passesSavedByProvisionalTokens
            freeDrafts.add(a)
            constrainedDrafts.add(b)
            freeRates.append(a.tokensPerSecond)
            constrainedRates.append(b.tokensPerSecond)
            freeTokens = a.completionTokens
            constrainedTokens = b.completionTokens
            let decodeSeconds = Double(b.completionTokens) / max(b.tokensPerSecond, 1e-9)
            grammarShares.append(b.constraintSeconds / decodeSeconds)
            grammarMicrosecondsPerToken.append(b.constraintSeconds / Double(max(1, b.completionTokens)) * 1e6)
        }
        let ratio = median(constrainedRates) / median(freeRates)
        if json {
            let report: JSONValue = .object([
                ("model", .string(runner.modelID)), ("threads", JSONValue(threads)), ("runs", JSONValue(runs)),
                ("free_tokens", JSONValue(freeTokens)), ("constrained_tokens", JSONValue(constrainedTokens)),
                ("free_passes", JSONValue(freePasses)), ("constrained_passes", JSONValue(constrainedPasses)),
                ("constrained_passes_saved_by_provisional_tokens", JSONValue(passesSaved)),
                ("free_tokens_per_second", JSONValue(median(freeRates))),
                ("constrained_tokens_per_second", JSONValue(median(constrainedRates))),
                ("ratio", JSONValue(ratio)),
                ("grammar_share", JSONValue(median(grammarShares))),
                ("grammar_microseconds_per_token", JSONValue(median(grammarMicrosecondsPerToken))),
                ("constrained_reply", .string(constrainedReply)),
            ] + (lookup || draft != nil ? freeDrafts.json.map { ("free_" + $0.0, $0.1) } + constrainedDrafts.json.map { ("constrained_" + $0.0, $0.1) } : []))
            print(report.compactText)
        } else {
            print("model \(runner.modelID), \(threads) threads, \(runs) runs each, schema \(schema ?? "of the demo's BrewSummary")")
            print(String(format: "free          %6.1f tok/s (median; %d tokens per reply in %d passes)", median(freeRates), freeTokens, freePasses))
            print(String(format: "constrained   %6.1f tok/s (median; %d tokens per reply in %d passes, %d saved by provisional tokens)",
                         median(constrainedRates), constrainedTokens, constrainedPasses, passesSaved))
            if lookup || draft != nil {
                print("free        " + freeDrafts.summary)
                print("constrained " + constrainedDrafts.summary)
            }
            print(String(format: "ratio         %.3f", ratio))
            print(String(format: "grammar       %.1f µs per token, %.2f%% of constrained decoding (median)",
                         median(grammarMicrosecondsPerToken), 100 * median(grammarShares)))
        }
    }
}
