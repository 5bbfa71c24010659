/// What the grammar compiler knows of a tokenizer: the bytes each token stands for, and
/// which tokens end generation. Built once per model and shared by every compiled grammar.
///
/// A token with no bytes (`nil` or empty: control, unknown and unused tokens) is never
/// allowed by a grammar; end-of-generation tokens are allowed exactly when the grammar
/// can terminate.
public final class GrammarVocabulary: Sendable {
    /// Token ids are `0 ..< size`.
    public let size: Int
    /// Each token's bytes (empty for tokens that never appear in constrained text).
    public let tokenBytes: [[UInt8]]
    /// The end-of-generation tokens (EOS, end-of-turn…).
    public let endOfGenerationTokens: [Int]
    /// The most bytes one token stands for.
    public let longestTokenLength: Int
    /// A stable hash of the tokens and end-of-generation tokens, for archived grammars.
    public let fingerprint: UInt64
    /// The tokens as a trie, for mask computation.
    public let trie: TokenTrie
    /// Every token with bytes.
    public let textTokens: TokenBitmask
    /// The plain tokens (string characters only) by length, longest slice first: accepted
    /// wholesale inside string content.
    let plainSlices: [PlainTextSlice]

    /// - Parameters:
    ///   - tokens: each token's bytes; `nil` for tokens that never appear in constrained
    ///     text (control tokens). End-of-generation tokens are excluded from text whatever
    ///     their bytes.
    ///   - endOfGeneration: token ids that end generation.
    public init(tokens: [[UInt8]?], endOfGeneration: [Int]) {
        let ending = Set(endOfGeneration.filter { $0 >= 0 && $0 < tokens.count })
        size = tokens.count
        tokenBytes = tokens.enumerated().map { ending.contains($0.offset) ? [] : ($0.element ?? []) }
        endOfGenerationTokens = ending.sorted()
        longestTokenLength = tokenBytes.reduce(0) { max($0, $1.count) }
        trie = TokenTrie(tokens: tokenBytes)
        fingerprint = Self.fingerprint(tokenBytes: tokenBytes, endOfGeneration: endOfGenerationTokens)
        var text = TokenBitmask(vocabularySize: tokens.count)
        for (id, bytes) in tokenBytes.enumerated() where !bytes.isEmpty { text[id] = true }
        textTokens = text
        plainSlices = PlainTextSlice.slices(tokenBytes: tokenBytes)
    }

    /// A vocabulary of the 256 single bytes plus one end token (id 256): byte-by-byte
    /// matching, and the reference for tests.
    public static let bytes = GrammarVocabulary(tokens: (0 ..< 256).map { [UInt8($0)] } + [nil], endOfGeneration: [256])
}
