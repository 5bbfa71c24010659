import GGUF

/// A model's vocabulary as GGUF stores it: each token's text, type and score, and the special
/// token ids. This is what the grammar compiler needs to know of tokens (their exact bytes)
/// and what the BPE encoders are built from.
public struct Vocabulary: Sendable {
    /// llama.cpp's token attribute codes (`tokenizer.ggml.token_type`).
    public enum TokenType: Int, Sendable {
        case undefined = 0
        case normal = 1
        case unknown = 2
        case control = 3
        case userDefined = 4
        case unused = 5
        case byte = 6
    }

    /// The tokenizer family: `gpt2` (byte-level BPE) or `llama` (SentencePiece-style BPE).
    public let model: String
    /// The pre-tokenizer name (`tokenizer.ggml.pre`), `default` when absent.
    public let preTokenizer: String
    /// Token texts as stored in the GGUF (for `gpt2`, in the GPT-2 byte-to-unicode alphabet;
    /// for `llama`, with `▁` for spaces and `<0xNN>` byte tokens).
    public let tokens: [String]
    public let types: [TokenType]
    /// SentencePiece scores; empty when the model has none.
    public let scores: [Float]
    public let bosTokenID: Int?
    public let eosTokenID: Int?
    public let eotTokenID: Int?
    public let unknownTokenID: Int?
    public let paddingTokenID: Int?
    public let addBOS: Bool
    public let addEOS: Bool

    public var count: Int { tokens.count }

    /// Reads the vocabulary from a model's metadata, validating it: the token list must exist,
    /// the type and score lists (when present) must match it in length, and special ids must
    /// be in range.
    public init(metadata: GGUFMetadata) throws(VocabularyError) {
        func read<T>(_ body: @autoclosure () throws(GGUFError) -> T) throws(VocabularyError) -> T {
            do { return try body() } catch { throw .metadata(error) }
        }
        let tokenizer = metadata.tokenizer
        guard let model = try read(try tokenizer.model) else { throw .missing("tokenizer.ggml.model") }
        guard let tokens = try read(try metadata.stringArray("tokenizer.ggml.tokens")), !tokens.isEmpty else {
            throw .missing("tokenizer.ggml.tokens")
        }
        let rawTypes = try read(try tokenizer.tokenTypes) ?? Array(repeating: 1, count: tokens.count)
        guard rawTypes.count == tokens.count else {
            throw .lengthMismatch(key: "tokenizer.ggml.token_type", count: rawTypes.count, expected: tokens.count)
        }
        let scores = try read(try tokenizer.scores) ?? []
        guard scores.isEmpty || scores.count == tokens.count else {
            throw .lengthMismatch(key: "tokenizer.ggml.scores", count: scores.count, expected: tokens.count)
        }
        func special(_ key: String) throws(VocabularyError) -> Int? {
            guard let value = try read(try metadata.integer(key)) else { return nil }
            guard (0 ..< tokens.count).contains(value) else {
                throw .tokenIDOutOfRange(key: key, id: value, count: tokens.count)
            }
            return value
        }
        self.model = model
        self.preTokenizer = try read(try tokenizer.preTokenizer) ?? "default"
        self.tokens = tokens
        self.types = rawTypes.map { TokenType(rawValue: $0) ?? .undefined }
        self.scores = scores
        self.bosTokenID = try special("tokenizer.ggml.bos_token_id")
        self.eosTokenID = try special("tokenizer.ggml.eos_token_id")
        self.eotTokenID = try special("tokenizer.ggml.eot_token_id")
        self.unknownTokenID = try special("tokenizer.ggml.unknown_token_id")
        self.paddingTokenID = try special("tokenizer.ggml.padding_token_id")
        self.addBOS = try read(try tokenizer.addBOSToken) ?? (model == "llama")
        self.addEOS = try read(try tokenizer.addEOSToken) ?? false
    }

    /// The exact bytes token `id` stands for in text, for byte-level consumers such as the
    /// grammar compiler. For `gpt2` vocabularies this undoes the GPT-2 byte-to-unicode mapping;
    /// for `llama` vocabularies it maps `▁` to a space and `<0xNN>` byte tokens to their byte.
    /// Control tokens have no text and yield an empty array.
    ///
    /// - Complexity: O(length of the token text).
    public func bytes(of id: Int) -> [UInt8] {
        let text = tokens[id]
        switch types[id] {
        case .control, .unknown, .unused: return []
        case .byte:
            if let byte = _parseByteToken(text) { return [byte] }
            return Array(text.utf8)
        default: break
        }
        if model == "gpt2" {
            return text.unicodeScalars.map { _GPT2ByteMapping.byte(for: $0) ?? 0x3F }
        }
        // "▁" (U+2581) is E2 96 81 in UTF-8.
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count)
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            if index + 2 < utf8.count, utf8[index] == 0xE2, utf8[index + 1] == 0x96, utf8[index + 2] == 0x81 {
                result.append(0x20)
                index += 3
            } else {
                result.append(utf8[index])
                index += 1
            }
        }
        return result
    }
}

/// `<0xNN>` → NN.
func _parseByteToken(_ text: String) -> UInt8? {
    let utf8 = Array(text.utf8)
    guard utf8.count == 6, utf8.starts(with: Array("<0x".utf8)), utf8[5] == UInt8(ascii: ">") else { return nil }
    return UInt8(String(decoding: utf8[3...4], as: UTF8.self), radix: 16)
}

/// GPT-2's reversible mapping between bytes and printable unicode scalars: the printable
/// Latin-1 bytes map to themselves, the other 68 bytes to U+0100 and up, in byte order.
enum _GPT2ByteMapping {
    static let scalarForByte: [UnicodeScalar] = {
        var result = [UnicodeScalar](repeating: " ", count: 256)
        var next: UInt32 = 256
        for byte in 0 ..< 256 {
            let printable = (0x21...0x7E).contains(byte) || (0xA1...0xAC).contains(byte) || (0xAE...0xFF).contains(byte)
            if printable {
                result[byte] = UnicodeScalar(UInt8(byte))
            } else {
                result[byte] = UnicodeScalar(next)!
                next += 1
            }
        }
        return result
    }()

    static let byteForScalar: [UInt32: UInt8] = {
        var result: [UInt32: UInt8] = [:]
        for (byte, scalar) in scalarForByte.enumerated() { result[scalar.value] = UInt8(byte) }
        return result
    }()

    static func byte(for scalar: UnicodeScalar) -> UInt8? { byteForScalar[scalar.value] }
}

/// Why a model's vocabulary cannot be read.
public enum VocabularyError: Error, Sendable, Equatable, CustomStringConvertible {
    case metadata(GGUFError)
    case missing(String)
    case lengthMismatch(key: String, count: Int, expected: Int)
    case tokenIDOutOfRange(key: String, id: Int, count: Int)

    public var description: String {
        switch self {
        case let .metadata(error): "\(error)"
        case let .missing(key): "the model has no '\(key)'"
        case let .lengthMismatch(key, count, expected): "'\(key)' has \(count) entries but the vocabulary has \(expected) tokens"
        case let .tokenIDOutOfRange(key, id, count): "'\(key)' is \(id), outside the vocabulary of \(count) tokens"
        }
    }
}
