import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// `DFA.subtracting(literals:)`, the minimal automaton built straight from a trie, against the
/// product with the literals' trie minimised by Hopcroft's refinement: state for state equal.
@Suite struct LiteralSubtractionTests {
    /// Every quoted key, as an object's "other keys" rule starts from.
    static func anyKey() throws -> DFA {
        var compiler = try SchemaCompiler(document: try JSONValue(parsing: "{}"), options: JSONSchemaOptions())
        return try compiler.anyKeyLanguage()
    }

    /// Names that share prefixes and suffixes, with escapes, multi-byte characters, an empty
    /// name, a quote, repeats, and names that are prefixes of others.
    static let alphabet = ["a", "b", "ab", "Color", "fill", "é", "\u{1F642}", "\"", "\\", "\n", "\u{7F}", "x"]

    @Test func keysOtherThanNamesAreTheMinimalDifference() throws {
        let anyKey = try Self.anyKey()
        var random = SplitMix64(seed: 17)
        for round in 0 ..< 60 {
            let names: [String] = (0 ..< Int.random(in: 1 ..< 30, using: &random)).map { _ in
                (0 ..< Int.random(in: 0 ..< 5, using: &random)).map { _ in Self.alphabet[Int.random(in: 0 ..< Self.alphabet.count, using: &random)] }.joined()
            }
            let literals = names.map { Lowering.jsonStringLiteral($0) }
            let direct = try anyKey.subtracting(literals: literals)
            let reference = try anyKey.subtracting(DFA(literals: literals))
            let same = direct == reference  // (not expanded: a failure would print both tables)
            #expect(same, "round \(round): \(names)")
            for literal in literals { #expect(!direct.accepts(literal)) }
            #expect(direct.accepts(Lowering.jsonStringLiteral(names.joined() + "zz")))
        }
    }

    /// Any minimal automaton, literals it rejects in part or in whole, and literals that
    /// empty the language: a node that behaves as a state of the automaton becomes that state.
    @Test func literalsAreSubtractedFromAnyMinimalAutomaton() throws {
        var random = SplitMix64(seed: 23)
        let letters: [UInt8] = Array("abc".utf8)
        for round in 0 ..< 200 {
            let words: [[UInt8]] = (0 ..< Int.random(in: 1 ..< 8, using: &random)).map { _ in
                (0 ..< Int.random(in: 0 ..< 5, using: &random)).map { _ in letters[Int.random(in: 0 ..< 3, using: &random)] }
            }
            // A language with loops: the words, then any number of "ab" or "c" (or the words alone).
            var automaton = ByteNFA()
            let tail = automaton.star(automaton.union([automaton.literal(Array("ab".utf8)), automaton.literal(Array("c".utf8))]))
            let body = automaton.sequence([automaton.union(words.map { automaton.literal($0) }), round.isMultiple(of: 2) ? tail : automaton.empty()])
            let language = try DFA(body, of: automaton)
            let literals: [[UInt8]] = (0 ..< Int.random(in: 1 ..< 10, using: &random)).map { _ in
                (0 ..< Int.random(in: 0 ..< 7, using: &random)).map { _ in letters[Int.random(in: 0 ..< 3, using: &random)] }
            } + (round.isMultiple(of: 5) ? words : [])
            let direct = try language.subtracting(literals: literals)
            let reference = try language.subtracting(DFA(literals: literals))
            let same = direct == reference
            #expect(same, "round \(round): words \(words), literals \(literals)")
        }
    }

    /// A rule defined by its automaton matches what the same automaton embedded as a
    /// fragment matches, and its states are the automaton's.
    @Test func ruleDefinedByItsAutomatonIsTakenAsItIs() throws {
        let keys = try Self.anyKey().subtracting(literals: ["id", "item", "items"].map { Lowering.jsonStringLiteral($0) })
        var grammar = Grammar()
        let root = grammar.declareRule("root")
        let key = grammar.declareRule("key")
        grammar.define(key, asAutomaton: keys)
        grammar.define(root, as: grammar.automaton.sequence([grammar.automaton.rule(key), grammar.automaton.literal(Array(":1".utf8))]))
        grammar.root = root
        let automaton = try PushdownAutomaton(grammar, stateLimit: 1 << 16)
        let same = automaton.rules[Int(key)] == keys
        #expect(same)
        let texts: [(String, Bool)] = [
            (#""it":1"#, true), (#""itemsx":1"#, true), (#""":1"#, true), (#""id":1"#, false), (#""items":1"#, false), (#""it""#, false),
        ]
        for (text, expected) in texts {
            #expect(try grammar.matches(text) == expected, "\(text)")
        }
    }
}
