import Models
import Tokenizer

/// Runs a model token by token on prompts the caller builds: the prefill (reusing whatever
/// prefix the cache already holds), then one step per generated token, sampling each next
/// token from the logits after an optional hook has had its say (a caller's own constraint
/// masks tokens there, for example with ``TokenBitmask/apply(to:)-([Float])``).
///
/// The token-level API, for experiments, custom constraints and benchmarks. Chat applications
/// use `ModelRunner` and `Conversation`, which add templates, grammars, function calls and
/// cancellation to the same loop. One generator owns one sequence (one KV cache); it is not
/// thread-safe.
public final class TextGenerator {
    /// The model, its cache and its thread count.
    public let sequence: ModelSequence
    public let tokenizer: Tokenizer

    public var model: TransformerModel { sequence.model }
    public var cache: KVCache { sequence.cache }
    /// Threads for the matrix products.
    public var threadCount: Int {
        get { sequence.threadCount }
        set { sequence.threadCount = max(1, newValue) }
    }

    /// What a generation did.
    public struct Result: Sendable {
        /// The generated tokens (an end-of-generation token that stopped it excluded).
        public var tokens: [Int]
        public var finishReason: FinishReason
        public var stats: GenerationStats
    }

    /// A generator with a cache of `contextLength` tokens.
    public init(model: TransformerModel, tokenizer: Tokenizer, contextLength: Int = 2048, threadCount: Int = 2) {
        self.sequence = ModelSequence(model: model, contextLength: contextLength, threadCount: threadCount)
        self.tokenizer = tokenizer
    }

    /// Generates a continuation of `prompt`.
    ///
    /// - Parameters:
    ///   - stopsAtEndOfGeneration: whether an end-of-generation token ends generation (`false`
    ///     generates exactly `maxTokens` tokens, as throughput benchmarks do).
    ///   - logitsProcessor: called with each step's logits before sampling, to change them in
    ///     place; set a logit to `-.infinity` to forbid that token.
    ///   - onToken: called with each generated token (end-of-generation excluded); return
    ///     `false` to stop (the finish reason is then ``FinishReason/interrupted``).
    /// - Returns: the tokens; the finish reason is ``FinishReason/stop`` (end of generation),
    ///   ``FinishReason/maxTokens``, ``FinishReason/exceededContext``,
    ///   ``FinishReason/interrupted`` or ``FinishReason/constraint`` (the processor forbade
    ///   every token).
    /// - Throws: ``ModelError/contextOverflow(needed:available:)`` before any work when the
    ///   prompt alone does not fit the context, ``ModelError/emptyPrompt`` for no tokens.
    public func generate(
        prompt: [Int], maxTokens: Int, sampling: SamplingOptions = .greedy, stopsAtEndOfGeneration: Bool = true,
        logitsProcessor: ((inout [Float]) -> Void)? = nil, onToken: (Int) -> Bool = { _ in true }
    ) throws(ModelError) -> Result {
        let vocabulary = tokenizer.vocabulary
        var sampler = Sampler(options: sampling, vocabulary: vocabulary)
        let loop = TokenLoop(
            source: sequence, maxTokens: maxTokens,
            isEndOfGeneration: stopsAtEndOfGeneration ? { vocabulary.isEndOfGeneration($0) } : { _ in false })
        let outcome = try loop.run(prompt: prompt) { logits, context in
            logitsProcessor?(&logits)
            guard let token = sampler.sample(&logits, history: context.history) else { return .finish(.constraint) }
            if stopsAtEndOfGeneration && vocabulary.isEndOfGeneration(token) { return .append(token) }
            return onToken(token) ? .append(token) : .appendAndFinish(token, .interrupted)
        }
        return Result(tokens: outcome.tokens, finishReason: outcome.finishReason, stats: outcome.stats)
    }
}
