import Foundation
import GGUF
import Testing
import TypesetTokenizer
import TypesetTestSupport

/// Round trips, streaming and hostile input on the two real vocabularies.
@Suite struct RealModelTokenizerTests {
    static func tokenizer(_ name: String) throws -> Tokenizer {
        let path = name == "gemma3" ? TestModels.gemma3Path : TestModels.smolLM2Path
        return try Tokenizer(metadata: try GGUFFile(contentsOf: path).metadata)
    }

    static func encode(_ tokenizer: Tokenizer, _ bytes: [UInt8], special: Bool = false) -> [Int] {
        bytes.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: special, parsingSpecialTokens: special) }
    }

    static func isValidUTF8(_ bytes: [UInt8]) -> Bool {
        String(validating: bytes, as: UTF8.self) != nil
    }

    /// Encoding a text block by block (`StreamingEncoder`, the CLI's way with files and
    /// standard input) gives exactly the tokens of encoding it whole, for both families and
    /// with control tokens parsed or not: the cuts after a line break never change a token.
    @Test(.enabled(if: TokenizerCorpus.shouldRun && TestModels.shouldRun(TestModels.gemma3FileName) && TestModels.shouldRun(TestModels.qwen05FileName)),
          arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName, TestModels.qwen05FileName])
    func corpusEncodesTheSameBlockByBlock(name: String) throws {
        let tokenizer = try Tokenizer(metadata: try GGUFFile(contentsOf: TestModels.path(of: name)).metadata)
        for document in try TokenizerCorpus.documents() {
            for special in [false, true] {
                let whole = Self.encode(tokenizer, document.bytes, special: special)
                for blockSize in [997, 65_536] {
                    var encoder = Tokenizer.StreamingEncoder(tokenizer, addingSpecialTokens: special, parsingSpecialTokens: special)
                    var streamed: [Int] = []
                    var start = 0
                    while start < document.bytes.count {
                        let end = min(document.bytes.count, start + blockSize)
                        streamed += encoder.append(document.bytes[start ..< end])
                        start = end
                    }
                    streamed += encoder.finish()
                    #expect(streamed == whole, "\(name) \(document.name), blocks of \(blockSize), special \(special)")
                }
            }
        }
    }

    @Test(.enabled(if: TokenizerCorpus.shouldRun && TestModels.shouldRun(TestModels.gemma3FileName)), arguments: ["smollm2", "gemma3"])
    func corpusRoundTripsAndStreams(name: String) throws {
        let tokenizer = try Self.tokenizer(name)
        for document in try TokenizerCorpus.documents() {
            let ids = Self.encode(tokenizer, document.bytes)
            let decoded = try tokenizer.decodeBytes(ids)
            // Well-formed text comes back unchanged. Malformed UTF-8 does not, in either family
            // (as in llama.cpp): byte-level BPE reads each bad byte as U+FFFD, and SentencePiece
            // splits by lead byte, so a bad lead byte swallows the escaped space after it.
            // SentencePiece also reads a literal "▁" as a space.
            if Self.isValidUTF8(document.bytes) && !(name == "gemma3" && document.bytes.contains(0xE2) && String(decoding: document.bytes, as: UTF8.self).contains("▁")) {
                #expect(decoded == document.bytes, "\(name) \(document.name) does not round-trip")
            }
            // Streaming: the pieces, one token at a time, add up to the same text, and no
            // chunk ends inside a character.
            var streaming = tokenizer.makeStreamingDetokenizer()
            var streamed = ""
            for id in ids {
                let chunk = try streaming.append(id)
                streamed += chunk
                #expect(streaming.heldBytes.count <= 3)
            }
            streamed += streaming.finish()
            #expect(streamed == String(decoding: decoded, as: UTF8.self), "\(name) \(document.name) streams differently")
        }
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.gemma3FileName)), arguments: ["smollm2", "gemma3"])
    func streamingHoldsSplitCharacters(name: String) throws {
        let tokenizer = try Self.tokenizer(name)
        // Rare CJK and emoji sequences: both vocabularies spell some of them with byte tokens.
        let text = "𠜎𠜱𠝹 👩🏽‍🚀 🧑‍🤝‍🧑 龘 𝕏 ꙮ"
        let ids = tokenizer.encode(text, addingSpecialTokens: false)
        var streaming = tokenizer.makeStreamingDetokenizer()
        var chunks: [String] = []
        var sawHeldBytes = false
        for id in ids {
            chunks.append(try streaming.append(id))
            sawHeldBytes = sawHeldBytes || !streaming.heldBytes.isEmpty
        }
        chunks.append(streaming.finish())
        #expect(chunks.joined() == text)
        #expect(chunks.allSatisfy { !$0.unicodeScalars.contains("\u{FFFD}") })
        #expect(sawHeldBytes, "expected at least one character split across tokens")
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.gemma3FileName)), arguments: ["smollm2", "gemma3"])
    func hostileInput(name: String) throws {
        let tokenizer = try Self.tokenizer(name)
        // Malformed UTF-8, NULs, lone surrogates written out, overlong forms.
        let nasty: [UInt8] = [0xFF, 0xFE, 0x20, 0x61, 0x00, 0x00, 0xC3, 0x28, 0xE2, 0x82, 0x20, 0xC0, 0xAF, 0xED, 0xA0, 0x80, 0xF4, 0x90, 0x80, 0x80, 0x80, 0xBF]
        let ids = Self.encode(tokenizer, nasty)
        #expect(!ids.isEmpty)
        let decoded = try tokenizer.decodeBytes(ids)
        if name == "gemma3" {
            // Byte fallback keeps every byte, except that a bad lead byte can take the escaped
            // space after it along, which then comes back as "▁" (E2 96 81) instead of a space.
            var unescaped: [UInt8] = []
            var index = 0
            while index < decoded.count {
                if index + 2 < decoded.count && decoded[index ... index + 2].elementsEqual([0xE2, 0x96, 0x81]) {
                    unescaped.append(0x20)
                    index += 3
                } else {
                    unescaped.append(decoded[index])
                    index += 1
                }
            }
            #expect(unescaped == nasty)
        } else {
            // Each malformed byte reads as U+FFFD; overlong forms and surrogates are decoded
            // and re-encoded as llama.cpp does (C0 AF is "/", ED A0 80 stays).
            let replacement: [UInt8] = [0xEF, 0xBF, 0xBD]
            let expected = replacement + replacement + [0x20, 0x61, 0x00, 0x00] + replacement + [0x28] + replacement + replacement
                + [0x20, 0x2F, 0xED, 0xA0, 0x80] + Array([[UInt8]](repeating: replacement, count: 6).joined())
            #expect(decoded == expected)
        }
        // NUL bytes survive in both.
        #expect(try tokenizer.decodeBytes(Self.encode(tokenizer, [0x61, 0x00, 0x62])) == [0x61, 0x00, 0x62])
        // Empty input.
        #expect(Self.encode(tokenizer, []) == [])
        #expect(tokenizer.encode("") == (tokenizer.vocabulary.addBOS ? [tokenizer.vocabulary.bosTokenID!] : []))
        // A 10 MB single line of varied text (minified-JSON-like), and a 1 MB run of one letter
        // (one word of a million bytes for byte-level BPE).
        var line = [UInt8]()
        let unit = Array(#"{"id":12345,"name":"Ada Lovelace","tags":["math","code"],"ok":true,"note":"naïve café 日本 🙂"},"#.utf8)
        while line.count < 10_000_000 { line += unit }
        let lineIDs = Self.encode(tokenizer, line)
        #expect(try tokenizer.decodeBytes(lineIDs) == line)
        let run = [UInt8](repeating: 0x61, count: 1_000_000)
        #expect(try tokenizer.decodeBytes(Self.encode(tokenizer, run)) == run)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func controlTokensNeedParsing() throws {
        let tokenizer = try Self.tokenizer("smollm2")
        let text = "<|im_start|>user\nHi<|im_end|>"
        let parsed = tokenizer.encode(text, addingSpecialTokens: false, parsingSpecialTokens: true)
        let plain = tokenizer.encode(text, addingSpecialTokens: false)
        #expect(parsed.first == 1 && parsed.last == 2)
        #expect(!plain.contains(1) && !plain.contains(2))
        #expect(try tokenizer.decode(parsed) == "user\nHi")
        #expect(try tokenizer.decode(parsed, renderingSpecialTokens: true) == text)
        #expect(try tokenizer.decode(plain) == text)
        // The grammar compiler's view: control tokens have no bytes, and they end generation.
        #expect(tokenizer.vocabulary.bytes(of: 2) == [])
        #expect(tokenizer.vocabulary.isEndOfGeneration(2) && !tokenizer.vocabulary.isEndOfGeneration(1))
    }
}
