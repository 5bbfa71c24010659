import ArgumentParser
import Foundation
import Typeset

struct BenchDecode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Prefill and decode tokens/s, measured as ../shared/peers/llama_bench.py does.",
        discussion: """
        Each run starts from an empty cache: one prefill of --prompt-tokens tokens (BOS if the \
        model adds one, then a fixed English/JSON filler), then --gen-tokens greedy decode steps. \
        Figures are medians over --runs runs after one warm-up. Also reports the time from \
        process start to the first generated token and the resident memory.
        """
    )

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: "Threads for the matrix products.")
    var threads = 2

    @Option(help: "Prompt tokens.")
    var promptTokens = 128

    @Option(help: "Generated tokens.")
    var genTokens = 128

    @Option(help: "Timed runs (after one warm-up).")
    var runs = 5

    @Flag(help: "Print JSON.")
    var json = false

    static let filler = "The quick brown fox jumps over the lazy dog. In 1969, astronauts landed on the Moon, "
        + "and millions watched the grainy broadcast live. Structured output lets a language model "
        + "emit JSON that always parses: {\"name\": \"Ada\", \"age\": 36, \"tags\": [\"math\", \"code\"]}. "

    func validate() throws {
        guard promptTokens > 0, genTokens > 0, runs > 0, threads > 0 else {
            throw ValidationError("--prompt-tokens, --gen-tokens, --runs and --threads must be positive")
        }
    }

    func run() throws {
        let loaded = try LoadedModel(model)
        let vocabulary = loaded.tokenizer.vocabulary
        var prompt: [Int] = vocabulary.addBOS ? [vocabulary.bosTokenID!] : []
        let body = loaded.tokenizer.encode(Self.filler, addingSpecialTokens: false)
        while prompt.count < promptTokens { prompt += body }
        prompt = Array(prompt.prefix(promptTokens))
        let cache = loaded.model.makeCache(contextLength: promptTokens + genTokens)
        var prefill: [Double] = [], decode: [Double] = []
        var firstTokenSeconds = 0.0
        var generated: [Int] = []
        for run in 0 ... runs {
            cache.clear()
            let start = ContinuousClock.now
            var logits = try loaded.model.evaluate(prompt, cache: cache, threadCount: threads)
            let prefillSeconds = (ContinuousClock.now - start).seconds
            var tokens: [Int] = []
            let decodeStart = ContinuousClock.now
            var sampler = Sampler(options: .greedy)
            for step in 0 ..< genTokens {
                guard let best = sampler.sample(logits, history: []) else { break }
                tokens.append(best)
                if run == 0 && step == 0 { firstTokenSeconds = processSeconds() }
                logits = try loaded.model.evaluate([best], cache: cache, threadCount: threads)
            }
            let decodeSeconds = (ContinuousClock.now - decodeStart).seconds
            if run > 0 {
                prefill.append(Double(prompt.count) / prefillSeconds)
                decode.append(Double(genTokens) / decodeSeconds)
            }
            generated = tokens
        }
        let resident = residentBytes()
        if json {
            let report: JSONText = .object([
                ("model", .string(URL(fileURLWithPath: loaded.path).lastPathComponent)),
                ("threads", .integer(threads)),
                ("prompt_tokens", .integer(prompt.count)),
                ("gen_tokens", .integer(genTokens)),
                ("runs", .integer(runs)),
                ("prefill_tok_s", .number(median(prefill))),
                ("decode_tok_s", .number(median(decode))),
                ("prefill_tok_s_all", .array(prefill.map { .number($0) })),
                ("decode_tok_s_all", .array(decode.map { .number($0) })),
                ("first_token_s", .number(firstTokenSeconds)),
                ("first_gen_tokens", .array(generated.prefix(16).map { .integer($0) })),
                ("resident_bytes", .integer(resident)),
                ("weights_bytes", .integer(loaded.file.fileSize)),
                ("kv_cache_bytes", .integer(cache.byteCount)),
            ])
            print(report.encoded(indent: nil))
        } else {
            print(String(format: "prefill %.1f tok/s (%d tokens), decode %.1f tok/s (%d tokens), %d threads, medians of %d runs",
                         median(prefill), prompt.count, median(decode), genTokens, threads, runs))
            print(String(format: "first token %.0f ms after process start; resident %.0f MiB (file %.0f MiB mapped, KV cache %.1f MiB)",
                         firstTokenSeconds * 1000, Double(resident) / 1_048_576, Double(loaded.file.fileSize) / 1_048_576,
                         Double(cache.byteCount) / 1_048_576))
        }
    }
}

/// Seconds since this process started (Linux: from /proc; elsewhere: since first use).
func processSeconds() -> Double {
    #if os(Linux)
    if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
       let uptime = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8),
       let close = stat.lastIndex(of: ")") {
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // Field 22 (starttime, in clock ticks since boot) is the 20th after the command name.
        if fields.count > 19, let ticks = Double(fields[19]), let now = Double(uptime.split(separator: " ")[0]) {
            return now - ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
    #endif
    return ProcessInfo.processInfo.systemUptime - processStart
}

private let processStart = ProcessInfo.processInfo.systemUptime

/// Resident set size in bytes (0 where unknown).
func residentBytes() -> Int {
    #if os(Linux)
    if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
        let fields = statm.split(separator: " ")
        if fields.count > 1, let pages = Int(fields[1]) { return pages * sysconf(Int32(_SC_PAGESIZE)) }
    }
    #endif
    return 0
}
