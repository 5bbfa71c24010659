import Foundation
import TypesetGrammar
import Testing
import TypesetTestSupport

/// The `format`s the compiler enforces against the JSON Schema Test Suite's optional format
/// tests (draft 2020-12, asserting formats): no invalid string accepted, and most valid ones
/// (each format is a subset of its valid strings, documented on `Formats`).
@Suite struct FormatSuiteTests {
    static var directory: String { JSONSchemaSuiteTests.directory + "/optional/format" }

    static let enforced = ["date", "time", "date-time", "duration", "email", "uuid", "uri", "uri-reference", "iri", "iri-reference",
                           "json-pointer", "relative-json-pointer", "ipv4", "ipv6", "hostname"]

    @Test(.enabled(if: FileManager.default.fileExists(atPath: directory) || TestModels.modelsRequired), arguments: enforced)
    func noInvalidStringIsAccepted(_ format: String) throws {
        let text = try String(contentsOfFile: Self.directory + "/" + format + ".json", encoding: .utf8)
        guard case .array(let groups) = try JSONValue(parsing: text) else { Issue.record("not a list of groups"); return }
        var validAccepted = 0, validTotal = 0
        for group in groups {
            guard let schema = group["schema"], case .array(let tests)? = group["tests"] else { continue }
            let grammar = try Grammar(jsonSchema: schema)
            for test in tests {
                guard let data = test["data"], case .bool(let valid)? = test["valid"], case .string = data else { continue }
                let accepted = try grammar.matches(data.compactText)
                if valid {
                    validTotal += 1
                    validAccepted += accepted ? 1 : 0
                } else {
                    #expect(!accepted, "\(format): invalid \(data.compactText) accepted (\(test["description"]?.compactText ?? ""))")
                }
            }
        }
        print("format \(format): \(validAccepted) of \(validTotal) valid strings accepted")
        #expect(validTotal > 0)
        #expect(validAccepted * 2 >= validTotal, "\(format): \(validAccepted) of \(validTotal) valid strings accepted")
    }

    /// A format the compiler does not know is refused by default; in the validation profile
    /// it asserts nothing (an annotation, as JSON Schema 2020-12 has it) and is listed, and
    /// its negation, which no string satisfies, adds nothing.
    @Test func unknownFormatsAreRefusedOrAnnotated() throws {
        let schema = #"{"type":"object","properties":{"p":{"type":"string","format":"semver"}}}"#
        #expect {
            _ = try Grammar(jsonSchema: schema)
        } throws: { error in
            guard case GrammarError.unsupportedKeyword(let keyword, let pointer, _) = error else { return false }
            return keyword == "format" && pointer == "#/properties/p"
        }
        let annotated = try Grammar(jsonSchema: schema, options: .validation)
        #expect(annotated.droppedKeywords.map(\.pointer) == ["#/properties/p"])
        #expect(try annotated.matches(#"{"p":"anything at all"}"#))
        #expect(try !annotated.matches(#"{"p":1}"#))
        let negated = try Grammar(jsonSchema: #"{"type":"string","not":{"format":"semver","minLength":3}}"#, options: .validation)
        #expect(try negated.matches(#""ab""#))
        #expect(try !negated.matches(#""1.0.0""#))
    }
}
