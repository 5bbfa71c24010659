import Foundation
import TypesetGrammar
import Testing
import TypesetTestSupport

/// The schemas a hostile user sent the compiler (docs/reliability.md): each one compiles or
/// is refused with `GrammarError.budgetExceeded` naming what ran out, within about its time
/// budget, never running unbounded. The documents are generated here rather than stored (the
/// largest is 40 MB).
@Suite struct HostileSchemaTests {
    /// An `allOf` of `count` two-way `anyOf`s over objects: a cross product of 2^count.
    static func crossProduct(_ count: Int) -> String {
        let parts = (0 ..< count).map { index in
            #"{"anyOf":[{"type":"object","properties":{"a\#(index)":{"type":"integer"}}},{"type":"object","properties":{"b\#(index)":{"type":"string"}}}]}"#
        }
        return #"{"allOf":[\#(parts.joined(separator: ","))]}"#
    }

    /// An object declaring `count` properties, all required or all optional.
    static func wideObject(_ count: Int, required: Bool) -> String {
        let properties = (0 ..< count).map { #""p\#($0)":{"type":"integer"}"# }.joined(separator: ",")
        let names = (0 ..< count).map { #""p\#($0)""# }.joined(separator: ",")
        return #"{"type":"object","properties":{\#(properties)}"# + (required ? #","required":[\#(names)]}"# : "}")
    }

    /// `count` definitions, each an array of two of the one before: a value of the last is
    /// 2^count integers (the billion laughs), and the references nest `count` deep.
    static func doublingReferences(_ count: Int) -> String {
        var definitions = [#""d0":{"type":"integer"}"#]
        for index in 1 ..< count {
            definitions.append(##""d\##(index)":{"type":"array","prefixItems":[{"$ref":"#/$defs/d\##(index - 1)"},{"$ref":"#/$defs/d\##(index - 1)"}],"items":false}"##)
        }
        return ##"{"$defs":{\##(definitions.joined(separator: ","))},"$ref":"#/$defs/d\##(count - 1)"}"##
    }

    static let cases: [(name: String, schema: String)] = [
        ("allOf of 20 two-way anyOfs", crossProduct(20)),
        ("100,000 required properties", wideObject(100_000, required: true)),
        ("10,000 optional properties", wideObject(10_000, required: false)),
        ("pattern .{1000}", #"{"type":"string","pattern":".{1000}"}"#),
        (#"pattern [\s\S]{2000}"#, #"{"type":"string","pattern":"[\\s\\S]{2000}"}"#),
        ("enum of 100,000 integers", #"{"enum":[\#((0 ..< 100_000).map(String.init).joined(separator: ","))]}"#),
        ("1,000 doubling $refs", doublingReferences(1000)),
        ("50 MB of properties", #"{"type":"object","properties":{"# + (0 ..< 1_300_000).map { #""p\#($0)":{"type":"string"}"# }.joined(separator: ",") + "}}"),
    ]

    /// Each case compiles to an automaton or fails with a budget error, and stops within
    /// twice its time budget plus a second (a loose bound: it catches a check that is missing,
    /// not a slow machine).
    @Test(arguments: cases.indices)
    func compilesOrIsRefusedWithinItsBudget(index: Int) throws {
        let (name, schema) = Self.cases[index]
        let budget = CompilationBudget(seconds: 1)
        let clock = ContinuousClock(), started = clock.now
        do {
            _ = try budget.spending { () throws(GrammarError) in
                try CompiledGrammar(Grammar(jsonSchema: schema, budget: budget), vocabulary: .bytes, budget: budget)
            }
        } catch {
            guard case .budgetExceeded(let what, _) = error else { throw error }
            #expect(!what.isEmpty, "\(name)")
        }
        let elapsed = clock.now - started
        #expect(elapsed < .seconds(2 * budget.seconds + 1), "\(name): \(elapsed)")
    }

    /// The memory budget is what stops a cross product when time would not: the error says
    /// memory, and a larger budget lets a smaller product through.
    @Test func memoryBudgetStopsACrossProduct() throws {
        let tight = CompilationBudget(seconds: 60, bytes: 16 << 20)
        #expect {
            _ = try Grammar(jsonSchema: Self.crossProduct(14), budget: tight)
        } throws: { error in
            guard case GrammarError.budgetExceeded(let what, let limit) = error else { return false }
            return what.hasPrefix("memory") && limit == 16
        }
        _ = try Grammar(jsonSchema: Self.crossProduct(4), budget: tight)
    }

    /// A schema text too large for the memory budget is refused before it is parsed.
    @Test func oversizedDocumentIsRefusedBeforeParsing() throws {
        let budget = CompilationBudget(bytes: 1 << 20)
        let schema = Self.wideObject(10_000, required: false)   // 300 kB: about 5 MB parsed
        #expect {
            _ = try JSONValue(parsingSchema: schema, budget: budget)
        } throws: { error in
            guard case GrammarError.budgetExceeded(let what, _) = error else { return false }
            return what.contains("reading the schema")
        }
    }

    /// References that nest deeper than the compiler's stack allows are refused (this used to
    /// overflow the stack), while shallower ones compile.
    @Test func deepReferenceChainsAreRefusedNotCrashed() throws {
        #expect(throws: GrammarError.self) { try Grammar(jsonSchema: Self.doublingReferences(1000)) }
        let grammar = try Grammar(jsonSchema: Self.doublingReferences(20))
        #expect(try grammar.matches("[[0,1],[2,3]]") == false)   // a d19 value is 2^19 integers deep in pairs
    }

    /// Whitespace runs and chains of grammar-text rules are budgeted too.
    @Test func rulesChainsAndWhitespaceAreBudgeted() throws {
        let chain = (0 ..< 10_000).map { "r\($0) ::= r\($0 + 1) \"a\"" }.joined(separator: "\n") + "\nr10000 ::= \"b\""
        let budget = CompilationBudget(seconds: 1)
        let clock = ContinuousClock(), started = clock.now
        do {
            let grammar = try budget.spending { () throws(GrammarError) in
                try CompiledGrammar(Grammar(ebnf: chain, rootRule: "r0", budget: budget), vocabulary: .bytes, budget: budget)
            }
            #expect(grammar.shortestSentenceLength == 10_001)
        } catch {
            guard case .budgetExceeded = error else { throw error }
        }
        #expect(clock.now - started < .seconds(3))
        var options = JSONSchemaOptions(whitespace: .flexible(maximum: 1_000_000))
        options.lenient = false
        #expect(throws: GrammarError.self) { try Grammar(jsonSchema: "{}", options: options, budget: budget) }
    }

    /// Strings hold Unicode scalars: a lone surrogate in a schema is an error with its offset,
    /// never a grammar for U+FFFD (which a validator would reject).
    @Test(arguments: [#"{"const":"\ud800"}"#, #"{"enum":["a","\udc00x"]}"#, #"{"type":"string","pattern":"^\\ud800$"}"#])
    func loneSurrogatesAreErrors(schema: String) {
        #expect(throws: GrammarError.self) { try Grammar(jsonSchema: schema) }
    }
}

/// Shortest sentences: what a token budget must hold at the least.
@Suite struct ShortestSentenceTests {
    /// The shortest sentence of each seed schema is a valid value (the independent validator
    /// says so), the grammar accepts it, and its length is the grammar's shortest length.
    @Test func seedSchemasShortestValuesValidate() throws {
        let files = try Fixtures.seedSchemaPaths()
        try #require(!files.isEmpty, "Fixtures/schemas is empty")
        for file in files {
            let schema = try String(contentsOfFile: file, encoding: .utf8)
            let compiled = try CompiledGrammar(Grammar(jsonSchema: schema, options: .generation), vocabulary: .bytes)
            let sentence = try #require(compiled.shortestSentence(), "\(file)")
            let text = String(decoding: sentence, as: UTF8.self)
            #expect(sentence.count == compiled.shortestSentenceLength, "\(file)")
            #expect(try JSONSchemaValidator(schemaText: schema).problems(in: text) == [], "\(file): \(text)")
            #expect(try Grammar(jsonSchema: schema, options: .generation).matches(text), "\(file)")
        }
    }

    /// A keyword no draft defines, inside an `anyOf` alternative (a mutated name, as the
    /// schema fuzzer makes them): the compiler ignores it, as the specification says, and
    /// the validator, which refuses what it does not know, names it instead of only failing
    /// the `anyOf` (found by the fuzzer: the harness skips verdicts that rest on such a name).
    @Test func unknownKeywordsInsideAlternatives() throws {
        let schema = #"{"anyOf":[{"type":"object","properties":{"name":{"const":"a"}},"required":["name"]},"#
            + #"{"type":"object","properties":{"name":{"con3t":"b"}},"required":["name"],"additionalProperties":false}]}"#
        #expect(try Grammar(jsonSchema: schema).matches(#"{"name":0}"#))
        let problems = try JSONSchemaValidator(schemaText: schema).problems(in: #"{"name":0}"#)
        #expect(problems.contains { $0.contains("does not know keyword con3t") }, "\(problems)")
        #expect(try JSONSchemaValidator(schemaText: schema).problems(in: #"{"name":"a"}"#) == [])
    }

    @Test func lengthsOfKnownLanguages() throws {
        func shortest(_ schema: String) throws -> String? {
            try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: .bytes).shortestSentence().map { String(decoding: $0, as: UTF8.self) }
        }
        #expect(try shortest(#"{"type":"array","items":{"type":"integer"},"minItems":3}"#) == "[0,0,0]")
        #expect(try shortest(#"{"type":"string","minLength":2}"#) == #""  ""#)
        #expect(try shortest(#"{"type":"object","properties":{"a":{"const":true}},"required":["a"]}"#) == #"{"a":true}"#)
        #expect(try shortest(#"{"type":"integer","minimum":100}"#) == "100")
        #expect(try CompiledGrammar(Grammar(jsonSchema: #"{"type":"array","minItems":2000,"items":{"type":"array","minItems":2000}}"#), vocabulary: .bytes)
            .shortestSentence(maximumBytes: 1000) == nil)
    }
}
