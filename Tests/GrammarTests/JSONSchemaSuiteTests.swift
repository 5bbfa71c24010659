import Foundation
import TypesetGrammar
import Testing
import TypesetTestSupport

/// The JSON Schema Test Suite (draft 2020-12, from the `jsonschema` sdist that
/// Fixtures/fetch.sh unpacks): for every schema that compiles, valid instances are accepted
/// and invalid ones rejected — byte by byte, and token by token with SmolLM2's vocabulary.
@Suite struct JSONSchemaSuiteTests {
    static var directory: String { TestModels.cacheDirectory + "/json-schema-test-suite/tests/draft2020-12" }

    struct Case {
        var file: String
        var description: String
        var schema: JSONValue
        var tests: [(data: JSONValue, valid: Bool, label: String)]
    }

    static func cases() throws -> [Case] {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        var result: [Case] = []
        for file in files {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            guard case .array(let groups) = try JSONValue(parsing: text) else { continue }
            for group in groups {
                guard case .string(let description)? = group["description"], let schema = group["schema"],
                      case .array(let tests)? = group["tests"] else { continue }
                let instances: [(JSONValue, Bool, String)] = tests.compactMap { test in
                    guard let data = test["data"], case .bool(let valid)? = test["valid"], case .string(let name)? = test["description"] else { return nil }
                    return (data, valid, "\(file): \(description): \(name)")
                }
                result.append(Case(file: file, description: description, schema: schema, tests: instances))
            }
        }
        return result
    }

    static var available: Bool { FileManager.default.fileExists(atPath: directory) }

    func run(_ conformance: SchemaConformance) throws -> SchemaConformance.Outcome {
        var total = SchemaConformance.Outcome()
        for suiteCase in try Self.cases() {
            total.add(conformance.check(schema: suiteCase.schema, tests: suiteCase.tests))
        }
        return total
    }

    @Test(.enabled(if: available || TestModels.modelsRequired))
    func byteByByte() throws {
        let outcome = try run(.bytes)
        print("JSON Schema Test Suite draft2020-12, byte by byte: \(outcome.summary)")
        print("  not compiled: \(outcome.errors.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
        #expect(outcome.invalidAccepted.isEmpty, "invalid instances accepted: \(outcome.invalidAccepted)")
        #expect(outcome.maskDisagreements.isEmpty, "\(outcome.maskDisagreements.prefix(10))")
        print("  valid rejected: \(outcome.validRejected)")
        // Regression guards on coverage (measured: 267 of 368 compile, 559 of 586 valid accepted).
        #expect(outcome.compiled >= 260)
        #expect(outcome.validAccepted * 100 >= outcome.validTotal * 95)
    }

    @Test(.enabled(if: (available && TestModels.shouldRun(TestModels.smolLM2FileName)) || TestModels.modelsRequired))
    func tokenByTokenWithSmolLM2() throws {
        let outcome = try run(try .model(TestModels.smolLM2Path))
        print("JSON Schema Test Suite draft2020-12, SmolLM2 tokens: \(outcome.summary)")
        #expect(outcome.invalidAccepted.isEmpty, "invalid instances accepted: \(outcome.invalidAccepted)")
        #expect(outcome.maskDisagreements.isEmpty, "\(outcome.maskDisagreements.prefix(10))")
        #expect(outcome.validAccepted * 10 > outcome.validTotal * 9)
    }
}

/// `oneOf`: provably disjoint alternatives compile as `anyOf`; overlapping ones as "this one
/// and not the others", and "exactly one" then holds for every accepted value.
@Suite struct OneOfTests {
    func matches(_ schema: String, _ text: String) throws -> Bool {
        try Grammar(jsonSchema: schema).matches(text)
    }

    @Test func overlappingAlternativesHoldExactlyOne() throws {
        let strings = #"{"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]}"#
        #expect(try matches(strings, #""abcd""#))
        #expect(try !matches(strings, #""abc""#))  // both match
        let objects = #"{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}"#
        #expect(try matches(objects, #"{"a":1}"#))
        #expect(try matches(objects, #"{"b":1}"#))
        #expect(try !matches(objects, #"{"a":1,"b":1}"#))
        #expect(try !matches(objects, #"{}"#))
        // Equal numbers spelled differently are one value: not a discriminator, so no value
        // with "k" passes exactly one.
        let numbers = #"{"oneOf":[{"type":"object","required":["k"],"properties":{"k":{"const":1}}},{"type":"object","required":["k"],"properties":{"k":{"const":1.0}}}]}"#
        #expect {
            _ = try CompiledGrammar(try Grammar(jsonSchema: numbers), vocabulary: .bytes)
        } throws: { error in
            if case GrammarError.emptyLanguage = error { return true }
            return false
        }
    }

    @Test func objectsWithAForbiddenRequiredPropertyAreDisjoint() throws {
        let schema = #"{"oneOf":[{"type":"object","required":["ios"],"properties":{"ios":{"type":"string"}},"additionalProperties":false},{"type":"object","required":["ref"],"properties":{"ref":{"type":"string"}},"additionalProperties":false}]}"#
        #expect(try matches(schema, #"{"ios":"x"}"#))
        #expect(try matches(schema, #"{"ref":"y"}"#))
        #expect(try !matches(schema, #"{"ios":"x","ref":"y"}"#))
    }

    /// A property both alternatives require, with disjoint schemas, makes them disjoint (so
    /// no negation is needed, here of an `items`).
    @Test func requiredPropertiesOfDisjointTypesAreDisjoint() throws {
        let schema = #"{"oneOf":[{"type":"object","required":["loc"],"properties":{"loc":{"type":"array","items":{"type":"string"}}}},{"type":"object","required":["loc"],"properties":{"loc":{"type":["string","null"]}}},{"type":"object","required":["loc"],"properties":{"loc":{"const":2}}},{"type":"object","required":["loc"],"properties":{"loc":{"enum":[1,3]}}}]}"#
        for text in [#"{"loc":["a"]}"#, #"{"loc":null}"#, #"{"loc":"x"}"#, #"{"loc":2}"#, #"{"loc":2.0}"#, #"{"loc":3}"#] {
            #expect(try matches(schema, text), "\(text)")
        }
        for text in [#"{"loc":[1]}"#, #"{"loc":4}"#, "{}"] { #expect(try !matches(schema, text), "\(text)") }
        // Equal numbers spelled apart are not a discriminator: 1 and 1.0 are one value, so
        // "exactly one" needs the negation of the first (an array with some item that is not a string).
        let overlapping = #"{"oneOf":[{"type":"object","required":["k"],"properties":{"k":{"const":1},"a":{"type":"array","items":{"type":"string"}}}},{"type":"object","required":["k"],"properties":{"k":{"const":1.0}}}]}"#
        // (`a` is declared by the first alternative, `k` here by the second: document order.)
        #expect(try matches(overlapping, #"{"a":["x",2],"k":1}"#))
        for text in [#"{"k":1}"#, #"{"k":1.0}"#, #"{"k":1,"a":["x"]}"#] { #expect(try !matches(overlapping, text), "\(text)") }
    }

    @Test func stringDiscriminatorsAreDisjoint() throws {
        let schema = #"{"oneOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"},"x":{"type":"integer"}}},{"type":"object","required":["kind"],"properties":{"kind":{"enum":["b","c"]}}}]}"#
        #expect(try matches(schema, #"{"kind":"a","x":1}"#))
        #expect(try matches(schema, #"{"kind":"c"}"#))
        #expect(try !matches(schema, #"{"kind":"d"}"#))
    }
}

/// `$ref: "#name"` resolves location-independent identifiers, found only where a schema can
/// stand.
@Suite struct AnchorReferenceTests {
    func matches(_ schema: String, _ text: String) throws -> Bool {
        try Grammar(jsonSchema: schema).matches(text)
    }

    @Test func everySpellingOfAnAnchorResolves() throws {
        for definition in [#"{"$anchor":"small","type":"integer","maximum":9}"#,
                           ##"{"$id":"#small","type":"integer","maximum":9}"##,
                           ##"{"id":"#small","type":"integer","maximum":9}"##] {
            let schema = ##"{"$defs":{"s":"## + definition + ##"},"type":"array","items":{"$ref":"#small"}}"##
            #expect(try matches(schema, "[1,2]"), "\(definition)")
            #expect(try !matches(schema, "[10]"), "\(definition)")
        }
    }

    @Test func onlySchemaPositionsDefineAnchors() {
        // A property named `id`, an enum value and a default are not anchors.
        for schema in [##"{"properties":{"id":{"type":"string"}},"items":{"$ref":"#x"}}"##,
                       ##"{"anyOf":[{"enum":[{"$anchor":"x"}]},{"$ref":"#x"}]}"##,
                       ##"{"default":{"id":"#x"},"items":{"$ref":"#x"}}"##] {
            #expect(throws: GrammarError.self, "\(schema)") { try Grammar(jsonSchema: schema) }
        }
    }

    @Test func anAnchorDefinedTwiceIsUnresolved() {
        let schema = ##"{"$defs":{"a":{"$anchor":"x","type":"string"},"b":{"$anchor":"x","type":"integer"}},"$ref":"#x"}"##
        #expect(throws: GrammarError.self) { try Grammar(jsonSchema: schema) }
    }
}
