import Foundation
import Testing
import TypesetTestSupport

/// Runs the Swift compiler on a fixture that uses the macros, with the Typeset module and the
/// compiler plugin this test run was built with.
struct _Compiler {
    /// The build products directory (holding `Modules/` and the plugin), found from the test
    /// bundle's location.
    static let productsDirectory: URL? = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0 ..< 4 {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("TypesetMacroPlugin-tool").path) { return url }
        }
        return nil
    }()

    struct Output {
        var status: Int32
        var text: String
    }

    static func typecheck(_ fixture: String, extraArguments: [String]) throws -> Output {
        let products = try #require(productsDirectory, "no TypesetMacroPlugin-tool beside \(CommandLine.arguments[0])")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "swiftc", "-typecheck", "-swift-version", "6", Fixtures.repositoryRoot + "/Tests/TypesetMacroTests/Fixtures/" + fixture,
            "-I", products.appendingPathComponent("Modules").path,
            "-load-plugin-executable", products.appendingPathComponent("TypesetMacroPlugin-tool").path + "#TypesetMacroPlugin",
            "-Xcc", "-fmodule-map-file=" + Fixtures.repositoryRoot + "/Sources/COpenBLAS/module.modulemap",
        ] + extraArguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, text: String(decoding: data, as: UTF8.self))
    }
}

@Suite struct MacroTests {
    /// The expansions of Fixtures/Expansions.swift, as the compiler dumps them, equal the
    /// reviewed golden file (regenerate it with TYPESET_UPDATE_GOLDEN=1 and review the diff).
    @Test func expansionsMatchTheGoldenFile() throws {
        let output = try _Compiler.typecheck("Expansions.swift", extraArguments: ["-Xfrontend", "-dump-macro-expansions"])
        #expect(output.status == 0, "\(output.text)")
        let golden = Fixtures.repositoryRoot + "/Tests/TypesetMacroTests/Fixtures/Expansions.expanded"
        if ProcessInfo.processInfo.environment["TYPESET_UPDATE_GOLDEN"] == "1" {
            try output.text.write(toFile: golden, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOfFile: golden, encoding: .utf8)
        #expect(output.text == expected)
        if output.text != expected {
            let diff = zip(output.text.split(separator: "\n", omittingEmptySubsequences: false), expected.split(separator: "\n", omittingEmptySubsequences: false))
                .enumerated().first { $0.element.0 != $0.element.1 }
            Issue.record("first difference at line \((diff?.offset ?? 0) + 1): \(diff.map { "\($0.element.0) ≠ \($0.element.1)" } ?? "length")")
        }
    }

    /// Every `// error:` annotation of Fixtures/Diagnostics.swift is reported on its line (a
    /// line may carry several), and nothing else is.
    @Test func diagnosticsAreTheAnnotatedOnes() throws {
        let fixture = try String(contentsOfFile: Fixtures.repositoryRoot + "/Tests/TypesetMacroTests/Fixtures/Diagnostics.swift", encoding: .utf8)
        var expected: Set<String> = []
        for (index, line) in fixture.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            for message in line.components(separatedBy: " // error: ").dropFirst() {
                expected.insert("\(index + 1): \(message)")
            }
        }
        #expect(expected.count == 21)
        let output = try _Compiler.typecheck("Diagnostics.swift", extraArguments: [])
        #expect(output.status != 0)
        var reported: Set<String> = []
        for line in output.text.split(separator: "\n") {
            // path:line:column: error: message
            let parts = line.split(separator: ":", maxSplits: 4, omittingEmptySubsequences: false)
            guard parts.count == 5, parts[0].hasSuffix("Diagnostics.swift"), parts[3] == " error" else { continue }
            var message = parts[4].dropFirst()
            // The compiler names the macro a diagnostic came from: " (from macro 'Generable')".
            if let suffix = message.range(of: " (from macro '", options: .backwards) { message = message[..<suffix.lowerBound] }
            reported.insert("\(parts[1]): \(message)")
        }
        #expect(reported.subtracting(expected).isEmpty, "unexpected: \(reported.subtracting(expected).sorted())")
        #expect(expected.subtracting(reported).isEmpty, "missing: \(expected.subtracting(reported).sorted())")
    }
}
