import Foundation
import Testing
@testable import TypesetGrammar

/// `uniqueItems` enforced by the matcher (`Grammar.Rule.isDistinctItem`, `WrittenItems`):
/// arrays accepted exactly when their items are distinct values, as Foundation's JSON
/// parser reads them; masks that never let a repeated item through nor hold back a new
/// one; and the items the matcher cannot keep apart refused with the reason.
@Suite struct DistinctItemsTests {
    /// Tokens that end items inside them (`",`, `a"]`), escapes that spell a character
    /// another token writes plainly, and a whole item in one token.
    static let vocabulary: GrammarVocabulary = {
        let texts = [
            "[", "[\"", "]", "\"", "\"]", "\",\"", "\",", ",", ",\"", "a", "b", "ab", "abc", "a\"", "b\"", "a\"]", "b\",\"", "\"a\"",
            "\\u0061", "\\u00", "61", "é", "\\u00e9", "\\/", "/", "1", "12", "-", "0", "2", "1,", "12]", "[1", " ",
            ".", "5", ".5", "0.", "e",
        ]
        return GrammarVocabulary(tokens: texts.map { Array($0.utf8) } + [[]], endOfGeneration: [texts.count])
    }()

    static let strings = #"{"type":"array","items":{"type":"string"},"uniqueItems":true}"#

    /// Whether Foundation reads `text` as an array of distinct values (strings by their
    /// characters, numbers by value): the reference.
    static func hasDistinctItems(_ text: String) -> Bool? {
        guard let array = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any] else { return nil }
        var seen: [String] = []
        for item in array {
            let key = item is String ? "s" + (item as! String) : "n\(item)"
            if seen.contains(key) { return false }
            seen.append(key)
        }
        return true
    }

    static func accepts(_ compiled: CompiledGrammar, _ text: String) -> Bool {
        var matcher = GrammarMatcher(compiled)
        return matcher.accept(bytes: Array(text.utf8)) && matcher.canTerminate
    }

    /// Feeds `output` to a matcher of `compiled` a byte at a time and, before each byte and
    /// after the last, calls `check` for every token (the end of generation aside) with the
    /// bytes written, the matcher there, the token and whether its mask holds the token.
    static func forEachMask(along output: String, _ compiled: CompiledGrammar,
                            _ check: (ArraySlice<UInt8>, GrammarMatcher, Int, Bool) -> Void) {
        let bytes = Array(output.utf8)
        var matcher = GrammarMatcher(compiled)
        var mask = TokenBitmask(vocabularySize: vocabulary.size)
        for end in 0 ... bytes.count {
            if end > 0 {
                let accepted = matcher.accept(bytes: [bytes[end - 1]])
                #expect(accepted, "\(output) at \(end)")
            }
            matcher.fillNextTokenMask(into: &mask)
            for token in 0 ..< vocabulary.size - 1 { check(bytes[..<end], matcher, token, mask[token]) }
        }
    }

    @Test func arraysAreAcceptedExactlyWhenTheirItemsDiffer() throws {
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: Self.strings), vocabulary: Self.vocabulary)
        // The grammar writes each string one way (raw UTF-8, the escapes JSON requires).
        let pieces = ["a", "b", "ab", "é", "/", "", "a b", "\\n", "\\\"", "\\u0001", "\u{1F642}"]
        var generator = SystemRandomNumberGenerator()
        var repeated = 0, distinct = 0
        for _ in 0 ..< 400 {
            let count = Int.random(in: 0 ... 5, using: &generator)
            let items = (0 ..< count).map { _ in "\"" + pieces.randomElement(using: &generator)! + "\"" }
            let text = "[" + items.joined(separator: ",") + "]"
            let expected = try #require(Self.hasDistinctItems(text) as Bool?)
            if expected { distinct += 1 } else { repeated += 1 }
            #expect(Self.accepts(compiled, text) == expected, "\(text)")
        }
        #expect(repeated > 50 && distinct > 50)
        // Prefixes of earlier items, and items an earlier one is a prefix of, are new.
        #expect(Self.accepts(compiled, #"["abc","ab","abcd","a",""]"#))
        #expect(!Self.accepts(compiled, #"["abc","ab","abc"]"#))
    }

    @Test func integersAreComparedAsWritten() throws {
        let schema = #"{"type":"array","items":{"type":["integer","string"]},"uniqueItems":true}"#
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        for text in [#"[1,12,"1",-1,0]"#, "[1,12,1]", "[0,-0]", #"["12",12,"12"]"#, "[120,12,1]", "[12,120,12]"] {
            guard let expected = Self.hasDistinctItems(text) else {
                // "-0" is not an integer the grammar writes.
                #expect(!Self.accepts(compiled, text), "\(text)")
                continue
            }
            #expect(Self.accepts(compiled, text) == expected, "\(text)")
        }
    }

    /// Numbers in a `uniqueItems` array are written in their shortest spelling only, so texts
    /// compare as values; elsewhere, even under the same `$ref`, every spelling stays.
    @Test func numbersAreWrittenOnceInUniqueArrays() throws {
        let schema = #"{"type":"array","items":{"type":["integer","number"]},"uniqueItems":true}"#
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        for text in ["[1,1.5,-0.5,0,0.25,-12]", "[1.5,1.5]", "[1,1]", "[0.5,0.50]", "[1,12,120]"] {
            #expect(Self.accepts(compiled, text) == Self.hasDistinctItems(text), "\(text)")
        }
        // Valid values, other spellings: refused here.
        for text in ["[1.0]", "[1.50]", "[1e2]", "[-0]", "[0.0]", "[2,1.0]"] { #expect(!Self.accepts(compiled, text), "\(text)") }
        let shared = ##"{"$defs":{"n":{"type":"number"}},"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#/$defs/n"},"uniqueItems":true},"b":{"type":"array","items":{"$ref":"#/$defs/n"}}}}"##
        let both = try CompiledGrammar(try Grammar(jsonSchema: shared), vocabulary: Self.vocabulary)
        #expect(Self.accepts(both, #"{"a":[1.5,2],"b":[1.50,1e2,1.50]}"#))
        #expect(!Self.accepts(both, #"{"a":[1.50]}"#))
    }

    /// At every step of many outputs, each token is in the mask exactly when the matcher
    /// accepts it and can still finish: precomputed, undecided and end-of-item tokens alike.
    @Test func masksHoldExactlyTheTokensThatKeepTheOutputFinishable() throws {
        for (schema, outputs) in [
            (Self.strings, [#"["a","ab","b","aab","é","/"]"#, #"["ab","a","b"]"#]),
            (#"{"type":"array","items":{"type":"integer"},"uniqueItems":true,"maxItems":4}"#, ["[1,12,2,0]", "[12,1]"]),
            (#"{"type":"array","items":{"type":"number"},"uniqueItems":true}"#, ["[1.5,12,0.5,-0.5,0,1]", "[0.05,5]"]),
            (#"{"type":"array","items":{"type":"string","maxLength":2},"uniqueItems":true}"#, [#"["ab","a","ba","b","","aa","é"]"#, #"["é","ab","ba"]"#]),
            (#"{"type":"object","properties":{"tags":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"string","minLength":1},"uniqueItems":true}}}"#,
             [#"{"tags":["a","ab","b","abc"]}"#]),
        ] {
            let compiled = try CompiledGrammar(try Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
            for output in outputs {
                Self.forEachMask(along: output, compiled) { written, matcher, token, allowed in
                    var copy = matcher
                    let finishable = copy.accept(bytes: Self.vocabulary.tokenBytes[token]) && copy.shortestCompletion() != nil
                    #expect(allowed == finishable,
                            "\(schema) after \(String(decoding: written, as: UTF8.self)): token \(String(decoding: Self.vocabulary.tokenBytes[token], as: UTF8.self))")
                }
            }
        }
    }

    @Test func aRepeatedItemIsNeverWrittenByTheMask() throws {
        // After ["a","ab" the mask must not offer a closing quote, nor `","` and the like.
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: Self.strings), vocabulary: Self.vocabulary)
        var matcher = GrammarMatcher(compiled)
        let started = matcher.accept(bytes: Array(#"["a","ab","a"#.utf8))
        #expect(started)
        var mask = TokenBitmask(vocabularySize: Self.vocabulary.size)
        matcher.fillNextTokenMask(into: &mask)
        let allowed = Set((0 ..< Self.vocabulary.size).filter { mask[$0] }.map { String(decoding: Self.vocabulary.tokenBytes[$0], as: UTF8.self) })
        // "a" and "ab" are written: neither may close again.
        for closing in ["\"", "\"]", "\",\"", "\",", "b\"", "b\",\""] { #expect(!allowed.contains(closing), "\(closing)") }
        for going in ["b", "a\"", "abc", "é"] { #expect(allowed.contains(going), "\(going)") }
        let repeated = matcher.accept(bytes: Array("\"".utf8))
        #expect(!repeated)
        let finished = matcher.accept(bytes: Array("abc\"]".utf8))
        #expect(finished && matcher.canTerminate)
    }

    /// A bounded string at its maximum length can only close: the matcher looks at what is
    /// left, not at whether bytes can follow.
    @Test func boundedStringsAtTheirMaximumDoNotRepeat() throws {
        let schema = #"{"type":"array","items":{"type":"string","minLength":1,"maxLength":2},"uniqueItems":true}"#
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        var matcher = GrammarMatcher(compiled)
        let started = matcher.accept(bytes: Array(#"["ab","é","#.utf8))
        #expect(started)
        #expect(!matcher.allows(bytes: Array(#""ab"#.utf8)) && matcher.allows(bytes: Array(#""a"#.utf8)))
        // "é" is one character of two bytes: below the maximum, it can still grow into "éa".
        #expect(matcher.allows(bytes: Array(#""é"#.utf8)) && !matcher.allows(bytes: Array(#""é""#.utf8)))
        #expect(matcher.allows(bytes: Array(#""aé"#.utf8)) && matcher.allows(bytes: Array(#""aé""#.utf8)))
        var mask = TokenBitmask(vocabularySize: Self.vocabulary.size)
        let opened = matcher.accept(bytes: Array("\"".utf8))
        #expect(opened)
        matcher.fillNextTokenMask(into: &mask)
        for token in 0 ..< Self.vocabulary.size - 1 {
            let text = String(decoding: Self.vocabulary.tokenBytes[token], as: UTF8.self)
            #expect(mask[token] == matcher.allows(bytes: Self.vocabulary.tokenBytes[token]), "\(text)")
        }
        #expect(!mask[Self.vocabulary.tokenBytes.firstIndex(of: Array("ab".utf8))!] && mask[Self.vocabulary.tokenBytes.firstIndex(of: Array("a".utf8))!])
        #expect(Self.accepts(compiled, #"["ab","é","a","ba"]"#) && !Self.accepts(compiled, #"["ab","é","ab"]"#))
    }

    @Test func itemsThatCannotBeKeptApartAreRefused() throws {
        let refused: [(String, String)] = [
            (#"{"type":"array","items":{"type":"object"},"uniqueItems":true}"#, "type object"),
            (#"{"type":"array","uniqueItems":true}"#, "any value"),
            (#"{"type":"array","items":{"type":"string","pattern":"^a","maxLength":3},"uniqueItems":true}"#, "maxLength' beside a pattern"),
            (#"{"type":"array","items":{"enum":[1,2,3,4,5,6,7,8,9]},"uniqueItems":true}"#, "numbers, arrays or objects among its values"),
            (#"{"type":"array","prefixItems":[{"const":"a"}],"items":{"enum":["a","b"]},"uniqueItems":true}"#, "beside 'prefixItems'"),
            (#"{"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"uniqueItems":true,"minItems":11}"#, "'minItems' 11 needs as many distinct values known, and these items have 10 known"),
            (#"{"type":"array","items":{"type":["integer","boolean","null"],"minimum":1,"maximum":3},"uniqueItems":true,"minItems":7}"#, "have 6 known"),
            // -3, 0, 3, 9 and 12.
            (#"{"type":"array","items":{"type":"integer","minimum":-3,"maximum":12,"multipleOf":3,"not":{"const":6}},"uniqueItems":true,"minItems":6}"#, "have 5 known"),
            // Of `"""`, `"\"` and `"a"`, only the spelling without escapes is counted.
            (#"{"type":"array","items":{"type":"string","pattern":"^[\"\\\\a]$"},"uniqueItems":true,"minItems":2}"#, "have 1 known"),
            (#"{"type":"array","items":{"type":"string","pattern":"^(a|b)$"},"uniqueItems":true,"minItems":3}"#, "'minItems' 3 needs as many distinct values known, and these items have 2 known"),
            // Bounds a `not` adds are seen: a pattern with a `maxLength`, a `minLength` that
            // leaves fewer values than the pattern has (not counted).
            (#"{"type":"array","items":{"type":"string","pattern":"^[ab]+$","not":{"minLength":3}},"uniqueItems":true}"#, "maxLength' beside a pattern"),
            (#"{"type":"array","items":{"type":"string","pattern":"^(a|b|ab|ba)$","minLength":2},"uniqueItems":true,"minItems":3}"#, "values are not counted"),
            (#"{"type":"array","items":{"type":"string","pattern":"^(a|b|ab|ba)$","not":{"maxLength":1}},"uniqueItems":true,"minItems":3}"#, "values are not counted"),
            (#"{"type":"array","prefixItems":[{"type":"string","maxLength":0}],"items":{"type":"string","maxLength":0},"uniqueItems":true}"#, "'maxLength' 0"),
            // Number literals reached through a `not` (written as spelled: `1` and `1.0`), and
            // a `not` that expands further than the census goes.
            (#"{"type":"array","items":{"type":"number","not":{"not":{"const":1}}},"uniqueItems":true}"#, "numbers, arrays or objects among its values"),
            (#"{"type":"array","items":{"type":"string","not":{"anyOf":[{"const":"x"},{"const":"y"},{"minLength":1}]}},"uniqueItems":true}"#, "beside a pattern, a format or an excluded string"),
            (#"{"type":"array","items":{"type":"string","pattern":"^a*$","not":{"minLength":3,"required":["p"]}},"uniqueItems":true}"#, "maxLength' beside a pattern"),
            (#"{"type":"array","items":{"type":"string","allOf":[\#((0 ..< 300).map { #"{"not":{"const":"w\#($0)"}}"# }.joined(separator: ","))]},"uniqueItems":true}"#, "more alternatives than are checked"),
            (#"{"type":"array","items":{"type":"string"},"contains":{"const":"a"},"uniqueItems":true}"#, "contains"),
        ]
        for (schema, reason) in refused {
            #expect {
                _ = try Grammar(jsonSchema: schema)
            } throws: { error in
                guard case .unsupportedKeyword("uniqueItems", "#", let message)? = error as? GrammarError else { return false }
                return message.contains(reason)
            }
        }
        // Where no two items can be written, or the items cannot get stuck, it compiles.
        for schema in [#"{"type":"array","items":{"type":"object"},"maxItems":1,"uniqueItems":true}"#,
                       #"{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"},"uniqueItems":true}"#,
                       #"{"type":"array","items":{"type":"string","pattern":"^(a|b)$"},"uniqueItems":true,"minItems":2}"#,
                       #"{"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"uniqueItems":true,"minItems":10}"#,
                       #"{"type":"array","items":{"type":["string","null"],"maxLength":0},"uniqueItems":true}"#,
                       #"{"type":"array","items":{"type":["integer","boolean","null"],"minimum":1,"maximum":3},"uniqueItems":true,"minItems":6}"#,
                       #"{"type":"array","items":{"type":["integer","null"],"maximum":9,"not":{"const":0}},"uniqueItems":true}"#,
                       #"{"type":"array","items":{"type":"object"},"uniqueItems":false}"#] {
            _ = try Grammar(jsonSchema: schema)
        }
        // The lenient option drops it, and says so.
        var options = JSONSchemaOptions()
        options.lenient = true
        let lenient = try Grammar(jsonSchema: refused[0].0, options: options)
        #expect(lenient.droppedKeywords.map(\.keyword) == ["uniqueItems"])
        // Its negation is refused too.
        #expect(throws: GrammarError.self) { _ = try Grammar(jsonSchema: #"{"not":{"type":"array","items":{"type":"string"},"uniqueItems":true}}"#) }
    }

    /// Items of finitely many values that the automaton does not track (an `enum` of more than
    /// ``SchemaCompiler/distinctValueLimit`` strings, a bounded integer): at every step of
    /// several outputs, each token is in the mask exactly when the output with it is still the
    /// start of some valid array, all of which are listed here as the reference; with a
    /// `minItems`, an array short of it never writes a value that leaves too few.
    @Test func finitelyManyValuesAreNeverExhaustedByTheMask() throws {
        let strings = ["a", "b", "ab", "abc", "é", "", "/", "ba", "aa"]
        let stringItems = strings.map { "\"\($0)\"" }
        let quoted = "[" + strings.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        for (schema, values, minimum, maximum, outputs) in [
            (#"{"type":"array","items":{"enum":\#(quoted)},"uniqueItems":true,"maxItems":3}"#, stringItems, 0, 3,
             [#"["ab","a","abc"]"#, #"["","é","/"]"#, #"["aa","ba"]"#]),
            (#"{"type":"array","items":{"type":"integer","minimum":0,"maximum":12,"not":{"const":2}},"uniqueItems":true,"maxItems":3}"#,
             (0 ... 12).filter { $0 != 2 }.map(String.init), 0, 3, ["[1,12,10]", "[12,1,0]", "[0]"]),
            // As many values as items needed: the last item is whichever is left.
            (#"{"type":"array","items":{"type":"integer","minimum":0,"maximum":2},"uniqueItems":true,"minItems":3}"#,
             ["0", "1", "2"], 3, 3, ["[1,2,0]", "[0,2,1]", "[2,0,1]"]),
            (#"{"type":"array","items":{"type":"string","pattern":"^(a|b|ab|ba)$"},"uniqueItems":true,"minItems":3,"maxItems":4}"#,
             [#""a""#, #""b""#, #""ab""#, #""ba""#], 3, 4, [#"["ab","a","ba","b"]"#, #"["b","ba","a"]"#]),
            // Numbers in their shortest spelling: after "1" at the maximum, no ".0".
            (#"{"type":"array","items":{"type":"number","minimum":0,"maximum":2,"multipleOf":0.5},"uniqueItems":true,"minItems":5}"#,
             ["0", "0.5", "1", "1.5", "2"], 5, 5, ["[0.5,1,0,2,1.5]", "[2,1.5,1,0.5,0]"]),
        ] {
            let grammar = try Grammar(jsonSchema: schema)
            #expect(grammar.ruleNames.contains { $0.hasPrefix("distinct-item") }, "\(schema)")
            let compiled = try CompiledGrammar(grammar, vocabulary: Self.vocabulary)
            // Every valid array, compact.
            var arrays: Set<String> = minimum == 0 ? ["[]"] : []
            var level = [[String]()]
            for count in 1 ... maximum {
                level = level.flatMap { items in values.filter { !items.contains($0) }.map { items + [$0] } }
                for items in level where count >= minimum { arrays.insert("[" + items.joined(separator: ",") + "]") }
            }
            let prefixes = Set(arrays.flatMap { array in (0 ... array.utf8.count).map { String(decoding: Array(array.utf8)[..<$0], as: UTF8.self) } })
            for array in arrays.shuffled().prefix(40) { #expect(Self.accepts(compiled, array), "\(array)") }
            for output in outputs {
                Self.forEachMask(along: output, compiled) { written, _, token, allowed in
                    let extended = String(decoding: written + Self.vocabulary.tokenBytes[token], as: UTF8.self)
                    #expect(allowed == prefixes.contains(extended), "\(schema): \(extended)")
                }
            }
        }
    }

    /// With every value of an `enum` written, no further item can start: the array can only
    /// close. Without a `maxItems`, only the matcher knows.
    @Test func anArrayThatHoldsEveryValueCanOnlyClose() throws {
        let schema = #"{"type":"array","items":{"enum":["a","b","ab","abc","é","","/","ba","aa","x"],"not":{"const":"x"}},"uniqueItems":true,"minItems":9}"#
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        var matcher = GrammarMatcher(compiled)
        let written = matcher.accept(bytes: Array(#"["a","b","ab","abc","é","","/","ba","aa""#.utf8))
        #expect(written)
        var mask = TokenBitmask(vocabularySize: Self.vocabulary.size)
        matcher.fillNextTokenMask(into: &mask)
        let allowed = (0 ..< Self.vocabulary.size).filter { mask[$0] }.map { String(decoding: Self.vocabulary.tokenBytes[$0], as: UTF8.self) }
        #expect(allowed == ["]"])
        #expect(!matcher.allows(bytes: Array(",".utf8)))
        // With whitespace between items, neither the comma nor the spaces after it.
        let spaced = try CompiledGrammar(try Grammar(jsonSchema: schema, options: JSONSchemaOptions(whitespace: .flexible(maximum: 2))),
                                         vocabulary: Self.vocabulary)
        var spacedMatcher = GrammarMatcher(spaced)
        let spacedWritten = spacedMatcher.accept(bytes: Array(#"["a", "b","ab","abc","é","","/","ba", "aa" "#.utf8))
        #expect(spacedWritten)
        for refused in [",", ", ", ",  "] { #expect(!spacedMatcher.allows(bytes: Array(refused.utf8)), "\(refused)") }
        #expect(spacedMatcher.allows(bytes: Array(" ]".utf8)) && spacedMatcher.allows(bytes: Array("]".utf8)))
        spacedMatcher.fillNextTokenMask(into: &mask)
        let spacedAllowed = (0 ..< Self.vocabulary.size).filter { mask[$0] }.map { String(decoding: Self.vocabulary.tokenBytes[$0], as: UTF8.self) }
        #expect(spacedAllowed == ["]", " "])
        // Ten values minus "x" leave nine: a tenth item is more than there are.
        #expect(throws: GrammarError.self) {
            let grammar = try Grammar(jsonSchema: schema.replacingOccurrences(of: #""minItems":9"#, with: #""minItems":10"#))
            _ = try CompiledGrammar(grammar, vocabulary: Self.vocabulary)
        }
    }

    /// Items from a few values: the automaton tracks the subset written, so every prefix it
    /// accepts can be finished, even where the values run out.
    @Test func itemsFromFewValuesAreTrackedByTheAutomaton() throws {
        let schema = #"{"type":"array","items":{"enum":["a","ab",1,1.0,true,"c"],"not":{"const":"c"}},"uniqueItems":true,"minItems":1}"#
        let grammar = try Grammar(jsonSchema: schema)
        #expect(!grammar.ruleNames.contains { $0.hasPrefix("distinct-item") })
        let compiled = try CompiledGrammar(grammar, vocabulary: Self.vocabulary)
        // "c" is excluded, 1.0 is 1: four values.
        let values = [#""a""#, #""ab""#, "1", "true"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0 ..< 200 {
            let items = (0 ..< Int.random(in: 0 ... 5, using: &generator)).map { _ in values.randomElement(using: &generator)! }
            let text = "[" + items.joined(separator: ",") + "]"
            // The four texts are four different values (Foundation reads `true` as 1, so it is no reference here).
            let expected = Set(items).count == items.count && !items.isEmpty
            #expect(Self.accepts(compiled, text) == expected, "\(text)")
        }
        #expect(!Self.accepts(compiled, #"["c"]"#))
        // Once all four are written, neither a comma nor a fifth item can follow.
        var matcher = GrammarMatcher(compiled)
        let written = matcher.accept(bytes: Array(#"["a",1,true,"ab""#.utf8))
        #expect(written && !matcher.allows(bytes: Array(",".utf8)) && matcher.allows(bytes: Array("]".utf8)))
        // Two values for three required items: nothing.
        #expect(throws: GrammarError.self) { _ = try CompiledGrammar(try Grammar(jsonSchema: #"{"type":"array","items":{"type":"boolean"},"uniqueItems":true,"minItems":3}"#), vocabulary: Self.vocabulary) }
    }

    @Test func enumeratedArraysAreCheckedForRepeats() throws {
        // An `enum` of arrays is filtered by the array's own keywords: [1,1.0] repeats 1.
        let schema = #"{"type":"array","uniqueItems":true,"enum":[[1,1.0],[1,2],["a",{"x":1,"y":2},{"y":2,"x":1}]]}"#
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        #expect(Self.accepts(compiled, "[1,2]"))
        #expect(!Self.accepts(compiled, "[1,1.0]"))
        #expect(!Self.accepts(compiled, #"["a",{"x":1,"y":2},{"y":2,"x":1}]"#))
    }

    @Test func archivedGrammarsKeepTheirItems() throws {
        let compiled = try CompiledGrammar(try Grammar(jsonSchema: Self.strings), vocabulary: Self.vocabulary)
        let loaded = try CompiledGrammar(archive: compiled.archive(key: "k"), key: "k", vocabulary: Self.vocabulary)
        #expect(Self.accepts(loaded, #"["a","b"]"#))
        #expect(!Self.accepts(loaded, #"["a","b","a"]"#))
        // Items of finitely many values: with both written, the array can only close.
        let few = #"{"type":"array","items":{"type":"integer","minimum":1,"maximum":2},"uniqueItems":true}"#
        let fewCompiled = try CompiledGrammar(try Grammar(jsonSchema: few), vocabulary: Self.vocabulary)
        var matcher = GrammarMatcher(try CompiledGrammar(archive: fewCompiled.archive(key: "f"), key: "f", vocabulary: Self.vocabulary))
        let written = matcher.accept(bytes: Array("[2,1".utf8))
        #expect(written && !matcher.allows(bytes: Array(",".utf8)) && matcher.allows(bytes: Array("]".utf8)))
    }
}
