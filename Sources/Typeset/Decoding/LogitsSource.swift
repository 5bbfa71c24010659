import Models

/// Where the decoding loop reads its logits: a sequence of tokens held by a model (its KV
/// cache), which the loop extends and whose next-token logits it reads.
///
/// ``ModelSequence`` is the source backed by a ``TransformerModel``; tests drive the loop and
/// the reply state machine with scripted sources, without a model. A source belongs to one
/// loop at a time.
package protocol LogitsSource: AnyObject {
    /// The most tokens the source can hold.
    var contextLength: Int { get }

    /// Tokens the source holds.
    var count: Int { get }

    /// How many leading tokens of `tokens` the source already holds, and can keep: at most
    /// `tokens.count - 1`, so that evaluating the rest yields the logits after `tokens`.
    func reusablePrefixLength(for tokens: [Int]) -> Int

    /// Forgets every token after the first `count`. A source with recurrent state keeps the
    /// longest prefix of at most `count` tokens it can restore, which ``count`` then says.
    func truncate(to count: Int)

    /// Whether the source has recurrent state, which it restores only at some positions
    /// (a checkpoint, the last pass): the loop then marks a position near each prompt's end.
    var hasRecurrentState: Bool { get }

    /// Keeps the state at the current position for a later prompt sharing this prefix.
    func checkpoint()

    /// Appends `tokens` and writes the logits for the token after each of the last
    /// `logitRows` of them (1 ... `tokens.count`) into `logits`, one per vocabulary entry,
    /// row after row, replacing what it held (its storage is reused when it has that size:
    /// the loop keeps one array for the whole generation).
    ///
    /// - Throws: ``ModelError/contextOverflow(needed:available:)`` when they do not fit,
    ///   before any work; ``ModelError/tokenOutOfRange(_:position:)``.
    func evaluate(_ tokens: ArraySlice<Int>, logitRows: Int, into logits: inout [Float]) throws(ModelError)
}

/// One sequence of tokens run through a transformer: the model, a KV cache of its own and the
/// threads its products use. What ``TextGenerator`` and conversations decode with.
package final class ModelSequence: LogitsSource {
    package let model: TransformerModel
    package let cache: KVCache
    /// Threads for the matrix products.
    package var threadCount: Int

    /// A sequence with a new, empty cache of `contextLength` positions.
    package convenience init(model: TransformerModel, contextLength: Int, threadCount: Int = 2) {
        self.init(model: model, cache: model.makeCache(contextLength: contextLength), threadCount: threadCount)
    }

    /// A sequence continuing what `cache` holds. Precondition: `cache` was made by `model`.
    package init(model: TransformerModel, cache: KVCache, threadCount: Int = 2) {
        self.model = model
        self.cache = cache
        self.threadCount = max(1, threadCount)
    }

    package var contextLength: Int { cache.contextLength }
    package var count: Int { cache.count }
    package func reusablePrefixLength(for tokens: [Int]) -> Int { cache.reusablePrefixLength(for: tokens) }
    package func truncate(to count: Int) { cache.truncate(to: count) }
    package var hasRecurrentState: Bool { cache.hasRecurrentState }
    package func checkpoint() { cache.checkpoint() }

    package func evaluate(_ tokens: ArraySlice<Int>, logitRows: Int = 1, into logits: inout [Float]) throws(ModelError) {
        try model.evaluate(tokens, cache: cache, threadCount: threadCount, logits: logitRows == 1 ? .last : .lastRows(logitRows), into: &logits)
    }
}
