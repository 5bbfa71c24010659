import ArgumentParser
import Foundation
import GGUF
import Typeset
import TypesetTokenizer

struct Tokenize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the token ids of a text as a JSON array.",
        discussion: """
        Ids are those llama.cpp gives for the same model. By default the model's BOS/EOS are \
        added when it asks for them and control tokens written in the text are plain text.
        """
    )

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Flag(help: "Do not add the BOS/EOS tokens the model asks for.")
    var noBOS = false

    @Flag(help: "Read control tokens written in the text (<|im_start|>, <start_of_turn>) as those tokens.")
    var parseSpecial = false

    @Option(help: "The text to tokenize.")
    var text: String?

    @Option(help: "A file whose bytes to tokenize.")
    var file: String?

    @Flag(help: "Print each token's id and text, one per line, instead of the JSON array.")
    var verbose = false

    @Option(help: "The most bytes --file may hold (standard input included).")
    var maxBytes = 1 << 30

    func validate() throws {
        guard (text == nil) != (file == nil) else { throw ValidationError("give exactly one of --text and --file") }
        try validateCount(maxBytes, "--max-bytes")
    }

    /// Encodes block by block (``Tokenizer/StreamingEncoder``) and prints as it goes, so memory
    /// stays flat whatever the input's size.
    func run() throws {
        let tokenizer = try loadTokenizer(model)
        var encoder = Tokenizer.StreamingEncoder(tokenizer, addingSpecialTokens: !noBOS, parsingSpecialTokens: parseSpecial)
        var output = TokenPrinter(vocabulary: tokenizer.vocabulary, verbose: verbose)
        if let text {
            output.write(encoder.append(Array(text.utf8)))
        } else {
            try forEachBlock(of: file!, limit: maxBytes) { output.write(encoder.append($0)) }
        }
        output.write(encoder.finish())
        output.finish()
    }
}

/// Writes token ids as they come: a JSON array, or one `id<TAB>text` line each.
private struct TokenPrinter {
    let vocabulary: Vocabulary
    let verbose: Bool
    private var count = 0
    private var line: [UInt8] = []

    init(vocabulary: Vocabulary, verbose: Bool) {
        self.vocabulary = vocabulary
        self.verbose = verbose
    }

    mutating func write(_ ids: [Int]) {
        for id in ids {
            if verbose {
                let piece = String(decoding: vocabulary.piece(of: id, rendersSpecialTokens: true), as: UTF8.self)
                line += Array("\(id)\t\(piece.debugDescription)\n".utf8)
            } else {
                line += Array(((count == 0 ? "[" : ",") + String(id)).utf8)
            }
            count += 1
        }
        flush()
    }

    mutating func finish() {
        if !verbose { line += Array(((count == 0 ? "[" : "") + "]\n").utf8) }
        flush()
    }

    private mutating func flush() {
        FileHandle.standardOutput.write(Data(line))
        line.removeAll(keepingCapacity: true)
    }
}

struct BenchTokenize: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokenize",
        abstract: "Measure encoding throughput (MB/s, one thread) on a file.",
        discussion: "The figure is the median of --runs timed encodings of the whole file after one warm-up; MB is 10^6 bytes."
    )

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: "The file to encode.")
    var file: String

    @Option(help: "Timed runs (after one warm-up).")
    var runs = 5

    @Flag(help: "Parse control tokens written in the text.")
    var parseSpecial = false

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let loadStart = ContinuousClock.now
        let tokenizer = try loadTokenizer(model)
        let loadSeconds = (ContinuousClock.now - loadStart).seconds
        let bytes = try readInput(file)
        var tokenCount = 0
        var seconds: [Double] = []
        for run in 0 ... max(1, runs) {
            let start = ContinuousClock.now
            let ids = bytes.withUnsafeBufferPointer {
                tokenizer.encode(bytes: $0, addingSpecialTokens: false, parsingSpecialTokens: parseSpecial)
            }
            let elapsed = (ContinuousClock.now - start).seconds
            tokenCount = ids.count
            if run > 0 { seconds.append(elapsed) }
        }
        let median = seconds.sorted()[seconds.count / 2]
        let megabytesPerSecond = Double(bytes.count) / 1e6 / median
        if json {
            let report: JSONValue = .object([
                ("mb_s", JSONValue(megabytesPerSecond)),
                ("tokens", JSONValue(tokenCount)),
                ("bytes", JSONValue(bytes.count)),
                ("runs_s", .array(seconds.map { JSONValue($0) })),
                ("load_s", JSONValue(loadSeconds)),
            ])
            print(report.compactText)
        } else {
            print(String(format: "%.2f MB/s  (%d bytes → %d tokens, median of %d runs; tokenizer built in %.0f ms)",
                         megabytesPerSecond, bytes.count, tokenCount, seconds.count, loadSeconds * 1000))
        }
    }
}

/// The tokenizer of a model given by path or name.
func loadTokenizer(_ model: String?) throws -> Tokenizer {
    let path = try ModelStore.resolve(model)
    return try Tokenizer(metadata: try GGUFFile(contentsOf: path).metadata)
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
