import GGUF

/// Turns text into token ids and back, exactly as llama.cpp's tokenizer does for the same GGUF
/// (`llama_tokenize` / `llama_detokenize`).
///
/// Two families are supported, chosen by `tokenizer.ggml.model`:
/// - **Byte-level BPE** (`gpt2`: SmolLM2, Llama 3, Qwen 2.5, …): special tokens are cut out,
///   the rest is split into words by the model's pre-tokenizer (`tokenizer.ggml.pre`), and each
///   word's bytes are merged by rank.
/// - **SentencePiece BPE** (`llama`: Gemma 3, Llama 2, …): special tokens are cut out, spaces
///   become `▁`, and characters merge by token score; characters with no token fall back to
///   `<0xNN>` byte tokens.
/// - **SentencePiece's alphabet with merges** (`gemma4`): spaces become `▁` (no prefix), the
///   text splits into runs of newlines and runs of everything else (a run of newlines that is a
///   token stays one), and each run's characters merge by rank; leftovers fall back to
///   `<0xNN>` byte tokens.
///
/// A `Tokenizer` is immutable and cheap to copy (its tables are shared); encode from any number
/// of threads at once.
///
///     let tokenizer = try Tokenizer(metadata: file.metadata)
///     let ids = tokenizer.encode("Hello, world!")          // BOS added if the model wants it
///     let text = try tokenizer.decode(ids, removingSpecialTokens: true)
public struct Tokenizer: Sendable {
    public let vocabulary: Vocabulary
    /// The word splitter of byte-level BPE vocabularies; `nil` for SentencePiece.
    public let preTokenizer: PreTokenizer?
    private let storage: Storage

    /// Builds the tokenizer for a model's vocabulary.
    ///
    /// - Throws: `TokenizerError.unsupportedPreTokenizer` for a byte-level BPE vocabulary whose
    ///   pre-tokenizer Typeset does not know.
    /// - Complexity: O(vocabulary size + merge count); about 20–60 ms for the real models (GGUF parsing included).
    public init(vocabulary: Vocabulary) throws(TokenizerError) {
        self.vocabulary = vocabulary
        switch vocabulary.kind {
        case .byteLevelBPE:
            guard let preTokenizer = PreTokenizer(named: vocabulary.preTokenizer) else {
                throw .unsupportedPreTokenizer(vocabulary.preTokenizer)
            }
            self.preTokenizer = preTokenizer
        case .sentencePiece, .sentencePieceMerges:
            self.preTokenizer = nil
        }
        self.storage = Storage(vocabulary: vocabulary)
    }

    /// Reads the vocabulary from a model's metadata and builds its tokenizer.
    public init(metadata: GGUFMetadata) throws(TokenizerError) {
        let vocabulary: Vocabulary
        do { vocabulary = try Vocabulary(metadata: metadata) } catch { throw .vocabulary(error) }
        try self.init(vocabulary: vocabulary)
    }

    // MARK: Encoding

    /// The token ids of `text`.
    ///
    /// - Parameters:
    ///   - addingSpecialTokens: add BOS (and EOS) where the model asks for them
    ///     (`tokenizer.ggml.add_bos_token`, `add_eos_token`).
    ///   - parsingSpecialTokens: read control tokens written in the text (`<|im_start|>`,
    ///     `<start_of_turn>`) as those tokens. Without it they are encoded as plain text, so
    ///     text from users can never forge a turn. User-defined tokens are always recognized.
    /// - Complexity: O(n log n) in the text's length; O(n) for ordinary text.
    public func encode(_ text: String, addingSpecialTokens: Bool = true, parsingSpecialTokens: Bool = false) -> [Int] {
        var text = text
        return text.withUTF8 {
            encode(bytes: $0, addingSpecialTokens: addingSpecialTokens, parsingSpecialTokens: parsingSpecialTokens)
        }
    }

    /// The token ids of raw bytes, which need not be valid UTF-8. Byte-level BPE reads each
    /// malformed byte as U+FFFD (as llama.cpp does); SentencePiece keeps it as a byte token.
    public func encode(
        bytes: UnsafeBufferPointer<UInt8>, addingSpecialTokens: Bool = true, parsingSpecialTokens: Bool = false
    ) -> [Int] {
        var output: [Int] = []
        output.reserveCapacity(bytes.count / 3 + 4)
        encode(bytes: bytes, addingBOS: addingSpecialTokens, addingEOS: addingSpecialTokens,
               parsingSpecialTokens: parsingSpecialTokens, startsText: true, into: &output)
        return output
    }

    /// Appends the tokens of `bytes` to `output`. `startsText` is false for a piece that
    /// continues a text (``StreamingEncoder``): SentencePiece then adds no space prefix.
    func encode(
        bytes: UnsafeBufferPointer<UInt8>, addingBOS: Bool, addingEOS: Bool, parsingSpecialTokens: Bool, startsText: Bool,
        into output: inout [Int]
    ) {
        if addingBOS && vocabulary.addBOS, let bos = vocabulary.bosTokenID { output.append(bos) }
        let fragments = storage.specialTokens.split(bytes, parseSpecialTokens: parsingSpecialTokens)
        switch vocabulary.kind {
        case .byteLevelBPE:
            var session = ByteLevelSession()
            for fragment in fragments {
                if fragment.token >= 0 {
                    output.append(Int(fragment.token))
                } else {
                    session.encode(UnsafeBufferPointer(rebasing: bytes[fragment.start ..< fragment.end]),
                                   preTokenizer: preTokenizer!, storage: storage, into: &output)
                }
            }
        case .sentencePiece:
            var scratch = MergeScratch()
            var escaped: [UInt8] = []
            var previousWasSpecial = startsText
            for fragment in fragments {
                if fragment.token >= 0 {
                    output.append(Int(fragment.token))
                    previousWasSpecial = true
                    continue
                }
                escaped.removeAll(keepingCapacity: true)
                if vocabulary.addSpacePrefix && previousWasSpecial { escaped.append(contentsOf: [0xE2, 0x96, 0x81]) }
                for byte in bytes[fragment.start ..< fragment.end] {
                    if byte == 0x20 { escaped.append(contentsOf: [0xE2, 0x96, 0x81]) } else { escaped.append(byte) }
                }
                escaped.withUnsafeBufferPointer {
                    _mergeSentencePiece($0, lookup: storage.textLookup, scores: vocabulary.scores,
                                        byteFallback: storage.byteFallback, scratch: &scratch, into: &output)
                }
                previousWasSpecial = false
            }
        case .sentencePieceMerges:
            var scratch = MergeScratch()
            var escaped: [UInt8] = []
            var decoded = DecodedText()
            for fragment in fragments {
                if fragment.token >= 0 {
                    output.append(Int(fragment.token))
                    continue
                }
                escaped.removeAll(keepingCapacity: true)
                for byte in bytes[fragment.start ..< fragment.end] {
                    if byte == 0x20 { escaped.append(contentsOf: [0xE2, 0x96, 0x81]) } else { escaped.append(byte) }
                }
                // Malformed UTF-8 reads as U+FFFD, a byte at a time, as llama.cpp reads it.
                escaped.withUnsafeBufferPointer { decoded.decode($0) }
                decoded.bytes.withUnsafeBufferPointer { text in
                    // Runs of newlines and runs of the rest (llama.cpp's `[^\n]+|[\n]+`).
                    var start = 0
                    while start < text.count {
                        let newlines = text[start] == 0x0A
                        var end = start + 1
                        while end < text.count, (text[end] == 0x0A) == newlines { end += 1 }
                        let run = UnsafeBufferPointer(rebasing: text[start ..< end])
                        if newlines, let token = storage.textLookup.lookup(UnsafeRawBufferPointer(run)) {
                            output.append(Int(token))
                        } else {
                            _mergeCharacterPairs(run, lookup: storage.textLookup, merges: storage.merges,
                                                 byteFallback: storage.byteFallback, scratch: &scratch, into: &output)
                        }
                        start = end
                    }
                }
            }
        }
        if addingEOS && vocabulary.addEOS, let eos = vocabulary.eosTokenID { output.append(eos) }
    }

    // MARK: Decoding

    /// The bytes `tokens` stand for, as `llama_detokenize` renders them.
    ///
    /// - Parameters:
    ///   - removingSpecialTokens: drop a leading BOS and trailing EOS the model adds itself.
    ///   - renderingSpecialTokens: render control tokens as their text instead of nothing.
    /// - Throws: `TokenizerError.tokenIDOutOfRange` for an id outside the vocabulary.
    public func decodeBytes(
        _ tokens: some Sequence<Int>, removingSpecialTokens: Bool = false, renderingSpecialTokens: Bool = false
    ) throws(TokenizerError) -> [UInt8] {
        var tokens = Array(tokens)
        for (position, id) in tokens.enumerated() where !(0 ..< vocabulary.count).contains(id) {
            throw .tokenIDOutOfRange(id: id, position: position, count: vocabulary.count)
        }
        var removesLeadingSpace = vocabulary.addSpacePrefix
        if removingSpecialTokens && vocabulary.addBOS, let first = tokens.first, first == vocabulary.bosTokenID {
            removesLeadingSpace = false
            tokens.removeFirst()
        }
        if removingSpecialTokens && vocabulary.addEOS, let last = tokens.last, last == vocabulary.eosTokenID {
            tokens.removeLast()
        }
        var output: [UInt8] = []
        for id in tokens {
            storage.appendPiece(of: id, rendersSpecialTokens: renderingSpecialTokens,
                                removingLeadingSpace: removesLeadingSpace, to: &output)
            removesLeadingSpace = false
        }
        // llama.cpp cleans up spaces for every BPE vocabulary but those whose pre-tokenizer turns
        // it off; Gemma 4's keeps it on.
        if vocabulary.kind == .byteLevelBPE && preTokenizer?.cleansUpSpaces == true || vocabulary.kind == .sentencePieceMerges {
            _cleanUpSpaces(&output)
        }
        return output
    }

    /// The text `tokens` stand for; byte sequences that are not UTF-8 become U+FFFD.
    public func decode(
        _ tokens: some Sequence<Int>, removingSpecialTokens: Bool = false, renderingSpecialTokens: Bool = false
    ) throws(TokenizerError) -> String {
        String(decoding: try decodeBytes(tokens, removingSpecialTokens: removingSpecialTokens,
                                         renderingSpecialTokens: renderingSpecialTokens), as: UTF8.self)
    }

    /// A decoder for tokens arriving one at a time that emits only complete characters.
    public func makeStreamingDetokenizer(renderingSpecialTokens: Bool = false) -> StreamingDetokenizer {
        StreamingDetokenizer(tokenizer: self, renderingSpecialTokens: renderingSpecialTokens)
    }

    func appendPiece(of id: Int, rendersSpecialTokens: Bool, removingLeadingSpace: Bool, to output: inout [UInt8]) {
        storage.appendPiece(of: id, rendersSpecialTokens: rendersSpecialTokens,
                            removingLeadingSpace: removingLeadingSpace, to: &output)
    }
}

// MARK: - Tables

private final class Storage: Sendable {
    let vocabulary: Vocabulary
    let specialTokens: SpecialTokenSplitter
    /// Token text bytes → id (SentencePiece: the escaped text as stored).
    let textLookup: ByteStringTable
    /// Byte-level BPE: raw word bytes → id, merges by id pair, and the token of each byte.
    let wordLookup: ByteStringTable
    let merges: MergeTable
    let byteTokens: [Int32]
    /// SentencePiece: the `<0xNN>` token of each byte (or the byte's own one-character token).
    let byteFallback: [Int32]

    init(vocabulary: Vocabulary) {
        self.vocabulary = vocabulary
        specialTokens = SpecialTokenSplitter(vocabulary: vocabulary)
        let text = vocabulary.textLookup
        textLookup = text
        func lookup(_ string: String) -> Int32? {
            var string = string
            return string.withUTF8 { text.lookup(UnsafeRawBufferPointer($0)) }
        }
        switch vocabulary.kind {
        case .byteLevelBPE:
            // Words are looked up by their raw bytes: decode each token whose text lies wholly
            // in GPT-2's alphabet (a token outside it can never match an encoded word).
            var words = ByteStringTable(capacity: vocabulary.count)
            var decoded: [UInt8] = []
            for (id, token) in vocabulary.tokens.enumerated() {
                decoded.removeAll(keepingCapacity: true)
                var inAlphabet = true
                for scalar in token.unicodeScalars {
                    guard let byte = GPT2ByteMapping.byte(for: scalar) else { inAlphabet = false; break }
                    decoded.append(byte)
                }
                if inAlphabet { decoded.withUnsafeBytes { _ = words.insert($0, value: Int32(id)) } }
            }
            wordLookup = words
            byteTokens = (0 ..< 256).map { lookup(String(GPT2ByteMapping.scalarForByte[$0])) ?? -1 }
            merges = Self.mergeTable(vocabulary.merges, lookup: lookup)
            byteFallback = []
        case .sentencePiece:
            wordLookup = ByteStringTable(capacity: 0)
            merges = MergeTable(capacity: 0)
            byteTokens = []
            byteFallback = (0 ..< 256).map { byte in
                if let id = lookup(Self.byteTokenName(byte)) { return id }
                return text.lookup([UInt8(byte)]) ?? (vocabulary.unknownTokenID.map(Int32.init) ?? -1)
            }
        case .sentencePieceMerges:
            // Merges between tokens as stored (`▁` for spaces); a byte without its `<0xNN>`
            // token is dropped, as llama.cpp drops it.
            wordLookup = ByteStringTable(capacity: 0)
            byteTokens = []
            merges = Self.mergeTable(vocabulary.merges, lookup: lookup)
            byteFallback = (0 ..< 256).map { lookup(Self.byteTokenName($0)) ?? -1 }
        }
    }

    /// `<0xNN>`, the name of byte `byte`'s token.
    private static func byteTokenName(_ byte: Int) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        return String(decoding: [0x3C, 0x30, 0x78, hex[byte >> 4], hex[byte & 15], 0x3E], as: UTF8.self)
    }

    /// Merges `"left right"` (split at the first space after the first character) by rank, the
    /// pair's ids to the rank and the joined token's id; a merge into a non-token is skipped
    /// (it cannot produce a token).
    private static func mergeTable(_ merges: [String], lookup: (String) -> Int32?) -> MergeTable {
        var table = MergeTable(capacity: merges.count)
        for (rank, merge) in merges.enumerated() {
            let utf8 = Array(merge.utf8)
            guard utf8.count > 2, let space = utf8[1...].firstIndex(of: 0x20) else { continue }
            let left = String(decoding: utf8[..<space], as: UTF8.self)
            let right = String(decoding: utf8[(space + 1)...], as: UTF8.self)
            guard let leftID = lookup(left), let rightID = lookup(right), let result = lookup(left + right) else { continue }
            table.insert(left: leftID, right: rightID, rank: Int32(rank), result: result)
        }
        return table
    }

    func appendPiece(of id: Int, rendersSpecialTokens: Bool, removingLeadingSpace: Bool, to output: inout [UInt8]) {
        if !rendersSpecialTokens && !vocabulary.attributes[id].isDisjoint(with: .special) { return }
        var start = Int(vocabulary.pieceOffsets[id])
        let end = Int(vocabulary.pieceOffsets[id + 1])
        if removingLeadingSpace && start < end && vocabulary.pieceBytes[start] == 0x20 { start += 1 }
        output.append(contentsOf: vocabulary.pieceBytes[start ..< end])
    }
}

// MARK: - Byte-level session

/// Reused buffers for encoding the fragments of one input.
private struct ByteLevelSession {
    var decoded = DecodedText()
    var wordLengths: [Int32] = []
    var scratch = MergeScratch()

    mutating func encode(
        _ fragment: UnsafeBufferPointer<UInt8>, preTokenizer: PreTokenizer, storage: Storage, into output: inout [Int]
    ) {
        decoded.decode(fragment)
        preTokenizer.split(decoded, into: &wordLengths)
        let ignoresMerges = preTokenizer.ignoresMerges
        let byteOffsets = decoded.byteOffsets
        decoded.bytes.withUnsafeBufferPointer { bytes in
            storage.byteTokens.withUnsafeBufferPointer { byteTokens in
                var codePoint = 0
                for length in wordLengths {
                    let start = Int(byteOffsets[codePoint])
                    codePoint += Int(length)
                    let word = UnsafeBufferPointer(rebasing: bytes[start ..< Int(byteOffsets[codePoint])])
                    if word.isEmpty { continue }
                    if ignoresMerges, let token = storage.wordLookup.lookup(UnsafeRawBufferPointer(word)) {
                        output.append(Int(token))
                        continue
                    }
                    _mergeBytePairs(word, initial: byteTokens, merges: storage.merges, scratch: &scratch, into: &output)
                }
            }
        }
    }
}

// MARK: - Decoding clean-up

/// GPT-2's `clean_up_tokenization_spaces`, as llama.cpp applies it: removes the space before
/// `? ! . ,`, the spaces around a lone apostrophe, and the space before `'s 'm 're 've`.
func _cleanUpSpaces(_ text: inout [UInt8]) {
    guard text.count > 1 else { return }
    let space = UInt8(ascii: " "), apostrophe = UInt8(ascii: "'")
    var output: [UInt8] = [text[0]]
    for index in 1 ..< text.count {
        let byte = text[index]
        if text[index - 1] == space, byte == UInt8(ascii: "?") || byte == UInt8(ascii: "!")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ",") {
            output.removeLast()
        }
        output.append(byte)
    }
    text = output
    output = text.isEmpty ? [] : [text[0]]
    var index = 1
    while index < text.count {
        let byte = text[index]
        if byte == apostrophe && index + 1 < text.count && text[index - 1] == space && text[index + 1] == space {
            output.removeLast()
            output.append(byte)
            text[index + 1] = 0  // llama.cpp blanks the following space and skips it
            index += 2
            continue
        }
        output.append(byte)
        index += 1
    }
    text = output
    output = text.isEmpty ? [] : [text[0]]
    for index in 1 ..< max(text.count, 1) {
        let byte = text[index]
        if text[index - 1] == space && byte == apostrophe && index + 1 < text.count {
            let next = text[index + 1]
            if next == UInt8(ascii: "s") || next == UInt8(ascii: "m") {
                output.removeLast()
            } else if index + 2 < text.count {
                let pair = (next, text[index + 2])
                if pair == (UInt8(ascii: "r"), UInt8(ascii: "e")) || pair == (UInt8(ascii: "v"), UInt8(ascii: "e")) {
                    output.removeLast()
                }
            }
        }
        output.append(byte)
    }
    text = output
}

/// Why tokenizing or detokenizing failed.
public enum TokenizerError: Error, Sendable, Equatable, CustomStringConvertible {
    case vocabulary(VocabularyError)
    case unsupportedPreTokenizer(String)
    case invalidPattern(String, reason: String)
    case tokenIDOutOfRange(id: Int, position: Int, count: Int)

    public var description: String {
        switch self {
        case let .vocabulary(error): "\(error)"
        case let .unsupportedPreTokenizer(name):
            "pre-tokenizer '\(name)' is not supported (known: \(PreTokenizer.knownNames.joined(separator: ", ")))"
        case let .invalidPattern(pattern, reason): "invalid split pattern \(pattern.debugDescription): \(reason)"
        case let .tokenIDOutOfRange(id, position, count): "token id \(id) at position \(position) is outside the vocabulary of \(count) tokens"
        }
    }
}
