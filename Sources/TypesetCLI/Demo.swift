import ArgumentParser
import Typeset

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate a typed BrewSummary from sample tasting notes with the default model.",
        discussion: """
        Typed generation needs the forward pass, the grammar compiler and the @Generable macros, \
        which are still being built. Until they land, demo checks that the default model is \
        present and readable and says so.
        """
    )

    @Option(help: "A GGUF file or known model name. Default: $TYPESET_MODEL or SmolLM2-135M-Instruct Q4_1.")
    var model: String?

    func run() throws {
        let path = try ModelStore.resolve(model)
        let file = try GGUFFile(contentsOf: path)
        let configuration = try ModelConfiguration(metadata: file.metadata)
        let vocabulary = try Vocabulary(metadata: file.metadata)
        print("model: \(path)")
        print("  \(configuration.architecture.rawValue), \(configuration.blockCount) blocks, width \(configuration.embeddingLength), \(configuration.headCount) heads (\(configuration.headCountKV) KV), vocabulary \(vocabulary.count) (\(vocabulary.model)/\(vocabulary.preTokenizer)), \(file.tensorInfos.count) tensors")
        print("typed generation (BrewSummary) is not available yet: it arrives with the forward pass, grammar compiler and @Generable work.")
        print("meanwhile, plain generation works: typeset run --model \(path) \"What is the capital of France?\"")
    }
}
