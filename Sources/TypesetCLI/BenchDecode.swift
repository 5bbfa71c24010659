import ArgumentParser
import Foundation
import Typeset

struct BenchDecode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Prefill and decode tokens/s, measured as llama-bench measures llama.cpp.",
        discussion: """
        Each run starts from an empty cache: one prefill of --prompt-tokens tokens (BOS if the \
        model adds one, then a fixed English/JSON filler), then --gen-tokens greedy decode steps. \
        Figures are medians over --runs runs after one warm-up. Also reports the time from \
        process start to the first generated token and the resident memory. With --sequences N, \
        N prompts (the filler, each shifted) are decoded together, one forward pass per step for \
        all of them, as a server batches its requests: decode tok/s is then the aggregate.
        """
    )

    @OptionGroup var progressOptions: ProgressOptions

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(parsing: .unconditional, help: "Threads for the matrix products.")
    var threads = 2

    @Option(help: "Prompt tokens.")
    var promptTokens = 128

    @Option(help: "Generated tokens.")
    var genTokens = 128

    @Option(help: "Timed runs (after one warm-up).")
    var runs = 5

    @Option(help: "Sequences decoded together (continuous batching); tok/s are then the aggregate.")
    var sequences = 1

    @Flag(help: "Draft tokens by prompt lookup (what followed the last few tokens where they occurred before) and verify them in the passes; prints how many were drafted and kept, and the tokens per pass.")
    var lookup = false

    @Option(help: "A smaller model of the same vocabulary (a GGUF file or known model name) whose greedy guesses are verified in the passes (where --lookup finds none); prints how many were drafted and kept, the tokens per pass and the draft model's passes.")
    var draft: String?

    @Option(help: "A file whose text is the prompt, in place of the filler (control tokens such as a chat template's markup read as such; --prompt-tokens then only caps it).")
    var promptFile: String?

    @Flag(help: "Print JSON.")
    var json = false

    @Option(help: "Also write an SVG bar chart of the figures: against llama.cpp (with --peer), else in tokens/s.")
    var svg: String?

    @Option(help: "llama.cpp's figures for the chart: a file of JSON lines with model, prefill_tok_s and decode_tok_s, as the peers' llama_bench.py prints them (repeatable; docs/benchmarks.md).")
    var peer: [String] = []

    @Option(help: "More models for the chart: files of earlier 'typeset bench decode --json' output (repeatable).")
    var include: [String] = []

    static let filler = "The quick brown fox jumps over the lazy dog. In 1969, astronauts landed on the Moon, "
        + "and millions watched the grainy broadcast live. Structured output lets a language model "
        + "emit JSON that always parses: {\"name\": \"Ada\", \"age\": 36, \"tags\": [\"math\", \"code\"]}. "

    func validate() throws {
        guard promptTokens > 0, genTokens > 0, runs > 0, sequences > 0 else {
            throw ValidationError("--prompt-tokens, --gen-tokens, --runs and --sequences must be positive")
        }
        try validateThreads(threads)
    }

    func run() throws {
        let loaded = try LoadedModel(model, progress: progressOptions.makeReporter())
        let vocabulary = loaded.tokenizer.vocabulary
        var prompt: [Int] = vocabulary.addBOS ? [vocabulary.bosTokenID!] : []
        // A prompt file is the user's own text: its control tokens (a chat template's markup) are read as such.
        let body = loaded.tokenizer.encode(try promptFile.map { try readText($0, what: "prompt") } ?? Self.filler,
                                           addingSpecialTokens: false, parsingSpecialTokens: promptFile != nil)
        if promptFile != nil {
            prompt += body
        } else {
            while prompt.count < promptTokens { prompt += body }
        }
        prompt = Array(prompt.prefix(promptTokens))
        let contextLength = prompt.count + genTokens
        let draftModel = try draft.map { name in
            try DraftModel(path: try ModelStore.resolve(name), targetModel: loaded.model, targetVocabulary: vocabulary,
                           contextLength: promptTokens + genTokens + 16, threadCount: threads)
        }
        if sequences > 1 { return try runBatched(loaded, body: body, draftModel: draftModel) }
        // One token more than measured: the loop does not evaluate the last token it appends,
        // so --gen-tokens decode steps (forward passes) follow the prefill, as llama-bench counts.
        let generator = TextGenerator(model: loaded.model, tokenizer: loaded.tokenizer,
                                      contextLength: contextLength, threadCount: threads)
        var prefill: [Double] = [], decode: [Double] = []
        var drafts = DraftCounts()
        var firstTokenSeconds = 0.0
        var generated: [Int] = []
        for run in 0 ... runs {
            generator.cache.clear()
            let result = try generator.generate(prompt: prompt, maxTokens: genTokens + 1, stopsAtEndOfGeneration: false,
                                                lookup: lookup ? PromptLookup() : nil, draftModel: draftModel, onToken: { _ in
                if run == 0 && firstTokenSeconds == 0 { firstTokenSeconds = processSeconds() }
                return true
            })
            if run > 0 {
                prefill.append(result.stats.prefillTokensPerSecond)
                decode.append(Double(genTokens) / result.stats.decodeSeconds)
                drafts.add(result.stats)
            }
            generated = Array(result.tokens.prefix(genTokens))
        }
        let resident = residentBytes()
        if let svg {
            let ours = DecodeFigures(model: URL(fileURLWithPath: loaded.path).lastPathComponent, prefill: median(prefill), decode: median(decode))
            // An earlier line of the measured model gives way to this measurement.
            let earlier = try include.flatMap(DecodeFigures.read).filter { $0.model != ours.model }
            try DecodeFigures.chart(ours: earlier + [ours], peers: try peer.flatMap(DecodeFigures.read), threads: threads).write(to: svg)
        }
        if json {
            let report: JSONValue = .object([
                ("model", .string(URL(fileURLWithPath: loaded.path).lastPathComponent)),
                ("threads", JSONValue(threads)),
                ("prompt_tokens", JSONValue(prompt.count)),
                ("gen_tokens", JSONValue(genTokens)),
                ("runs", JSONValue(runs)),
                ("prefill_tok_s", JSONValue(median(prefill))),
                ("decode_tok_s", JSONValue(median(decode))),
                ("prefill_tok_s_all", .array(prefill.map { JSONValue($0) })),
                ("decode_tok_s_all", .array(decode.map { JSONValue($0) })),
                ("first_token_s", JSONValue(firstTokenSeconds)),
                ("first_gen_tokens", .array(generated.prefix(16).map { JSONValue($0) })),
                ("resident_bytes", JSONValue(resident)),
                ("weights_bytes", JSONValue(loaded.file.fileSize)),
                ("kv_cache_bytes", JSONValue(generator.cache.byteCount)),
            ] + (draftModel.map { [("draft_weights_bytes", JSONValue($0.weightByteCount)), ("draft_kv_cache_bytes", JSONValue($0.idleCacheByteCount))] } ?? [])
              + (lookup || draftModel != nil ? drafts.json : []))
            print(report.compactText)
        } else {
            print(String(format: "prefill %.1f tok/s (%d tokens), decode %.1f tok/s (%d tokens), %d threads, medians of %d runs",
                         median(prefill), prompt.count, median(decode), genTokens, threads, runs))
            print(String(format: "first token %.0f ms after process start; resident %.0f MiB (file %.0f MiB mapped, KV cache %.1f MiB)",
                         firstTokenSeconds * 1000, Double(resident) / 1_048_576, Double(loaded.file.fileSize) / 1_048_576,
                         Double(generator.cache.byteCount) / 1_048_576))
            if let draftModel {
                print(String(format: "draft model: weights %.0f MiB mapped, KV cache %.1f MiB", Double(draftModel.weightByteCount) / 1_048_576,
                             Double(draftModel.idleCacheByteCount) / 1_048_576))
            }
            if lookup || draftModel != nil { print(drafts.summary) }
        }
    }
}

extension BenchDecode {
    /// `--sequences N`: N prompts of the filler (each starting a few tokens further into it,
    /// so they differ) decoded together; aggregate tok/s over the slowest sequence's time.
    func runBatched(_ loaded: LoadedModel, body: [Int], draftModel: DraftModel?) throws {
        let vocabulary = loaded.tokenizer.vocabulary
        let prompts: [[Int]] = (0 ..< sequences).map { index in
            var prompt: [Int] = vocabulary.addBOS ? [vocabulary.bosTokenID!] : []
            let shifted = Array(body.dropFirst(3 * index % max(1, body.count)))
            while prompt.count < promptTokens { prompt += shifted.isEmpty ? body : shifted + body }
            return Array(prompt.prefix(promptTokens))
        }
        var prefill: [Double] = [], decode: [Double] = [], perSequence: [Double] = []
        var drafts = DraftCounts()
        for run in 0 ... runs {
            let results = try TextGenerator.generate(
                model: loaded.model, tokenizer: loaded.tokenizer, prompts: prompts, maxTokens: genTokens + 1,
                stopsAtEndOfGeneration: false, lookup: lookup ? PromptLookup() : nil, draftModel: draftModel,
                contextLength: prompts.map(\.count).max()! + genTokens, threadCount: threads)
            guard run > 0 else { continue }
            results.forEach { drafts.add($0.stats) }
            let slowestPrefill = results.map(\.stats.prefillSeconds).max() ?? 1
            let slowestDecode = results.map(\.stats.decodeSeconds).max() ?? 1
            prefill.append(Double(sequences * promptTokens) / slowestPrefill)
            decode.append(Double(sequences * genTokens) / slowestDecode)
            perSequence.append(median(results.map { Double(genTokens) / $0.stats.decodeSeconds }))
        }
        if json {
            print(JSONValue.object([
                ("model", .string(URL(fileURLWithPath: loaded.path).lastPathComponent)), ("threads", JSONValue(threads)),
                ("sequences", JSONValue(sequences)), ("prompt_tokens", JSONValue(promptTokens)), ("gen_tokens", JSONValue(genTokens)),
                ("runs", JSONValue(runs)), ("prefill_tok_s", JSONValue(median(prefill))), ("decode_tok_s", JSONValue(median(decode))),
                ("decode_tok_s_per_sequence", JSONValue(median(perSequence))),
                ("decode_tok_s_all", .array(decode.map { JSONValue($0) })),
            ] + (lookup || draftModel != nil ? drafts.json : [])).compactText)
        } else {
            print(String(format: "%d sequences together: prefill %.1f tok/s, decode %.1f tok/s in all (%.1f per sequence), %d threads, medians of %d runs",
                         sequences, median(prefill), median(decode), median(perSequence), threads, runs))
            if lookup || draftModel != nil { print(drafts.summary) }
        }
    }
}

/// Drafted and kept tokens over the timed runs, and the tokens each decode pass yielded.
struct DraftCounts {
    var drafted = 0, kept = 0, tokens = 0, passes = 0, draftPasses = 0

    mutating func add(_ stats: GenerationStats) {
        drafted += stats.draftedTokens
        kept += stats.acceptedDraftTokens
        draftPasses += stats.draftModelPasses
        tokens += max(0, stats.completionTokens - 1)   // the first token comes from the prefill
        passes += stats.decodePasses
    }

    var acceptance: Double { drafted == 0 ? 0 : Double(kept) / Double(drafted) }
    var tokensPerPass: Double { passes == 0 ? 1 : Double(tokens) / Double(passes) }

    var summary: String {
        String(format: "drafts: %d tokens drafted, %d kept (%.0f%%), %.2f tokens per decode pass", drafted, kept,
               100 * acceptance, tokensPerPass)
            + (draftPasses > 0 ? String(format: "; %d draft model passes (%.2f per decode pass)", draftPasses,
                                        Double(draftPasses) / Double(max(1, passes))) : "")
    }

    var json: [(String, JSONValue)] {
        [("drafted_tokens", JSONValue(drafted)), ("kept_draft_tokens", JSONValue(kept)),
         ("draft_acceptance", JSONValue(acceptance)), ("tokens_per_pass", JSONValue(tokensPerPass)),
         ("draft_model_passes", JSONValue(draftPasses))]
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

/// Prefill and decode tokens/s of one model, as `typeset bench decode --json` and
/// `llama_bench.py bench` print them (both use `model`, `prefill_tok_s`, `decode_tok_s`).
struct DecodeFigures {
    var model: String
    var prefill: Double
    var decode: Double

    /// Every JSON line of `path` that holds the three fields.
    static func read(_ path: String) throws -> [DecodeFigures] {
        let text = String(decoding: try readInput(path), as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            guard let value = try? JSONValue(parsing: Array(line.utf8)), case .string(let model)? = value["model"],
                  case .number(let prefillText)? = value["prefill_tok_s"], case .number(let decodeText)? = value["decode_tok_s"],
                  let prefill = Double(prefillText), let decode = Double(decodeText) else { return nil }
            return DecodeFigures(model: model, prefill: prefill, decode: decode)
        }
    }

    /// With peers: Typeset's speed as a multiple of llama.cpp's per model (a line at 1);
    /// without: tokens/s.
    static func chart(ours: [DecodeFigures], peers: [DecodeFigures], threads: Int) -> BarChart {
        let names = ours.map { $0.model.replacingOccurrences(of: ".gguf", with: "") }
        guard !peers.isEmpty else {
            return BarChart(title: "Typeset, tokens/s at \(threads) threads", yLabel: "tokens/s", categories: names,
                            series: [.init(name: "prefill", values: ours.map(\.prefill)), .init(name: "decode", values: ours.map(\.decode))])
        }
        func ratio(_ figures: DecodeFigures, _ value: KeyPath<DecodeFigures, Double>) -> Double? {
            peers.last { $0.model == figures.model }.map { figures[keyPath: value] / $0[keyPath: value] }
        }
        return BarChart(
            title: "Typeset ÷ llama.cpp, tokens/s at \(threads) threads (same machine, same session)", yLabel: "× llama.cpp",
            categories: names,
            series: [.init(name: "prefill", values: ours.map { ratio($0, \.prefill) }),
                     .init(name: "decode", values: ours.map { ratio($0, \.decode) })],
            references: [.init(name: "llama.cpp", value: 1)])
    }
}
