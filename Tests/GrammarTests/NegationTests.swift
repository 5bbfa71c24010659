import Foundation
import TypesetGrammar
import Testing
import TypesetTestSupport

/// `not`, `if`/`then`/`else`, the dependency keywords, `oneOf` with overlapping
/// alternatives (compiled through negation), `contains` and several `multipleOf`s, judged against the independent validator on a
/// pool of small values chosen to sit on every boundary the schemas draw.
@Suite struct NegationTests {
    /// Compact JSON values: every type, numbers on both sides of the bounds and multiples
    /// used below, strings matching and missing the patterns, objects with subsets of `a`,
    /// `b`, `c` (in that order, the order the schemas declare them).
    static let pool: [String] = [
        "null", "true", "false", "0", "-1", "2", "3", "6", "1.5", "-2.25", "1.75",
        #""""#, #""a""#, #""ab""#, #""abc""#, #""x""#, #""b1""#, #""a1""#,
        "[]", "[1]", #"[1,"a"]"#, "[null,null,null]", #"["a","b"]"#, "[2,3]", "[1,null]", "[1.5]", #"[1,2,"x"]"#,
        "{}", #"{"a":1}"#, #"{"b":"x"}"#, #"{"a":1,"b":"x"}"#, #"{"a":"y"}"#, #"{"c":true}"#,
        #"{"a":2,"c":null}"#, #"{"a":1,"b":"x","c":false}"#, #"{"a":1,"b":2}"#, #"{"a":1,"c":1}"#,
        #"{"b":2}"#, #"{"type":"group"}"#, #"{"type":"other"}"#,
        #"{"a1":1}"#, #"{"a1":"x"}"#, #"{"b1":"x","d":1}"#, #"{"d":"s"}"#, #"{"d":1}"#,
    ]

    static let schemas: [String] = [
        #"{"not":{"type":"string"}}"#,
        #"{"not":{"type":"integer"}}"#,
        #"{"not":{"type":["number","null"]}}"#,
        #"{"not":{"enum":["a","x",1,null,true]}}"#,
        #"{"not":{"const":2}}"#,
        #"{"type":"integer","not":{"multipleOf":3}}"#,
        #"{"not":{"multipleOf":0.5}}"#,
        #"{"type":"string","not":{"pattern":"^a"}}"#,
        #"{"not":{"minLength":2}}"#,
        #"{"not":{"maxLength":1,"type":"string"}}"#,
        #"{"not":{"minimum":2}}"#,
        #"{"not":{"exclusiveMaximum":2}}"#,
        #"{"not":{"maximum":1.5,"exclusiveMinimum":-1}}"#,
        #"{"type":"object","not":{"required":["a","b"]}}"#,
        #"{"type":"object","properties":{"a":{},"b":{},"c":{}},"not":{"properties":{"a":{"type":"integer"}}}}"#,
        #"{"not":{"anyOf":[{"type":"string"},{"type":"null"}]}}"#,
        #"{"not":{"allOf":[{"type":"integer"},{"minimum":2}]}}"#,
        #"{"not":{"not":{"type":"boolean"}}}"#,
        #"{"not":{"oneOf":[{"type":"integer"},{"minimum":2}]}}"#,
        #"{"not":{"maxItems":1}}"#,
        #"{"not":{"minProperties":1}}"#,
        #"{"not":{"type":"object","properties":{"type":{"enum":["group"]}}}}"#,
        #"{"not":false}"#,
        ##"{"$defs":{"s":{"type":"string"}},"not":{"$ref":"#/$defs/s"}}"##,
        #"{"oneOf":[{"type":"integer"},{"minimum":2}]}"#,
        #"{"oneOf":[{"type":"string"},{"type":"integer"},{"minimum":2},{"type":"null"}]}"#,
        #"{"allOf":[{"multipleOf":2},{"multipleOf":3}]}"#,
        #"{"allOf":[{"multipleOf":2}],"not":{"multipleOf":3}}"#,
        #"{"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]}"#,
        #"{"type":"object","if":{"properties":{"a":{"const":1}},"required":["a"]},"then":{"required":["b"]},"else":{"required":["c"]}}"#,
        #"{"if":{"type":"string"},"then":{"minLength":2},"else":{"type":"integer"}}"#,
        #"{"if":{"minimum":2},"then":{"multipleOf":3}}"#,
        #"{"not":{"if":{"type":"string"},"then":{"minLength":2},"else":{"type":"integer"}}}"#,
        #"{"type":"object","dependentRequired":{"a":["b"]}}"#,
        #"{"type":"object","dependentSchemas":{"a":{"properties":{"b":{"type":"integer"}}}}}"#,
        #"{"dependencies":{"c":["a"],"a":{"required":["b"]}}}"#,
        #"{"not":{"dependentRequired":{"a":["c"]}}}"#,
        #"{"type":"object","properties":{"a":{}},"not":{"properties":{"a":{}},"additionalProperties":false}}"#,
        #"{"not":{"additionalProperties":false}}"#,
        #"{"not":{"patternProperties":{"^a":true},"additionalProperties":false},"maxProperties":2}"#,
        // "Some item fails" and "some member fails": required items and members.
        #"{"not":{"items":{"type":"string"}}}"#,
        #"{"type":"array","not":{"items":{"type":"integer"}}}"#,
        #"{"not":{"prefixItems":[{"type":"integer"}],"items":{"type":"string"}}}"#,
        #"{"contains":{"type":"string"}}"#,
        #"{"prefixItems":[{"type":"integer"}],"not":{"prefixItems":[true,true],"items":{"type":"integer"}}}"#,
        #"{"type":"array","contains":{"type":"integer"},"not":{"contains":{"type":"null"}}}"#,
        #"{"items":{"type":"number"},"contains":{"minimum":2},"allOf":[{"contains":{"multipleOf":3}}]}"#,
        #"{"contains":{"type":"integer"},"minContains":0,"maxItems":1}"#,
        #"{"oneOf":[{"items":{"type":"integer"}},{"items":{"type":"number"},"maxItems":1}]}"#,
        #"{"type":"object","not":{"additionalProperties":{"type":"string"}}}"#,
        #"{"not":{"enum":[{"a":1},[1,"a"],"x",2]}}"#,
        #"{"type":"object","properties":{"a":{},"b":{},"c":{}},"not":{"const":{"b":"x","a":1}}}"#,
        #"{"type":"array","not":{"enum":[[],[2,3],[1,null]]}}"#,
        #"{"not":{"properties":{"a":{}},"additionalProperties":{"type":"integer"}}}"#,
        #"{"type":"object","not":{"patternProperties":{"^a":{"type":"integer"}}}}"#,
        #"{"type":"object","properties":{"a":{},"b":{},"c":{}},"not":{"properties":{"a":{}},"additionalProperties":false},"allOf":[{"not":{"patternProperties":{"^b":{"type":"string"}}}}]}"#,
    ]

    /// Each schema compiles; no value it rejects is accepted, and every value it admits is.
    @Test(arguments: schemas) func grammarAgreesWithTheValidator(schema: String) throws {
        let validator = try JSONSchemaValidator(schemaText: schema)
        let tests = Self.pool.map { text in
            (data: try! JSONValue(parsing: text), valid: validator.problems(in: text).isEmpty, label: text)
        }
        #expect(tests.contains { $0.valid }, "no value of the pool is valid for \(schema)")
        let outcome = SchemaConformance.bytes.check(schema: try JSONValue(parsing: schema), tests: tests)
        #expect(outcome.compiled == 1, "\(outcome.errors)")
        #expect(outcome.invalidAccepted.isEmpty, "accepted although invalid: \(outcome.invalidAccepted)")
        #expect(outcome.validRejected.isEmpty, "rejected although valid: \(outcome.validRejected)")
        #expect(outcome.maskDisagreements.isEmpty)
    }

    /// Negations the compiler cannot build exactly are errors naming `not` (or the `oneOf`
    /// that needed them) and where; lenient mode drops the whole negation and says so.
    @Test(arguments: [
        (#"{"not":{"format":"date"}}"#, "not", "#/not"),
        (#"{"not":{"propertyNames":{"maxLength":1}}}"#, "not", "#/not"),
        (#"{"type":"object","not":{"format":"email"}}"#, "not", "#/not"),
        (#"{"oneOf":[{"type":"string"},{"format":"date"}]}"#, "oneOf", "#"),
    ])
    func unbuildableNegationsAreReported(schema: String, keyword: String, pointer: String) throws {
        #expect {
            _ = try Grammar(jsonSchema: schema)
        } throws: { error in
            guard case GrammarError.unsupportedKeyword(let reported, let at, _) = error else { return false }
            return reported == keyword && at == pointer
        }
        let lenient = try Grammar(jsonSchema: schema, options: JSONSchemaOptions(lenient: true))
        #expect(lenient.droppedKeywords.contains { $0.keyword == "not" })
    }

    /// Nested conditionals multiply alternatives; past the budget compilation stops cleanly.
    @Test func alternativesHaveABudget() throws {
        let condition = #"{"if":{"required":["a"]},"then":{"required":["b"]},"else":{"required":["c"]}}"#
        let schema = #"{"type":"object","allOf":["# + Array(repeating: condition, count: 16).enumerated()
            .map { $0.element.replacingOccurrences(of: "\"a\"", with: "\"a\($0.offset)\"") }.joined(separator: ",") + "]}"
        #expect {
            _ = try Grammar(jsonSchema: schema)
        } throws: { error in
            if case GrammarError.budgetExceeded = error { return true }
            return false
        }
    }
}
