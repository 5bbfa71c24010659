import ArgumentParser
import Foundation
import Typeset
import TypesetTokenizer

struct Perplexity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Perplexity of a text, computed as llama.cpp's llama-perplexity does.",
        discussion: """
        The text is tokenized (with BOS if the model adds one) and cut into chunks of --ctx \
        tokens that do not overlap; each chunk starts with BOS when the model uses one and is \
        evaluated from an empty cache; only the second half of each chunk is scored.
        """
    )

    @OptionGroup var progressOptions: ProgressOptions

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: "The text file.")
    var file: String

    @Option(help: "Tokens per chunk.")
    var ctx = 512

    @Option(help: "Score at most this many chunks.")
    var chunks: Int?

    @Option(parsing: .unconditional, help: "Threads for the matrix products.")
    var threads = 2

    @Option(help: "The most bytes the text file may hold (standard input included).")
    var maxBytes = 1 << 30

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        try validateCount(ctx, "--ctx", atLeast: 4)
        try validateCount(chunks, "--chunks")
        try validateThreads(threads)
        try validateCount(maxBytes, "--max-bytes")
    }

    func run() throws {
        let started = ContinuousClock.now
        let reporter = progressOptions.makeReporter()
        let loaded = try LoadedModel(model, progress: reporter)
        let vocabulary = loaded.tokenizer.vocabulary
        // Encoded block by block: the tokens are kept, the text is not.
        var encoder = Tokenizer.StreamingEncoder(loaded.tokenizer, addingSpecialTokens: vocabulary.addBOS)
        var tokens: [Int] = []
        try forEachBlock(of: file, limit: maxBytes) { tokens += encoder.append($0) }
        tokens += encoder.finish()
        var chunkCount = tokens.count / ctx
        if let chunks { chunkCount = min(chunkCount, max(0, chunks)) }
        guard chunkCount > 0 else { throw PerplexityError.tooShort(tokens: tokens.count, ctx: ctx) }
        let cache = loaded.model.makeCache(contextLength: ctx)
        let width = loaded.model.configuration.vocabularySize
        var negativeLogLikelihood = 0.0
        var scored = 0
        for chunk in 0 ..< chunkCount {
            var input = Array(tokens[chunk * ctx ..< (chunk + 1) * ctx])
            if vocabulary.addBOS, let bos = vocabulary.bosTokenID { input[0] = bos }
            cache.clear()
            // The unscored first half needs no logits; the rest is evaluated in slices so the
            // logits buffer stays small (Gemma 3: 262,144 floats per position).
            _ = try loaded.model.evaluate(Array(input[..<(ctx / 2)]), cache: cache, threadCount: threads)
            var logits: [Float] = []
            var sliceStart = ctx / 2
            for position in ctx / 2 ..< ctx - 1 {
                if position - sliceStart >= 64 || logits.isEmpty {
                    sliceStart = position
                    logits = try loaded.model.evaluate(Array(input[position ..< min(position + 64, ctx)]), cache: cache,
                                                       threadCount: threads, logits: .all)
                }
                let offset = position - sliceStart
                let row = logits[offset * width ..< (offset + 1) * width]
                let maximum = Double(row.max()!)
                var total = 0.0
                for value in row { total += exp(Double(value) - maximum) }
                let target = tokens[chunk * ctx + position + 1]
                negativeLogLikelihood -= Double(row[row.startIndex + target]) - maximum - log(total)
                scored += 1
            }
            reporter.report(String(format: "chunk %d of %d, perplexity so far %.4f", chunk + 1, chunkCount,
                                   exp(negativeLogLikelihood / Double(scored))), fraction: Double(chunk + 1) / Double(chunkCount))
        }
        reporter.clear()
        let perplexity = exp(negativeLogLikelihood / Double(scored))
        let seconds = (ContinuousClock.now - started).seconds
        if json {
            let report: JSONValue = .object([
                ("ppl", JSONValue(perplexity)), ("tokens", JSONValue(scored)), ("chunks", JSONValue(chunkCount)),
                ("ctx", JSONValue(ctx)), ("seconds", JSONValue(seconds)),
            ])
            print(report.compactText)
        } else {
            print(String(format: "perplexity %.4f over %d scored tokens (%d chunks of %d), %.1f s", perplexity, scored, chunkCount, ctx, seconds))
        }
    }
}

enum PerplexityError: UserFacingError {
    case tooShort(tokens: Int, ctx: Int)
    var description: String {
        switch self {
        case let .tooShort(tokens, ctx): "the text has \(tokens) tokens; perplexity needs at least one chunk of \(ctx)"
        }
    }
}
