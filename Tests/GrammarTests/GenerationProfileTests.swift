import Testing
@testable import TypesetGrammar

/// `JSONSchemaOptions.generation` and the shortest-completion measure that budgeted generation
/// relies on.
@Suite struct GenerationProfileTests {
    private func accepts(_ schema: String, _ instance: String, _ options: JSONSchemaOptions) throws -> Bool {
        try Grammar(jsonSchema: schema, options: options).matches(instance)
    }

    @Test func declaredObjectsCloseOnlyInTheGenerationProfile() throws {
        let declared = #"{"type":"object","properties":{"a":{"type":"integer"}}}"#
        #expect(try accepts(declared, #"{"a":1,"b":2}"#, JSONSchemaOptions()))
        #expect(try !accepts(declared, #"{"a":1,"b":2}"#, .generation))
        #expect(try accepts(declared, #"{"a":1}"#, .generation))
        #expect(try accepts(declared, #"{}"#, .generation))
        // Saying so keeps the object open; declaring nothing keeps it open.
        #expect(try accepts(#"{"type":"object","properties":{"a":{}},"additionalProperties":true}"#, #"{"a":1,"b":2}"#, .generation))
        #expect(try accepts(#"{"type":"object"}"#, #"{"b":[2]}"#, .generation))
        // Pattern properties count as declared.
        let patterned = #"{"type":"object","patternProperties":{"^x":{"type":"integer"}}}"#
        #expect(try accepts(patterned, #"{"x1":1}"#, .generation))
        #expect(try !accepts(patterned, #"{"y":1}"#, .generation))
    }

    @Test func unboundedIntegersStayInteroperable() throws {
        let integer = #"{"type":"integer"}"#
        #expect(try accepts(integer, "100000000000000000000", JSONSchemaOptions()))
        #expect(try !accepts(integer, "100000000000000000000", .generation))
        #expect(try accepts(integer, "9007199254740991", .generation))
        #expect(try !accepts(integer, "9007199254740992", .generation))
        #expect(try accepts(integer, "-9007199254740991", .generation))
        #expect(try !accepts(integer, "-9007199254740992", .generation))
        // A given bound wins on its side; the other side is still bounded.
        let positive = #"{"type":"integer","minimum":0}"#
        #expect(try !accepts(positive, "-1", .generation))
        #expect(try !accepts(positive, "9007199254740992", .generation))
        let huge = #"{"type":"integer","maximum":1e30}"#
        #expect(try accepts(huge, "100000000000000000000", .generation))
    }

    /// A number a model writes for a `Double` ends: at most 16 digits before the point and 16
    /// after, no exponent (a small model once wrote digits until the context was full).
    @Test func numbersHaveBoundedDigits() throws {
        let number = #"{"type":"number"}"#
        let long = "1." + String(repeating: "1", count: 40)
        #expect(try accepts(number, long, JSONSchemaOptions()))
        #expect(try accepts(number, "1e5", JSONSchemaOptions()))
        #expect(try !accepts(number, long, .generation))
        #expect(try !accepts(number, "1e5", .generation))
        #expect(try accepts(number, "-1234567890123456.1234567890123456", .generation))
        #expect(try !accepts(number, "12345678901234567", .generation))
        #expect(try !accepts(number, "0.12345678901234567", .generation))
        #expect(try accepts(number, "0", .generation))
        // Bounds keep their meaning; a bound past 16 digits widens the integer part to it.
        let ranged = #"{"type":"number","minimum":0,"maximum":20}"#
        #expect(try accepts(ranged, "19.5", .generation))
        #expect(try !accepts(ranged, "20.5", .generation))
        #expect(try !accepts(ranged, "3." + String(repeating: "3", count: 20), .generation))
        let huge = #"{"type":"number","minimum":1e20}"#
        #expect(try accepts(huge, "100000000000000000000.5", .generation))
    }

    // MARK: Shortest completions

    private func matcher(_ grammar: Grammar) throws -> GrammarMatcher {
        GrammarMatcher(try CompiledGrammar(grammar, vocabulary: .bytes))
    }

    /// Against the shortest instance written out by hand, at several points of a value.
    @Test func shortestCompletionOfAnObjectIsItsShortestSuffix() throws {
        let schema = #"{"type":"object","properties":{"flavor":{"type":"string"},"rating":{"type":"integer","minimum":1,"maximum":5},"note":{"enum":["sour","balanced"]}},"required":["flavor","rating","note"],"additionalProperties":false}"#
        var matcher = try matcher(Grammar(jsonSchema: schema))
        let shortest = #"{"flavor":"","rating":1,"note":"sour"}"#
        #expect(matcher.shortestCompletionLength == shortest.utf8.count)
        for (prefix, rest) in [
            (#"{"flavor":"abc"#, #"","rating":1,"note":"sour"}"#),
            (#"{"flavor":"abc","rating":4"#, #","note":"sour"}"#),
            (#"{"flavor":"","rating":1,"note":"bal"#, #"anced"}"#),
        ] {
            matcher.reset()
            let accepted = matcher.accept(bytes: Array(prefix.utf8))
            #expect(accepted)
            #expect(matcher.shortestCompletionLength == rest.utf8.count, "after \(prefix)")
            let completed = matcher.accept(bytes: Array(rest.utf8)) && matcher.canTerminate
            #expect(completed, "after \(prefix)")
        }
        #expect(matcher.shortestCompletionLength == 0)
    }

    /// Against breadth-first search over bytes, on a recursive grammar, at every prefix of
    /// several sentences.
    @Test func shortestCompletionMatchesBreadthFirstSearch() throws {
        let grammar = try Grammar(ebnf: """
        root ::= item ("," item)*
        item ::= "[" root? "]" | "ab" "c"* | "d" item "e"
        """)
        let alphabet = Array("[],abcde".utf8)
        func searched(_ start: GrammarMatcher) -> Int {
            var frontier = [start]
            for depth in 0 ... 12 {
                if frontier.contains(where: \.canTerminate) { return depth }
                var next: [GrammarMatcher] = []
                for candidate in frontier {
                    for byte in alphabet {
                        var copy = candidate
                        if copy.accept(bytes: [byte]) { next.append(copy) }
                    }
                }
                frontier = next
            }
            return -1
        }
        for sentence in ["[[ab]],dd[]ee", "d[abccc,[]]e", "[[[[ab]]]]"] {
            var matcher = try matcher(grammar)
            for byte in sentence.utf8 {
                #expect(matcher.shortestCompletionLength == searched(matcher), "before \(byte) in \(sentence)")
                let accepted = matcher.accept(bytes: [byte])
                #expect(accepted)
            }
            #expect(matcher.shortestCompletionLength == 0)
        }
    }
}
