import Foundation
import GGUF
import Models
import Testing
import TypesetTestSupport

/// The recurrent state (``KVCache``'s state of Qwen 3.5's Gated DeltaNet blocks and of
/// Granite 4's Mamba2 blocks) through every path that returns a cache to an earlier position,
/// each compared bit for bit with a fresh evaluation of the same tokens: a position within the
/// last pass (refused drafts), a checkpoint, position 0, a prefix copied from another cache.
/// On the random-weight models with every matrix packed, so a row's logits do not depend on
/// the rows evaluated with it.
@Suite(.enabled(if: TestModels.shouldRunSynthetic)) struct RecurrentStateTests {
    static let models = ["qwen35", "granite-hybrid", "granite-hybrid-moe"]
    /// Each model, loaded once for every test.
    static let loaded: [String: TransformerModel] = models.reduce(into: [:]) { loaded, name in
        loaded[name] = try? TransformerModel(file: try TestModels.packableSynthetic(of: name))
    }

    static func model(_ name: String) throws -> TransformerModel {
        try #require(loaded[name], "\(name) does not load")
    }
    static let tokens = (0 ..< 48).map { ($0 * 7919 + 13) % 49_152 }
    static let branch = (0 ..< 12).map { ($0 * 104_729 + 5) % 49_152 }

    /// Logits of every position of `tokens` from an empty cache, and the vocabulary size.
    static func whole(_ model: TransformerModel) throws -> (logits: [Float], vocabulary: Int) {
        #expect(model.everyMatrixIsPacked)
        return (try model.evaluate(tokens, cache: model.makeCache(contextLength: 64), threadCount: 2, logits: .all),
                model.configuration.vocabularySize)
    }

    /// Whether two runs of logits are the same bit for bit (compared here rather than by
    /// `#expect(a == b)`, whose failure message would diff a million floats).
    static func identical(_ a: [Float], _ b: [Float]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.bitPattern == $1.bitPattern }
    }

    /// Rows `range` of `logits`.
    static func rows(_ logits: [Float], _ range: Range<Int>, vocabulary: Int) -> [Float] {
        Array(logits[range.lowerBound * vocabulary ..< range.upperBound * vocabulary])
    }

    /// Drafted tokens the model refused are taken back within the pass that evaluated them:
    /// the cache restores the state after the kept ones, and goes on as if it had never seen
    /// the others.
    @Test(arguments: models) func aPositionWithinTheLastPassIsRestoredExactly(name: String) throws {
        let model = try Self.model(name)
        let (whole, vocabulary) = try Self.whole(model)
        let cache = model.makeCache(contextLength: 64)
        _ = try model.evaluate(Array(Self.tokens[..<20]), cache: cache, threadCount: 2)
        // Five right tokens, then three wrong ones, in one pass.
        _ = try model.evaluate(Array(Self.tokens[20 ..< 25]) + Self.branch[..<3], cache: cache, threadCount: 2, logits: .lastRows(9))
        #expect(cache.reusablePrefixLength(for: Self.tokens) == 25)
        cache.truncate(to: 25)
        #expect(cache.count == 25)
        let resumed = try model.evaluate(Array(Self.tokens[25...]), cache: cache, threadCount: 2, logits: .all)
        #expect(Self.identical(resumed, Self.rows(whole, 25 ..< 48, vocabulary: vocabulary)))
        #expect(cache.tokens == Self.tokens)
    }

    /// A position before the last pass that is not a checkpoint cannot be restored: the cache
    /// keeps the longest prefix it can restore (a checkpoint, else nothing), says so in its
    /// count, and the tokens after it computed again give the fresh logits.
    @Test(arguments: models) func anEarlierPositionFallsBackToACheckpoint(name: String) throws {
        let model = try Self.model(name)
        let (whole, vocabulary) = try Self.whole(model)
        let cache = model.makeCache(contextLength: 64)
        _ = try model.evaluate(Array(Self.tokens[..<16]), cache: cache, threadCount: 2)
        cache.checkpoint()
        _ = try model.evaluate(Array(Self.tokens[16 ..< 30]), cache: cache, threadCount: 2)
        _ = try model.evaluate(Array(Self.branch[..<4]), cache: cache, threadCount: 2)
        #expect(cache.reusablePrefixLength(for: Self.tokens) == 30)   // the last pass's start
        #expect(cache.reusablePrefixLength(for: Array(Self.tokens[..<26]) + [7]) == 16)   // the checkpoint
        #expect(cache.reusablePrefixLength(for: Array(Self.tokens[..<12]) + [7]) == 0)
        cache.truncate(to: 26)
        #expect(cache.count == 16)
        let resumed = try model.evaluate(Array(Self.tokens[16...]), cache: cache, threadCount: 2, logits: .all)
        #expect(Self.identical(resumed, Self.rows(whole, 16 ..< 48, vocabulary: vocabulary)))

        // Before the checkpoint: nothing is kept, and the state starts again from zeros.
        cache.truncate(to: 10)
        #expect(cache.count == 0)
        let again = try model.evaluate(Self.tokens, cache: cache, threadCount: 2, logits: .all)
        #expect(Self.identical(again, whole))
    }

    /// A token at a time, the recurrence gives the states a whole pass gives (the matrix-vector
    /// kernels sum in another order than the batched ones, so the logits differ in the last bits).
    @Test(arguments: models) func tokenByTokenFollowsTheWholePass(name: String) throws {
        let model = try Self.model(name)
        let (whole, vocabulary) = try Self.whole(model)
        let cache = model.makeCache(contextLength: 64)
        var worst: Float = 0
        for (position, token) in Self.tokens.enumerated() {
            let logits = try model.evaluate([token], cache: cache, threadCount: 2)
            let expected = Self.rows(whole, position ..< position + 1, vocabulary: vocabulary)
            worst = max(worst, zip(logits, expected).map { abs($0 - $1) }.max()!)
        }
        #expect(worst < 1e-3, "largest difference \(worst)")
    }

    /// A cache given another's prefix starts from the state there: within the other's last
    /// pass, at its checkpoint, at its end. The other cache is left as it was.
    @Test(arguments: models) func aCopiedPrefixCarriesTheStateThere(name: String) throws {
        let model = try Self.model(name)
        let (whole, vocabulary) = try Self.whole(model)
        let original = model.makeCache(contextLength: 64)
        _ = try model.evaluate(Array(Self.tokens[..<18]), cache: original, threadCount: 2)
        original.checkpoint()
        _ = try model.evaluate(Array(Self.tokens[18 ..< 34]) + Self.branch[..<2], cache: original, threadCount: 2)
        for position in [18, 30, 34] {
            #expect(original.reusablePrefixLength(for: Self.tokens) == 34)
            let copy = model.makeCache(contextLength: 64)
            _ = try model.evaluate(Array(Self.branch[..<5]), cache: copy, threadCount: 2)
            copy.copyPrefix(position, of: original)
            #expect(copy.tokens == Array(Self.tokens[..<position]))
            let resumed = try model.evaluate(Array(Self.tokens[position...]), cache: copy, threadCount: 2, logits: .all)
            #expect(Self.identical(resumed, Self.rows(whole, position ..< 48, vocabulary: vocabulary)), "from \(position)")
        }
        #expect(original.count == 36)
        original.truncate(to: 34)
        #expect(Self.identical(try model.evaluate(Array(Self.tokens[34...]), cache: original, threadCount: 2, logits: .all),
                               Self.rows(whole, 34 ..< 48, vocabulary: vocabulary)))
    }

    /// Sequences batched together each advance their own cache's state.
    @Test(arguments: models) func batchedSequencesKeepTheirOwnStates(name: String) throws {
        let model = try Self.model(name)
        let (whole, vocabulary) = try Self.whole(model)
        let first = model.makeCache(contextLength: 64), second = model.makeCache(contextLength: 64)
        _ = try model.evaluate(Array(Self.tokens[..<10]), cache: first, threadCount: 2)
        _ = try model.evaluate(Array(Self.branch), cache: second, threadCount: 2)
        var logits: [Float] = []
        try model.evaluate([.init(cache: first, tokens: Self.tokens[10 ..< 20], logitRows: 10), .init(cache: second, tokens: [5, 6])],
                           workspace: ForwardWorkspace(), threadCount: 2, into: &logits)
        #expect(Self.identical(Array(logits[..<(10 * vocabulary)]), Self.rows(whole, 10 ..< 20, vocabulary: vocabulary)))
        let alone = model.makeCache(contextLength: 64)
        _ = try model.evaluate(Array(Self.branch), cache: alone, threadCount: 2)
        #expect(Self.identical(Array(logits[(10 * vocabulary)...]), try model.evaluate([5, 6], cache: alone, threadCount: 2)))
    }

    /// The recurrent state and its checkpoints count in the cache's memory.
    @Test(arguments: models) func theStateCountsInTheCachesMemory(name: String) throws {
        let model = try Self.model(name)
        let cache = model.makeCache(contextLength: 64)
        let before = cache.byteCount
        // 5 blocks, each a convolution history of 3 × its channels and its heads' matrices:
        // Qwen 3.5's 256 channels and 4 heads of 32 × 32, Granite's 512 channels (x 256, B and
        // C 2 × 2 × 64) and 16 heads of 16 × 64.
        let state = name == "qwen35" ? 5 * (3 * 256 + 4 * 32 * 32) * 4 : 5 * (3 * 512 + 16 * 16 * 64) * 4
        #expect(before > 2 * state)
        _ = try model.evaluate(Array(Self.tokens[..<8]), cache: cache, threadCount: 2)
        cache.checkpoint()
        #expect(cache.byteCount == before + state)
    }
}
