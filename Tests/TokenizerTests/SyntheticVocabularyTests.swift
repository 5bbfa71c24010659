import Foundation
import GGUF
import Testing
import TypesetTokenizer
import TypesetTestSupport

/// The encoders against deliberately naive reference implementations written from the
/// algorithms' definitions, on random synthetic vocabularies built to have many overlapping
/// merges and tied scores (where the order of merging decides the result).
@Suite struct SyntheticVocabularyTests {
    // MARK: Building vocabularies

    static func metadata(
        model: String, tokens: [String], types: [Int32]? = nil, scores: [Float]? = nil, merges: [String]? = nil,
        pre: String? = nil, extra: [(String, GGUFValue)] = []
    ) throws -> GGUFMetadata {
        var writer = GGUFWriter()
        writer.setValue(.string(model), forKey: "tokenizer.ggml.model")
        writer.setValue(.array(try GGUFArray(elementType: .string, elements: tokens.map { .string($0) })), forKey: "tokenizer.ggml.tokens")
        if let types {
            writer.setValue(.array(try GGUFArray(elementType: .int32, elements: types.map { .int32($0) })), forKey: "tokenizer.ggml.token_type")
        }
        if let scores {
            writer.setValue(.array(try GGUFArray(elementType: .float32, elements: scores.map { .float32($0) })), forKey: "tokenizer.ggml.scores")
        }
        if let merges {
            writer.setValue(.array(try GGUFArray(elementType: .string, elements: merges.map { .string($0) })), forKey: "tokenizer.ggml.merges")
        }
        if let pre { writer.setValue(.string(pre), forKey: "tokenizer.ggml.pre") }
        for (key, value) in extra { writer.setValue(value, forKey: key) }
        return try GGUFFile(bytes: try writer.encoded()).metadata
    }

    /// GPT-2's alphabet: the text of each byte's token.
    static let alphabet = gpt2ByteAlphabet

    /// A byte-level vocabulary over the letters `a…e` with `mergeCount` random merges.
    static func randomByteLevel(seed: UInt64, mergeCount: Int) -> (tokens: [String], merges: [String]) {
        var random = SplitMix64(seed: seed)
        var tokens = alphabet
        var known = Set(tokens)
        var pool = ["a", "b", "c", "d", "e"]
        var merges: [String] = []
        while merges.count < mergeCount {
            let left = pool[Int(random.next() % UInt64(pool.count))]
            let right = pool[Int(random.next() % UInt64(pool.count))]
            let joined = left + right
            guard joined.count <= 12, !known.contains(joined) else { continue }
            known.insert(joined)
            tokens.append(joined)
            pool.append(joined)
            merges.append(left + " " + right)
        }
        return (tokens, merges)
    }

    /// Byte-level BPE by its definition: repeatedly join the adjacent pair with the lowest
    /// merge rank (leftmost on ties) until no pair has a merge.
    static func referenceBytePairEncoding(_ word: String, tokens: [String], merges: [String]) -> [Int] {
        var rank: [String: Int] = [:]
        for (index, merge) in merges.enumerated() where rank[merge] == nil { rank[merge] = index }
        var symbols = word.utf8.map { alphabet[Int($0)] }
        while symbols.count > 1 {
            var best: (rank: Int, index: Int)?
            for index in 0 ..< symbols.count - 1 {
                if let found = rank[symbols[index] + " " + symbols[index + 1]], found < (best?.rank ?? .max) {
                    best = (found, index)
                }
            }
            guard let best else { break }
            symbols[best.index] += symbols[best.index + 1]
            symbols.remove(at: best.index + 1)
        }
        let ids = Dictionary(tokens.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        return symbols.map { ids[$0]! }
    }

    // MARK: Byte-level BPE

    @Test(arguments: [1, 2, 3, 4])
    func byteLevelMergesFollowRanks(seed: UInt64) throws {
        let (tokens, merges) = Self.randomByteLevel(seed: seed, mergeCount: 300)
        let tokenizer = try Tokenizer(metadata: try Self.metadata(model: "gpt2", tokens: tokens, merges: merges, pre: "gpt-2"))
        var random = SplitMix64(seed: seed &+ 100)
        // Lengths on both sides of the switch from scanning to a heap (48 bytes).
        for length in Array(1 ... 70) + [100, 200, 500] {
            let word = String((0 ..< length).map { _ in Character(UnicodeScalar(UInt8(0x61 + random.next() % 5))) })
            let expected = Self.referenceBytePairEncoding(word, tokens: tokens, merges: merges)
            #expect(tokenizer.encode(word, addingSpecialTokens: false) == expected, "word \(word)")
        }
    }

    /// Gemma 4's tokenizer on the fuzzer's tiny Gemma 4 (merges `▁ a`, `a b`, `▁ ab`, `▁a b`):
    /// spaces as `▁` without a prefix, merges by rank (`▁a` first, so `▁ ab` never applies),
    /// a run of newlines that is a token, byte fallback, BOS always.
    @Test func gemma4MergesByRankOverCharacters() throws {
        let tokenizer = try Tokenizer(metadata: try GGUFFile(bytes: Array(try Fixtures.data("fuzz-seeds/tiny-gemma4.gguf"))).metadata)
        #expect(tokenizer.vocabulary.kind == .sentencePieceMerges && tokenizer.vocabulary.addBOS)
        #expect(tokenizer.encode(" ab\nA") == [2, 11, 5, 3])
        #expect(tokenizer.encode("ba", addingSpecialTokens: false) == [8, 7])
        #expect(try tokenizer.decode([2, 11, 5, 3], removingSpecialTokens: true) == " ab\nA")
    }

    @Test func ignoringMergesTakesWholeWordTokens() throws {
        // "abc" is a token but the merges would build "ab"+"c" → [ab, c]; Llama 3 takes it whole.
        let tokens = Self.alphabet + ["ab", "bc", "abc"]
        let merges = ["a b", "b c"]
        let gpt2 = try Tokenizer(metadata: try Self.metadata(model: "gpt2", tokens: tokens, merges: merges, pre: "gpt-2"))
        let llama3 = try Tokenizer(metadata: try Self.metadata(model: "gpt2", tokens: tokens, merges: merges, pre: "llama-bpe",
                                                               extra: [("tokenizer.ggml.bos_token_id", .uint32(0))]))
        #expect(gpt2.encode("abc", addingSpecialTokens: false) == [256, 99])
        #expect(llama3.encode("abc", addingSpecialTokens: false) == [258])
        // Llama 3's pre-tokenizer adds BOS unless the file says otherwise.
        #expect(llama3.encode("abc") == [0, 258])
    }

    @Test func unknownPreTokenizerIsATypedError() throws {
        let metadata = try Self.metadata(model: "gpt2", tokens: Self.alphabet, merges: [], pre: "no-such-pre")
        #expect(throws: TokenizerError.unsupportedPreTokenizer("no-such-pre")) { try Tokenizer(metadata: metadata) }
    }

    // MARK: Special tokens

    /// llama.cpp's partition, literally: special tokens by length (longest first, then id),
    /// each cut out of every remaining text fragment, leftmost and without overlap.
    static func referencePartition(_ text: [UInt8], specials: [(id: Int, text: [UInt8])]) -> [(token: Int?, text: [UInt8])] {
        var fragments: [(token: Int?, text: [UInt8])] = [(nil, text)]
        for special in specials.sorted(by: { $0.text.count != $1.text.count ? $0.text.count > $1.text.count : $0.id < $1.id }) {
            var next: [(token: Int?, text: [UInt8])] = []
            for fragment in fragments {
                guard fragment.token == nil else { next.append(fragment); continue }
                var rest = fragment.text[...]
                while let match = rest.indices.first(where: { rest[$0...].starts(with: special.text) }) {
                    if match > rest.startIndex { next.append((nil, Array(rest[..<match]))) }
                    next.append((special.id, special.text))
                    rest = rest[(match + special.text.count)...]
                }
                if !rest.isEmpty { next.append((nil, Array(rest))) }
            }
            fragments = next
        }
        return fragments
    }

    @Test(arguments: [7, 8, 9])
    func specialTokensAreCutOutLongestFirst(seed: UInt64) throws {
        // Overlapping user-defined tokens over a tiny alphabet, plus one control token.
        let specialTexts = ["ab", "ba", "aba", "bab", "abab", "cc", "<c>"]
        var tokens = Self.alphabet
        var types = [Int32](repeating: 1, count: tokens.count)
        for (index, text) in specialTexts.enumerated() {
            tokens.append(text)
            types.append(index == specialTexts.count - 1 ? 3 : 4)
        }
        let tokenizer = try Tokenizer(metadata: try Self.metadata(model: "gpt2", tokens: tokens, types: types, merges: [], pre: "gpt-2"))
        var random = SplitMix64(seed: seed)
        let letters = Array("abc<>".utf8)
        for _ in 0 ..< 300 {
            let text = (0 ..< Int(random.next() % 40)).map { _ in letters[Int(random.next() % 5)] }
            for parse in [false, true] {
                let specials = specialTexts.enumerated()
                    .filter { parse || $0.offset != specialTexts.count - 1 }
                    .map { (id: 256 + $0.offset, text: Array($0.element.utf8)) }
                var expected: [Int] = []
                for fragment in Self.referencePartition(text, specials: specials) {
                    if let token = fragment.token { expected.append(token) } else {
                        // No merges: each byte is its own token, except that GPT-2's split keeps bytes as they are.
                        expected += fragment.text.map(Int.init)
                    }
                }
                let ours = text.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false, parsingSpecialTokens: parse) }
                #expect(ours == expected, "\(String(decoding: text, as: UTF8.self)) parse=\(parse)")
            }
        }
    }

    // MARK: SentencePiece

    /// A SentencePiece vocabulary: byte tokens, `▁`, and random strings over `▁abcd` with
    /// scores from a small set (many ties).
    static func randomSentencePiece(seed: UInt64, count: Int) -> (tokens: [String], scores: [Float], types: [Int32]) {
        var random = SplitMix64(seed: seed)
        var tokens = ["<unk>", "<s>", "</s>"]
        var types: [Int32] = [2, 3, 3]
        for byte in 0 ..< 256 {
            tokens.append(String(format: "<0x%02X>", byte))
            types.append(6)
        }
        var known = Set(tokens)
        let letters = ["▁", "a", "b", "c", "d"]
        for letter in letters where known.insert(letter).inserted {
            tokens.append(letter)
            types.append(1)
        }
        while tokens.count < count {
            let length = 2 + Int(random.next() % 5)
            let text = (0 ..< length).map { _ in letters[Int(random.next() % 5)] }.joined()
            if known.insert(text).inserted {
                tokens.append(text)
                types.append(1)
            }
        }
        let scores = tokens.indices.map { types[$0] == 1 ? -Float(random.next() % 6) : 0 }
        return (tokens, scores, types)
    }

    /// SentencePiece BPE by its definition: repeatedly join the adjacent pair whose joined text
    /// is the token with the highest score (leftmost on ties); byte tokens for the rest.
    static func referenceSentencePiece(_ text: String, tokens: [String], scores: [Float]) -> [Int] {
        let ids = Dictionary(tokens.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        var symbols = text.replacingOccurrences(of: " ", with: "▁").map(String.init)
        while symbols.count > 1 {
            var best: (score: Float, index: Int)?
            for index in 0 ..< symbols.count - 1 {
                if let id = ids[symbols[index] + symbols[index + 1]], scores[id] > (best?.score ?? -.infinity) {
                    best = (scores[id], index)
                }
            }
            guard let best else { break }
            symbols[best.index] += symbols[best.index + 1]
            symbols.remove(at: best.index + 1)
        }
        return symbols.flatMap { symbol in
            ids[symbol].map { [$0] } ?? symbol.utf8.map { ids[String(format: "<0x%02X>", $0)]! }
        }
    }

    @Test(arguments: [11, 12, 13])
    func sentencePieceMergesFollowScores(seed: UInt64) throws {
        let (tokens, scores, types) = Self.randomSentencePiece(seed: seed, count: 600)
        let tokenizer = try Tokenizer(metadata: try Self.metadata(
            model: "llama", tokens: tokens, types: types, scores: scores,
            extra: [("tokenizer.ggml.add_space_prefix", .bool(false))]))
        var random = SplitMix64(seed: seed &+ 1)
        let letters: [Character] = [" ", "a", "b", "c", "d", "é", "z"]
        for length in Array(0 ... 40) + [150, 400] {
            let text = String((0 ..< length).map { _ in letters[Int(random.next() % 7)] })
            let expected = [1] + Self.referenceSentencePiece(text, tokens: tokens, scores: scores)
            #expect(tokenizer.encode(text) == expected, "text \(text.debugDescription)")
        }
    }

    @Test func sentencePieceAddsASpacePrefixAfterSpecialTokens() throws {
        let (tokens, scores, types) = Self.randomSentencePiece(seed: 5, count: 300)
        let tokenizer = try Tokenizer(metadata: try Self.metadata(model: "llama", tokens: tokens, types: types, scores: scores))
        #expect(tokenizer.vocabulary.addSpacePrefix && tokenizer.vocabulary.addBOS)
        #expect(tokenizer.encode("ab") == [1] + Self.referenceSentencePiece(" ab", tokens: tokens, scores: scores))
        // After the control token </s> (parsed), the text again gets a space in front.
        #expect(tokenizer.encode("ab</s>cd", parsingSpecialTokens: true)
            == [1] + Self.referenceSentencePiece(" ab", tokens: tokens, scores: scores) + [2]
            + Self.referenceSentencePiece(" cd", tokens: tokens, scores: scores))
        // Decoding removes the prefix again when the first token carries it (as llama.cpp
        // does: after a BOS, the space is kept).
        #expect(try tokenizer.decode(tokenizer.encode("ab cd", addingSpecialTokens: false)) == "ab cd")
        #expect(try tokenizer.decode(tokenizer.encode("ab cd"), removingSpecialTokens: true) == " ab cd")
    }

    @Test func emptyInputs() throws {
        let (tokens, scores, types) = Self.randomSentencePiece(seed: 5, count: 300)
        let sentencePiece = try Tokenizer(metadata: try Self.metadata(model: "llama", tokens: tokens, types: types, scores: scores))
        #expect(sentencePiece.encode("") == [1])
        #expect(sentencePiece.encode("", addingSpecialTokens: false) == [])
        let byteLevel = try Tokenizer(metadata: try Self.metadata(model: "gpt2", tokens: Self.alphabet, merges: [], pre: "gpt-2"))
        #expect(byteLevel.encode("") == [])
        #expect(try byteLevel.decode([]) == "")
    }

    @Test func decodingRejectsUnknownIDs() throws {
        let byteLevel = try Tokenizer(metadata: try Self.metadata(model: "gpt2", tokens: Self.alphabet, merges: [], pre: "gpt-2"))
        #expect(throws: TokenizerError.tokenIDOutOfRange(id: 256, position: 1, count: 256)) { try byteLevel.decode([1, 256]) }
        #expect(throws: TokenizerError.tokenIDOutOfRange(id: -1, position: 0, count: 256)) { try byteLevel.decode([-1]) }
        var streaming = byteLevel.makeStreamingDetokenizer()
        #expect(throws: TokenizerError.self) { try streaming.append(999) }
    }
}
