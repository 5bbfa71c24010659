import ArgumentParser
import Foundation
import Typeset

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reply to a prompt through the model's chat format, streaming the answer.",
        discussion: """
        The prompt is wrapped in the model's chat format (ChatML or Gemma turns; plain text for \
        models without a template) and the reply streams to standard output until the model \
        ends its turn, --max-tokens is reached or the context is full. Timings go to standard \
        error. The default is greedy decoding; --temperature above 0 samples (seeded by --seed).
        """
    )

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: "A system message.")
    var system: String?

    @Option(help: "The most tokens to generate.")
    var maxTokens = 256

    @Option(help: "Sampling temperature (0: greedy).")
    var temperature: Float = 0

    @Option(help: "Keep only the k most likely tokens.")
    var topK: Int?

    @Option(help: "Nucleus sampling: keep the most likely tokens up to this probability mass.")
    var topP: Float?

    @Option(help: "Drop tokens less likely than this fraction of the most likely one.")
    var minP: Float?

    @Option(help: "Penalty for repeating recent tokens (1: none).")
    var repetitionPenalty: Float = 1

    @Option(help: "Random seed for sampling.")
    var seed: UInt64 = 0

    @Option(help: "Threads for the matrix products.")
    var threads = 2

    @Option(help: "Context length in tokens (prompt plus reply).")
    var context = 2048

    @Argument(help: "The prompt.")
    var prompt: String

    func validate() throws {
        guard maxTokens > 0 else { throw ValidationError("--max-tokens must be positive") }
        guard threads > 0 else { throw ValidationError("--threads must be positive") }
        guard context > 0 else { throw ValidationError("--context must be positive") }
    }

    func run() throws {
        let loaded = try LoadedModel(model)
        let generator = TextGenerator(model: loaded.model, tokenizer: loaded.tokenizer, contextLength: context, threadCount: threads)
        let format = ChatPrompt(template: try loaded.file.metadata.string("tokenizer.chat_template"))
        let promptTokens = format.tokens(system: system, user: prompt, tokenizer: loaded.tokenizer)
        let sampling = SamplingOptions(
            temperature: temperature, topK: topK, topP: topP, minP: minP, repetitionPenalty: repetitionPenalty, seed: seed)
        var detokenizer = loaded.tokenizer.makeStreamingDetokenizer()
        let result = try generator.generate(prompt: promptTokens, maxTokens: maxTokens, sampling: sampling, onToken: { token in
            if let text = try? detokenizer.append(token), !text.isEmpty {
                FileHandle.standardOutput.write(Data(text.utf8))
            }
            return true
        })
        print(detokenizer.finish())
        writeError(String(
            format: "[%d prompt tokens in %.0f ms (%.1f tok/s); %d tokens at %.1f tok/s; stop: %@]",
            result.promptTokenCount, result.prefillSeconds * 1000, Double(result.promptTokenCount) / max(result.prefillSeconds, 1e-9),
            result.tokens.count, result.decodeTokensPerSecond, result.stopReason.rawValue))
    }
}

/// A model file with its forward pass and tokenizer.
struct LoadedModel {
    let path: String
    let file: GGUFFile
    let model: TransformerModel
    let tokenizer: Tokenizer

    init(_ name: String?) throws {
        path = try ModelStore.resolve(name)
        file = try GGUFFile(contentsOf: path)
        model = try TransformerModel(file: file)
        tokenizer = try Tokenizer(metadata: file.metadata)
    }
}
