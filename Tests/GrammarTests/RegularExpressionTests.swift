import Foundation
import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// `RegularExpression` against Foundation's `NSRegularExpression` (ICU) as an independent
/// reference, on random and mutated strings, plus exact expectations where ICU and
/// ECMAScript legitimately differ, and every error case.
@Suite struct RegularExpressionTests {
    // MARK: Helpers

    /// The pattern compiled through the character automaton, UTF-8 lowering and the DFA.
    static func compile(_ pattern: String, search: Bool, repetitionLimit: Int = 1000) throws -> DFA {
        var characters = CharacterNFA()
        let fragment = try RegularExpression.build(pattern, search: search, into: &characters, repetitionLimit: repetitionLimit)
        var bytes = ByteNFA()
        let lowered = Lowering.lower(fragment, of: characters, into: &bytes) { set, automaton in
            Lowering.utf8(set, into: &automaton)
        }
        return try DFA(lowered, of: bytes)
    }

    /// The error `build` throws for `pattern`, or `nil` when it compiles.
    static func buildError(_ pattern: String, search: Bool = true, repetitionLimit: Int = 1000) -> GrammarError? {
        var characters = CharacterNFA()
        do {
            _ = try RegularExpression.build(pattern, search: search, into: &characters, repetitionLimit: repetitionLimit)
            return nil
        } catch {
            return error
        }
    }

    /// ICU's verdict: a match anywhere (search) or of the whole string (`\A(?:…)\z`, which
    /// lets backtracking try every alternative rather than comparing the first match's range).
    struct Reference {
        let expression: NSRegularExpression

        init(_ pattern: String, search: Bool) throws {
            expression = try NSRegularExpression(pattern: search ? pattern : "\\A(?:" + pattern + ")\\z")
        }

        func matches(_ text: String) -> Bool {
            expression.firstMatch(in: text, range: NSRange(location: 0, length: text.utf16.count)) != nil
        }
    }

    /// Random strings over `alphabet` (units may be longer than one character), then each
    /// example mutated by inserting, deleting or replacing one unit.
    static func samples(alphabet: [String], examples: [String], seed: UInt64, count: Int = 300) -> [String] {
        var generator = SplitMix64(seed: seed)
        var result = examples + [""]
        for _ in 0 ..< count {
            let length = Int.random(in: 0 ... 10, using: &generator)
            result.append((0 ..< length).map { _ in alphabet.randomElement(using: &generator)! }.joined())
        }
        for example in examples {
            for _ in 0 ..< 20 {
                var characters = example.map(String.init)
                let index = Int.random(in: 0 ... characters.count, using: &generator)
                let unit = alphabet.randomElement(using: &generator)!
                switch Int.random(in: 0 ..< 3, using: &generator) {
                case 0: characters.insert(unit, at: index)
                case 1 where index < characters.count: characters.remove(at: index)
                default: if index < characters.count { characters[index] = unit } else { characters.append(unit) }
                }
                result.append(characters.joined())
            }
        }
        return result
    }

    // MARK: Against ICU

    /// One pattern compared with ICU.
    struct Case: Sendable, CustomTestStringConvertible {
        var pattern: String
        var search: Bool
        /// The strings are drawn from these; restricted where ICU and ECMAScript differ.
        var alphabet: [String]
        /// Handpicked strings, matching and not.
        var examples: [String]
        /// The same pattern in ICU syntax, where only the spelling differs (`\u{…}`).
        var reference: String? = nil

        var testDescription: String { "/\(pattern)/ \(search ? "search" : "whole")" }
    }

    /// Letters, digits, punctuation, non-ASCII and line terminators, for patterns whose
    /// meaning ICU and ECMAScript share on all of them.
    static let broad = ["a", "b", "c", "x", "A", "Z", "0", "1", "9", "-", ".", "_", " ", "é", "中", "😀", "\n", "\r"]
    /// Without line terminators: ICU's `$` also matches before a final line terminator.
    static let noLineTerminators = ["a", "b", "c", "x", "A", "Z", "0", "1", "9", "-", ".", "_", " ", "é", "中", "😀"]
    /// For `\w`, `\d`, `\s`: no non-ASCII letters or digits (ICU's classes are Unicode-wide),
    /// no `\v`, U+0085 or U+FEFF (where the two `\s` differ).
    static let classSafe = ["a", "z", "A", "Q", "0", "5", "9", "_", "-", " ", "\t", "\n", "\r", "\u{0C}", "\u{A0}", "\u{2003}",
                            "\u{3000}", "\u{2028}", "😀", "€", "!", "."]

    static let cases: [Case] = [
        // Literals, alternation, groups.
        Case(pattern: "abc", search: true, alphabet: broad + ["abc", "ab"], examples: ["abc", "xabcx", "ab", "a\nbc"]),
        Case(pattern: "abc", search: false, alphabet: broad + ["abc"], examples: ["abc", "xabc", "abcx"]),
        Case(pattern: "é中😀", search: true, alphabet: broad, examples: ["é中😀", "xé中😀", "é中"]),
        Case(pattern: "a|bc|", search: false, alphabet: broad, examples: ["", "a", "bc", "b", "abc"]),
        Case(pattern: "cat|dog", search: true, alphabet: ["cat", "dog", "c", "a", "t", "d", "o", "g", "\n"], examples: ["cat", "hotdog", "ca"]),
        Case(pattern: "(?:ab)+c", search: false, alphabet: ["ab", "a", "b", "c"], examples: ["abc", "ababc", "c", "abab"]),
        Case(pattern: "(a|bc)*d", search: false, alphabet: ["a", "bc", "b", "c", "d"], examples: ["d", "abcad", "bd"]),
        Case(pattern: "(?<year>\\d{4})-(?<month>\\d{2})", search: false, alphabet: ["2024", "0", "1", "-", "a"],
             examples: ["2024-01", "2024-1", "24-01"]),
        // Anchors.
        Case(pattern: "^abc$", search: true, alphabet: noLineTerminators + ["abc"], examples: ["abc", "abcx", "xabc"]),
        Case(pattern: "^abc", search: true, alphabet: broad + ["abc"], examples: ["abc", "abc\n", "xabc"]),
        Case(pattern: "abc$", search: true, alphabet: noLineTerminators + ["abc"], examples: ["abc", "xabc", "abcx"]),
        Case(pattern: "^(a|b)$", search: true, alphabet: noLineTerminators, examples: ["a", "b", "ab", ""]),
        Case(pattern: "^a|b$", search: true, alphabet: noLineTerminators, examples: ["a", "xb", "xa", "bx"]),
        Case(pattern: "(^a|b$)", search: true, alphabet: noLineTerminators, examples: ["ax", "xb", "xa", "bx"]),
        Case(pattern: "(?:^|,)x", search: true, alphabet: ["x", ",", "a", " ", "\n"], examples: ["x", ",x", "ax", "a,x"]),
        Case(pattern: "^$", search: true, alphabet: ["a", " "], examples: ["", "a"]),
        Case(pattern: "^(?:ab|c)+$", search: false, alphabet: broad + ["ab"], examples: ["ab", "cab", "a"]),
        // Quantifiers.
        Case(pattern: "a*b+c?", search: false, alphabet: ["a", "b", "c", "x"], examples: ["b", "aabbc", "ac", "bcc"]),
        Case(pattern: "a*?b+?c??", search: false, alphabet: ["a", "b", "c", "x"], examples: ["b", "aabbc", "ac"]),
        Case(pattern: "(ab){2}", search: false, alphabet: ["ab", "a", "b"], examples: ["abab", "ab", "ababab"]),
        Case(pattern: "a{2,}", search: false, alphabet: ["a", "b"], examples: ["a", "aa", "aaaaa"]),
        Case(pattern: "x{1,3}y{0,2}", search: false, alphabet: ["x", "y", "z"], examples: ["x", "xxxyy", "xxxx", "y"]),
        Case(pattern: "(a|bc){0,2}d", search: false, alphabet: ["a", "bc", "b", "d"], examples: ["d", "abcd", "aaad"]),
        Case(pattern: "a{2}?b{1,2}?", search: false, alphabet: ["a", "b"], examples: ["aab", "aabb", "ab"]),
        // Dot (ICU also excludes \v, \f, U+0085: left out of the alphabet).
        Case(pattern: "a.c", search: false, alphabet: broad + ["\u{2028}", "\u{2029}"], examples: ["abc", "a😀c", "a\nc", "a\u{2028}c"]),
        Case(pattern: "^.+$", search: false, alphabet: broad + ["\u{2029}"], examples: ["abc", "a\rb"]),
        // Classes.
        Case(pattern: "[a-c]+", search: false, alphabet: broad, examples: ["abc", "abd", ""]),
        Case(pattern: "[^a-c]+", search: false, alphabet: broad, examples: ["xyz", "é中😀\n", "xa"]),
        Case(pattern: "[^abc]", search: true, alphabet: broad, examples: ["abc", "abcx"]),
        Case(pattern: "[.*+?(){}|$^]", search: false, alphabet: [".", "*", "+", "?", "(", ")", "{", "}", "|", "$", "^", "a"],
             examples: [".", "^", "a"]),
        Case(pattern: "[-a]|[a-]", search: false, alphabet: ["-", "a", "b"], examples: ["-", "a", "b"]),
        Case(pattern: "[\\]\\\\\\-]", search: false, alphabet: ["]", "\\", "-", "a"], examples: ["]", "\\", "-"]),
        Case(pattern: "[\\u00e9-\\u00ff\\x41]", search: false, alphabet: broad + ["ÿ", "Ā"], examples: ["é", "ÿ", "A", "Ā"]),
        Case(pattern: "[\\d\\s]+", search: false, alphabet: classSafe, examples: ["1 2", "a"]),
        Case(pattern: "[\\w.]+", search: false, alphabet: classSafe, examples: ["a_b.c", "a-b"]),
        Case(pattern: "[^\\s]+", search: true, alphabet: classSafe, examples: [" ", "a b"]),
        Case(pattern: "[\\S][\\W][\\D]", search: false, alphabet: classSafe, examples: ["a!x", " !x", "a_x"]),
        // Escapes.
        Case(pattern: "\\d+\\.\\d*", search: false, alphabet: classSafe, examples: ["1.5", "12.", ".5"]),
        Case(pattern: "\\w+\\s\\w+", search: true, alphabet: classSafe, examples: ["ab cd", "ab_c\td", "ab"]),
        Case(pattern: "\\D\\W\\S", search: false, alphabet: classSafe, examples: ["a!x", "1!x"]),
        Case(pattern: "\\n\\r\\t\\f", search: false, alphabet: ["\n", "\r", "\t", "\u{0C}", "n"], examples: ["\n\r\t\u{0C}"]),
        Case(pattern: "\\x41\\u00e9\\u4E2D", search: false, alphabet: ["A", "é", "中", "a"], examples: ["Aé中"]),
        Case(pattern: "\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\/\\^\\$\\\\", search: false, alphabet: [".", "*", "+", "a"],
             examples: [".*+?()[]{}|/^$\\"]),
        Case(pattern: "\\u{1F600}|\\uD83D\\uDE01", search: false, alphabet: ["😀", "😁", "a", "\u{D7FF}", "\u{E000}"], examples: ["😀", "😁"],
             reference: "\\x{1F600}|\\x{1F601}"),
        Case(pattern: "\\cJ\\cM", search: false, alphabet: ["\n", "\r", "J"], examples: ["\n\r"]),
        // Real-world schema patterns.
        Case(pattern: "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$", search: true,
             alphabet: ["a", "Z", "0", ".", "_", "%", "+", "-", "@", "com", " ", "é"],
             examples: ["john.doe@example.com", "a@b.co", "a@b.c", "@b.com", "a@b", "a b@c.com"]),
        Case(pattern: "^\\d{3}-\\d{2}-\\d{4}$", search: true, alphabet: ["0", "1", "9", "-", "a"],
             examples: ["123-45-6789", "123-456-789", "123-45-67890"]),
        Case(pattern: "^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$", search: true, alphabet: ["(", ")", "0", "5", "9", "-"],
             examples: ["(555)555-1234", "555-1234", "(555 555-1234", "()555-1234"]),
        Case(pattern: "^#?([a-fA-F0-9]{6}|[a-fA-F0-9]{3})$", search: true, alphabet: ["#", "a", "F", "0", "9", "g"],
             examples: ["#fff", "a0b1c2", "#ffff", "ggg"]),
        Case(pattern: "^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)$", search: true, alphabet: ["0", "1", "9", ".", "a"],
             examples: ["1.0.0", "10.20.30", "01.0.0", "1.0"]),
        Case(pattern: "^[a-z0-9]+(?:-[a-z0-9]+)*$", search: true, alphabet: ["a", "z", "0", "-", "A", "_"],
             examples: ["my-slug-1", "-slug", "slug-", "a--b"]),
        Case(pattern: "^(?:(?:25[0-5]|2[0-4]\\d|1?\\d?\\d)\\.){3}(?:25[0-5]|2[0-4]\\d|1?\\d?\\d)$", search: true,
             alphabet: ["0", "1", "2", "5", "9", ".", "25", "255"], examples: ["192.168.0.1", "256.1.1.1", "1.2.3"]),
        Case(pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", search: true,
             alphabet: ["0", "a", "F", "-", "g"],
             examples: ["123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400"]),
        Case(pattern: "^https?://[^\\s/$.?#][^\\s]*$", search: true,
             alphabet: ["http", "s", "://", "/", "a", ".", "?", "#", " ", "é", "😀"],
             examples: ["https://example.com/a?b#c", "http://", "ftp://x", "https://a b"]),
        Case(pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?Z?$", search: true, alphabet: ["0", "1", "-", ":", "T", "Z"],
             examples: ["2024-01-31T12:30:00Z", "2024-01-31T12:30", "2024-01-31 12:30"]),
        Case(pattern: "^[A-Z]{2}[0-9]{6}$|^[0-9]{9}$", search: true, alphabet: ["A", "Z", "0", "9", "a"],
             examples: ["AB123456", "123456789", "A1234567"]),
    ]

    @Test(arguments: cases)
    func agreesWithICU(_ test: Case) throws {
        let automaton = try Self.compile(test.pattern, search: test.search)
        let reference = try Reference(test.reference ?? test.pattern, search: test.search)
        var accepted = 0
        for (index, text) in Self.samples(alphabet: test.alphabet, examples: test.examples, seed: test.pattern.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }).enumerated() {
            let expected = reference.matches(text)
            #expect(automaton.accepts(Array(text.utf8)) == expected, "sample \(index): \(text.debugDescription)")
            if expected { accepted += 1 }
        }
        #expect(accepted > 0, "no sample matched: the alphabet or examples are too weak")
    }

    /// Lookaheads right after a leading `^`, which the schema compiler takes as
    /// intersections and differences of automata, against ICU's backtracking lookaheads.
    @Test(arguments: [
        Case(pattern: "^(?!@@)[@a-z]+$", search: true, alphabet: ["@", "a", "b", "-"], examples: ["@a", "@@a", "a@@"]),
        Case(pattern: "^(?!^lib\\.|bin\\.).*", search: true, alphabet: ["lib", "bin", ".", "x"], examples: ["lib.x", "bin.", "xlib."]),
        Case(pattern: "^(?!.*://)(?=.{1,6}$)[a-z.:/]+$", search: true, alphabet: ["a", ".", "://", "b"], examples: ["a.b", "a://b", "abcdefg"]),
        Case(pattern: "^(?=[a-z]*x)(?![a-z]*y)[a-z]{2,}", search: true, alphabet: ["a", "x", "y", "1"], examples: ["ax", "axy", "xa1"]),
        Case(pattern: "^(?!pattern$).*$", search: true, alphabet: ["pattern", "s", "p"], examples: ["pattern", "patterns"]),
    ])
    func leadingLookaheadsAgreeWithICU(_ test: Case) throws {
        let schema = JSONValue.object([("type", .string("string")), ("pattern", .string(test.pattern))])
        let grammar = try Grammar(jsonSchema: schema.compactText)
        let reference = try Reference(test.pattern, search: true)
        var accepted = 0
        for (index, text) in Self.samples(alphabet: test.alphabet, examples: test.examples, seed: 7).enumerated() {
            let expected = reference.matches(text)
            #expect(try grammar.matches(JSONValue.string(text).compactText) == expected, "sample \(index): \(text.debugDescription)")
            if expected { accepted += 1 }
        }
        #expect(accepted > 0)
    }

    // MARK: Exact expectations (where ICU is not ECMAScript)

    /// A pattern with the strings it must accept and reject.
    struct Expectation: Sendable, CustomTestStringConvertible {
        var pattern: String
        var search: Bool
        var accepted: [String]
        var rejected: [String]

        var testDescription: String { "/\(pattern)/ \(search ? "search" : "whole")" }
    }

    static let expectations: [Expectation] = [
        // `$` is the very end, and `.` excludes exactly the four line terminators.
        Expectation(pattern: "^abc$", search: true, accepted: ["abc"], rejected: ["abc\n", "abc\r\n", "\nabc"]),
        Expectation(pattern: "^.$", search: true, accepted: ["\u{0B}", "\u{0C}", "\u{85}", "😀", "\u{FEFF}"],
                    rejected: ["\n", "\r", "\u{2028}", "\u{2029}", ""]),
        // ECMAScript classes are ASCII (\d, \w) or the ECMAScript white space (\s).
        Expectation(pattern: "\\d", search: false, accepted: ["0", "9"], rejected: ["\u{663}", "\u{FF11}", "a"]),
        Expectation(pattern: "\\w", search: false, accepted: ["a", "Z", "0", "_"], rejected: ["é", "中", "-", "\u{2118}"]),
        Expectation(pattern: "\\s", search: false,
                    accepted: ["\t", "\n", "\u{0B}", "\u{0C}", "\r", " ", "\u{A0}", "\u{1680}", "\u{2000}", "\u{200A}",
                               "\u{2028}", "\u{2029}", "\u{202F}", "\u{205F}", "\u{3000}", "\u{FEFF}"],
                    rejected: ["\u{85}", "\u{200B}", "\u{180E}", "a", ""]),
        Expectation(pattern: "[\\S]", search: false, accepted: ["\u{85}", "a"], rejected: ["\u{FEFF}", "\u{0B}"]),
        // Escapes ICU spells differently.
        Expectation(pattern: "\\v\\0", search: false, accepted: ["\u{0B}\u{0}"], rejected: ["\n\u{0}", "\u{0B}0"]),
        Expectation(pattern: "[\\b]", search: false, accepted: ["\u{08}"], rejected: ["b", "\\"]),
        Expectation(pattern: "\\u{10FFFF}\\u{41}", search: false, accepted: ["\u{10FFFF}A"], rejected: ["A"]),
        Expectation(pattern: "[\\uD83D\\uDE00-\\uD83D\\uDE4F]", search: false, accepted: ["😀", "🙏", "😎"], rejected: ["🚀", "a"]),
        Expectation(pattern: "\\ \\\"\\'\\@\\#\\:\\é", search: false, accepted: [" \"'@#:é"], rejected: ["\\ "]),
        // Annex B literals.
        Expectation(pattern: "a{", search: false, accepted: ["a{"], rejected: ["a"]),
        Expectation(pattern: "a{1", search: false, accepted: ["a{1"], rejected: ["a"]),
        Expectation(pattern: "a{,2}", search: false, accepted: ["a{,2}"], rejected: ["a", "aa"]),
        Expectation(pattern: "{a}", search: false, accepted: ["{a}"], rejected: ["a"]),
        Expectation(pattern: "x{1,2", search: false, accepted: ["x{1,2"], rejected: ["x"]),
        Expectation(pattern: "a}b]", search: false, accepted: ["a}b]"], rejected: ["ab"]),
        Expectation(pattern: "^\\{\\}$", search: true, accepted: ["{}"], rejected: ["{ }"]),
        Expectation(pattern: "[\\w-.]+", search: false, accepted: ["a-b.c_d"], rejected: ["a b", "a,b"]),
        Expectation(pattern: "[a-z-0]", search: false, accepted: ["q", "-", "0"], rejected: ["1", "A"]),
        Expectation(pattern: "[--/]", search: false, accepted: ["-", ".", "/"], rejected: ["0", ","]),
        // ECMAScript classes: `[` is literal inside, `]` first ends the class.
        Expectation(pattern: "[[a]", search: false, accepted: ["[", "a"], rejected: ["]"]),
        Expectation(pattern: "[]a", search: true, accepted: [], rejected: ["a", "", "[]a"]),
        Expectation(pattern: "[^]", search: false, accepted: ["\n", "a", "😀", "\u{2028}"], rejected: ["", "ab"]),
        Expectation(pattern: "[]]", search: false, accepted: [], rejected: ["]", "[]]"]),
        // Search semantics on both sides, whole-match semantics without padding.
        Expectation(pattern: "b", search: true, accepted: ["b", "abc", "\nb\n"], rejected: ["", "a"]),
        Expectation(pattern: "b", search: false, accepted: ["b"], rejected: ["abc", ""]),
        Expectation(pattern: "", search: true, accepted: ["", "anything", "\n"], rejected: []),
        Expectation(pattern: "^", search: true, accepted: ["", "a"], rejected: []),
        Expectation(pattern: "$", search: false, accepted: [""], rejected: ["a"]),
        Expectation(pattern: "^^a$$", search: true, accepted: ["a"], rejected: ["aa", "ba"]),
        Expectation(pattern: "(?:^)a(?:$)", search: true, accepted: ["a"], rejected: ["ab", "ba"]),
        Expectation(pattern: "(^a|b)c$", search: true, accepted: ["ac", "bc", "xbc"], rejected: ["xac", "acx"]),
        Expectation(pattern: "x(?:$|,)", search: true, accepted: ["x", "ax", "x,y"], rejected: ["xy"]),
        Expectation(pattern: "a{0}b", search: false, accepted: ["b"], rejected: ["ab"]),
        Expectation(pattern: "(a*)*b", search: false, accepted: ["b", "aaab"], rejected: ["a"]),
        Expectation(pattern: "a{3}", search: false, accepted: ["aaa"], rejected: ["aa", "aaaa"]),
        Expectation(pattern: "(?<n_1$>a)(?<é>b)", search: false, accepted: ["ab"], rejected: ["a"]),
    ]

    @Test(arguments: expectations)
    func matchesExactly(_ test: Expectation) throws {
        let automaton = try Self.compile(test.pattern, search: test.search)
        for text in test.accepted { #expect(automaton.accepts(Array(text.utf8)), "should accept \(text.debugDescription)") }
        for text in test.rejected { #expect(!automaton.accepts(Array(text.utf8)), "should reject \(text.debugDescription)") }
    }

    /// Two patterns and whether their languages are equal.
    struct LanguagePair: Sendable, CustomTestStringConvertible {
        var left: String
        var right: String
        var search: Bool
        var equal: Bool

        var testDescription: String { "/\(left)/ \(equal ? "==" : "!=") /\(right)/" }
    }

    /// Minimal DFAs are numbered canonically, so equal languages give identical automata.
    @Test(arguments: [
        LanguagePair(left: "a*?", right: "a*", search: false, equal: true),
        LanguagePair(left: "^abc$", right: "abc", search: false, equal: true),
        LanguagePair(left: "[\\d]", right: "[0-9]", search: false, equal: true),
        LanguagePair(left: "\\uD83D\\uDE00", right: "😀", search: false, equal: true),
        LanguagePair(left: "[\\s\\S]", right: "[^]", search: false, equal: true),
        LanguagePair(left: "a{2,4}", right: "aaa?a?", search: false, equal: true),
        LanguagePair(left: "(?:a|b)", right: "[ab]", search: true, equal: true),
        LanguagePair(left: "\\cm\\cJ", right: "\\r\\n", search: false, equal: true),
        LanguagePair(left: "abc", right: "[^]*abc[^]*", search: false, equal: false),
        LanguagePair(left: "abc", right: "[^]*abc[^]*", search: true, equal: true),
        LanguagePair(left: "abc", right: "^[^]*abc[^]*$", search: true, equal: true),
        LanguagePair(left: "abc", right: ".*abc.*", search: true, equal: true),
        LanguagePair(left: "abc", right: ".*abc.*", search: false, equal: false),
    ])
    func comparesLanguages(_ pair: LanguagePair) throws {
        let first = try Self.compile(pair.left, search: pair.search), second = try Self.compile(pair.right, search: pair.search)
        let equal = first.transitions == second.transitions && first.isFinal == second.isFinal
        #expect(equal == pair.equal)
    }

    // MARK: Errors

    /// A pattern that must be refused, where, and a word of the message.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var pattern: String
        var offset: Int
        var message: String
        var search = true

        var testDescription: String { "/\(pattern)/" }
    }

    static let refusals: [Refusal] = [
        // Beyond regular languages or the subset.
        Refusal(pattern: "(a)\\1", offset: 3, message: "backreference"),
        Refusal(pattern: "é\\2", offset: 2, message: "backreference"),
        Refusal(pattern: "(?<x>a)\\k<x>", offset: 7, message: "backreference"),
        Refusal(pattern: "a(?=b)", offset: 1, message: "lookahead"),
        Refusal(pattern: "(?!b)", offset: 0, message: "lookahead"),
        Refusal(pattern: "x(?<=a)b", offset: 1, message: "lookbehind"),
        Refusal(pattern: "(?<!a)b", offset: 0, message: "lookbehind"),
        Refusal(pattern: "\\bfoo", offset: 0, message: "word boundar"),
        Refusal(pattern: "a\\B", offset: 1, message: "word boundar"),
        Refusal(pattern: "^[\\p{L}]", offset: 2, message: "property"),
        Refusal(pattern: "\\P{Lu}", offset: 0, message: "property"),
        Refusal(pattern: "(?i)abc", offset: 0, message: "flags"),
        Refusal(pattern: "(?-i:a)", offset: 0, message: "flags"),
        Refusal(pattern: "(?P<n>a)", offset: 0, message: "(?<name>…)"),
        Refusal(pattern: "(?#note)", offset: 0, message: "invalid group"),
        Refusal(pattern: "a^b", offset: 1, message: "'^' is only supported"),
        Refusal(pattern: "a$b", offset: 1, message: "'$' is only supported"),
        Refusal(pattern: "(a^)", offset: 2, message: "'^' is only supported"),
        Refusal(pattern: "(^a)*", offset: 1, message: "'^' is only supported"),
        Refusal(pattern: "a|b(^c)", offset: 4, message: "'^' is only supported"),
        Refusal(pattern: "x?^a", offset: 2, message: "'^' is only supported", search: false),
        Refusal(pattern: "^*", offset: 1, message: "nothing to repeat"),
        Refusal(pattern: "a$?", offset: 2, message: "nothing to repeat"),
        // Malformed.
        Refusal(pattern: "(ab", offset: 0, message: "missing ')'"),
        Refusal(pattern: "((a)", offset: 0, message: "missing ')'"),
        Refusal(pattern: "ab)", offset: 2, message: "unmatched ')'"),
        Refusal(pattern: "[abc", offset: 0, message: "missing ']'"),
        Refusal(pattern: "x[^", offset: 1, message: "missing ']'"),
        Refusal(pattern: "[z-a]", offset: 1, message: "out of order"),
        Refusal(pattern: "[😀-a]", offset: 1, message: "out of order"),
        Refusal(pattern: "*a", offset: 0, message: "nothing to repeat"),
        Refusal(pattern: "a**", offset: 2, message: "nothing to repeat"),
        Refusal(pattern: "a*+", offset: 2, message: "nothing to repeat"),
        Refusal(pattern: "+", offset: 0, message: "nothing to repeat"),
        Refusal(pattern: "a|?", offset: 2, message: "nothing to repeat"),
        Refusal(pattern: "(*)", offset: 1, message: "nothing to repeat"),
        Refusal(pattern: "{2}", offset: 0, message: "nothing to repeat"),
        Refusal(pattern: "a{2}{3}", offset: 4, message: "nothing to repeat"),
        Refusal(pattern: "a{2,1}", offset: 1, message: "out of order"),
        Refusal(pattern: "\\", offset: 0, message: "backslash"),
        Refusal(pattern: "ab\\", offset: 2, message: "backslash"),
        Refusal(pattern: "\\uD83D", offset: 0, message: "surrogate"),
        Refusal(pattern: "a\\uDE00", offset: 1, message: "surrogate"),
        Refusal(pattern: "\\uD83Dx", offset: 0, message: "surrogate"),
        Refusal(pattern: "\\u{D800}", offset: 0, message: "surrogate"),
        Refusal(pattern: "\\u{110000}", offset: 0, message: "U+10FFFF"),
        Refusal(pattern: "\\u{}", offset: 0, message: "hexadecimal"),
        Refusal(pattern: "\\u{41", offset: 0, message: "hexadecimal"),
        Refusal(pattern: "\\u12", offset: 0, message: "hexadecimal"),
        Refusal(pattern: "\\x4", offset: 0, message: "hexadecimal"),
        Refusal(pattern: "[\\xZZ]", offset: 1, message: "hexadecimal"),
        Refusal(pattern: "\\q", offset: 0, message: "unknown escape"),
        Refusal(pattern: "\\A\\z", offset: 0, message: "unknown escape"),
        Refusal(pattern: "a\\h", offset: 1, message: "unknown escape"),
        Refusal(pattern: "\\c1", offset: 0, message: "ASCII letter"),
        Refusal(pattern: "\\00", offset: 0, message: "octal"),
        Refusal(pattern: "[\\1]", offset: 1, message: "octal"),
        Refusal(pattern: "[\\B]", offset: 1, message: "inside a character class"),
        Refusal(pattern: "(?<>a)", offset: 0, message: "group name"),
        Refusal(pattern: "(?<1a>a)", offset: 3, message: "group name"),
        Refusal(pattern: "(?<a", offset: 0, message: "group name"),
        Refusal(pattern: "(?<a>x)(?<a>y)", offset: 7, message: "duplicate"),
    ]

    @Test(arguments: refusals)
    func refuses(_ test: Refusal) {
        let error = Self.buildError(test.pattern, search: test.search)
        guard case .invalidRegex(let pattern, let offset, let message)? = error else {
            Issue.record("expected .invalidRegex, got \(String(describing: error))")
            return
        }
        #expect(pattern == test.pattern)
        #expect(offset == test.offset, "\(message)")
        #expect(message.contains(test.message), "\(message)")
    }

    @Test func repetitionBoundsPastTheLimitExceedTheBudget() {
        for pattern in ["a{1001}", "a{0,5000}", "a{2000,}", "a{99999999999999999999}"] {
            #expect(Self.buildError(pattern) == .budgetExceeded(what: "repetition bound in regular expression /\(pattern)/", limit: 1000))
        }
        #expect(Self.buildError("a{11}", repetitionLimit: 10) == .budgetExceeded(what: "repetition bound in regular expression /a{11}/", limit: 10))
        #expect(Self.buildError("a{10}", repetitionLimit: 10) == nil)
        #expect(Self.buildError("a{1000}") == nil)
    }

    /// Counted repetitions of a multi-byte class come out minimal even past a few thousand
    /// states. The minimal automaton of `[^.]{m,n}` over UTF-8 has, per count below `n`, eight
    /// states (a character's start; after a lead byte E0, ED, F0 or F4, whose next byte is
    /// restricted; with one, two or three free continuation bytes to go) and one final state
    /// for `n` (Myhill–Nerode: the residuals differ in length or in the bytes they allow).
    @Test func countedRepetitionsAreMinimal() throws {
        for upper in [90, 250] {
            let dfa = try Self.compile("[^.]{10,\(upper)}", search: false)
            #expect(dfa.stateCount == 8 * upper + 1, "[^.]{10,\(upper)}")
        }
    }

    @Test func expandedSizeAndNestingHaveBudgets() {
        guard case .budgetExceeded? = Self.buildError("(a{1000}){1000}") else {
            Issue.record("nested repetitions should exceed the size budget")
            return
        }
        guard case .budgetExceeded? = Self.buildError(String(repeating: "(", count: 200) + String(repeating: ")", count: 200)) else {
            Issue.record("deep nesting should exceed the budget")
            return
        }
        #expect(Self.buildError(String(repeating: "(", count: 50) + "a" + String(repeating: ")", count: 50)) == nil)
    }

    /// Every refused pattern is refused in whole-match mode too, and ICU agrees that the
    /// malformed ones are malformed.
    @Test func refusalsDoNotDependOnTheMode() {
        for test in Self.refusals where test.search {
            guard case .invalidRegex? = Self.buildError(test.pattern, search: false) else {
                Issue.record("/\(test.pattern)/ accepted in whole-match mode")
                continue
            }
        }
        for pattern in ["(ab", "ab)", "[abc", "[z-a]", "*a", "a{2,1}", "\\"] {
            #expect(throws: (any Error).self) { _ = try NSRegularExpression(pattern: pattern) }
        }
    }
}
