import GGUF

/// A model's vocabulary as llama.cpp understands it: each token's text, type, score and
/// attributes, the byte string each token stands for, the special token ids, and the flags that
/// steer tokenization. This is what the grammar compiler needs to know of tokens (their exact
/// bytes and which ones end generation) and what `Tokenizer` is built from.
///
/// Reading follows llama.cpp (`llama_vocab::load`), including its repairs of common conversion
/// mistakes, so that ids, pieces and end-of-generation sets agree with it:
/// - tokens whose text names an end of turn (`<|im_end|>`, `<end_of_turn>`, `</s>`, …) end
///   generation and are treated as control tokens even when the file says otherwise;
/// - control tokens whose text contains `unused` are also marked unused;
/// - missing special ids take llama.cpp's defaults for the tokenizer family.
public struct Vocabulary: Sendable {
    /// llama.cpp's token type codes (`tokenizer.ggml.token_type`).
    public enum TokenType: Int, Sendable {
        case undefined = 0
        case normal = 1
        case unknown = 2
        case control = 3
        case userDefined = 4
        case unused = 5
        case byte = 6
    }

    /// What a token is, as a set (llama.cpp's `llama_token_attr` bit values).
    public struct TokenAttributes: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let unknown = TokenAttributes(rawValue: 1 << 0)
        public static let unused = TokenAttributes(rawValue: 1 << 1)
        public static let normal = TokenAttributes(rawValue: 1 << 2)
        public static let control = TokenAttributes(rawValue: 1 << 3)
        public static let userDefined = TokenAttributes(rawValue: 1 << 4)
        public static let byte = TokenAttributes(rawValue: 1 << 5)

        /// Tokens that are not text: never produced from plain text, rendered only on request.
        public static let special: TokenAttributes = [.unknown, .control]
    }

    /// The tokenizer family.
    public enum Kind: String, Sendable {
        /// Byte-level BPE over GPT-2's byte alphabet, with merges (`tokenizer.ggml.model = gpt2`).
        case byteLevelBPE = "gpt2"
        /// SentencePiece-style BPE by token scores, `▁` for spaces, `<0xNN>` byte fallback
        /// (`tokenizer.ggml.model = llama`).
        case sentencePiece = "llama"
        /// SentencePiece's alphabet (`▁` for spaces, `<0xNN>` byte fallback) merged by rank
        /// with merges, over characters, the text split at newlines only
        /// (`tokenizer.ggml.model = gemma4`: Gemma 4).
        case sentencePieceMerges = "gemma4"
    }

    /// The tokenizer family name as stored (`tokenizer.ggml.model`).
    public let model: String
    public let kind: Kind
    /// The pre-tokenizer name (`tokenizer.ggml.pre`), `default` when absent.
    public let preTokenizer: String
    /// Token texts as stored in the GGUF (for `gpt2`, in the GPT-2 byte-to-unicode alphabet;
    /// for `llama`, with `▁` for spaces and `<0xNN>` byte tokens). An empty text is replaced by
    /// `[EMPTY_<id>]`, as llama.cpp does.
    public let tokens: [String]
    public let types: [TokenType]
    public let attributes: [TokenAttributes]
    /// SentencePiece scores; all zero when the model has none.
    public let scores: [Float]
    /// BPE merges in rank order, `"left right"` in the token alphabet (empty for SentencePiece).
    public let merges: [String]
    public let bosTokenID: Int?
    public let eosTokenID: Int?
    /// End of turn: from the file, or else the lowest id whose text names one (`<|im_end|>`,
    /// `<end_of_turn>`, …). llama.cpp takes the first such token in its hash map's iteration
    /// order instead, an artifact of its C++ library: where a vocabulary has several (Qwen's
    /// `<|endoftext|>` and `<|im_end|>`) the two may name different ones, all of which end
    /// generation (``endOfGenerationTokenIDs``).
    public let eotTokenID: Int?
    public let unknownTokenID: Int?
    public let paddingTokenID: Int?
    /// The tokens that end generation, ascending.
    public let endOfGenerationTokenIDs: [Int]
    /// Whether encoding with special tokens adds BOS at the start / EOS at the end.
    public let addBOS: Bool
    public let addEOS: Bool
    /// Whether SentencePiece encoding puts a space before text that starts the input or follows
    /// a special token (and decoding removes it again).
    public let addSpacePrefix: Bool

    /// Every token's bytes as rendered with special tokens shown: `pieceOffsets[id] ..<
    /// pieceOffsets[id + 1]` in `pieceBytes`.
    let pieceBytes: [UInt8]
    let pieceOffsets: [Int32]
    /// Token text bytes → id.
    let textLookup: ByteStringTable

    public var count: Int { tokens.count }

    /// Reads and validates the vocabulary from a model's metadata: the token list must exist,
    /// the type and score lists (when present) must match it in length, special ids must be in
    /// range, and token texts must be distinct.
    public init(metadata: GGUFMetadata) throws(VocabularyError) {
        func read<T>(_ body: @autoclosure () throws(GGUFError) -> T) throws(VocabularyError) -> T {
            do { return try body() } catch { throw .metadata(error) }
        }
        let tokenizer = metadata.tokenizer
        guard let model = try read(try tokenizer.model) else { throw .missing("tokenizer.ggml.model") }
        guard let kind = Kind(rawValue: model) else { throw .unsupportedModel(model) }
        guard let tokenArray = try read(try tokenizer.tokens), tokenArray.elementType == .string, tokenArray.count > 0 else {
            throw .missing("tokenizer.ggml.tokens")
        }
        var tokens: [String] = []
        tokens.reserveCapacity(tokenArray.count)
        tokenArray.forEachStringBytes { index, bytes in
            tokens.append(bytes.isEmpty ? "[EMPTY_\(index)]" : String(decoding: bytes, as: UTF8.self))
        }
        let count = tokens.count
        let rawTypes = try read(try tokenizer.tokenTypes) ?? Array(repeating: TokenType.normal.rawValue, count: count)
        guard rawTypes.count == count else {
            throw .lengthMismatch(key: "tokenizer.ggml.token_type", count: rawTypes.count, expected: count)
        }
        let scores = try read(try tokenizer.scores) ?? Array(repeating: 0, count: count)
        guard scores.count == count else {
            throw .lengthMismatch(key: "tokenizer.ggml.scores", count: scores.count, expected: count)
        }
        var merges: [String] = []
        if kind != .sentencePiece {
            guard let mergeArray = try read(try tokenizer.merges), mergeArray.elementType == .string else {
                throw .missing("tokenizer.ggml.merges")
            }
            merges = mergeArray.strings() ?? []
        }
        let preTokenizer = try read(try tokenizer.preTokenizer) ?? "default"

        func special(_ key: String, default defaultID: Int?) throws(VocabularyError) -> Int? {
            guard let value = try read(try metadata.integer(key)) else {
                return defaultID.flatMap { (0 ..< count).contains($0) ? $0 : nil }
            }
            guard (0 ..< count).contains(value) else { throw .tokenIDOutOfRange(key: key, id: value, count: count) }
            return value
        }
        // llama.cpp's defaults: SentencePiece's 1, 2 and 0; byte-level BPE's 11; Gemma 4's none.
        let isSentencePiece = kind == .sentencePiece, hasDefaults = kind != .sentencePieceMerges
        let bos = try special("tokenizer.ggml.bos_token_id", default: isSentencePiece ? 1 : hasDefaults ? 11 : nil)
        let eos = try special("tokenizer.ggml.eos_token_id", default: isSentencePiece ? 2 : hasDefaults ? 11 : nil)
        var eot = try special("tokenizer.ggml.eot_token_id", default: nil)
        let eom = try special("tokenizer.ggml.eom_token_id", default: nil)
        let unknown = try special("tokenizer.ggml.unknown_token_id", default: isSentencePiece ? 0 : nil)
        let padding = try special("tokenizer.ggml.padding_token_id", default: nil)

        let addBOSDefault = isSentencePiece || (PreTokenizer(named: preTokenizer)?.addsBOSByDefault ?? false)
        // Gemma 4 always adds BOS, whatever the file says (llama.cpp overrides a false there).
        let addBOSInFile = try read(try tokenizer.addBOSToken) ?? addBOSDefault
        let addBOS = kind == .sentencePieceMerges || addBOSInFile
        let addEOS = try read(try metadata.bool("tokenizer.ggml.add_eos_token")) ?? false
        let addSpacePrefix = try read(try metadata.bool("tokenizer.ggml.add_space_prefix")) ?? isSentencePiece
        if addBOS && bos == nil { throw .missing("tokenizer.ggml.bos_token_id") }
        if addEOS && eos == nil { throw .missing("tokenizer.ggml.eos_token_id") }

        // Attributes from the types, then llama.cpp's repairs by token text.
        let types = rawTypes.map { TokenType(rawValue: $0) ?? .undefined }
        var attributes = types.map(Self.attributes(of:))
        // Keyed by bytes: distinct token texts may be canonically equivalent as `String`s.
        var idByText = ByteStringTable(capacity: count)
        for (id, text) in tokens.enumerated() {
            var text = text
            let added = text.withUTF8 { idByText.insert(UnsafeRawBufferPointer($0), value: Int32(id)) }
            if !added {
                let first = text.withUTF8 { Int(idByText.lookup(UnsafeRawBufferPointer($0))!) }
                throw .duplicateToken(text, firstID: first, secondID: id)
            }
        }
        self.textLookup = idByText
        func id(of text: String) -> Int? { idByText.lookup(Array(text.utf8)).map(Int.init) }
        func firstID(among texts: [String]) -> Int? {
            texts.compactMap(id(of:)).min()
        }
        var endOfGeneration = Set<Int>()
        if eot == nil, let found = firstID(among: Self._endOfTurnTexts) {
            eot = found
            attributes[found].insert(.control)
        }
        var eomFound = eom
        if eomFound == nil, let found = id(of: "<|eom_id|>") {
            eomFound = found
            attributes[found].insert(.control)
        }
        for texts in Self._fillInTheMiddleTexts {
            guard let found = firstID(among: texts.texts) else { continue }
            attributes[found].insert(.control)
            if texts.endsGeneration { endOfGeneration.insert(found) }
        }
        let unused = Array("unused".utf8)
        for token in 0 ..< count where attributes[token].contains(.control) {
            let utf8 = Array(tokens[token].utf8)
            if utf8.count >= unused.count, (0 ... utf8.count - unused.count).contains(where: { utf8[$0 ..< $0 + unused.count].elementsEqual(unused) }) {
                attributes[token].insert(.unused)
            }
        }
        for text in Self._endOfGenerationTexts {
            guard let found = id(of: text) else { continue }
            endOfGeneration.insert(found)
            attributes[found].insert(.control)
        }
        for text in ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"] {
            if let found = id(of: text) { attributes[found] = .userDefined }
        }
        for special in [eos, eot, eomFound].compactMap({ $0 }) { endOfGeneration.insert(special) }
        let endOfGenerationTexts = Set(endOfGeneration.map { tokens[$0] })
        if endOfGenerationTexts.contains("<|end|>"),
           (endOfGenerationTexts.contains("<|return|>") && endOfGenerationTexts.contains("<|call|>"))
            || (endOfGenerationTexts.contains("<|calls|>") && endOfGenerationTexts.contains("<|flush|>")),
           let end = id(of: "<|end|>") {
            endOfGeneration.remove(end)
            attributes[end] = .userDefined
        }
        if endOfGenerationTexts.contains("<|tool_response>"), endOfGenerationTexts.contains("</s>"), let end = id(of: "</s>") {
            endOfGeneration.remove(end)
            attributes[end] = .normal
        }

        self.model = model
        self.kind = kind
        self.preTokenizer = preTokenizer
        self.tokens = tokens
        self.types = types
        self.attributes = attributes
        self.scores = scores
        self.merges = merges
        self.bosTokenID = bos
        self.eosTokenID = eos
        self.eotTokenID = eot
        self.unknownTokenID = unknown
        self.paddingTokenID = padding
        self.endOfGenerationTokenIDs = endOfGeneration.sorted()
        self.addBOS = addBOS
        self.addEOS = addEOS
        self.addSpacePrefix = addSpacePrefix
        (self.pieceBytes, self.pieceOffsets) = Self.renderPieces(tokens: tokens, attributes: attributes, kind: kind)
    }

    // MARK: Token bytes

    /// The exact bytes token `id` stands for in text, as llama.cpp renders it without special
    /// tokens (`llama_token_to_piece(…, special: false)`): control and unknown tokens yield no
    /// bytes, user-defined tokens their text, byte tokens their byte, and normal tokens their
    /// text with the alphabet undone (GPT-2's byte mapping, or `▁` as a space).
    ///
    /// - Precondition: `0 <= id < count`.
    /// - Complexity: O(length of the piece).
    public func bytes(of id: Int) -> [UInt8] {
        piece(of: id, rendersSpecialTokens: false)
    }

    /// The bytes token `id` renders as; with `rendersSpecialTokens`, control and unknown tokens
    /// render as their text (`<|im_end|>`).
    ///
    /// - Precondition: `0 <= id < count`.
    public func piece(of id: Int, rendersSpecialTokens: Bool) -> [UInt8] {
        precondition((0 ..< count).contains(id), "token id \(id) outside the vocabulary of \(count) tokens")
        if !rendersSpecialTokens && !attributes[id].isDisjoint(with: .special) { return [] }
        return Array(pieceBytes[Int(pieceOffsets[id]) ..< Int(pieceOffsets[id + 1])])
    }

    /// Each token's bytes as the model writes them (``bytes(of:)``), `nil` for the tokens
    /// that are never text (control, unknown and unused ones): what a grammar compiler needs
    /// to know of the vocabulary. O(total piece length).
    public var writtenBytes: [[UInt8]?] {
        (0 ..< count).map { id in
            attributes[id].isDisjoint(with: [.control, .unknown, .unused]) ? bytes(of: id) : nil
        }
    }

    /// Whether generating token `id` ends generation (EOS, EOT and the like).
    public func isEndOfGeneration(_ id: Int) -> Bool {
        endOfGenerationTokenIDs.contains(id)
    }

    // MARK: Tables

    private static func attributes(of type: TokenType) -> TokenAttributes {
        switch type {
        case .undefined: []
        case .normal: .normal
        case .unknown: .unknown
        case .control: .control
        case .userDefined: .userDefined
        case .unused: .unused
        case .byte: .byte
        }
    }

    private static let _endOfTurnTexts = [
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
        "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
    ]

    private static let _endOfGenerationTexts = [
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<｜end▁of▁sentence｜>", "[e~[",
    ]

    /// Fill-in-the-middle markers llama.cpp recognizes by text; pad, repository and file
    /// separator markers also end generation.
    private static let _fillInTheMiddleTexts: [(texts: [String], endsGeneration: Bool)] = [
        (["<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"], false),
        (["<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"], false),
        (["<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"], false),
        (["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"], true),
        (["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"], true),
        (["<|file_sep|>"], true),
    ]

    /// Renders every token as `llama_token_to_piece(…, special: true)` does.
    private static func renderPieces(tokens: [String], attributes: [TokenAttributes], kind: Kind) -> ([UInt8], [Int32]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(tokens.count * 6)
        var offsets: [Int32] = [0]
        offsets.reserveCapacity(tokens.count + 1)
        for (id, token) in tokens.enumerated() {
            let attribute = attributes[id]
            if !attribute.isDisjoint(with: [.unknown, .control, .userDefined]) {
                bytes.append(contentsOf: token.utf8)
            } else if attribute.contains(.normal) {
                switch kind {
                case .sentencePiece, .sentencePieceMerges:
                    _appendReplacingSpaceMarks(token, to: &bytes)
                case .byteLevelBPE:
                    _appendGPT2Decoded(token, to: &bytes)
                }
            } else if attribute.contains(.byte) {
                bytes.append(_byteValue(ofByteToken: token))
            }
            offsets.append(Int32(bytes.count))
        }
        return (bytes, offsets)
    }
}

/// `▁` (U+2581, E2 96 81) → space; everything else unchanged.
func _appendReplacingSpaceMarks(_ text: String, to bytes: inout [UInt8]) {
    var utf8 = Array(text.utf8)[...]
    while let first = utf8.first {
        if first == 0xE2, utf8.count >= 3, utf8[utf8.startIndex + 1] == 0x96, utf8[utf8.startIndex + 2] == 0x81 {
            bytes.append(0x20)
            utf8 = utf8.dropFirst(3)
        } else {
            bytes.append(first)
            utf8 = utf8.dropFirst()
        }
    }
}

/// Undoes GPT-2's byte-to-unicode mapping. A character outside the alphabet is rendered as
/// `[UNK_BYTE_0x<its UTF-8 in hex><the whole token>]`, exactly as llama.cpp renders it.
func _appendGPT2Decoded(_ text: String, to bytes: inout [UInt8]) {
    for scalar in text.unicodeScalars {
        if let byte = GPT2ByteMapping.byte(for: scalar) {
            bytes.append(byte)
        } else {
            bytes.append(contentsOf: "[UNK_BYTE_0x".utf8)
            for unit in String(scalar).utf8 {
                let hex = String(unit, radix: 16)
                bytes.append(contentsOf: (hex.count == 1 ? "0" + hex : hex).utf8)
            }
            bytes.append(contentsOf: text.utf8)
            bytes.append(0x5D)
        }
    }
}

/// The byte of a `<0xNN>` token: the hexadecimal digits at offsets 3 and 4, read the way
/// `strtol` reads them (stopping at the first non-digit; 0 when there is none).
func _byteValue(ofByteToken text: String) -> UInt8 {
    var value: UInt32 = 0
    for unit in text.utf8.dropFirst(3).prefix(2) {
        guard let digit = Character(UnicodeScalar(unit)).hexDigitValue else { break }
        value = value * 16 + UInt32(digit)
    }
    return UInt8(truncatingIfNeeded: value)
}

/// GPT-2's reversible mapping between bytes and printable unicode scalars: the printable
/// Latin-1 bytes map to themselves, the other 68 bytes to U+0100 and up, in byte order.
enum GPT2ByteMapping {
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

    /// Byte for scalars U+0000 ..< U+0144 (the whole alphabet lives there); 0xFFFF when none.
    private static let byteForScalar: [UInt16] = {
        var result = [UInt16](repeating: 0xFFFF, count: 0x144)
        for (byte, scalar) in scalarForByte.enumerated() { result[Int(scalar.value)] = UInt16(byte) }
        return result
    }()

    @inline(__always)
    static func byte(for scalar: UnicodeScalar) -> UInt8? {
        guard scalar.value < 0x144 else { return nil }
        let byte = byteForScalar[Int(scalar.value)]
        return byte == 0xFFFF ? nil : UInt8(byte)
    }
}

/// Why a model's vocabulary cannot be read.
public enum VocabularyError: Error, Sendable, Equatable, CustomStringConvertible {
    case metadata(GGUFError)
    case missing(String)
    case unsupportedModel(String)
    case lengthMismatch(key: String, count: Int, expected: Int)
    case tokenIDOutOfRange(key: String, id: Int, count: Int)
    case duplicateToken(String, firstID: Int, secondID: Int)

    public var description: String {
        switch self {
        case let .metadata(error): "\(error)"
        case let .missing(key): "the model has no '\(key)'"
        case let .unsupportedModel(model): "tokenizer model '\(model)' is not supported (supported: gpt2, llama)"
        case let .lengthMismatch(key, count, expected): "'\(key)' has \(count) entries but the vocabulary has \(expected) tokens"
        case let .tokenIDOutOfRange(key, id, count): "'\(key)' is \(id), outside the vocabulary of \(count) tokens"
        case let .duplicateToken(text, first, second): "token text \(text.debugDescription) appears twice (ids \(first) and \(second))"
        }
    }
}
