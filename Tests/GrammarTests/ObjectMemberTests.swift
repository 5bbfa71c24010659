import Foundation
import TypesetGrammar
import Testing
import TypesetTestSupport

/// Objects in any property order (`JSONSchemaOptions.PropertyOrder.any`) and objects merged
/// from `allOf` parts with `patternProperties`, judged against the independent validator on
/// objects whose members come in every order.
@Suite struct PropertyOrderTests {
    /// Every ordered choice of up to three of `a`, `b`, `c`, `x1` with a value of the type the
    /// schemas below expect, and some with values of the wrong type.
    static let pool: [String] = {
        let right = ["a": "1", "b": #""s""#, "c": "null", "x1": #""t""#]
        let wrong = ["a": #""s""#, "b": "2", "c": "null", "x1": "3"]
        var objects: [String] = []
        func extend(_ chosen: [String]) {
            if chosen.count > 0 {
                objects.append("{" + chosen.map { #""\#($0)":\#(right[$0]!)"# }.joined(separator: ",") + "}")
                objects.append("{" + chosen.map { #""\#($0)":\#(wrong[$0]!)"# }.joined(separator: ",") + "}")
            }
            guard chosen.count < 3 else { return }
            for key in ["a", "b", "c", "x1"] where !chosen.contains(key) { extend(chosen + [key]) }
        }
        extend([])
        return ["{}", "[]", "1"] + Array(Set(objects)).sorted()
    }()

    static let anyOrderSchemas: [String] = [
        #"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{}},"required":["a","b"]}"#,
        #"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{}},"required":["b"],"additionalProperties":false}"#,
        #"{"properties":{"a":{"type":"integer"}},"patternProperties":{"^x":{"type":"string"}},"additionalProperties":false,"required":["a"]}"#,
        #"{"type":"object","properties":{"a":{},"b":{}},"minProperties":2,"maxProperties":2}"#,
        #"{"type":"object","required":["b","x1"],"additionalProperties":{"type":"string"}}"#,
        #"{"allOf":[{"properties":{"a":{"type":"integer"}}},{"patternProperties":{"^b":{"type":"string"}}}],"required":["b"]}"#,
        #"{"type":"object","not":{"properties":{"a":{}},"additionalProperties":false}}"#,
        #"{"type":"object","properties":{"b":{}},"not":{"patternProperties":{"^[ax]":{"type":"integer"}}}}"#,
    ]

    func check(_ schema: String, options: JSONSchemaOptions) throws -> SchemaConformance.Outcome {
        let validator = try JSONSchemaValidator(schemaText: schema)
        let tests = Self.pool.map { text in
            (data: try! JSONValue(parsing: text), valid: validator.problems(in: text).isEmpty, label: text)
        }
        #expect(tests.contains { $0.valid } && tests.contains { !$0.valid }, "the pool does not split \(schema)")
        return SchemaConformance.bytes.check(schema: try JSONValue(parsing: schema), tests: tests, options: options)
    }

    /// Checks that `schema`, with properties in any order, accepts exactly the valid objects
    /// of the pool, its masks agreeing with the matcher.
    func expectExactInAnyOrder(_ schema: String) throws {
        let outcome = try check(schema, options: JSONSchemaOptions(propertyOrder: .any))
        #expect(outcome.compiled == 1, "\(outcome.errors)")
        #expect(outcome.invalidAccepted.isEmpty, "accepted although invalid: \(outcome.invalidAccepted)")
        #expect(outcome.validRejected.isEmpty, "rejected although valid: \(outcome.validRejected)")
        #expect(outcome.maskDisagreements.isEmpty, "\(outcome.maskDisagreements.prefix(5))")
    }

    @Test(arguments: anyOrderSchemas) func anyOrderAcceptsExactlyTheValidObjects(schema: String) throws {
        try expectExactInAnyOrder(schema)
    }

    /// By default objects are written in the schema's order: the same schemas reject valid
    /// objects in another order, and still accept no invalid one.
    @Test func declarationOrderIsTheDefault() throws {
        let outcome = try check(Self.anyOrderSchemas[0], options: JSONSchemaOptions())
        #expect(outcome.invalidAccepted.isEmpty)
        #expect(outcome.validRejected.contains(#"{"b":"s","a":1}"#))
        #expect(!outcome.validRejected.contains(#"{"a":1,"b":"s"}"#))
    }

    /// `allOf` parts with `patternProperties` merge exactly: a member takes each part's
    /// declared, matched or additional schema (checked in any order, so that the pool's
    /// member orders do not matter; the merge is the same in either order).
    @Test(arguments: [
        #"{"allOf":[{"properties":{"a":{"type":"integer"}},"additionalProperties":false},{"patternProperties":{"^[ab]":true}}]}"#,
        #"{"allOf":[{"patternProperties":{"^x":{"type":"string"}}},{"properties":{"a":{}},"additionalProperties":{"type":"string"}}]}"#,
        #"{"allOf":[{"patternProperties":{"^x":{"type":"string"},"1$":{"minLength":1}}},{"patternProperties":{"^c":{"type":"null"}},"additionalProperties":false}]}"#,
    ])
    func patternPropertiesMergeAcrossAllOf(schema: String) throws {
        try expectExactInAnyOrder(schema)
    }

    /// Past the remembered required names, they are counted: every order of a parsed
    /// value's members is still accepted, and an object missing one is still rejected.
    @Test func manyRequiredNamesInAnyOrderAreCounted() throws {
        let count = JSONSchemaOptions.requiredPropertiesInAnyOrderLimit + 3
        let names = (0 ..< count).map { "p\($0)" }
        let listed = names.map { "\"\($0)\"" }.joined(separator: ",")
        let schema = #"{"type":"object","properties":{"q":{"type":"string"}},"required":["# + listed + "]}"
        let grammar = try Grammar(jsonSchema: schema, options: JSONSchemaOptions(propertyOrder: .any))
        func object(_ members: [String]) -> String { "{" + members.joined(separator: ",") + "}" }
        var generator = SystemRandomNumberGenerator()
        for _ in 0 ..< 5 {
            let members = names.shuffled(using: &generator).map { "\"\($0)\":1" }
            #expect(try grammar.matches(object(members)))
            #expect(try grammar.matches(object(Array(members[..<3]) + [#""q":"s""#] + Array(members[3...]))))
            #expect(try !grammar.matches(object(Array(members[..<3]) + [#""q":2"#] + Array(members[3...]))))
            #expect(try !grammar.matches(object(Array(members.dropFirst()))))
        }
    }
}

/// `unevaluatedProperties` and `unevaluatedItems` beside `$ref` and `allOf`: what the
/// specification's annotations say, case by case (the JSON Schema Test Suite's
/// `unevaluated*` files check the rest, in `JSONSchemaSuiteTests`).
@Suite struct UnevaluatedTests {
    func matches(_ schema: String, _ text: String) throws -> Bool {
        try Grammar(jsonSchema: schema).matches(text)
    }

    @Test func propertiesDeclaredInPlaceAreEvaluated() throws {
        let schema = ##"{"$defs":{"base":{"properties":{"kind":{"type":"string"}}}},"$ref":"#/$defs/base","allOf":[{"properties":{"a":{"type":"integer"}}}],"properties":{"b":{}},"unevaluatedProperties":false}"##
        #expect(try matches(schema, #"{"kind":"k","a":1,"b":null}"#))
        #expect(try matches(schema, #"{"b":true}"#))
        #expect(try !matches(schema, #"{"kind":"k","c":1}"#))
        #expect(try !matches(schema, #"{"a":"one"}"#))
    }

    @Test func siblingsOfTheParentDoNotEvaluate() throws {
        let schema = #"{"allOf":[{"properties":{"a":{}}},{"properties":{"b":{}},"unevaluatedProperties":false}]}"#
        #expect(try matches(schema, #"{"b":1}"#))
        #expect(try !matches(schema, #"{"a":1,"b":1}"#))
    }

    @Test func patternsEvaluateAndTheRestTakeTheSchema() throws {
        let schema = #"{"patternProperties":{"^x":{"type":"string"}},"unevaluatedProperties":{"type":"integer"}}"#
        #expect(try matches(schema, #"{"x1":"s","n":2}"#))
        #expect(try !matches(schema, #"{"n":"s"}"#))
        #expect(try !matches(schema, #"{"x1":2}"#))
        // additionalProperties evaluates every other member: unevaluatedProperties has nothing left.
        #expect(try matches(#"{"additionalProperties":{"type":"string"},"unevaluatedProperties":false}"#, #"{"n":"s"}"#))
    }

    @Test func itemsPastThePrefixAreUnevaluated() throws {
        let schema = #"{"prefixItems":[{"type":"integer"}],"allOf":[{"prefixItems":[true,{"type":"string"}]}],"unevaluatedItems":false}"#
        #expect(try matches(schema, #"[1,"a"]"#))
        #expect(try matches(schema, "[1]"))
        #expect(try !matches(schema, #"[1,"a",null]"#))
        #expect(try matches(#"{"items":{"type":"integer"},"unevaluatedItems":false}"#, "[1,2,3]"))
    }

    @Test func besideBranchesItIsRefusedByName() throws {
        let schema = #"{"anyOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}],"unevaluatedProperties":false}"#
        #expect {
            _ = try Grammar(jsonSchema: schema)
        } throws: { error in
            guard case GrammarError.unsupportedKeyword(let keyword, let pointer, _) = error else { return false }
            return keyword == "unevaluatedProperties" && pointer == "#"
        }
    }
}
