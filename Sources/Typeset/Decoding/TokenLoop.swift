import Models

/// What one step of a ``TokenLoop`` does with the logits it was given.
enum TokenStepDecision {
    /// Append the chosen token, then the tokens the caller forces after it, and compute the
    /// logits that follow them. A chosen end-of-generation token ends generation with
    /// ``FinishReason/stop`` instead; it is not appended.
    case append(Int, forced: [Int] = [])
    /// Append the chosen token, then any forced ones, and end with the reason, without
    /// computing the logits after them (the caller knows that nothing may follow).
    case appendAndFinish(Int, forced: [Int] = [], FinishReason)
    /// End with the reason, appending nothing.
    case finish(FinishReason)
}

/// The decoding loop every generation runs: `TextGenerator` (the token-level API, and so
/// `typeset bench decode`) and conversations' replies.
///
///     prompt ─► prefill in chunks (reusing the prefix the source holds) ─► logits
///                 ┌───────────────────────────────────────────────┘
///                 ▼
///     ┌─► cancelled? budget spent? ── yes ─► finish
///     │   step(&logits, context) ─► .finish ─► finish
///     │        │ .append(token, forced): end of generation? ── yes ─► finish (.stop)
///     │        ▼
///     │   append; budget spent? context full? ── yes ─► finish
///     └── source.evaluate(tokens, into: &logits)
///
/// The step — masking, sampling, routing text, forcing markup — is the caller's; the loop owns
/// the prefill with prefix reuse, the stop conditions that do not depend on the text (cancellation,
/// `maxTokens`, the context, the end of generation), the output and the timings.
///
/// A decode step allocates nothing here: the logits are written into one array the loop keeps
/// (the step masks and samples it in place) and the step's tokens into another.
struct TokenLoop<Source: LogitsSource> {
    /// What a step knows besides the logits.
    struct Context {
        /// The prompt (with any opening) and every token appended since.
        let history: [Int]
        /// Tokens appended so far (the opening included).
        let completionTokens: Int
        /// Tokens that may still be appended: within `maxTokens` and the context.
        let remainingTokens: Int
    }

    /// What a run produced.
    struct Outcome {
        /// The opening, then every appended token.
        var tokens: [Int]
        var finishReason: FinishReason
        /// Counts and times; `constraintSeconds` is left for the caller to fill.
        var stats: GenerationStats
    }

    let source: Source
    /// The most tokens a run may append (the opening included).
    let maxTokens: Int
    /// Tokens that end generation when a step chooses them.
    let isEndOfGeneration: (Int) -> Bool
    /// The most prompt tokens one prefill step computes: a long prompt runs in chunks, each
    /// attending to the keys the earlier ones cached, so its progress can be reported. The
    /// logits are those of one batch, bit for bit (chunks of two tokens or more take the same
    /// kernels).
    var prefillChunkLength = 512

    /// Prefills `prompt` then `opening` (tokens written for the model, counted as output),
    /// then steps until a step finishes, a chosen token ends generation, `isCancelled` says so
    /// (checked before each step), `maxTokens` are appended (the reason is `reasonAtLimit()`'s,
    /// asked then) or the next tokens do not fit in the context.
    ///
    /// - Parameters:
    ///   - requested: when the generation was asked for (time to first token counts from it).
    ///   - onPrefill: called after each prefill chunk with the prompt tokens computed so far
    ///     and those to compute (reused ones not counted).
    /// - Throws: ``ModelError/emptyPrompt``; ``ModelError/contextOverflow(needed:available:)``
    ///   before any work when the prompt and opening do not fit; the source's errors.
    func run(
        prompt: [Int], opening: [Int] = [], requested: ContinuousClock.Instant = .now,
        isCancelled: () -> Bool = { false }, reasonAtLimit: () -> FinishReason = { .maxTokens },
        onPrefill: ((_ computed: Int, _ total: Int) -> Void)? = nil,
        step: (inout [Float], Context) -> TokenStepDecision
    ) throws(ModelError) -> Outcome {
        guard !prompt.isEmpty else { throw .emptyPrompt }
        let start = prompt + opening
        guard start.count <= source.contextLength else {
            throw .contextOverflow(needed: start.count, available: source.contextLength)
        }
        let clock = ContinuousClock()
        let reused = source.reusablePrefixLength(for: start)
        source.truncate(to: reused)
        let prefillStart = clock.now
        var logits: [Float] = []
        var stepTokens: [Int] = []
        var computed = reused
        repeat {
            var end = min(computed + max(1, prefillChunkLength), start.count)
            // A last chunk of one token would take the matrix-vector kernels (the same integer
            // sums, float sums in another order): give it a second one.
            if start.count - end == 1 && end - computed > 2 { end -= 1 }
            stepTokens.replaceSubrange(stepTokens.indices, with: start[computed ..< end])
            try source.evaluate(stepTokens, into: &logits)
            computed = end
            onPrefill?(computed - reused, start.count - reused)
        } while computed < start.count
        let decodeStart = clock.now

        // Room for every token the run may append, so appending never reallocates.
        let room = min(maxTokens, max(0, source.contextLength - start.count))
        var history = start
        history.reserveCapacity(start.count + room)
        var output = opening
        output.reserveCapacity(opening.count + room)
        var firstToken: ContinuousClock.Instant?
        var reason = FinishReason.maxTokens
        generation: while true {
            if isCancelled() { reason = .interrupted; break }
            if output.count >= maxTokens { reason = reasonAtLimit(); break }
            // The context's reference to `history` ends with the step, so appending to it
            // below does not copy it.
            let decision = step(&logits, Context(
                history: history, completionTokens: output.count,
                remainingTokens: min(maxTokens - output.count, source.contextLength - source.count)))
            stepTokens.removeAll(keepingCapacity: true)
            switch decision {
            case .finish(let finish):
                reason = finish
                break generation
            case .append(let chosen, let forced), .appendAndFinish(let chosen, let forced, _):
                stepTokens.append(chosen)
                stepTokens += forced
            }
            if firstToken == nil { firstToken = clock.now }
            if isEndOfGeneration(stepTokens[0]) { reason = .stop; break }
            output += stepTokens
            history += stepTokens
            if case .appendAndFinish(_, _, let finish) = decision { reason = finish; break }
            if output.count >= maxTokens { reason = reasonAtLimit(); break }
            guard source.count + stepTokens.count <= source.contextLength else { reason = .exceededContext; break }
            try source.evaluate(stepTokens, into: &logits)
        }
        let end = clock.now
        let stats = GenerationStats(
            promptTokens: prompt.count, cachedPromptTokens: min(reused, prompt.count), completionTokens: output.count,
            timeToFirstToken: ((firstToken ?? end) - requested).seconds,
            prefillSeconds: (decodeStart - prefillStart).seconds, decodeSeconds: (end - decodeStart).seconds)
        return Outcome(tokens: output, finishReason: reason, stats: stats)
    }
}
