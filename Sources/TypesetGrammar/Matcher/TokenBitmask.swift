/// A set of token ids over a vocabulary of fixed size, one bit per token, packed in 32-bit
/// words in the layout XGrammar and llguidance use (bit `i % 32` of word `i / 32`).
///
///     word 0                          word 1
///     +--------------------------------+--------------------------------+----
///     | bit 0 = token 0 … bit 31 = 31  | bit 0 = token 32 …             |
///     +--------------------------------+--------------------------------+----
///
/// This is what a grammar matcher fills before each sampling step: a set bit means the token
/// may come next. Bits past `vocabularySize` in the last word are always zero.
public struct TokenBitmask: Sendable, Equatable {
    public let vocabularySize: Int
    @usableFromInline var _words: [UInt32]

    /// The packed bits, 32 tokens per word.
    public var words: [UInt32] { _words }

    /// An empty (all-disallowed) mask, or a full one with `allowingAll`.
    public init(vocabularySize: Int, allowingAll: Bool = false) {
        precondition(vocabularySize >= 0, "negative vocabulary size")
        self.vocabularySize = vocabularySize
        self._words = Array(repeating: allowingAll ? ~0 : 0, count: (vocabularySize + 31) / 32)
        if allowingAll { clearPadding() }
    }

    /// Whether `token` is allowed. Precondition: `0 <= token < vocabularySize`.
    @inlinable
    public subscript(token: Int) -> Bool {
        get {
            precondition(token >= 0 && token < vocabularySize, "token \(token) outside the vocabulary")
            return _words[token >> 5] & (1 << UInt32(token & 31)) != 0
        }
        set {
            precondition(token >= 0 && token < vocabularySize, "token \(token) outside the vocabulary")
            if newValue {
                _words[token >> 5] |= 1 << UInt32(token & 31)
            } else {
                _words[token >> 5] &= ~(1 << UInt32(token & 31))
            }
        }
    }

    /// Number of allowed tokens. O(vocabularySize / 32).
    public var allowedCount: Int { _words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// The allowed token ids in increasing order.
    public var allowedTokens: [Int] {
        var result: [Int] = []
        for (wordIndex, word) in _words.enumerated() {
            var remaining = word
            while remaining != 0 {
                result.append(wordIndex << 5 + remaining.trailingZeroBitCount)
                remaining &= remaining - 1
            }
        }
        return result
    }

    /// Allows every token that `other` allows. Precondition: same vocabulary size.
    public mutating func formUnion(_ other: TokenBitmask) {
        precondition(other.vocabularySize == vocabularySize, "vocabulary sizes differ")
        for index in _words.indices { _words[index] |= other._words[index] }
    }

    /// Keeps only tokens that `other` also allows. Precondition: same vocabulary size.
    public mutating func formIntersection(_ other: TokenBitmask) {
        precondition(other.vocabularySize == vocabularySize, "vocabulary sizes differ")
        for index in _words.indices { _words[index] &= other._words[index] }
    }

    /// Sets to −∞ the logit of every token this mask does not allow, and of every position at
    /// or past `vocabularySize` (a model may have more output rows than its tokenizer has
    /// tokens). In place, one pass; words whose 32 tokens are all allowed are skipped.
    public func apply(to logits: inout [Float]) {
        logits.withUnsafeMutableBufferPointer { apply(to: $0) }
    }

    /// ``apply(to:)-([Float])`` on a buffer of logits.
    public func apply(to logits: UnsafeMutableBufferPointer<Float>) {
        let covered = min(vocabularySize, logits.count)
        _words.withUnsafeBufferPointer { words in
            var wordIndex = 0
            while wordIndex << 5 < covered {
                var forbidden = ~words[wordIndex]
                let base = wordIndex << 5
                // Bits past the last covered token stay for the loop below.
                if covered - base < 32 {
                    forbidden &= (1 << UInt32(covered - base)) - 1
                } else if forbidden == .max {
                    // All 32 forbidden (most words, under a grammar): one straight store loop.
                    for index in base ..< base + 32 { logits[index] = -.infinity }
                    wordIndex += 1
                    continue
                }
                while forbidden != 0 {
                    logits[base + forbidden.trailingZeroBitCount] = -.infinity
                    forbidden &= forbidden - 1
                }
                wordIndex += 1
            }
        }
        for index in covered ..< logits.count { logits[index] = -.infinity }
    }

    private mutating func clearPadding() {
        let used = vocabularySize & 31
        if used != 0 { _words[words.count - 1] &= (1 << UInt32(used)) - 1 }
    }
}
