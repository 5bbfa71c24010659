/// Decodes tokens as they are generated, one at a time, emitting only complete UTF-8
/// characters: when a token ends inside a character (an emoji or CJK character split across
/// byte tokens), its first bytes are held until the token that completes it arrives.
///
/// Bytes that can never become a character are emitted as U+FFFD as soon as that is certain.
/// The concatenated output equals `Tokenizer.decode` of the same tokens, except that decode's
/// GPT-2 space clean-up (used by a few pre-tokenizers, not SmolLM2's) is not applied.
///
///     var detokenizer = tokenizer.makeStreamingDetokenizer()
///     for id in generated { print(try detokenizer.append(id), terminator: "") }
///     print(detokenizer.finish())
public struct StreamingDetokenizer: Sendable {
    private let tokenizer: Tokenizer
    private let rendersSpecialTokens: Bool
    private var pending: [UInt8] = []
    private var removesLeadingSpace: Bool

    init(tokenizer: Tokenizer, renderingSpecialTokens: Bool) {
        self.tokenizer = tokenizer
        self.rendersSpecialTokens = renderingSpecialTokens
        self.removesLeadingSpace = tokenizer.vocabulary.addSpacePrefix
    }

    /// The bytes held back because they may be the start of a character.
    public var heldBytes: [UInt8] { pending }

    /// Adds one token and returns the text that is now complete (possibly empty).
    ///
    /// - Throws: `TokenizerError.tokenIDOutOfRange` for an id outside the vocabulary.
    public mutating func append(_ id: Int) throws(TokenizerError) -> String {
        guard (0 ..< tokenizer.vocabulary.count).contains(id) else {
            throw .tokenIDOutOfRange(id: id, position: 0, count: tokenizer.vocabulary.count)
        }
        tokenizer.appendPiece(of: id, rendersSpecialTokens: rendersSpecialTokens,
                              removingLeadingSpace: removesLeadingSpace, to: &pending)
        removesLeadingSpace = false
        let complete = _completePrefixLength(pending)
        guard complete > 0 else { return "" }
        let text = String(decoding: pending[..<complete], as: UTF8.self)
        pending.removeFirst(complete)
        return text
    }

    /// Emits whatever is held (incomplete sequences become U+FFFD) and resets.
    public mutating func finish() -> String {
        defer { pending.removeAll() }
        return String(decoding: pending, as: UTF8.self)
    }
}

/// How many leading bytes of `bytes` can be emitted now: everything except a trailing sequence
/// that is a proper prefix of some well-formed UTF-8 character.
func _completePrefixLength(_ bytes: [UInt8]) -> Int {
    let count = bytes.count
    // A held tail is at most 3 bytes: a lead byte and up to two continuation bytes.
    var start = count - 1
    while start >= 0 && start >= count - 3 {
        let byte = bytes[start]
        if byte & 0xC0 != 0x80 {
            // `start` is a lead byte (or ASCII); is bytes[start...] an incomplete character?
            let expected: Int
            switch byte {
            case 0xC2 ... 0xDF: expected = 2
            case 0xE0 ... 0xEF: expected = 3
            case 0xF0 ... 0xF4: expected = 4
            default: return count
            }
            let tail = count - start
            guard tail < expected else { return count }
            if tail >= 2 {
                // The second byte's allowed range depends on the lead (no overlongs, surrogates
                // or code points past U+10FFFF).
                let second = bytes[start + 1]
                let allowed: ClosedRange<UInt8> = switch byte {
                case 0xE0: 0xA0 ... 0xBF
                case 0xED: 0x80 ... 0x9F
                case 0xF0: 0x90 ... 0xBF
                case 0xF4: 0x80 ... 0x8F
                default: 0x80 ... 0xBF
                }
                guard allowed.contains(second) else { return count }
            }
            return start
        }
        start -= 1
    }
    return count
}
