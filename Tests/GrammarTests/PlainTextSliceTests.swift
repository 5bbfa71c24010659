import Foundation
import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// Plain tokens (string characters only) are accepted wholesale where a position reads every
/// plain word as long as the slice's longest token; only the other tokens are walked. Each
/// piece is checked against an independent reference, and every mask against a full walk.
@Suite struct PlainTextSliceTests {
    // MARK: Which tokens are plain

    /// The reference: the standard library's UTF-8 validation, then the characters.
    private func isPlainByReference(_ bytes: [UInt8]) -> Bool {
        guard !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self) else { return false }
        return text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0 != "\"" && $0 != "\\" && $0.value != 0x7F }
    }

    @Test func plainMeansCompleteUnescapedCharacters() {
        for first in 0 ... 255 {
            #expect(PlainTextSlice.isPlain([UInt8(first)]) == isPlainByReference([UInt8(first)]), "\(first)")
            for second in 0 ... 255 {
                let bytes = [UInt8(first), UInt8(second)]
                #expect(PlainTextSlice.isPlain(bytes) == isPlainByReference(bytes), "\(bytes)")
            }
        }
        // Three and four bytes: lead bytes with every boundary of their continuation ranges
        // (overlong E0 80, surrogates ED A0, F0 80 overlong, F4 90 beyond U+10FFFF).
        let leads: [UInt8] = [0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5]
        let continuations: [UInt8] = [0x22, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0]
        for lead in leads {
            for a in continuations {
                for b in continuations {
                    #expect(PlainTextSlice.isPlain([lead, a, b]) == isPlainByReference([lead, a, b]), "\([lead, a, b])")
                    for c in continuations {
                        #expect(PlainTextSlice.isPlain([lead, a, b, c]) == isPlainByReference([lead, a, b, c]), "\([lead, a, b, c])")
                    }
                }
            }
        }
        #expect(PlainTextSlice.isPlain(Array("Grüße, 世界 👋".utf8)))
    }

    // MARK: How far a position reads plain words

    /// The reference: a forward search, level by level, for the first byte that cannot be
    /// read; `nil` when none within `limit` bytes.
    private func firstUnreadableLength(from state: Int32, in dfa: DFA, limit: Int) -> Int32? {
        struct Pair: Hashable { var state: Int32; var decoder: Int8 }
        var level: Set<Pair> = [Pair(state: state, decoder: 0)]
        for length in 1 ... limit {
            var next: Set<Pair> = []
            for pair in level {
                for byte in 0 ... 255 {
                    let decoder = PlainUTF8.next(pair.decoder, UInt8(byte))
                    guard decoder >= 0 else { continue }
                    let target = dfa.next(pair.state, UInt8(byte))
                    if target < 0 { return Int32(length) }
                    next.insert(Pair(state: target, decoder: decoder))
                }
            }
            level = next
        }
        return nil
    }

    static let schemas = [
        #"{"type":"string","maxLength":25}"#,
        #"{"type":"string","minLength":3,"maxLength":12}"#,
        #"{"type":"object","properties":{"name":{"type":"string"},"note":{"type":"string"}},"additionalProperties":{"type":"integer"}}"#,
        #"{"type":"string","pattern":"^[a-z ]*$"}"#,
        #"{"type":"string","pattern":"^[^x]*$"}"#,
        #"{"type":"string","pattern":"^ab.*$"}"#,
        #"{"type":"string","format":"date"}"#,
        #"{"enum":["red","green",1]}"#,
    ]

    @Test(arguments: schemas)
    func unreadableLengthsMatchAForwardSearch(schema: String) throws {
        let automaton = try PushdownAutomaton(Grammar(jsonSchema: schema), stateLimit: 1 << 16)
        let limit = 40
        for dfa in automaton.rules {
            let lengths = PlainTextSlice.unreadableLengths(in: dfa)
            for state in 0 ..< Int32(dfa.stateCount) {
                let expected = firstUnreadableLength(from: state, in: dfa, limit: limit)
                if let expected {
                    #expect(lengths[Int(state)] == expected, "\(schema) state \(state)")
                } else {
                    #expect(lengths[Int(state)] > Int32(limit), "\(schema) state \(state)")
                }
            }
        }
    }

    // MARK: Masks

    /// Plain tokens of 1 to 20 bytes (so every slice differs), non-ASCII characters, pieces
    /// of characters, escapes, quotes with more after them, DEL and a tab.
    static let vocabulary: GrammarVocabulary = {
        var tokens: [[UInt8]] = [
            "\"", "\",", "\"}", "\":", "{\"", "{", "}", ":", ",", "a", "ab", "abc", "x", "ax", "name", "note", "12", "1",
            "abcdefghi", "abcdefghijklm", "abcdefghijklmnopqrst", " ", "  ", "é", "日本", "\u{1F44B}", "\\", "\\n", "\\u00e9",
            "x\"", "ab\",\"", "\u{7F}", "\t", "2025-01-0", "-",
        ].map { Array($0.utf8) }
        tokens += [[0xC3], [0xA9], [0xE6, 0x97], [0x61, 0xC3]]
        return GrammarVocabulary(tokens: tokens + [[]], endOfGeneration: [tokens.count])
    }()

    @Test func theVocabularyHasFourSlices() {
        #expect(Self.vocabulary.plainSlices.map(\.maximumLength) == [20, 16, 12, 8])
        let longest = Self.vocabulary.plainSlices[0]
        for token in longest.others { #expect(!PlainTextSlice.isPlain(Self.vocabulary.tokenBytes[Int(token)])) }
        #expect(longest.tokens.count + longest.others.count == Self.vocabulary.size - 1)
    }

    @Test(arguments: schemas)
    func slicedMasksEqualFullWalks(schema: String) throws {
        let compiled = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        MaskChecks.expectEveryMaskMatchesAFullWalk(compiled)
    }

    @Test func aBoundedStringUsesShorterSlicesNearItsEnd() throws {
        let compiled = try CompiledGrammar(Grammar(jsonSchema: Self.schemas[0]), vocabulary: Self.vocabulary)
        let wholesale = Set(compiled.positionSummaries.map(\.wholesaleAccepted))
        // Far from the bound every plain token; then without the 20-, 13- and 9-byte ones;
        // within 8 characters of the bound, a full walk.
        let counts = Self.vocabulary.plainSlices.map(\.tokens.count)
        #expect(wholesale.isSuperset(of: Set(counts + [0])), "\(wholesale) vs \(counts)")
        #expect(compiled.statistics.slicedPositions > 0)
    }

    @Test func keysOfAnOpenObjectTakeTheSlice() throws {
        let compiled = try CompiledGrammar(Grammar(jsonSchema: Self.schemas[2]), vocabulary: Self.vocabulary)
        // The undeclared keys are a rule of their own, called from the object's.
        #expect(compiled.positionSummaries.contains { $0.rule == "key" && $0.wholesaleAccepted > 0 })
        // A pattern that excludes a plain character takes no slice.
        let letters = try CompiledGrammar(Grammar(jsonSchema: Self.schemas[3]), vocabulary: Self.vocabulary)
        #expect(letters.statistics.slicedPositions == 0)
    }

    /// With SmolLM2's vocabulary: the shared schemas and MaskBench files with bounded strings,
    /// patterns and open objects, every mask against a full walk.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func realVocabularyMasksEqualFullWalks() throws {
        let vocabulary = try SchemaConformance.model(TestModels.smolLM2Path).vocabulary
        var documents: [String] = []
        for file in ["brew_summary", "event", "product_review", "tool_call"] {
            documents.append(try Fixtures.seedSchema(file + ".json"))
        }
        // The MaskBench files are required where the models are (CI), optional elsewhere.
        for file in ["Github_easy---o68405", "Github_medium---o83394"] where MaskBenchSlice.shouldRun {
            let text = try String(contentsOfFile: MaskBenchSlice.path(of: file + ".json"), encoding: .utf8)
            documents.append(try #require(try JSONValue(parsing: text)["schema"]).compactText)
        }
        var sliced = 0
        for document in documents {
            let compiled = try CompiledGrammar(Grammar(jsonSchema: document), vocabulary: vocabulary)
            sliced += compiled.statistics.slicedPositions
            MaskChecks.expectEveryMaskMatchesAFullWalk(compiled)
        }
        #expect(sliced > 0)
    }
}
