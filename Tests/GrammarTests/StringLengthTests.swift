import Foundation
import Testing
@testable import TypesetGrammar

/// `minLength` and `maxLength` counted in the matcher's frames (`LengthCounter`) against the
/// automaton unrolled to the bound (`QuotedStringLength`, what property names still use):
/// the same strings, the same masks at every byte, the same shortest completions.
@Suite struct StringLengthTests {
    /// Tokens from one to ten bytes: characters of one to four bytes, escapes, closing
    /// quotes inside tokens, so the masks near a bound differ count by count.
    static let vocabulary: GrammarVocabulary = {
        let texts = [
            "\"", "\"]", "\",\"", ",", "[", "]", "a", "aa", "aaa", "aaaa", "aaaaaaaa", "ab", "abc", "b", "é", "éé", "\u{1F642}",
            "\\n", "\\u00", "\\u0001", "1", "a\"", "aa\"", "aaaa\"", "a\"]", "aa\",\"", "abcabc", "c\"", " ", "aéaéa",
        ]
        return GrammarVocabulary(tokens: texts.map { Array($0.utf8) } + [[]], endOfGeneration: [texts.count])
    }()

    /// String schemas: bounds near and far from the vocabulary's longest token, with and
    /// without a pattern whose lengths are not an interval.
    static let strings: [(schema: String, texts: [String])] = [
        (#"{"type":"string","maxLength":5}"#, ["", "a", "aaaaa", "aaaaaa", "ééééé", "a\nb", "\u{1F642}\u{1F642}\u{1F642}\u{1F642}\u{1F642}"]),
        (#"{"type":"string","minLength":3,"maxLength":7}"#, ["ab", "abc", "abcabca", "abcabcab", "\u{01}\u{01}\u{01}"]),
        (#"{"type":"string","minLength":12}"#, ["aaaaaaaaaaa", "aaaaaaaaaaaa", String(repeating: "é", count: 40)]),
        (#"{"type":"string","minLength":4,"maxLength":4}"#, ["aaaa", "aaa", "aaaaa", "éaéa"]),
        (#"{"type":"string","maxLength":30}"#, [String(repeating: "a", count: 30), String(repeating: "a", count: 31), "abc"]),
        (#"{"type":"string","pattern":"^(abc)+$","maxLength":7}"#, ["abc", "abcabc", "abcabca", "abcabcabc"]),
        (#"{"type":"string","pattern":"^a","minLength":2,"maxLength":9}"#, ["a", "ab", "aéaéaéaéa", "aéaéaéaéaé", "ba"]),
    ]

    /// The string node of a schema, for building the unrolled reference.
    static func referenceGrammar(_ schema: String, inArray: Bool) throws -> Grammar {
        let document = try JSONValue(parsing: schema)
        var compiler = try SchemaCompiler(document: document, options: JSONSchemaOptions())
        let node = try #require(try compiler.resolvedNode(Subschema(value: document, pointer: "#"), depth: 0))
        let language = try compiler.quotedStringLanguage(node, boundingLength: true)
        var grammar = Grammar()
        let item = grammar.declareRule("item")
        grammar.define(item, as: language.embed(into: &grammar.automaton))
        if inArray {
            let root = grammar.declareRule("root")
            var automaton = grammar.automaton
            let more = automaton.star(automaton.sequence([automaton.literal(Array(",".utf8)), automaton.rule(item)]))
            let list = automaton.optional(automaton.sequence([automaton.rule(item), more]))
            let body = automaton.sequence([automaton.literal(Array("[".utf8)), list, automaton.literal(Array("]".utf8))])
            grammar.automaton = automaton
            grammar.define(root, as: body)
            grammar.root = root
        } else {
            grammar.root = item
        }
        return grammar
    }

    static func quoted(_ text: String) -> String {
        String(decoding: Lowering.jsonStringLiteral(text), as: UTF8.self)
    }

    /// Tokens past `PositionMasks.nearWindow` bytes, so counts near a long string's bounds
    /// share classes whose masks leave the long tokens undecided.
    static let longTokens: GrammarVocabulary = {
        let texts = [
            "\"", "\"]", ",", "[", "]", "a", "aa", "aaaa", "é", String(repeating: "a", count: 20), String(repeating: "a", count: 40) + "\"",
            String(repeating: "é", count: 12), String(repeating: "a", count: 19) + "\"]", String(repeating: "ab", count: 15), "aaa\"",
        ]
        return GrammarVocabulary(tokens: texts.map { Array($0.utf8) } + [[]], endOfGeneration: [texts.count])
    }()

    static let longStrings: [(schema: String, texts: [String])] = [
        (#"{"type":"string","maxLength":100}"#, [90, 96, 99, 100, 101].map { String(repeating: "a", count: $0) }),
        (#"{"type":"string","minLength":70,"maxLength":130}"#, [40, 69, 70, 110, 130, 131].map { String(repeating: "é", count: $0) }),
        (#"{"type":"string","minLength":80}"#, [60, 79, 80, 81, 150].map { String(repeating: "a", count: $0) }),
        // A gap the counter's table shrinks (`LengthCounter`: counts far from both bounds alike).
        (#"{"type":"string","minLength":10,"maxLength":200}"#, [5, 9, 10, 45, 46, 47, 150, 165, 166, 199, 200, 201].map { String(repeating: "a", count: $0) }),
        (#"{"type":"string","pattern":"^(ab)+$","minLength":4,"maxLength":150}"#, [2, 4, 74, 75, 76].map { String(repeating: "ab", count: $0) }),
    ]

    @Test func countedStringsAreTheUnrolledOnes() throws {
        try expectCountedStringsAreTheUnrolledOnes(Self.strings, vocabulary: Self.vocabulary)
    }

    @Test func nearTheBoundsOfLongStringsTooWithLongTokens() throws {
        try expectCountedStringsAreTheUnrolledOnes(Self.longStrings, vocabulary: Self.longTokens)
    }

    func expectCountedStringsAreTheUnrolledOnes(_ strings: [(schema: String, texts: [String])], vocabulary: GrammarVocabulary) throws {
        for (schema, texts) in strings {
            for inArray in [false, true] {
                let counted = try Grammar(jsonSchema: inArray ? #"{"type":"array","items":"# + schema + "}" : schema)
                let reference = try Self.referenceGrammar(schema, inArray: inArray)
                let countedCompiled = try CompiledGrammar(counted, vocabulary: vocabulary)
                let referenceCompiled = try CompiledGrammar(reference, vocabulary: vocabulary)
                #expect(countedCompiled.automaton.counters.contains { $0 != nil }, "\(schema) counts")
                #expect(countedCompiled.shortestSentence() == referenceCompiled.shortestSentence(), "\(schema)")
                var values = texts.map(Self.quoted)
                if inArray { values = values.map { "[" + $0 + "]" } + ["[" + values.joined(separator: ",") + "]"] }
                for value in values {
                    #expect(try counted.matches(value) == reference.matches(value), "\(schema): \(value)")
                    #expect(MaskComputationTests.masks(along: value, in: countedCompiled)
                            == MaskComputationTests.masks(along: value, in: referenceCompiled), "\(schema): masks along \(value)")
                    #expect(Self.completions(along: value, in: countedCompiled) == Self.completions(along: value, in: referenceCompiled),
                            "\(schema): shortest completions along \(value)")
                }
                MaskChecks.expectEveryMaskMatchesAFullWalk(countedCompiled)
            }
        }
    }

    /// The shortest completion after each byte of `text` (while the grammar accepts it).
    static func completions(along text: String, in grammar: CompiledGrammar) -> [Int] {
        var matcher = GrammarMatcher(grammar)
        var result = [matcher.shortestCompletionLength]
        for byte in Array(text.utf8) {
            guard matcher.accept(bytes: [byte]) else { break }
            result.append(matcher.shortestCompletionLength)
        }
        return result
    }

    /// Independent of both constructions: the length in code points, and the pattern by
    /// Foundation's regular expressions.
    @Test func lengthsAreCodePoints() throws {
        let pattern = try NSRegularExpression(pattern: "^a")
        let grammar = try Grammar(jsonSchema: #"{"type":"string","pattern":"^a","minLength":2,"maxLength":9}"#)
        let pool = ["a", "ab", "aé", "a\u{1F642}", "aéaéaéaéa", "aéaéaéaéaé", "ba", "a\n\"\\", "a" + String(repeating: "\u{1F642}", count: 8)]
        for text in pool {
            let length = text.unicodeScalars.count
            let matches = pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            #expect(try grammar.matches(Self.quoted(text)) == (matches && (2 ... 9).contains(length)), "\(text)")
        }
    }

    /// Bounds of ten thousand characters cost no states: the automaton is a plain string's.
    @Test func tenThousandCharacters() throws {
        for (minimum, maximum) in [(0, 10_000), (10_000, nil), (9_000, 10_000)] as [(Int, Int?)] {
            try tenThousandCharacters(minimum: minimum, maximum: maximum)
        }
    }

    func tenThousandCharacters(minimum: Int, maximum: Int?) throws {
        let schema = #"{"type":"string","minLength":\#(minimum)"# + (maximum.map { #","maxLength":\#($0)}"# } ?? "}")
        let grammar = try Grammar(jsonSchema: schema)
        let compiled = try CompiledGrammar(grammar, vocabulary: Self.vocabulary, maskComputation: .onFirstUse)
        #expect(compiled.statistics.automatonStates < 40)
        for length in [minimum - 1, minimum, 9_999, 10_000, 10_001] where length >= 0 {
            let expected = length >= minimum && length <= (maximum ?? Int.max)
            #expect(try grammar.matches(Self.quoted(String(repeating: "é", count: length))) == expected, "\(length) characters")
        }
        #expect(compiled.shortestSentenceLength == minimum + 2)
        // Near the maximum, only tokens that fit are allowed.
        if let maximum {
            var matcher = GrammarMatcher(compiled)
            let accepted = matcher.accept(bytes: Array(("\"" + String(repeating: "a", count: maximum - 3)).utf8))
            #expect(accepted)
            var mask = TokenBitmask(vocabularySize: Self.vocabulary.size)
            matcher.fillNextTokenMask(into: &mask)
            let allowed = Set((0 ..< Self.vocabulary.size).filter { mask[$0] }.map { String(decoding: Self.vocabulary.tokenBytes[$0], as: UTF8.self) })
            #expect(allowed.contains("aaa") && allowed.contains("aa\"") || minimum > maximum - 3)
            #expect(!allowed.contains("aaaa") && !allowed.contains("aaaaaaaa") && !allowed.contains("aaaa\""))
        }
    }

    /// `PositionMasks.copyBits` against copying bit by bit, at every alignment of source and
    /// target and lengths across word boundaries.
    @Test func copiedBitsAreTheSourceBits() {
        var random = SystemRandomNumberGenerator()
        let words = (0 ..< 8).map { _ in UInt64.random(in: 0 ... .max, using: &random) }
        func bit(_ words: [UInt64], _ index: Int) -> Bool { words[index >> 6] >> UInt64(index & 63) & 1 != 0 }
        for source in [0, 1, 31, 63, 64, 65, 100, 127] {
            for target in [0, 1, 5, 63, 64, 70] {
                for count in [0, 1, 2, 63, 64, 65, 128, 200] where source + count <= 7 * 64 {
                    var copied = [UInt64](repeating: 0, count: (target + count + 63) / 64 + 1)
                    PositionMasks.copyBits(from: words, at: source, count: count, to: &copied, at: target)
                    let expected = (0 ..< copied.count * 64).map { $0 >= target && $0 < target + count && bit(words, source + $0 - target) }
                    #expect((0 ..< copied.count * 64).map { bit(copied, $0) } == expected, "source \(source), target \(target), count \(count)")
                }
            }
        }
    }

    /// `PositionMasks.setBits` against setting bit by bit, across word boundaries.
    @Test func setBitsAreTheRange() {
        for lower in [0, 1, 63, 64, 65, 130] {
            for upper in [lower, lower + 1, lower + 63, lower + 64, 200, 256] where upper >= lower && upper <= 256 {
                var words = [UInt64](repeating: 0, count: 4)
                PositionMasks.setBits(lower ..< upper, in: &words)
                let set: [Bool] = (0 ..< 256).map { words[$0 >> 6] >> UInt64($0 & 63) & 1 != 0 }
                let expected: [Bool] = (0 ..< 256).map { (lower ..< upper).contains($0) }
                #expect(set == expected, "\(lower) ..< \(upper)")
            }
        }
    }

    /// Count classes against their definition, read bit by bit: counts share a class exactly
    /// when every state's liveness agrees over the window from each (the whole window, past
    /// `cap` included), for the short, long and patterned strings above, with windows longer
    /// and shorter than the bounds.
    @Test func countClassesAreTheCountsWithAlikeWindows() throws {
        let schemas = Self.strings.map(\.schema) + [
            #"{"type":"string","minLength":3,"maxLength":500}"#, #"{"type":"string","pattern":"^(ab|c)+$","maxLength":120}"#,
            #"{"type":"string","minLength":70}"#,
        ]
        for schema in schemas {
            let automaton = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary, maskComputation: .onFirstUse).automaton
            for (index, counter) in automaton.counters.enumerated() {
                guard let counter else { continue }
                let states = automaton.rules[index].stateCount
                for window in [4, 11, 60, 257] {
                    let classes = PositionMasks.countClasses(of: counter, states: states, window: window)
                    let cap = Int(counter.cap)
                    func live(_ state: Int, _ count: Int) -> Bool {
                        count > cap ? counter.maximum == nil && counter.isLive(Int32(state), Int32(cap)) : counter.isLive(Int32(state), Int32(count))
                    }
                    // Where counts share an exact class, their whole windows agree; where
                    // windows are cut near a long string's bound, as far as the class reads.
                    for count in 0 ... cap {
                        let id = Int(classes.classOfCount[count])
                        let first = Int(classes.firstCounts[id])
                        let width = classes.exactLengths[id].map { Int($0) + 1 } ?? window
                        let agree = (0 ..< states).allSatisfy { state in (0 ..< width).allSatisfy { live(state, count + $0) == live(state, first + $0) } }
                        #expect(agree, "\(schema): count \(count) in the class of \(first), window \(window)")
                    }
                    // Exact classes are not split needlessly: two counts with whole windows
                    // alike share one.
                    if cap <= PositionMasks.exactCap {
                        let signatures = (0 ... cap).map { count in (0 ..< states).map { state in (0 ..< window).map { live(state, count + $0) } } }
                        for count in 0 ... cap {
                            let firstAlike = signatures.firstIndex(of: signatures[count])!
                            #expect(classes.classOfCount[count] == classes.classOfCount[firstAlike], "\(schema): count \(count), window \(window)")
                        }
                    }
                }
            }
        }
    }

    /// Bounds no string meets are an empty language, like any other.
    @Test func boundsNoStringMeetsAreEmpty() throws {
        #expect(throws: GrammarError.emptyLanguage(pointer: "#")) {
            try CompiledGrammar(Grammar(jsonSchema: #"{"type":"string","pattern":"^[0-9]{5}$","maxLength":3}"#), vocabulary: Self.vocabulary)
        }
        let either = try Grammar(jsonSchema: #"{"anyOf":[{"type":"string","pattern":"^[0-9]{5}$","maxLength":3},{"type":"null"}]}"#)
        #expect(try either.matches("null"))
        #expect(try !either.matches(#""123""#))
    }
}
