import Foundation
import Testing
@testable import TypesetGrammar

/// `CompiledGrammar.graphviz`: the automaton as a Graphviz graph that `dot` renders, with
/// every reachable rule, byte and rule edges, and each position's token counts.
@Suite struct GraphvizTests {
    static let vocabulary: GrammarVocabulary = {
        // A few tokens are enough to count: single characters and some words.
        let texts = ["{", "}", "\"", ":", ",", "a", "b", "1", "2", "\"a\"", "true", "\":", "<|end|>"]
        return GrammarVocabulary(tokens: texts.map { Array($0.utf8) }, endOfGeneration: [texts.count - 1])
    }()

    @Test func theGraphShowsRulesEdgesAndCounts() throws {
        let schema = #"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}},"required":["a"]}"#
        let grammar = try Grammar(jsonSchema: schema, options: .generation)
        let compiled = try CompiledGrammar(grammar, vocabulary: Self.vocabulary)
        let graph = compiled.graphviz
        #expect(graph.hasPrefix("digraph grammar {") && graph.hasSuffix("}\n"))
        for rule in compiled.ruleSummaries {
            #expect(graph.contains("label=\"\(rule.name)\""), "rule \(rule.name) has a cluster")
        }
        // The object opens with a byte edge, calls the integer's rule, and each position
        // shows its counts, which add up to the text tokens (the end of generation is the
        // matcher's to allow).
        #expect(graph.contains("[label=\"'{'\"]"))
        #expect(graph.contains("style=dashed"))
        let counts = graph.split(separator: "\n").filter { $0.contains("✓") }
        #expect(counts.count == compiled.statistics.positions)
        for position in compiled.positionSummaries {
            #expect(position.accepted + position.rejected + position.undecided == Self.vocabulary.size - 1)
        }
        #expect(graph.contains("shape=doublecircle"))
        try Self.render(graph)
    }

    /// Quotes and backslashes in rule names and byte classes stay inside their labels.
    @Test func labelsAreEscaped() throws {
        let grammar = try Grammar(ebnf: #"root ::= "\"" [\\\\] "x""#)
        let graph = try CompiledGrammar(grammar, vocabulary: Self.vocabulary).graphviz
        #expect(graph.contains(#"[label="'\"'"]"#))
        try Self.render(graph)
    }

    /// Renders `graph` with Graphviz's `dot` when it is installed (CI installs it and sets
    /// TYPESET_REQUIRE_GRAPHVIZ): it must parse.
    static func render(_ graph: String) throws {
        let dot = ["/usr/bin/dot", "/usr/local/bin/dot"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let dot else {
            if ProcessInfo.processInfo.environment["TYPESET_REQUIRE_GRAPHVIZ"] == "1" { Issue.record("Graphviz's dot is not installed") }
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: dot)
        process.arguments = ["-Tsvg"]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(graph.utf8))
        try input.fileHandleForWriting.close()
        let svg = output.fileHandleForReading.readDataToEndOfFile()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && complaint.isEmpty, "dot: \(complaint)")
        #expect(String(decoding: svg, as: UTF8.self).contains("<svg"))
    }
}
