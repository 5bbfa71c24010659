import Foundation
import TypesetTestSupport
import Testing

/// End-to-end tests of the `typeset` executable, run as a subprocess the way users and
/// scripts run it.
@Suite struct CommandLineTests {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// The `typeset` binary built beside this test bundle.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("typeset")
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      standardOutput: String(decoding: outputData, as: UTF8.self),
                      standardError: String(decoding: errorData, as: UTF8.self))
    }

    static func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "typeset-test-\(UUID().uuidString).gguf"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A failing command prints exactly one line, `error: …`, and exits with status 1.
    static func expectOneLineError(_ result: Result, containing text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 1, sourceLocation: sourceLocation)
        let lines = result.standardError.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count == 1, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(lines.first?.hasPrefix("error: ") == true, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.contains(text), "\(result.standardError)", sourceLocation: sourceLocation)
    }

    @Test func executableIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Self.executable.path), "build the package first: \(Self.executable.path)")
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)),
          arguments: TestModels.realModels.map(\.fileName))
    func inspectJSONMatchesGGUFPy(fileName: String) throws {
        let result = try Self.run(["inspect", TestModels.path(of: fileName), "--json"])
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let expected = try #require(try JSONSerialization.jsonObject(with: Fixtures.data("expected/\(fileName).gguf-py.json")) as? [String: Any])
        for key in ["version", "tensor_count", "kv_count", "alignment", "data_offset"] {
            #expect(report[key] as? Int == expected[key] as? Int, "\(key)")
        }
        let tensors = try #require(report["tensors"] as? [[String: Any]])
        let expectedTensors = try #require(expected["tensors"] as? [[String: Any]])
        #expect(tensors.count == expectedTensors.count)
        for (tensor, reference) in zip(tensors, expectedTensors) {
            #expect(tensor["name"] as? String == reference["name"] as? String)
            #expect(tensor["type"] as? String == reference["type"] as? String)
            #expect(tensor["shape"] as? [Int] == reference["shape"] as? [Int])
            #expect(tensor["offset"] as? Int == reference["offset"] as? Int)
            #expect(tensor["file_offset"] as? Int == reference["file_offset"] as? Int)
            #expect(tensor["n_bytes"] as? Int == reference["n_bytes"] as? Int)
        }
        let metadata = try #require(report["metadata"] as? [[String: Any]])
        let expectedMetadata = try #require(expected["metadata"] as? [[String: Any]])
        #expect(metadata.map { $0["key"] as? String } == expectedMetadata.map { $0["key"] as? String })
        #expect(metadata.map { $0["type"] as? String } == expectedMetadata.map { $0["type"] as? String })
        #expect(metadata.map { $0["count"] as? Int } == expectedMetadata.map { $0["count"] as? Int })
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func inspectTextFindsTheDefaultModel() throws {
        let result = try Self.run(["inspect"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput.contains("GGUF v3, 272 tensors, 33 metadata entries"))
        #expect(result.standardOutput.contains("tokenizer.ggml.tokens"))
        #expect(result.standardOutput.contains("49152 × [\"<|endoftext|>\""))
        #expect(result.standardOutput.contains("token_embd.weight"))
        // A known name resolves in the cache too.
        #expect(try Self.run(["inspect", "gemma3"]).standardOutput.contains("GGUF v3, 236 tensors"))
    }

    @Test func missingModelSaysWhatToRun() throws {
        let result = try Self.run(["demo"], environment: ["TYPESET_CACHE": "/nonexistent/typeset-cache", "TYPESET_MODEL": ""])
        Self.expectOneLineError(result, containing: "Fixtures/fetch.sh")
        Self.expectOneLineError(try Self.run(["inspect", "/nonexistent/model.gguf"]), containing: "no model file at /nonexistent/model.gguf")
        Self.expectOneLineError(try Self.run(["inspect"], environment: ["TYPESET_MODEL": "/nonexistent/x.gguf"]),
                                containing: "TYPESET_MODEL is set to /nonexistent/x.gguf")
    }

    /// A command whose default input is missing names the file it wanted and how to get it.
    @Test func missingDefaultInputSaysWhatToRun() throws {
        let cache = "/nonexistent/typeset-cache"
        let result = try Self.run(["bench", "masks"], environment: ["TYPESET_CACHE": cache])
        Self.expectOneLineError(result, containing: "the MaskBench slice, which this command reads by default, is not at \(cache)/maskbench-dev")
        Self.expectOneLineError(result, containing: "Fixtures/fetch.sh maskbench")
        // Named files are read as given.
        Self.expectOneLineError(try Self.run(["bench", "masks", "/nonexistent/schemas"], environment: ["TYPESET_CACHE": cache]),
                                containing: "cannot read '/nonexistent/schemas': no such file or directory")
    }

    @Test func corruptFilesAreOneLineErrors() throws {
        let notGGUF = try Self.temporaryFile(Array("PK\u{3}\u{4} this is a zip".utf8))
        defer { try? FileManager.default.removeItem(atPath: notGGUF) }
        Self.expectOneLineError(try Self.run(["inspect", notGGUF]), containing: "not a GGUF file")

        var truncated = Array("GGUF".utf8) + [3, 0, 0, 0] + [1, 0, 0, 0, 0, 0, 0, 0]
        truncated += [0, 0, 0, 0, 0, 0, 0, 0x10]   // 2^60 metadata entries
        let hostile = try Self.temporaryFile(truncated)
        defer { try? FileManager.default.removeItem(atPath: hostile) }
        Self.expectOneLineError(try Self.run(["inspect", hostile, "--json"]), containing: "at byte 16")

        Self.expectOneLineError(try Self.run(["inspect", NSTemporaryDirectory()]), containing: "it is a directory, not a GGUF file")
        let empty = try Self.temporaryFile([])
        defer { try? FileManager.default.removeItem(atPath: empty) }
        Self.expectOneLineError(try Self.run(["inspect", empty]), containing: "truncated file")
    }

    /// On the small Qwen model (the default, Qwen 1.5B, runs in CI's command-line smoke stage).
    @Test(.enabled(if: TestModels.shouldRun(TestModels.qwen05FileName)))
    func demoGeneratesAValidBrewSummary() throws {
        let result = try Self.run(["demo", "--model", "qwen0.5b"])
        #expect(result.status == 0, "\(result.standardError)")
        let line = try #require(result.standardOutput.split(separator: "\n").first { $0.hasPrefix("json: ") })
        let validator = try JSONSchemaValidator(schemaText: Fixtures.seedSchema("brew_summary.json"))
        #expect(validator.problems(in: String(line.dropFirst(6))) == [])
        // The Swift value, as source would spell it.
        #expect(result.standardOutput.contains("BrewSummary(\n    flavor: \""))
        #expect(result.standardOutput.firstMatch(of: /\n    note: \.(fruity|nutty|chocolatey|floral|sour|bitter|balanced)\n\)/) != nil)
        #expect(result.standardOutput.contains("tok/s"))
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)))
    func tokenizePrintsLlamaCppIDs() throws {
        // Ids recorded from llama.cpp (Fixtures/tokenizer/expected/*.json probes).
        let chat = "<|im_start|>user\nHi<|im_end|>"
        let parsed = try Self.run(["tokenize", "--model", "smollm2", "--parse-special", "--text", chat])
        #expect(parsed.status == 0, "\(parsed.standardError)")
        #expect(parsed.standardOutput == "[1,4093,198,26843,2]\n")
        let gemma = try Self.run(["tokenize", "--model", "gemma3", "--text", "<eos>"])
        #expect(gemma.standardOutput == "[2,236820,211827,236813]\n")
        let gemmaSpecial = try Self.run(["tokenize", "--model", "gemma3", "--no-bos", "--parse-special", "--text", "<eos>"])
        #expect(gemmaSpecial.standardOutput == "[1]\n")
        // From a file, and the same bytes on standard input's stand-in.
        let file = try Self.temporaryFile(Array("naïve café 日本 🙂".utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let fromFile = try Self.run(["tokenize", "--model", "smollm2", "--file", file])
        let fromText = try Self.run(["tokenize", "--model", "smollm2", "--text", "naïve café 日本 🙂"])
        #expect(fromFile.status == 0 && fromFile.standardOutput == fromText.standardOutput)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func tokenizeErrorsAreOneLine() throws {
        // A usage error: one line too, with ArgumentParser's usage status (64).
        let usage = try Self.run(["tokenize", "--model", "smollm2"])
        #expect(usage.status == 64)
        #expect(usage.standardError.hasPrefix("error: ") && usage.standardError.contains("exactly one of --text and --file"))
        #expect(usage.standardError.split(separator: "\n").count == 1)
        Self.expectOneLineError(try Self.run(["tokenize", "--model", "smollm2", "--file", "/nonexistent/input.txt"]),
                                containing: "cannot read '/nonexistent/input.txt'")
        Self.expectOneLineError(try Self.run(["bench", "tokenize", "--model", "smollm2", "--file", "/nonexistent/input.txt"]),
                                containing: "cannot read")
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func benchTokenizeReportsThroughput() throws {
        let file = try Self.temporaryFile(Array(String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 2000).utf8))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try Self.run(["bench", "tokenize", "--model", "smollm2", "--file", file, "--runs", "2", "--json"])
        #expect(result.status == 0, "\(result.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect((report["mb_s"] as? Double ?? 0) > 0)
        #expect((report["tokens"] as? Int ?? 0) > 15_000)
        #expect(report["bytes"] as? Int == 90_000)
    }
}

extension CommandLineTests {
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func runAnswersThroughTheChatTemplate() throws {
        let result = try Self.run(["run", "--model", "smollm2", "What is the capital of France?"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "The capital of France is Paris.\n")
        #expect(result.standardError.contains("finish: stop"))
    }

    /// A prompt longer than one prefill chunk (512 tokens) reports its progress with
    /// `--progress`, and nothing without it (standard error is a pipe here).
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func longPromptsReportTheirProgress() throws {
        let prompt = "Summarize: " + String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 60)
        let quiet = try Self.run(["run", "--model", "smollm2", "--max-tokens", "1", prompt])
        #expect(quiet.status == 0, "\(quiet.standardError)")
        #expect(!quiet.standardError.contains("reading the prompt"))
        let reported = try Self.run(["run", "--model", "smollm2", "--max-tokens", "1", "--progress", prompt])
        #expect(reported.status == 0, "\(reported.standardError)")
        let lines = reported.standardError.split(separator: "\n").filter { $0.hasPrefix("reading the prompt (") }
        #expect(lines.last?.hasSuffix(" 100%") == true, "\(reported.standardError)")
        // More than one chunk: the token count is above 512.
        let count = lines.last.flatMap { Int($0.dropFirst("reading the prompt (".count).prefix { $0.isNumber }) } ?? 0
        #expect(count > 512, "\(reported.standardError)")
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func perplexityAndBenchDecodeReportJSON() throws {
        let text = try Self.temporaryFile(Array(String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 60).utf8))
        defer { try? FileManager.default.removeItem(atPath: text) }
        let perplexity = try Self.run(["perplexity", "--model", "smollm2", "--file", text, "--ctx", "128", "--json"])
        #expect(perplexity.status == 0, "\(perplexity.standardError)")
        // Standard error is a pipe here and --progress is not set: no progress lines.
        #expect(perplexity.standardError.isEmpty, "\(perplexity.standardError)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(perplexity.standardOutput.utf8)) as? [String: Any])
        // A repeated sentence is easy to predict once seen.
        #expect((report["ppl"] as? Double ?? 0) > 1 && (report["ppl"] as? Double ?? 99) < 3)
        #expect(report["tokens"] as? Int == report["chunks"] as! Int * 63)
        Self.expectOneLineError(try Self.run(["perplexity", "--model", "smollm2", "--file", text, "--ctx", "4096"]), containing: "needs at least one chunk")

        // llama_bench.py's line for the same model, with round figures, for the chart.
        let peer = try Self.temporaryFile(Array(#"{"model": "SmolLM2-135M-Instruct.Q4_1.gguf", "prefill_tok_s": 100.0, "decode_tok_s": 50.0}"#.utf8))
        let chart = NSTemporaryDirectory() + "typeset-test-\(UUID().uuidString).svg"
        defer { try? FileManager.default.removeItem(atPath: peer); try? FileManager.default.removeItem(atPath: chart) }
        let bench = try Self.run(["bench", "decode", "--model", "smollm2", "--prompt-tokens", "16", "--gen-tokens", "8", "--runs", "1", "--json",
                                  "--progress", "--svg", chart, "--peer", peer])
        #expect(bench.status == 0, "\(bench.standardError)")
        #expect(bench.standardError.contains("loading the model"), "\(bench.standardError)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(bench.standardOutput.utf8)) as? [String: Any])
        for key in ["prefill_tok_s", "decode_tok_s", "first_token_s"] { #expect((figures[key] as? Double ?? 0) > 0, "\(key)") }
        #expect((figures["resident_bytes"] as? Int ?? 0) > 0)
        // The chart's bars are Typeset's figures over the peer's.
        let svg = try String(contentsOfFile: chart, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        let prefillRatio = (figures["prefill_tok_s"] as? Double ?? 0) / 100, decodeRatio = (figures["decode_tok_s"] as? Double ?? 0) / 50
        for (name, ratio) in [("prefill", prefillRatio), ("decode", decodeRatio)] {
            let shown = ratio >= 100 ? String(format: "%.0f", ratio) : ratio >= 10 ? String(format: "%.1f", ratio) : String(format: "%.2f", ratio)
            #expect(svg.contains("<title>\(name), SmolLM2-135M-Instruct.Q4_1: \(shown)</title>"), "\(name) \(shown)")
        }
        let unwritable = try Self.run(["bench", "decode", "--model", "smollm2", "--runs", "1", "--gen-tokens", "1", "--svg", "/nonexistent/dir/chart.svg"])
        Self.expectOneLineError(unwritable, containing: "/nonexistent/dir/chart.svg")
        // A file that cannot be written is not a usage error: no pointer to the help.
        #expect(!unwritable.standardError.contains("typeset help"), "\(unwritable.standardError)")
    }
}
