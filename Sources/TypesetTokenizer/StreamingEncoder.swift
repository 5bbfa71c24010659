/// Encodes a text that arrives in pieces (a file or standard input read in blocks) with memory
/// bounded by the block size rather than the text's length, giving the tokens
/// ``Tokenizer/encode(bytes:addingSpecialTokens:parsingSpecialTokens:)`` gives the whole text.
///
/// The text is cut where encoding the two sides apart changes nothing: after a line break
/// that follows a character other than whitespace and precedes a printable ASCII character.
/// Every pre-tokenizer splits there (no piece joins a lone line break to the letter, digit or
/// punctuation after it), and no merge of the supported vocabularies crosses it (tested on
/// both families over the tokenizer corpus). A line longer than ``maximumPendingBytes`` is cut at a
/// character boundary instead, where its tokens may differ from the whole encoding's.
///
///     var encoder = Tokenizer.StreamingEncoder(tokenizer)
///     while let block = read() { emit(encoder.append(block)) }
///     emit(encoder.finish())
extension Tokenizer {
    public struct StreamingEncoder {
        public let tokenizer: Tokenizer
        public let addingSpecialTokens: Bool
        public let parsingSpecialTokens: Bool
        /// Bytes received and not yet encoded: the text after the last cut.
        private var pending: [UInt8] = []
        private var startsText = true

        /// The most bytes held back waiting for a cut (4 MiB).
        public static let maximumPendingBytes = 4 << 20

        public init(_ tokenizer: Tokenizer, addingSpecialTokens: Bool = true, parsingSpecialTokens: Bool = false) {
            self.tokenizer = tokenizer
            self.addingSpecialTokens = addingSpecialTokens
            self.parsingSpecialTokens = parsingSpecialTokens
        }

        /// Takes the next bytes of the text and returns the tokens of the part now complete.
        public mutating func append(_ bytes: some Collection<UInt8>) -> [Int] {
            pending.append(contentsOf: bytes)
            var cut = Self.lastCut(in: pending)
            if cut == nil, pending.count > Self.maximumPendingBytes {
                // No line break for megabytes: cut at the last character boundary.
                var index = pending.count - 1
                while index > 0, pending[index] & 0xC0 == 0x80 { index -= 1 }
                cut = index
            }
            guard let cut, cut > 0 else { return [] }
            let tokens = encode(pending[..<cut], isLast: false)
            pending.removeFirst(cut)
            return tokens
        }

        /// The tokens of the rest of the text (and the end-of-sequence token, if the model adds one).
        public mutating func finish() -> [Int] {
            let tokens = encode(pending[...], isLast: true)
            pending = []
            return tokens
        }

        private mutating func encode(_ bytes: ArraySlice<UInt8>, isLast: Bool) -> [Int] {
            var output: [Int] = []
            bytes.withUnsafeBufferPointer {
                tokenizer.encode(bytes: $0, addingBOS: addingSpecialTokens && startsText, addingEOS: addingSpecialTokens && isLast,
                                 parsingSpecialTokens: parsingSpecialTokens, startsText: startsText, into: &output)
            }
            startsText = false
            return output
        }

        /// The last index `i` with a lone line break at `i - 1` (no whitespace before it) and a
        /// printable ASCII character (not a space) at `i`. A longer run of whitespace is not
        /// cut after: GPT-2's pre-tokenizer splits its last character off when a word follows
        /// and keeps the run whole at the end of a text.
        static func lastCut(in bytes: [UInt8]) -> Int? {
            var index = bytes.count - 1
            while index > 1 {
                if bytes[index - 1] == 0x0A, bytes[index] > 0x20, bytes[index] < 0x7F, !isWhitespace(bytes[index - 2]) { return index }
                index -= 1
            }
            return nil
        }

        private static func isWhitespace(_ byte: UInt8) -> Bool {
            byte == 0x20 || (0x09 ... 0x0D).contains(byte)
        }
    }
}
