import Foundation
import TypesetGrammar
import Testing
import TypesetTestSupport

/// The MaskBench slice (Fixtures/maskbench, unpacked into the cache by Fixtures/fetch.sh) with
/// both real tokenizers, by MaskBench's procedure: instances serialized as `json.dumps` does,
/// masked and accepted token by token. A fixed subset (every 50th file) runs by default;
/// `typeset bench masks` runs them all.
@Suite struct MaskBenchTests {
    static var directory: String { MaskBenchSlice.directory }

    static func subset() throws -> [(schema: JSONValue, tests: [(data: JSONValue, valid: Bool, label: String)])] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        return try stride(from: 0, to: files.count, by: 50).map { index in
            let file = files[index]
            let document = try JSONValue(parsing: try String(contentsOfFile: directory + "/" + file, encoding: .utf8))
            var tests: [(JSONValue, Bool, String)] = []
            if case .array(let list)? = document["tests"] {
                for (number, test) in list.enumerated() {
                    if let data = test["data"], case .bool(let valid)? = test["valid"] {
                        // As json.dumps writes what json.load read.
                        tests.append((try JSONValue(parsing: data.compactTextWithDoubleNumbers), valid, "\(file) test \(number)"))
                    }
                }
            }
            return (document["schema"] ?? document, tests)
        }
    }

    @Test(.enabled(if: MaskBenchSlice.shouldRun && TestModels.shouldRun(TestModels.smolLM2FileName)),
          arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName])
    func subsetWithRealTokenizer(modelFile: String) throws {
        guard TestModels.shouldRun(modelFile) || TestModels.modelsRequired else { return }
        let conformance = try SchemaConformance.model(TestModels.path(of: modelFile))
        var total = SchemaConformance.Outcome()
        for item in try Self.subset() { total.add(conformance.check(schema: item.schema, tests: item.tests)) }
        print("MaskBench dev subset, \(modelFile): \(total.summary)")
        #expect(total.invalidAccepted.isEmpty, "invalid instances accepted: \(total.invalidAccepted)")
        #expect(total.maskDisagreements.isEmpty, "\(total.maskDisagreements.prefix(10))")
        // Regression guards on coverage (every 25th file: 100 and 96 of 112 compile with SmolLM2
        // and Gemma, 127/128 and 122/123 valid accepted, all invalid rejected).
        #expect(total.compiled * 100 >= total.schemas * 75)
        #expect(total.validAccepted * 100 >= total.validTotal * 97, "valid rejected: \(total.validRejected)")
    }
}
