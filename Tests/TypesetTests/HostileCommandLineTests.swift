import Foundation
import Testing
import TypesetTestSupport

/// The command-line contract under hostile input (docs/reliability.md): every failure is one
/// `error:` line of ours with a non-zero status, in bounded time and memory.
@Suite struct HostileCommandLineTests {
    typealias CLI = CommandLineTests

    /// A usage error: a non-zero status and one line naming the flag.
    static func expectUsageError(_ result: CLI.Result, naming flag: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status != 0, sourceLocation: sourceLocation)
        let lines = result.standardError.split(separator: "\n", omittingEmptySubsequences: true)
        #expect(lines.count == 1 && lines[0].hasPrefix("error: ") && lines[0].contains(flag), "\(result.standardError)",
                sourceLocation: sourceLocation)
    }

    static func file(_ bytes: [UInt8], named suffix: String = ".json") throws -> String {
        let path = NSTemporaryDirectory() + "typeset-test-\(UUID().uuidString)\(suffix)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A FIFO is refused before it is opened (opening one for reading blocks until a writer comes).
    @Test func aFIFOIsNotAModel() throws {
        let path = NSTemporaryDirectory() + "typeset-fifo-\(UUID().uuidString).gguf"
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        CLI.expectOneLineError(try CLI.run(["inspect", path]), containing: "pipe")
        CLI.expectOneLineError(try CLI.run(["tokenize", "--model", path, "--text", "hi"]), containing: "pipe")
        CLI.expectOneLineError(try CLI.run(["inspect"], environment: ["TYPESET_MODEL": path]), containing: "pipe")
    }

    /// Every command checks its numeric flags the same way (range and NaN), before loading anything.
    @Test func numericFlagsAreCheckedByEveryCommand() throws {
        for arguments in [["run", "hi"], ["demo"], ["perplexity", "--file", "/dev/null"], ["serve"], ["bench", "decode"]] {
            Self.expectUsageError(try CLI.run(arguments + ["--threads", "0"]), naming: "--threads")
        }
        for (flag, value) in [("--temperature", "-1"), ("--temperature", "nan"), ("--top-p", "0"), ("--top-p", "1.5"),
                              ("--top-k", "-3"), ("--min-p", "2"), ("--repetition-penalty", "nan"), ("--repetition-penalty", "0"),
                              ("--dry-base", "1"), ("--compile-seconds", "nan"), ("--compile-memory", "0"),
                              ("--whitespace", "loose"), ("--whitespace", "flexible:-1"), ("--whitespace", "flexible:x")] {
            Self.expectUsageError(try CLI.run(["run", flag, value, "hi"]), naming: flag)
        }
        Self.expectUsageError(try CLI.run(["demo", "--temperature", "inf"]), naming: "--temperature")
    }

    /// Schema files are read the same way by every command: a byte-order mark is dropped,
    /// invalid UTF-8 is one error naming the byte, and an endless file stops at the limit.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func schemaFilesAreReadAlikeByEveryCommand() throws {
        let latin1 = try Self.file(Array(#"{"description":"caf"#.utf8) + [0xE9] + Array(#"","type":"integer"}"#.utf8))
        let withMark = try Self.file([0xEF, 0xBB, 0xBF] + Array(#"{"type":"integer","minimum":3,"maximum":3}"#.utf8))
        defer { for path in [latin1, withMark] { try? FileManager.default.removeItem(atPath: path) } }
        CLI.expectOneLineError(try CLI.run(["grammar", "compile", "--schema", latin1]), containing: "not UTF-8 text (invalid byte at offset 19)")
        CLI.expectOneLineError(try CLI.run(["run", "--schema", latin1, "hi"]), containing: "not UTF-8 text (invalid byte at offset 19)")
        CLI.expectOneLineError(try CLI.run(["run", "--schema", "/dev/zero", "hi"]), containing: "larger than 64 MiB")
        #expect(try CLI.run(["grammar", "compile", "--schema", withMark]).status == 0)
        let reply = try CLI.run(["run", "--schema", withMark, "--max-tokens", "8", "A number."])
        #expect(reply.status == 0, "\(reply.standardError)")
        #expect(reply.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
    }

    /// A token budget no value fits: an error with the tokens the shortest value takes, not an
    /// empty reply with status 0. A schema past the compile budget: a budget error, at once.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func runSchemaPrintsAValueOrAnError() throws {
        let long = try Self.file(Array(#"{"type":"array","minItems":2000,"items":{"type":"integer"}}"#.utf8))
        let crossProduct = try Self.file(Array(("{\"allOf\":[" + (0 ..< 20).map { index in
            #"{"anyOf":[{"type":"object","properties":{"a\#(index)":{"type":"integer"}}},{"type":"object","properties":{"b\#(index)":{"type":"string"}}}]}"#
        }.joined(separator: ",") + "]}").utf8))
        let surrogate = try Self.file(Array(#"{"const":"\ud800"}"#.utf8))
        defer { for path in [long, crossProduct, surrogate] { try? FileManager.default.removeItem(atPath: path) } }
        CLI.expectOneLineError(try CLI.run(["run", "--schema", long, "--max-tokens", "64", "Numbers."]),
                               containing: "the schema's shortest value takes")
        CLI.expectOneLineError(try CLI.run(["run", "--schema", crossProduct, "--compile-seconds", "0.5", "hi"]),
                               containing: "compilation budget exceeded")
        CLI.expectOneLineError(try CLI.run(["run", "--schema", surrogate, "hi"]), containing: "unpaired high surrogate")
    }

    /// `grammar trace` on an instance the grammar rejects says so and exits 1, without
    /// ArgumentParser's internals; a grammar text with no base case speaks of its rule.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func grammarCommandsSpeakTheirLanguage() throws {
        let schema = try Self.file(Array(#"{"type":"integer"}"#.utf8))
        let grammar = try Self.file(Array("root ::= loop\nloop ::= \"a\" loop\n".utf8), named: ".gbnf")
        defer { for path in [schema, grammar] { try? FileManager.default.removeItem(atPath: path) } }
        let trace = try CLI.run(["grammar", "trace", "--schema", schema, "--instance", "\"text\""])
        #expect(trace.status == 1)
        #expect(!trace.standardError.contains("ExitCode"), "\(trace.standardError)")
        CLI.expectOneLineError(try CLI.run(["grammar", "compile", "--ebnf", grammar]), containing: "rule 'root' can never finish")
    }

    /// Standard input is read in blocks up to a limit, whatever comes down the pipe.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func endlessStandardInputStopsAtTheLimit() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "yes | '\(CLI.executable.path)' tokenize --file - --max-bytes 4000000 > /dev/null"]
        let error = Pipe()
        process.standardError = error
        try process.run()
        let message = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(message.hasPrefix("error: standard input is larger than 4000000 bytes"), "\(message)")
    }

    /// SIGQUIT ends a run as SIGINT does: no crash report, no generation carrying on.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func quitSignalEndsARunLikeInterrupt() throws {
        let process = Process()
        process.executableURL = CLI.executable
        process.arguments = ["run", "--max-tokens", "4000", "--context", "8192", "Write a very long story about the sea."]
        let output = Pipe(), error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // Wait for the first words, then quit.
        _ = output.fileHandleForReading.availableData
        kill(process.processIdentifier, SIGQUIT)
        let message = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGINT, "\(process.terminationStatus)")
        #expect(!message.contains("crashed") && !message.contains("Backtrace"), "\(message)")
    }
}
