import Foundation
import Models
import Tokenizer

/// Runs a model token by token: prefill of the prompt in one batch (reusing whatever prefix the
/// cache already holds), then one decode step per generated token, sampling each next token
/// from the logits after an optional hook has had its say (the grammar matcher masks tokens
/// there).
///
/// The token-level API, for callers that build prompts themselves and want their own hook on
/// the logits (custom constraints or samplers, experiments). Chat applications use
/// `ModelRunner` and `Conversation`, whose loop adds templates, grammar steering, function calls
/// and cancellation. One generator owns one KV cache; it is not thread-safe.
public final class TextGenerator {
    public let model: TransformerModel
    public let tokenizer: Tokenizer
    public let cache: KVCache
    public var threadCount: Int

    /// Why generation stopped.
    public enum StopReason: String, Sendable {
        /// The model produced an end-of-generation token (EOS, EOT, …); it is not in the output.
        case endOfGeneration
        /// `maxTokens` tokens were generated.
        case maxTokens
        /// The context is full.
        case contextFull
        /// The token callback asked to stop.
        case stopped
    }

    /// What a generation did.
    public struct Result: Sendable {
        public var tokens: [Int]
        public var stopReason: StopReason
        public var promptTokenCount: Int
        /// Prompt tokens whose keys and values were reused from the cache.
        public var cachedPromptTokenCount: Int
        public var prefillSeconds: Double
        public var decodeSeconds: Double

        /// Generated tokens per second of decoding.
        public var decodeTokensPerSecond: Double { decodeSeconds > 0 ? Double(tokens.count) / decodeSeconds : 0 }
    }

    /// A generator with a cache of `contextLength` tokens.
    public init(model: TransformerModel, tokenizer: Tokenizer, contextLength: Int = 2048, threadCount: Int = 2) {
        self.model = model
        self.tokenizer = tokenizer
        self.cache = model.makeCache(contextLength: contextLength)
        self.threadCount = threadCount
    }

    /// Generates a continuation of `prompt`.
    ///
    /// - Parameters:
    ///   - logitsProcessor: called with each step's logits before sampling; set a logit to
    ///     `-.infinity` to forbid that token.
    ///   - onToken: called with each generated token (end-of-generation excluded); return
    ///     `false` to stop.
    /// - Throws: ``ModelError/contextOverflow(needed:available:)`` before any work when the
    ///   prompt alone does not fit the context, ``ModelError/emptyPrompt`` for no tokens.
    public func generate(
        prompt: [Int], maxTokens: Int, sampling: SamplingOptions = .greedy,
        logitsProcessor: ((inout [Float]) -> Void)? = nil, onToken: (Int) -> Bool = { _ in true }
    ) throws(ModelError) -> Result {
        guard !prompt.isEmpty else { throw .emptyPrompt }
        guard prompt.count <= cache.contextLength else {
            throw .contextOverflow(needed: prompt.count, available: cache.contextLength)
        }
        let reused = cache.reusablePrefixLength(for: prompt)
        cache.truncate(to: reused)
        let clock = ContinuousClock()
        let prefillStart = clock.now
        var logits = try model.evaluate(Array(prompt[reused...]), cache: cache, threadCount: threadCount)
        let prefillSeconds = (clock.now - prefillStart).seconds
        var sampler = Sampler(options: sampling, vocabulary: tokenizer.vocabulary)
        var history = prompt
        var generated: [Int] = []
        var stopReason = StopReason.maxTokens
        let decodeStart = clock.now
        while generated.count < maxTokens {
            logitsProcessor?(&logits)
            guard let token = sampler.sample(logits, history: history) else { stopReason = .stopped; break }
            if tokenizer.vocabulary.isEndOfGeneration(token) { stopReason = .endOfGeneration; break }
            generated.append(token)
            history.append(token)
            guard onToken(token) else { stopReason = .stopped; break }
            guard generated.count < maxTokens else { break }
            guard cache.count < cache.contextLength else { stopReason = .contextFull; break }
            logits = try model.evaluate([token], cache: cache, threadCount: threadCount)
        }
        return Result(tokens: generated, stopReason: stopReason, promptTokenCount: prompt.count,
                      cachedPromptTokenCount: reused, prefillSeconds: prefillSeconds,
                      decodeSeconds: (clock.now - decodeStart).seconds)
    }
}
