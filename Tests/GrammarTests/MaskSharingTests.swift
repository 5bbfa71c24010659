import Testing
@testable import TypesetGrammar

/// Terminal rules with the same automaton and FOLLOW set share their masks instead of
/// computing them again; every shared mask must equal the one a fresh trie walk gives.
@Suite struct MaskSharingTests {
    /// A small vocabulary with the multi-byte tokens JSON tends to produce, so masks have
    /// accepted, rejected and undecided tokens.
    static let vocabulary: GrammarVocabulary = {
        let texts = [
            "\"", "\",\"", "\":\"", "\"}", "{\"", "\":", ",", "}", "{", "[", "]", "\"]", "\",",
            "a", "ab", "abc", "b", "name", "note", " ", "  ", "\\", "\\\"", "\\u", "1", "12", "é", "\u{1F44B}",
            "a\"", "ab\",", "x\":\"y",
        ]
        return GrammarVocabulary(tokens: texts.map { Array($0.utf8) } + [[]], endOfGeneration: [texts.count])
    }()

    @Test func identicalStringPropertiesShareTheirMasks() throws {
        // Three plain strings (two followed by ',' and one by '}'), one bounded string, and
        // strings inside an array (followed by ',' or ']'). `name` and `note` differ by more
        // than annotations (which alone would make them one rule), not in their automaton.
        let schema = #"""
        {"type":"object","properties":{
          "name":{"type":"string","minLength":0},
          "note":{"type":"string","pattern":""},
          "tags":{"type":"array","items":{"type":"string"}},
          "code":{"type":"string","maxLength":3},
          "last":{"type":"string"}},
         "required":["name","note","tags","code","last"],"additionalProperties":false}
        """#
        let compiled = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        #expect(compiled.statistics.sharedPositions > 0)
        #expect(compiled.statistics.sharedPositions < compiled.statistics.positions)
        MaskChecks.expectEveryMaskMatchesAFullWalk(compiled)
        // The matcher agrees with byte-level acceptance on an instance that uses every rule.
        var matcher = GrammarMatcher(compiled)
        let accepted = matcher.accept(bytes: Array(#"{"name":"ab","note":"a\"b","tags":["x","é"],"code":"abc","last":""}"#.utf8))
        #expect(accepted && matcher.canTerminate)
    }

    /// Subschemas that differ only in annotations are one rule (and one set of masks).
    @Test func annotationsDoNotMakeANewRule() throws {
        let schema = #"{"type":"array","prefixItems":[{"type":"string","description":"a"},{"type":"string","title":"b","examples":["x"]}],"items":false}"#
        let grammar = try Grammar(jsonSchema: schema)
        let plain = try Grammar(jsonSchema: #"{"type":"array","prefixItems":[{"type":"string"},{"type":"string"}],"items":false}"#)
        #expect(grammar.rules.count == plain.rules.count)
    }

    @Test func differentFollowSetsDoNotShare() throws {
        // The same string automaton followed by ',' in one place and by '}' in another: the
        // token `"}` is undecided in the last property and rejected in the others.
        let schema = #"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}"#
        let compiled = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        MaskChecks.expectEveryMaskMatchesAFullWalk(compiled)
        var matcher = GrammarMatcher(compiled)
        let short = matcher.accept(bytes: Array(#"{"a":"x"}"#.utf8))
        #expect(!short)
        matcher.reset()
        let whole = matcher.accept(bytes: Array(#"{"a":"x","b":"y"}"#.utf8))
        #expect(whole)
    }
}
