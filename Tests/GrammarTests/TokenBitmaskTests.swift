import TypesetGrammar
import Testing

@Suite struct TokenBitmaskTests {
    @Test(arguments: [0, 1, 31, 32, 33, 49_152, 262_145])
    func fullAndEmptyMasks(vocabularySize: Int) {
        let full = TokenBitmask(vocabularySize: vocabularySize, allowingAll: true)
        #expect(full.allowedCount == vocabularySize)
        #expect(full.words.count == (vocabularySize + 31) / 32)
        #expect(full.allowedTokens == Array(0..<vocabularySize))
        let empty = TokenBitmask(vocabularySize: vocabularySize)
        #expect(empty.allowedCount == 0 && empty.allowedTokens.isEmpty)
    }

    @Test func setClearAndCombine() {
        var mask = TokenBitmask(vocabularySize: 100)
        for token in [0, 31, 32, 63, 64, 99] { mask[token] = true }
        #expect(mask.allowedTokens == [0, 31, 32, 63, 64, 99])
        #expect(mask.words[0] == 0x8000_0001 && mask.words[1] == 0x8000_0001)
        mask[31] = false
        #expect(!mask[31] && mask[32] && mask.allowedCount == 5)

        var other = TokenBitmask(vocabularySize: 100)
        other[5] = true
        other[64] = true
        var union = mask
        union.formUnion(other)
        #expect(union.allowedTokens == [0, 5, 32, 63, 64, 99])
        var intersection = mask
        intersection.formIntersection(other)
        #expect(intersection.allowedTokens == [64])
    }

    /// In-place masking against the definition, token by token: random masks over vocabulary
    /// sizes at and around word boundaries, logits as many as the vocabulary, fewer, and more.
    @Test(arguments: [1, 31, 32, 33, 100, 1_000])
    func applyingMatchesTheTokenByTokenDefinition(vocabularySize: Int) {
        var random = SystemRandomNumberGenerator()
        for logitCount in [vocabularySize, max(0, vocabularySize - 7), vocabularySize + 40] {
            var mask = TokenBitmask(vocabularySize: vocabularySize)
            for token in 0 ..< vocabularySize where Bool.random(using: &random) { mask[token] = true }
            let logits = (0 ..< logitCount).map { _ in Float.random(in: -5 ... 5, using: &random) }
            var masked = logits
            mask.apply(to: &masked)
            let expected = logits.indices.map { index in index < vocabularySize && mask[index] ? logits[index] : -.infinity }
            #expect(masked == expected, "vocabulary \(vocabularySize), \(logitCount) logits")
        }
    }
}
