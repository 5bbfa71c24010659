import Models

/// What one step of a ``TokenLoop`` does with the logits it was given.
enum TokenStepDecision {
    /// Append the chosen token, then the tokens the caller forces after it, and compute the
    /// logits that follow them. A chosen end-of-generation token ends generation with
    /// ``FinishReason/stop`` instead; it is not appended.
    ///
    /// A `provisional` token is computed in the same pass, after the forced ones, but not
    /// appended: the next step decides on the logits before it, as it would without it, and
    /// when that step chooses it (and forces nothing after it) the step after runs on the
    /// logits after it at once, without another pass. Otherwise it leaves the source. The
    /// tokens chosen are the same either way; only the passes differ.
    case append(Int, forced: [Int] = [], provisional: Int? = nil)
    /// Append the chosen token, then any forced ones, and end with the reason, without
    /// computing the logits after them (the caller knows that nothing may follow).
    case appendAndFinish(Int, forced: [Int] = [], FinishReason)
    /// End with the reason, appending nothing.
    case finish(FinishReason)
}

/// What a step knows besides the logits.
struct TokenStepContext {
    /// The prompt (with any opening) and every token appended since.
    let history: [Int]
    /// Tokens appended so far (the opening included).
    let completionTokens: Int
    /// Tokens that may still be appended: within `maxTokens` and the context.
    let remainingTokens: Int

    /// Where the reply (the opening included) begins in `history`.
    var replyStart: Int { history.count - completionTokens }
}

/// What a run of a ``TokenLoop`` produced.
struct TokenLoopOutcome {
    /// The opening, then every appended token.
    var tokens: [Int]
    var finishReason: FinishReason
    /// Counts and times; `constraintSeconds` is left for the caller to fill.
    var stats: GenerationStats
}

/// The caller's side of a ``TokenLoop`` run: its steps, and what the loop asks besides. A
/// conversation's reply (`ReplyDecoder`) is one; the batch scheduler drives a loop through it.
protocol TokenStepper: AnyObject {
    /// The next tokens for `logits` (which the step may change in place: masks, penalties).
    func step(_ logits: inout [Float], _ context: TokenStepContext) -> TokenStepDecision
    /// Why the run ends when `maxTokens` tokens are appended.
    func reasonAtLimit() -> FinishReason
    /// Whether the run should end before its next step.
    var isCancelled: Bool { get }
    /// Told the prompt tokens computed so far and those to compute (reused ones not counted),
    /// after each prefill chunk.
    func prefillProgress(computed: Int, total: Int)
    /// Work for the next step that does not need its logits (a grammar's next token mask):
    /// `BatchScheduler` runs it while the model computes them. Optional: a step must work
    /// without it.
    func prepareNextStep()
    /// Whether `prepareNextStep` has anything to do now: the scheduler hands the preparation
    /// to another thread only then (a thread woken for nothing takes a core from the pass).
    var hasWorkToPrepare: Bool { get }
}

extension TokenStepper {
    func prepareNextStep() {}
    var hasWorkToPrepare: Bool { false }
}

/// The decoding loop every generation runs: `TextGenerator` (the token-level API, and so
/// `typeset bench decode`) and conversations' replies, alone or batched with others.
///
///     prompt ─► prefill in chunks (reusing the prefix the source holds) ─► logits
///                 ┌───────────────────────────────────────────────┘
///                 ▼
///     ┌─► cancelled? budget spent? ── yes ─► finish
///     │   step(&logits, context) ─► .finish ─► finish
///     │        │ .append(token, forced): end of generation? ── yes ─► finish (.stop)
///     │        ▼
///     │   append; budget spent? context full? ── yes ─► finish
///     └── evaluate the appended tokens ─► logits
///
/// The step — masking, sampling, routing text, forcing markup — is the caller's; the loop owns
/// the prefill with prefix reuse, the stop conditions that do not depend on the text (cancellation,
/// `maxTokens`, the context, the end of generation), the output and the timings.
///
/// The loop is a state machine, so that one forward pass can serve several loops: `begin`
/// starts a run, ``nextTokens(limit:)`` says what to evaluate, and `advance` takes the logits
/// after them and asks the step for the next tokens. ``run(prompt:opening:requested:isCancelled:reasonAtLimit:onPrefill:step:)``
/// drives one loop on its own source; `BatchScheduler` drives many, their tokens evaluated
/// together.
///
/// A decode step allocates nothing here: the step's tokens go into one array the loop keeps,
/// and a driver keeps one logits array per loop (the step masks and samples it in place).
struct TokenLoop<Source: LogitsSource> {
    typealias Context = TokenStepContext
    typealias Outcome = TokenLoopOutcome

    let source: Source
    /// The most tokens a run may append (the opening included).
    let maxTokens: Int
    /// Tokens that end generation when a step chooses them.
    let isEndOfGeneration: (Int) -> Bool
    /// The most prompt tokens one prefill step computes: a long prompt runs in chunks, each
    /// attending to the keys the earlier ones cached, so its progress can be reported (and a
    /// batch can go on decoding its other sequences between the chunks). The logits are those
    /// of one batch, bit for bit: a row's values do not depend on the rows evaluated with it.
    var prefillChunkLength = 512

    // MARK: State of a run

    private let clock = ContinuousClock()
    /// The prompt's length, and the prompt then the opening.
    private var promptCount = 0
    private var start: [Int] = []
    /// Tokens of `start` the source held already, and those computed so far (reused included).
    private var reused = 0
    private var computed = 0
    /// Tokens handed out by `nextTokens` and not yet evaluated.
    private var pendingCount = 0
    private var history: [Int] = []
    private var output: [Int] = []
    /// The tokens of the step being evaluated: the appended ones, then the provisional one.
    private var stepTokens: [Int] = []
    /// The token at the end of `stepTokens` that is computed but not yet appended.
    private var provisional: Int?
    /// The logits after the provisional token, while the step before it decides.
    private var provisionalLogits: [Float] = []
    private(set) var finishReason: FinishReason?
    private var requested = ContinuousClock.now
    private var prefillStart = ContinuousClock.now
    private var decodeStart: ContinuousClock.Instant?
    private var firstToken: ContinuousClock.Instant?
    private var end: ContinuousClock.Instant?
    /// Forward passes evaluated after the prompt's.
    private var decodePasses = 0
    /// Passes saved by provisional tokens the steps chose.
    private var passesSavedByProvisionalTokens = 0

    init(source: Source, maxTokens: Int, isEndOfGeneration: @escaping (Int) -> Bool) {
        self.source = source
        self.maxTokens = maxTokens
        self.isEndOfGeneration = isEndOfGeneration
    }

    /// Runs the loop on its own source: prefills `prompt` then `opening` (tokens written for
    /// the model, counted as output), then steps until a step finishes, a chosen token ends
    /// generation, `isCancelled` says so (checked before each step), `maxTokens` are appended
    /// (the reason is `reasonAtLimit()`'s, asked then) or the next tokens do not fit in the
    /// context.
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
        var loop = self
        try loop.begin(prompt: prompt, opening: opening, requested: requested)
        var logits: [Float] = []
        while true {
            do {
                // The slice shares the loop's token buffer: it ends here, before the step
                // refills the buffer (which would otherwise copy it).
                guard let tokens = loop.nextTokens() else { break }
                try source.evaluate(tokens, logitRows: loop.logitRows, into: &logits)
            }
            loop.advance(&logits, isCancelled: isCancelled, reasonAtLimit: reasonAtLimit, onPrefill: onPrefill, step: step)
        }
        return loop.outcome
    }

    /// Starts a run of `prompt` then `opening`: keeps the prefix the source holds, drops the
    /// rest of what it holds.
    ///
    /// - Throws: ``ModelError/emptyPrompt``; ``ModelError/contextOverflow(needed:available:)``
    ///   when the prompt and opening do not fit.
    mutating func begin(prompt: [Int], opening: [Int] = [], requested: ContinuousClock.Instant = .now) throws(ModelError) {
        guard !prompt.isEmpty else { throw .emptyPrompt }
        start = prompt + opening
        guard start.count <= source.contextLength else {
            throw .contextOverflow(needed: start.count, available: source.contextLength)
        }
        promptCount = prompt.count
        self.requested = requested
        reused = source.reusablePrefixLength(for: start)
        source.truncate(to: reused)
        computed = reused
        pendingCount = 0
        // Room for every token the run may append, so appending never reallocates.
        let room = min(maxTokens, max(0, source.contextLength - start.count))
        history = start
        history.reserveCapacity(start.count + room)
        output = opening
        output.reserveCapacity(opening.count + room)
        stepTokens.removeAll(keepingCapacity: true)
        provisional = nil
        finishReason = nil
        decodeStart = nil
        firstToken = nil
        end = nil
        decodePasses = 0
        passesSavedByProvisionalTokens = 0
        prefillStart = clock.now
    }

    /// Whether the run is over (``outcome`` is final).
    var isFinished: Bool { finishReason != nil }

    /// Whether the prompt is still being computed.
    var isPrefilling: Bool { computed < start.count }

    /// The tokens to evaluate next — a chunk of the prompt of at most `limit` (and
    /// `prefillChunkLength`) tokens, or the last step's tokens — or `nil` when the run is over.
    /// Each call must be followed by evaluating them and calling `advance` with the logits.
    mutating func nextTokens(limit: Int = .max) -> ArraySlice<Int>? {
        guard finishReason == nil else { return nil }
        if isPrefilling {
            let end = min(computed + max(1, min(prefillChunkLength, limit)), start.count)
            pendingCount = end - computed
            return start[computed ..< end]
        }
        pendingCount = stepTokens.count
        return stepTokens[...]
    }

    /// How many rows of logits the evaluation of ``nextTokens(limit:)``'s tokens must give,
    /// those of its last tokens, row after row: 2 when the step ends with a provisional token
    /// (the logits before it and after it), else 1.
    var logitRows: Int { !isPrefilling && provisional != nil ? 2 : 1 }

    /// Takes the logits after the tokens ``nextTokens(limit:)`` gave, and, once the prompt is
    /// computed, runs a step: the next tokens to evaluate, or the end of the run.
    mutating func advance(
        _ logits: inout [Float], isCancelled: () -> Bool, reasonAtLimit: () -> FinishReason,
        onPrefill: ((_ computed: Int, _ total: Int) -> Void)?, step: (inout [Float], Context) -> TokenStepDecision
    ) {
        guard finishReason == nil else { return }
        if isPrefilling {
            computed += pendingCount
            onPrefill?(computed - reused, start.count - reused)
            if isPrefilling { return }
            decodeStart = clock.now
        } else {
            decodePasses += 1
        }
        // A provisional token's pass gave two rows: the step decides on the first (the logits
        // before the token); the second waits in `provisionalLogits`.
        var pending = provisional
        provisional = nil
        if pending != nil {
            let rowLength = logits.count / 2
            provisionalLogits.removeAll(keepingCapacity: true)
            provisionalLogits.append(contentsOf: logits[rowLength...])
            logits.removeLast(rowLength)
        }
        while true {
            if isCancelled() { dropProvisional(&pending); return finish(.interrupted) }
            if output.count >= maxTokens { dropProvisional(&pending); return finish(reasonAtLimit()) }
            // The context's reference to `history` ends with the step, so appending to it
            // below does not copy it.
            let decision = step(&logits, Context(
                history: history, completionTokens: output.count,
                remainingTokens: min(maxTokens - output.count, source.contextLength - history.count)))
            let chosen: Int, forced: [Int]
            var next: Int?
            switch decision {
            case .finish(let reason):
                dropProvisional(&pending)
                return finish(reason)
            case .append(let token, let tokens, let provisional):
                (chosen, forced, next) = (token, tokens, provisional)
            case .appendAndFinish(let token, let tokens, _):
                (chosen, forced) = (token, tokens)
            }
            if firstToken == nil { firstToken = clock.now }
            // The step chose the provisional token: the source holds it already.
            let kept = pending != nil && chosen == pending
            if !kept { dropProvisional(&pending) }
            if isEndOfGeneration(chosen) { return finish(.stop) }
            output.append(chosen)
            history.append(chosen)
            output += forced
            history += forced
            if case .appendAndFinish(_, _, let reason) = decision { return finish(reason) }
            if output.count >= maxTokens { return finish(reasonAtLimit()) }
            if history.count > source.contextLength { return finish(.exceededContext) }
            // A provisional token only where it fits: once appended it must be within the
            // limits just checked.
            if let token = next, output.count >= maxTokens || history.count >= source.contextLength || isEndOfGeneration(token) {
                next = nil
            }
            stepTokens.removeAll(keepingCapacity: true)
            if kept {
                pending = nil
                // Nothing forced after it: the logits after it are at hand (a provisional
                // token the step proposes would be decided on them), so the step after runs
                // on them now, a pass saved.
                if forced.isEmpty {
                    passesSavedByProvisionalTokens += 1
                    swap(&logits, &provisionalLogits)
                    continue
                }
            } else {
                stepTokens.append(chosen)
            }
            stepTokens += forced
            if let next { stepTokens.append(next) }
            provisional = next
            return
        }
    }

    /// Takes a provisional token the step did not choose out of the source (its pass stored it).
    private mutating func dropProvisional(_ pending: inout Int?) {
        guard pending != nil else { return }
        source.truncate(to: source.count - 1)
        pending = nil
    }

    /// ``advance(_:isCancelled:reasonAtLimit:onPrefill:step:)`` with `stepper`'s.
    mutating func advance(_ logits: inout [Float], stepper: some TokenStepper) {
        advance(&logits, isCancelled: { stepper.isCancelled }, reasonAtLimit: stepper.reasonAtLimit,
                onPrefill: stepper.prefillProgress, step: stepper.step)
    }

    /// ``run(prompt:opening:requested:isCancelled:reasonAtLimit:onPrefill:step:)`` with
    /// `stepper`'s step and hooks.
    func run(prompt: [Int], opening: [Int] = [], requested: ContinuousClock.Instant = .now, stepper: some TokenStepper) throws(ModelError) -> Outcome {
        try run(prompt: prompt, opening: opening, requested: requested, isCancelled: { stepper.isCancelled },
                reasonAtLimit: stepper.reasonAtLimit, onPrefill: stepper.prefillProgress, step: stepper.step)
    }

    /// Ends the run with `reason` (a driver's, for example when its evaluation failed or the
    /// generation was cancelled before its prompt was computed).
    mutating func finish(_ reason: FinishReason) {
        guard finishReason == nil else { return }
        finishReason = reason
        end = clock.now
        if decodeStart == nil { decodeStart = end }
    }

    /// What the run produced (so far, before it is over).
    var outcome: Outcome {
        let end = end ?? clock.now
        let decodeStart = decodeStart ?? end
        var stats = GenerationStats(
            promptTokens: promptCount, cachedPromptTokens: min(reused, promptCount), completionTokens: output.count,
            timeToFirstToken: ((firstToken ?? end) - requested).seconds,
            prefillSeconds: (decodeStart - prefillStart).seconds, decodeSeconds: (end - decodeStart).seconds,
            decodePasses: decodePasses)
        stats.passesSavedByProvisionalTokens = passesSavedByProvisionalTokens
        return Outcome(tokens: output, finishReason: finishReason ?? .interrupted, stats: stats)
    }
}
