import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// The mask a matcher fills, token for token, against what `accept(token:)` says on a copy
/// of the matcher. Where several positions are current at once (members in any order,
/// alternatives of objects, a string beside other types), their accepted lists, the tokens
/// their `allExcept` forms leave out and their undecided tokens must combine into exactly
/// the tokens the real stack accepts.
@Suite struct FilledMaskTests {
    static let cases: [(schema: String, options: JSONSchemaOptions, texts: [String])] = [
        // Members in any order: every member's key opens at once.
        (#"{"type":"object","properties":{"name":{"type":"string"},"note":{"type":"string","maxLength":5},"n":{"type":"integer"}},"required":["name"]}"#,
         .validation, [#"{"n":12,"note":"abc","name":"x\"y"}"#, #"{"name":"ab"}"#]),
        // Alternatives that are objects with string members, and a string beside arrays
        // and objects (its own rule), with a pattern.
        (##"{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"pattern":"^.*\\.xsl$"}}}]}"##,
         .generation, [#"{"a":"text"}"#, #"{"b":"style.xsl"}"#, #"{"b":[1,{"c":null}]}"#]),
        // Strings of three rules at once, two of them accepting all but a few hundred tokens
        // (each an `allExcept` position), which differ in the quotes they let close.
        (#"{"anyOf":[{"type":"string","pattern":"^a.*$"},{"type":"string","pattern":"^.*z$"},{"type":"string","maxLength":6}]}"#,
         .generation, [#""abc de fgz""#, #""ab""#, #""xyz""#]),
    ]

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func filledMasksAreTheTokensAcceptTakes() throws {
        let vocabulary = try SchemaConformance.model(TestModels.smolLM2Path).vocabulary
        let textTokens = vocabulary.tokenBytes.indices.filter { !vocabulary.tokenBytes[$0].isEmpty }
        for (schema, options, texts) in Self.cases {
            let compiled = try CompiledGrammar(Grammar(jsonSchema: schema, options: options), vocabulary: vocabulary)
            for text in texts {
                var matcher = GrammarMatcher(compiled)
                var mask = TokenBitmask(vocabularySize: vocabulary.size)
                let bytes = Array(text.utf8)
                for index in 0 ... bytes.count {
                    matcher.fillNextTokenMask(into: &mask)
                    var disagreements: [Int] = []
                    for token in textTokens {
                        var copy = matcher
                        if mask[token] != copy.accept(token: token) { disagreements.append(token) }
                    }
                    #expect(disagreements.isEmpty, "\(text) after \(index) bytes: \(disagreements.count) tokens, first \(disagreements.prefix(8))")
                    guard index < bytes.count else { break }
                    let moved = matcher.accept(bytes: [bytes[index]])
                    try #require(moved, "\(text) byte \(index)")
                }
            }
        }
    }
}
