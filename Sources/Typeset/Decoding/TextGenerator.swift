import Dispatch
import Models
import Synchronization
import TypesetTokenizer

/// Runs a model token by token on prompts the caller builds: the prefill (reusing whatever
/// prefix the cache already holds), then one step per generated token, sampling each next
/// token from the logits after an optional hook has had its say (a caller's own constraint
/// masks tokens there, for example with ``TokenBitmask/apply(to:)-([Float])``).
///
/// The token-level API, for experiments, custom constraints and benchmarks. Chat applications
/// use `ModelRunner` and `Conversation`, which add templates, grammars, function calls and
/// cancellation to the same loop. One generator owns one sequence (one KV cache); it is not
/// thread-safe.
package final class TextGenerator {
    /// The model, its cache and its thread count.
    package let sequence: ModelSequence
    package let tokenizer: Tokenizer

    package var model: TransformerModel { sequence.model }
    package var cache: KVCache { sequence.cache }
    /// Threads for the matrix products.
    package var threadCount: Int {
        get { sequence.threadCount }
        set { sequence.threadCount = max(1, newValue) }
    }

    /// What a generation did.
    package struct Result: Sendable {
        /// The generated tokens (an end-of-generation token that stopped it excluded).
        package var tokens: [Int]
        package var finishReason: FinishReason
        package var stats: GenerationStats
    }

    /// A generator with a cache of `contextLength` tokens.
    package init(model: TransformerModel, tokenizer: Tokenizer, contextLength: Int = 2048, threadCount: Int = 2) {
        self.sequence = ModelSequence(model: model, contextLength: contextLength, threadCount: threadCount)
        self.tokenizer = tokenizer
    }

    /// Generates a continuation of `prompt`.
    ///
    /// - Parameters:
    ///   - stopsAtEndOfGeneration: whether an end-of-generation token ends generation (`false`
    ///     generates exactly `maxTokens` tokens, as throughput benchmarks do).
    ///   - lookup: drafts read from the tokens so far, verified in the passes (the same tokens,
    ///     fewer passes where they are right; ``PromptLookup``).
    ///   - draftModel: drafts of a smaller model where `lookup` finds none, verified the same
    ///     way (``DraftModel``).
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
    package func generate(
        prompt: [Int], maxTokens: Int, sampling: SamplingOptions = .greedy, stopsAtEndOfGeneration: Bool = true,
        lookup: PromptLookup? = nil, draftModel: DraftModel? = nil, logitsProcessor: ((inout [Float]) -> Void)? = nil,
        onToken: (Int) -> Bool = { _ in true }
    ) throws(ModelError) -> Result {
        let vocabulary = tokenizer.vocabulary
        var selector = TokenSelector(sampling: sampling, tokenizer: tokenizer)
        var loop = TokenLoop(
            source: sequence, maxTokens: maxTokens,
            isEndOfGeneration: stopsAtEndOfGeneration ? { vocabulary.isEndOfGeneration($0) } : { _ in false })
        loop.lookup = lookup
        loop.drafter = draftModel.map(ModelDrafter.init)
        let outcome = try loop.run(prompt: prompt) { logits, context in
            logitsProcessor?(&logits)
            guard let token = selector.select(&logits, context) else { return .finish(.constraint) }
            if stopsAtEndOfGeneration && vocabulary.isEndOfGeneration(token) { return .append(token) }
            return onToken(token) ? .append(token) : .appendAndFinish(token, .interrupted)
        }
        return Result(tokens: outcome.tokens, finishReason: outcome.finishReason, stats: outcome.stats)
    }

    /// Generates continuations of several prompts together, each with its own cache of
    /// `contextLength` tokens: one forward pass per step for all of them (the weights read once
    /// per step), the way a server batches its requests. Each result is the one
    /// ``generate(prompt:maxTokens:sampling:stopsAtEndOfGeneration:lookup:draftModel:logitsProcessor:onToken:)``
    /// gives alone (greedy: the same tokens), since a sequence's logits do not depend on the
    /// others in its batch. Blocks until all are done.
    ///
    /// - Throws: the first ``ModelError`` of a prompt that cannot start (empty, longer than
    ///   the context).
    package static func generate(
        model: TransformerModel, tokenizer: Tokenizer, prompts: [[Int]], maxTokens: Int, sampling: SamplingOptions = .greedy,
        stopsAtEndOfGeneration: Bool = true, lookup: PromptLookup? = nil, draftModel: DraftModel? = nil, contextLength: Int = 2048,
        threadCount: Int = 2
    ) throws(ModelError) -> [Result] {
        let vocabulary = tokenizer.vocabulary
        let scheduler = BatchScheduler(
            evaluator: ModelBatchEvaluator(model: model, threadCount: max(1, threadCount)), maximumSequences: max(1, prompts.count))
        let results = Mutex([Swift.Result<Result, ModelError>?](repeating: nil, count: prompts.count))
        let group = DispatchGroup()
        var generations: [BatchScheduler<ModelBatchEvaluator>.Generation] = []
        for (index, prompt) in prompts.enumerated() {
            let ends: (Int) -> Bool = stopsAtEndOfGeneration ? { vocabulary.isEndOfGeneration($0) } : { _ in false }
            let stepper = SamplingStepper(selector: TokenSelector(sampling: sampling, tokenizer: tokenizer), isEndOfGeneration: ends)
            var loop = TokenLoop(source: ModelSequence(model: model, contextLength: contextLength, threadCount: threadCount),
                                 maxTokens: maxTokens, isEndOfGeneration: stepper.isEndOfGeneration)
            loop.lookup = lookup
            loop.drafter = draftModel.map(ModelDrafter.init)
            group.enter()
            let generation = BatchScheduler<ModelBatchEvaluator>.Generation(loop: loop, stepper: stepper, prompt: prompt)
            generation.completion = { outcome in
                let result = outcome.map { Result(tokens: $0.tokens, finishReason: $0.finishReason, stats: $0.stats) }
                results.withLock { $0[index] = result }
                group.leave()
            }
            generations.append(generation)
        }
        // Together: a prompt that started alone would decode alone (and draft) while the others wait.
        scheduler.submit(generations)
        group.wait()
        var finished: [Result] = []
        for result in results.withLock({ $0 }) {
            switch result! {
            case .success(let value): finished.append(value)
            case .failure(let error): throw error
            }
        }
        return finished
    }
}

/// A step that samples the next token and nothing else: the token-level API's, in a batch.
final class SamplingStepper: TokenStepper {
    private var selector: TokenSelector
    let isEndOfGeneration: (Int) -> Bool

    init(selector: TokenSelector, isEndOfGeneration: @escaping (Int) -> Bool) {
        self.selector = selector
        self.isEndOfGeneration = isEndOfGeneration
    }

    func step(_ logits: inout [Float], _ context: TokenStepContext) -> TokenStepDecision {
        guard let token = selector.select(&logits, context) else { return .finish(.constraint) }
        return .append(token)
    }

    func reasonAtLimit() -> FinishReason { .maxTokens }
    var isCancelled: Bool { false }
    func prefillProgress(computed: Int, total: Int) {}
}
