import GGUF
import TypesetTestSupport
import Testing
import TypesetTokenizer

@Suite struct VocabularyTests {
    static func metadata(_ configure: (inout GGUFWriter) throws -> Void) throws -> GGUFMetadata {
        var writer = GGUFWriter()
        try configure(&writer)
        return try GGUFFile(bytes: try writer.encoded()).metadata
    }

    static func strings(_ values: [String]) throws -> GGUFValue {
        .array(try GGUFArray(elementType: .string, elements: values.map { .string($0) }))
    }

    static func int32s(_ values: [Int32]) throws -> GGUFValue {
        .array(try GGUFArray(elementType: .int32, elements: values.map { .int32($0) }))
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func smolLM2() throws {
        let vocabulary = try Vocabulary(metadata: try GGUFFile(contentsOf: TestModels.smolLM2Path).metadata)
        #expect(vocabulary.count == 49152)
        #expect(vocabulary.model == "gpt2" && vocabulary.preTokenizer == "smollm")
        #expect(vocabulary.bosTokenID == 1 && vocabulary.eosTokenID == 2 && vocabulary.unknownTokenID == 0)
        #expect(vocabulary.addBOS == false)
        #expect(vocabulary.types[1] == .control && vocabulary.tokens[1] == "<|im_start|>")
        #expect(vocabulary.bytes(of: 1) == [])
        // GPT-2's byte-to-unicode alphabet: "Ġ" is the space, "Ċ" the newline.
        let the = try #require(vocabulary.tokens.firstIndex(of: "Ġthe"))
        #expect(vocabulary.bytes(of: the) == Array(" the".utf8))
        let newline = try #require(vocabulary.tokens.firstIndex(of: "Ċ"))
        #expect(vocabulary.bytes(of: newline) == [0x0A])
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.gemma3FileName)))
    func gemma3() throws {
        let vocabulary = try Vocabulary(metadata: try GGUFFile(contentsOf: TestModels.gemma3Path).metadata)
        #expect(vocabulary.count == 262_144)
        #expect(vocabulary.model == "llama" && vocabulary.preTokenizer == "default")
        #expect(vocabulary.bosTokenID == 2 && vocabulary.eosTokenID == 1 && vocabulary.paddingTokenID == 0)
        #expect(vocabulary.addBOS && !vocabulary.addEOS)
        #expect(vocabulary.scores.count == 262_144)
        let newline = try #require(vocabulary.tokens.firstIndex(of: "<0x0A>"))
        #expect(vocabulary.types[newline] == .byte && vocabulary.bytes(of: newline) == [0x0A])
        let the = try #require(vocabulary.tokens.firstIndex(of: "▁the"))
        #expect(vocabulary.bytes(of: the) == Array(" the".utf8))
    }

    /// Every one of the 256 bytes, written in GPT-2's alphabet, maps back to itself.
    @Test func gpt2AlphabetCoversEveryByte() throws {
        // The mapping as published with GPT-2: printable Latin-1 stays, the rest shifts to U+0100+.
        var alphabet: [String] = []
        var shifted: UInt32 = 0x100
        for byte in 0..<256 {
            if (0x21...0x7E).contains(byte) || (0xA1...0xAC).contains(byte) || (0xAE...0xFF).contains(byte) {
                alphabet.append(String(UnicodeScalar(UInt8(byte))))
            } else {
                alphabet.append(String(UnicodeScalar(shifted)!))
                shifted += 1
            }
        }
        #expect(alphabet[0x20] == "Ġ" && alphabet[0x0A] == "Ċ" && alphabet[0x09] == "ĉ" && alphabet[0xAD] == "Ń")
        let metadata = try Self.metadata { writer in
            writer.setValue(.string("gpt2"), forKey: "tokenizer.ggml.model")
            writer.setValue(try Self.strings(alphabet), forKey: "tokenizer.ggml.tokens")
            writer.setValue(try Self.strings([]), forKey: "tokenizer.ggml.merges")
        }
        let vocabulary = try Vocabulary(metadata: metadata)
        for byte in 0..<256 { #expect(vocabulary.bytes(of: byte) == [UInt8(byte)]) }
    }

    @Test func malformedVocabulariesAreTypedErrors() throws {
        #expect(throws: VocabularyError.missing("tokenizer.ggml.model")) {
            try Vocabulary(metadata: try Self.metadata { _ in })
        }
        #expect(throws: VocabularyError.missing("tokenizer.ggml.tokens")) {
            try Vocabulary(metadata: try Self.metadata { $0.setValue(.string("gpt2"), forKey: "tokenizer.ggml.model") })
        }
        #expect(throws: VocabularyError.lengthMismatch(key: "tokenizer.ggml.token_type", count: 1, expected: 2)) {
            try Vocabulary(metadata: try Self.metadata { writer in
                writer.setValue(.string("gpt2"), forKey: "tokenizer.ggml.model")
                writer.setValue(try Self.strings(["a", "b"]), forKey: "tokenizer.ggml.tokens")
                writer.setValue(try Self.int32s([1]), forKey: "tokenizer.ggml.token_type")
            })
        }
        #expect(throws: VocabularyError.tokenIDOutOfRange(key: "tokenizer.ggml.eos_token_id", id: 7, count: 2)) {
            try Vocabulary(metadata: try Self.metadata { writer in
                writer.setValue(.string("gpt2"), forKey: "tokenizer.ggml.model")
                writer.setValue(try Self.strings(["a", "b"]), forKey: "tokenizer.ggml.tokens")
                writer.setValue(try Self.strings([]), forKey: "tokenizer.ggml.merges")
                writer.setValue(.uint32(7), forKey: "tokenizer.ggml.eos_token_id")
            })
        }
        #expect(throws: VocabularyError.unsupportedModel("bert")) {
            try Vocabulary(metadata: try Self.metadata { $0.setValue(.string("bert"), forKey: "tokenizer.ggml.model") })
        }
        #expect(throws: VocabularyError.missing("tokenizer.ggml.merges")) {
            try Vocabulary(metadata: try Self.metadata { writer in
                writer.setValue(.string("gpt2"), forKey: "tokenizer.ggml.model")
                writer.setValue(try Self.strings(["a", "b"]), forKey: "tokenizer.ggml.tokens")
            })
        }
        #expect(throws: VocabularyError.duplicateToken("a", firstID: 0, secondID: 2)) {
            try Vocabulary(metadata: try Self.metadata { writer in
                writer.setValue(.string("llama"), forKey: "tokenizer.ggml.model")
                writer.setValue(try Self.strings(["a", "b", "a"]), forKey: "tokenizer.ggml.tokens")
            })
        }
        #expect(throws: VocabularyError.metadata(.typeMismatch(key: "tokenizer.ggml.model", expected: "string", found: "uint32"))) {
            try Vocabulary(metadata: try Self.metadata { $0.setValue(.uint32(1), forKey: "tokenizer.ggml.model") })
        }
    }
}
