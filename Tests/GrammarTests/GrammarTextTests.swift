import Foundation
import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// `Grammar(ebnf:)`: GBNF grammars written for these tests, checked on sentences and
/// non-sentences through the compiled pushdown automaton, the JSON grammar against
/// Foundation's `JSONSerialization` as an independent reference, and every error case with
/// its line and column.
@Suite struct GrammarTextTests {
    // MARK: Helpers

    /// A grammar compiled once, for checking many strings.
    struct Acceptor {
        let compiled: CompiledGrammar

        init(_ text: String, rootRule: String = "root") throws {
            let grammar = try Grammar(ebnf: text, rootRule: rootRule)
            compiled = try CompiledGrammar(grammar, vocabulary: GrammarVocabulary(tokens: [], endOfGeneration: []))
        }

        func accepts(_ sentence: String) -> Bool {
            var matcher = GrammarMatcher(compiled)
            return matcher.accept(bytes: Array(sentence.utf8)) && matcher.canTerminate
        }
    }

    /// Checks that `grammar` accepts every string of `accepted` and none of `rejected`.
    static func check(_ grammar: String, rootRule: String = "root", accepted: [String], rejected: [String],
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let acceptor = try Acceptor(grammar, rootRule: rootRule)
        for sentence in accepted {
            #expect(acceptor.accepts(sentence), "should accept \(sentence.debugDescription)", sourceLocation: sourceLocation)
        }
        for sentence in rejected {
            #expect(!acceptor.accepts(sentence), "should reject \(sentence.debugDescription)", sourceLocation: sourceLocation)
        }
    }

    /// The error `Grammar(ebnf:)` throws for `text`, or `nil` when it parses.
    static func parseError(_ text: String, rootRule: String = "root", repetitionLimit: Int = 1000) -> GrammarError? {
        do {
            _ = try Grammar(ebnf: text, rootRule: rootRule, repetitionLimit: repetitionLimit)
            return nil
        } catch {
            return error
        }
    }

    /// The line and column of an `.invalidGrammarText` error (`nil` for anything else).
    static func location(of error: GrammarError?) -> [Int]? {
        guard case .invalidGrammarText(let line, let column, _)? = error else { return nil }
        return [line, column]
    }

    /// Checks that `text` fails at `line`:`column` with a message containing `fragment`.
    static func expectError(_ text: String, line: Int, column: Int, containing fragment: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        let error = parseError(text)
        #expect(location(of: error) == [line, column], "\(String(describing: error)) for \(text.debugDescription)",
                sourceLocation: sourceLocation)
        if case .invalidGrammarText(_, _, let message)? = error {
            #expect(message.contains(fragment), "message: \(message)", sourceLocation: sourceLocation)
        }
    }


    // MARK: Arithmetic

    static let arithmetic = #"""
        # Arithmetic expressions with precedence, unary minus and parentheses.
        root   ::= expr
        expr   ::= term (ws ("+" | "-") ws term)*
        term   ::= factor (ws ("*" | "/") ws factor)*
        factor ::= number | "(" ws expr ws ")" | "-" factor
        number ::= [0-9]+ ("." [0-9]+)?
        ws     ::= " "*
        """#

    @Test func arithmeticExpressions() throws {
        try Self.check(
            Self.arithmetic,
            accepted: ["1", "42", "1+2", "1 + 2 * 3", "(1+2)*3", "-4", "--4", "3.14*(2-1)", "((1))",
                       "1 / 2 / 3", "10 -  -2", "( 7 )", "0.5*-(2+3)"],
            rejected: ["", "+", "1+", "(1", "1)", "1..2", "1 2", ".5", "()", "1+*2", "a", "1.", "2 +", "(1+2"])
    }

    // MARK: JSON

    /// RFC 8259 JSON (ASCII whitespace, no leading zeros, escapes spelled out).
    static let json = #"""
        root    ::= ws value ws
        value   ::= object | array | string | number | "true" | "false" | "null"

        object  ::=
            "{" ws (
                member
                ("," ws member)*
            )? "}"
        member  ::= string ws ":" ws value ws
        array   ::= "[" ws ( element ("," ws element)* )? "]"
        element ::= value ws

        string  ::= "\"" char* "\""
        char    ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
        number  ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
        ws      ::= [ \t\n\r]*
        """#

    @Test func jsonSentences() throws {
        try Self.check(
            Self.json,
            accepted: ["{}", "[]", "0", "-0.5e+10", "\"\"", "\"a\\nb\\u00e9\"", "true", " null ",
                       #"{"a": [1, 2, {"b": false}], "c": "d"}"#, "[[[]]]", "\"日本\"", "1E5",
                       "{\n\t\"key\" : \"value\"\r\n}", #"["\"", "\\"]"#],
            rejected: ["", "{", "[1,]", "{\"a\"}", "{\"a\":}", "01", "1.", ".5", "tru", "nul", "\"a",
                       "\"\\x\"", "\"\u{01}\"", "[1 2]", "{,}", "{\"a\":1,}", "+1", "\"\\u12\""])
    }

    /// The GBNF JSON grammar against `JSONSerialization` on random strings over
    /// `{}[],:"0-9a-z` and whitespace: uniform strings, generated values, and mutated values.
    @Test func jsonAgreesWithJSONSerialization() throws {
        let acceptor = try Acceptor(Self.json)
        var generator = SplitMix64(seed: 2024)
        let alphabet = Array("{}[],:\"0123456789abcdefghijklmnopqrstuvwxyz truefalsnul\t\n\r")
        var samples: [String] = []
        for _ in 0 ..< 150 {
            let length = Int.random(in: 0 ... 8, using: &generator)
            samples.append(String((0 ..< length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        for _ in 0 ..< 150 {
            samples.append(Self.randomJSON(depth: 3, using: &generator))
        }
        for _ in 0 ..< 200 {
            var characters = Array(Self.randomJSON(depth: 3, using: &generator))
            for _ in 0 ..< Int.random(in: 1 ... 2, using: &generator) {
                let index = Int.random(in: 0 ... characters.count, using: &generator)
                let character = alphabet.randomElement(using: &generator)!
                switch Int.random(in: 0 ..< 3, using: &generator) {
                case 0: characters.insert(character, at: index)
                case 1 where index < characters.count: characters.remove(at: index)
                default: if index < characters.count { characters[index] = character }
                }
            }
            samples.append(String(characters))
        }
        var valid = 0
        for sample in samples {
            let reference = (try? JSONSerialization.jsonObject(with: Data(sample.utf8), options: .fragmentsAllowed)) != nil
            if reference { valid += 1 }
            #expect(acceptor.accepts(sample) == reference, "\(sample.debugDescription): JSONSerialization says \(reference)")
        }
        // Both outcomes well represented.
        #expect(valid > 150 && valid < samples.count - 150, "\(valid) valid of \(samples.count)")
    }

    /// A random JSON text over the test alphabet, with random whitespace.
    static func randomJSON(depth: Int, using generator: inout SplitMix64) -> String {
        let spaces = ["", "", " ", "\n", "\t", " \r\n"]
        func space() -> String { spaces.randomElement(using: &generator)! }
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789 ")
        func string() -> String {
            "\"" + String((0 ..< Int.random(in: 0 ... 3, using: &generator)).map { _ in letters.randomElement(using: &generator)! }) + "\""
        }
        let kind = Int.random(in: 0 ..< (depth > 0 ? 7 : 5), using: &generator)
        switch kind {
        case 0: return ["true", "false", "null"].randomElement(using: &generator)!
        case 1: return string()
        case 2: return ["0", "7", "12", "305", "1e5", "0e0", "2e10", "90"].randomElement(using: &generator)!
        case 3, 4: return string()
        case 5:
            let count = Int.random(in: 0 ... 3, using: &generator)
            let items = (0 ..< count).map { _ in space() + randomJSON(depth: depth - 1, using: &generator) + space() }
            return "[" + (items.isEmpty ? space() : items.joined(separator: ",")) + "]"
        default:
            let count = Int.random(in: 0 ... 3, using: &generator)
            let members = (0 ..< count).map { _ in
                space() + string() + space() + ":" + space() + randomJSON(depth: depth - 1, using: &generator) + space()
            }
            return "{" + (members.isEmpty ? space() : members.joined(separator: ",")) + "}"
        }
    }

    // MARK: Chess

    static let chess = #"""
        # Numbered move pairs in algebraic notation, one pair a line.
        root   ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")*
        move   ::= (pawn | piece | castle) [+#]?
        pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
        piece  ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
        castle ::= "O-O" "-O"?
        """#

    @Test func chessMoves() throws {
        try Self.check(
            Self.chess,
            accepted: ["1. e4 e5\n", "1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. e4 b5\n",
                       "1. e4 c5\n2. Nf3 d6\n3. O-O O-O-O\n", "1. e4 e5\n2. Qh5 Ke7\n3. Qxe5# Kxe5\n",
                       "1. a4 h5\n2. axb5 hxg4\n3. b6 g3\n4. b7 g2\n5. bxa8=Q gxh1=N+\n",
                       "1. Nbd2 R1e2\n", "1. e4 e5\n10. Bb5+ a6\n", "1. Raxd1 Qh4xe1\n", "1. f3 e5\n99. g4 Qh4#\n"],
            rejected: ["", "1. e4\n", "1. e4 e5", "1. e9 e5\n", "1. i4 e5\n", "1.e4 e5\n", "1. e4 e5\n0. d4 d5\n",
                       "1. e4 e5\n100. d4 d5\n", "1. O-O-O-O e5\n", "1. Pe4 e5\n", "1. e8=K e5\n", "2. e4 e5\n"])
    }

    // MARK: Unicode

    @Test func unicodeLiteralsAndClasses() throws {
        let grammar = #"""
            root  ::= greek ("、" | ",") "日本" [\u3040-\u309F]{2} "\U0001F600"?
            greek ::= [α-ω]+
            """#
        try Self.check(
            grammar,
            accepted: ["αβγ,日本あい", "ω、日本ゃゎ😀", "αω,日本ぁゟ", "λ,日本んん😀", "αααααα、日本ああ",
                       "ζ,日本\u{3040}\u{309F}", "ψ,日本かな", "ο、日本ひら😀", "β,日本ゝゞ", "σς,日本のの"],
            rejected: ["", "abc,日本あい", "αβγ;日本あい", "αβγ,日本あ", "αβγ,日本アイ", "Α,日本あい",
                       "αβγ,日本あい😀😀", ",日本あい", "αβγ,日本語あい", "αβγ,日あい", "αβγ,日本あい🙂"])
    }

    @Test func negatedClassesAnyAndEscapes() throws {
        try Self.check(
            #"root ::= [^a-z]{3}"#,
            accepted: ["日本語", "ABC", "é😀\u{10FFFF}", "\u{0}\u{7F}\u{80}", "   ", "\u{7FF}\u{800}\u{FFFF}",
                       "\u{10000}12", "\n\t\r", "ÀÁÂ", "---"],
            rejected: ["abc", "日本", "日本語x", "a日本", "", "ABCD", "z  ", "12", "日本語日", "ab"])
        try Self.check(
            #"root ::= "<" . ">" | "\x41\u00e9\U0001F600" | [\x30-\x39\]\[-]+"#,
            accepted: ["<😀>", "<a>", "<\u{0}>", "<\u{10FFFF}>", "Aé😀", "<é>", "0", "]", "[9-", "<>>"],
            rejected: ["<ab>", "<>", "A", "Aé", "<😀😀>", "a", "-a", "aé😀", "", "<"])
        try Self.check(
            #"root ::= "\t\n\r\\\"" [\t\n\r\\"] [-a] [a-] [^]"#,
            accepted: ["\t\n\r\\\"\"-a😀", "\t\n\r\\\"\naax", "\t\n\r\\\"\\a-\u{0}"],
            rejected: ["\t\n\r\\\"\"b-x", "\t\n\r\\\"\"--", "\t\n\r\\\"\"-a"])
        try Self.check(#"root ::= "a" [] | "b""#, accepted: ["b"], rejected: ["a", ""])
    }

    // MARK: Repetitions

    @Test func repetitionBounds() throws {
        try Self.check(
            #"root ::= [0-9]{2,4} "-" "a"{3} "b"{2,} "c"{,2} ("xy"){0} ("d" "e"?){1,2}"#,
            accepted: ["12-aaabbd", "1234-aaabbbbbbccde", "123-aaabbcd", "99-aaabbbcdde", "00-aaabbded",
                       "0000-aaabbccdd", "12-aaabbde", "123-aaabbbbcd", "4567-aaabbbbbbbbbbbbbde", "10-aaabbcded"],
            rejected: ["1-aaabbd", "12345-aaabbd", "12-aabbd", "12-aaaabbd", "12-aaabd", "12-aaabbcccd",
                       "12-aaabbxyd", "12-aaabb", "12-aaabbdddd", "12-aaabbdee", "12-aaabbdede d"])
        try Self.check(
            #"root ::= ("ab"?){2} "!"* "?"+ ("x" | "y"){ 1 , 2 }"#,
            accepted: ["?x", "ab?y", "abab!!??xy", "ab!?yy", "!!!!???x"],
            rejected: ["ababab?x", "x", "?", "ab!x", "?xyx"])
    }

    @Test func repetitionBudget() {
        #expect(Self.parseError(#"root ::= "a"{1001}"#) == .budgetExceeded(what: "repetition count in a grammar text", limit: 1000))
        #expect(Self.parseError(#"root ::= "a"{2,99999999999999999999999}"#) == .budgetExceeded(what: "repetition count in a grammar text", limit: 1000))
        #expect(Self.parseError(#"root ::= "a"{1000}"#) == nil)
        #expect(Self.parseError(#"root ::= "a"{6}"#, repetitionLimit: 5) == .budgetExceeded(what: "repetition count in a grammar text", limit: 5))
        #expect(Self.parseError(#"root ::= "a"{,5}"#, repetitionLimit: 5) == nil)
        let states = GrammarError.budgetExceeded(what: "automaton states of a grammar text", limit: GrammarTextParser.stateLimit)
        #expect(Self.parseError(#"root ::= (("ab"{1000}){1000})"#) == states)
        #expect(Self.parseError("root ::= \"a\"" + String(repeating: "+", count: 40)) == states)
        #expect(Self.parseError("root ::= \"a\"" + String(repeating: "*?", count: 1000)) == nil)
    }

    // MARK: Layout

    @Test func commentsEverywhere() throws {
        let grammar = """
            # A list of words.
            root ::= word ("," word)* # trailing comment
            # between rules

            word ::= ( # inside parentheses
                [a-z#]+ # the hash in a class is a character
                | "#" # so is one in a literal
            )
            # final comment without newline
            """
        try Self.check(
            grammar,
            accepted: ["a", "ab,cd", "#", "a#b", "a,#,b", "###", "x,y,z", "#,#", "hello,world", "a##"],
            rejected: ["", ",", "a,", "A", "a b", "a,,b", "# comment", "a;b", "1", "a,B"])
    }

    @Test func multiLineRules() throws {
        let grammar = "root ::=\n" +
            "    item\n" +              // after ::=
            "    (\n" +                 // inside parentheses
            "        \",\"\n" +
            "        item\n" +
            "    )*\n" +
            "item ::= \"a\" |\n" +      // after |
            "         \"b\"\n" +
            "    | \"c\"\n" +           // a continuation line: not a new definition
            "    \"d\"\r\n" +           // \r\n line ends
            "\r\n" +
            "   other-rule_2 ::= \"unused\""
        try Self.check(
            grammar,
            accepted: ["a", "b", "cd", "a,b", "cd,cd,a", "b,b,b", "a,cd", "cd", "a,a,a,a", "b,cd"],
            rejected: ["", "c", "d", "ab", "a,", ",a", "a,c", "unused", "a b", "dc"])
        let parsed = try Grammar(ebnf: grammar)
        #expect(parsed.ruleNames == ["root", "item", "other-rule_2"])
        #expect(parsed.rootName == "root")
    }

    @Test func startRuleAndEmptyBodies() throws {
        let text = """
            helper ::= "h" empty
            start  ::= helper "!" | ()
            empty  ::=
            """
        try Self.check(text, rootRule: "start", accepted: ["h!", ""], rejected: ["h", "!", "h!h!"])
        let grammar = try Grammar(ebnf: text, rootRule: "start")
        #expect(grammar.rootName == "start")
        #expect(Self.location(of: Self.parseError(text)) == [1, 1])
    }

    @Test func deepNesting() throws {
        let limit = GrammarTextParser.nestingLimit
        let nested = "root ::= " + String(repeating: "(", count: limit) + "\"a\"" + String(repeating: ")", count: limit)
        #expect(try Grammar(ebnf: nested).matches("a"))
        let tooDeep = "root ::= " + String(repeating: "(", count: limit + 1) + "\"a\"" + String(repeating: ")", count: limit + 1)
        #expect(Self.location(of: Self.parseError(tooDeep)) == [1, 10 + limit])
        let hostile = "root ::= " + String(repeating: "(", count: 100_000)
        #expect(Self.location(of: Self.parseError(hostile)) == [1, 10 + limit])
        // Parsing is linear; compiling long chains is not (the DFA minimization), so only a
        // short one is matched.
        let long = "root ::= " + String(repeating: "\"ab\" item ", count: 20_000) + "\nitem ::= [0-9]"
        #expect(try Grammar(ebnf: long).ruleCount == 2)
        let short = "root ::= " + String(repeating: "\"ab\" ", count: 100)
        #expect(try Grammar(ebnf: short).matches(String(repeating: "ab", count: 100)))
    }

    @Test func leftRecursion() throws {
        let grammar = try Grammar(ebnf: """
            root ::= expr
            expr ::= expr "+" term | term
            term ::= [0-9]+
            """)
        #expect(throws: GrammarError.leftRecursion(rule: "expr")) { try grammar.matches("1+2") }
    }

    // MARK: Errors

    @Test func syntaxErrors() {
        Self.expectError(#"root ::= "a"#, line: 1, column: 10, containing: "string literal is never closed")
        Self.expectError(#"root ::= "\"#, line: 1, column: 10, containing: "never closed")
        Self.expectError("root ::= [a-z", line: 1, column: 10, containing: "character class is never closed")
        Self.expectError("root ::= (\"a\"", line: 1, column: 10, containing: "'(' is never closed")
        Self.expectError("root ::= (\"a\"\nnext ::= \"b\"", line: 1, column: 10, containing: "'(' is never closed")
        Self.expectError("root ::= \"a\")", line: 1, column: 13, containing: "')' without a matching '('")
        Self.expectError("root ::= *", line: 1, column: 10, containing: "'*' has nothing before it to repeat")
        Self.expectError("root ::= \"a\" | +", line: 1, column: 16, containing: "'+' has nothing")
        Self.expectError("root ::= ( ?)", line: 1, column: 12, containing: "'?' has nothing")
        Self.expectError("root ::= {2}", line: 1, column: 10, containing: "'{' has nothing")
        Self.expectError(#"root ::= "\q""#, line: 1, column: 11, containing: "unknown escape '\\q'")
        Self.expectError(#"root ::= [\-]"#, line: 1, column: 11, containing: "unknown escape")
        Self.expectError(#"root ::= "\x4""#, line: 1, column: 11, containing: "needs 2 hexadecimal digits")
        Self.expectError(#"root ::= "\u12G4""#, line: 1, column: 11, containing: "needs 4 hexadecimal digits")
        Self.expectError(#"root ::= "\uD800""#, line: 1, column: 11, containing: "U+D800 is not a Unicode scalar value")
        Self.expectError(#"root ::= "\U00110000""#, line: 1, column: 11, containing: "not a Unicode scalar value")
        Self.expectError("root ::= [z-a]", line: 1, column: 11, containing: "out of order")
        Self.expectError(#"root ::= "a"{3,1}"#, line: 1, column: 13, containing: "maximum 1 is less than its minimum 3")
        Self.expectError(#"root ::= "a"{x}"#, line: 1, column: 14, containing: "expected a repetition count")
        Self.expectError(#"root ::= "a"{,}"#, line: 1, column: 13, containing: "expected a repetition count")
        Self.expectError(#"root ::= "a"{2"#, line: 1, column: 15, containing: "expected '}'")
        Self.expectError("root ::= \"a\" @", line: 1, column: 14, containing: "unexpected '@'")
        Self.expectError("root ::= \"日本\" @", line: 1, column: 15, containing: "unexpected '@'")
        Self.expectError("root ::= \u{1}", line: 1, column: 10, containing: "unexpected U+0001")
        Self.expectError("root ::= a\r\na ::= @", line: 2, column: 7, containing: "unexpected '@'")
        Self.expectError("root ::= a\ra ::=\r\n  \"x\" ;", line: 3, column: 7, containing: "unexpected ';'")
        Self.expectError("root = \"a\"", line: 1, column: 6, containing: "expected '::=' after the rule name 'root'")
        Self.expectError("root\n::= \"a\"", line: 1, column: 5, containing: "expected '::='")
        Self.expectError("\"a\" ::= x", line: 1, column: 1, containing: "expected a rule name, found '\"'")
        Self.expectError("# comment\n  ::= \"a\"", line: 2, column: 3, containing: "expected a rule name")
        Self.expectError("root ::= \"a\" b ::= \"c\"", line: 1, column: 14, containing: "must start on a new line")
        Self.expectError("root ::= b ::= \"c\"", line: 1, column: 10, containing: "must start on a new line")
        Self.expectError("root ::= \"a\"\n  ::= \"b\"", line: 2, column: 3, containing: "unexpected ':'")
    }

    @Test func ruleErrors() {
        Self.expectError("root ::= item", line: 1, column: 10, containing: "rule 'item' is referenced but never defined")
        Self.expectError("root ::= a c\na ::= b c2\nb ::= \"x\"", line: 1, column: 12, containing: "rule 'c' is referenced")
        Self.expectError("root ::= a\na ::= b c2\nb ::= \"x\"", line: 2, column: 9, containing: "rule 'c2' is referenced")
        Self.expectError("root ::= \"a\"\nother ::= \"b\"\n  root ::= \"c\"", line: 3, column: 3,
                         containing: "rule 'root' is already defined at line 1")
        Self.expectError("start ::= \"a\"", line: 1, column: 1, containing: "no rule named 'root'")
        Self.expectError("", line: 1, column: 1, containing: "no rule named 'root'")
        Self.expectError("# only a comment\n\n", line: 1, column: 1, containing: "no rule named 'root'")
        #expect(Self.parseError("root ::= start\nstart ::= \"x\"\n") == nil)
    }
}
