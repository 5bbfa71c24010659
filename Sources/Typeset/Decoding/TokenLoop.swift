import Models
import TypesetGrammar

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
    /// tokens chosen are the same either way; only the passes differ. (A draft of one token,
    /// the step's own: it takes the place of the loop's ``TokenLoop/lookup`` draft.)
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
    /// Calls `body` with the constraint the next tokens are held to (a grammar's state after
    /// the tokens appended so far), which drafts are written under or cut to, and returns
    /// true; returns false without calling it when the next tokens are free. `body` must
    /// leave the constraint as it found it (rolling back what it accepts).
    func withDraftConstraint(_ body: (inout any TokenConstraint) -> Void) -> Bool
}

extension TokenStepper {
    func prepareNextStep() {}
    var hasWorkToPrepare: Bool { false }
    func withDraftConstraint(_ body: (inout any TokenConstraint) -> Void) -> Bool { false }
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
///     └── evaluate the appended tokens (and a draft after them) ─► logits
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
/// A decode step without drafts allocates nothing here: the step's tokens go into one array
/// the loop keeps, and a driver keeps one logits array per loop (the step masks and samples it
/// in place).
///
/// Drafts: after the step's tokens, a pass may compute tokens not yet chosen — the step's
/// provisional token, or with ``lookup`` set, a draft read from the history — with a row of
/// logits after each. The next step decides on the row before them; while the steps choose
/// the drafted tokens (and force nothing), each next step runs on the row after the last one
/// chosen, without another pass; the first token that differs (or forced markup) drops the
/// rest of the draft from the source. Every step sees the logits and draws as it would with
/// no draft, so the tokens are the same; a draft saves the passes of the tokens it guessed.
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
    /// Drafts read from the history, computed after each step's tokens (`nil`: none).
    var lookup: PromptLookup?
    /// Drafts of a draft model, computed after each step's tokens where `lookup` finds none
    /// (`nil`: none). The loop gives its cache back when the run finishes.
    var drafter: ModelDrafter?
    /// The most tokens the next draft may hold: a batch's driver lowers it when its pass has
    /// no rows to spare (`BatchScheduler`).
    var draftLimit = Int.max
    /// Whether `drafter` may run: a batch's driver allows it only to a generation alone in
    /// its batch, since the draft model's passes (and its prefill of the history) hold up the
    /// whole batch's step.
    var mayRunDrafter = true

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
    /// The tokens of the step being evaluated: the appended ones, then the drafted ones.
    private var stepTokens: [Int] = []
    /// The tokens at the end of `stepTokens` that are computed but not yet appended: the
    /// step's provisional token, or a draft of `lookup` or `drafter` (`draftKind` says which).
    private var drafted: [Int] = []
    private var draftKind = DraftKind.provisional
    /// The last pass's drafted tokens, while the steps decide on them.
    private var verifying: [Int] = []
    /// The rows of logits after each drafted token, while the steps decide on the rows before.
    private var draftLogits: [Float] = []
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
    /// Tokens `lookup` and `drafter` drafted, those of them the steps chose, and the draft
    /// model's passes.
    private var draftedTokens = 0
    private var acceptedDraftTokens = 0
    private var draftModelPassesAtStart = 0

    /// Where the drafted tokens of a pass come from.
    private enum DraftKind {
        case provisional, lookup, model
    }

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
        withDraftConstraint: ((inout any TokenConstraint) -> Void) -> Bool = { _ in false },
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
            loop.advance(&logits, isCancelled: isCancelled, reasonAtLimit: reasonAtLimit, onPrefill: onPrefill, step: step,
                         withDraftConstraint: withDraftConstraint)
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
        drafted.removeAll(keepingCapacity: true)
        finishReason = nil
        decodeStart = nil
        firstToken = nil
        end = nil
        decodePasses = 0
        passesSavedByProvisionalTokens = 0
        draftedTokens = 0
        acceptedDraftTokens = 0
        draftModelPassesAtStart = drafter?.passes ?? 0
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
            var end = min(computed + max(1, min(prefillChunkLength, limit)), start.count)
            // A source with recurrent state stops a pass at the checkpoint before the prompt's
            // end (``advance`` marks it there).
            if let checkpoint = recurrentCheckpointPosition, computed < checkpoint, end > checkpoint { end = checkpoint }
            pendingCount = end - computed
            return start[computed ..< end]
        }
        // A source that could not take back every refused draft exactly (recurrent state past
        // the last pass's kept rows) holds fewer tokens than the loop's history: those first.
        let held = history.count - (stepTokens.count - drafted.count)
        if source.count < held { stepTokens.insert(contentsOf: history[source.count ..< held], at: 0) }
        pendingCount = stepTokens.count
        return stepTokens[...]
    }

    /// Where a source with recurrent state keeps a checkpoint: a few tokens before the end of
    /// the prompt, as llama-server places its own, so that a next turn rendering this reply
    /// differently (a template dropping the reasoning) restarts there rather than from the
    /// start. `nil` for other sources, or when the prompt computed is too short.
    private var recurrentCheckpointPosition: Int? {
        let position = start.count - Self.checkpointDistance
        return source.hasRecurrentState && position > reused ? position : nil
    }

    /// Tokens between the checkpoint and the prompt's end.
    static var checkpointDistance: Int { 4 }

    /// How many rows of logits the evaluation of ``nextTokens(limit:)``'s tokens must give,
    /// those of its last tokens, row after row: with drafted tokens, the row before them and
    /// one after each; else 1.
    var logitRows: Int { isPrefilling ? 1 : drafted.count + 1 }

    /// Takes the logits after the tokens ``nextTokens(limit:)`` gave, and, once the prompt is
    /// computed, runs a step: the next tokens to evaluate, or the end of the run.
    ///
    /// `withDraftConstraint` is the stepper's (``TokenStepper/withDraftConstraint(_:)``): the
    /// drafts are written under its constraint, or cut at the first token it refuses.
    mutating func advance(
        _ logits: inout [Float], isCancelled: () -> Bool, reasonAtLimit: () -> FinishReason,
        onPrefill: ((_ computed: Int, _ total: Int) -> Void)?, step: (inout [Float], Context) -> TokenStepDecision,
        withDraftConstraint: ((inout any TokenConstraint) -> Void) -> Bool = { _ in false }
    ) {
        guard finishReason == nil else { return }
        if isPrefilling {
            computed += pendingCount
            if computed == recurrentCheckpointPosition { source.checkpoint() }
            onPrefill?(computed - reused, start.count - reused)
            if isPrefilling { return }
            decodeStart = clock.now
        } else {
            decodePasses += 1
        }
        // A pass with drafted tokens gave a row before them and one after each: the step
        // decides on the first; the others wait in `draftLogits`, taken in turn while the
        // steps choose the drafted tokens.
        // (The two arrays trade places, so that neither is copied.)
        swap(&drafted, &verifying)
        drafted.removeAll(keepingCapacity: true)
        let kind = draftKind
        var pending = verifying.count
        if pending > 0 {
            let rowLength = logits.count / (pending + 1)
            draftLogits.removeAll(keepingCapacity: true)
            draftLogits.append(contentsOf: logits[rowLength...])
            logits.removeLast(logits.count - rowLength)
        }
        // The drafted tokens the steps chose (the rows taken from `draftLogits`), whether a
        // step chose another token, and whether the draft is accounted for.
        var keptCount = 0, refused = false, recorded = false
        // What the lookup learns: how many of its tokens the steps decided on, and kept. A
        // draft cut by forced markup or the end of the run was not refused past what was kept.
        func record(_ loop: inout TokenLoop) {
            guard kind != .provisional, !recorded else { return }
            recorded = true
            let decided = refused ? loop.verifying.count : keptCount
            switch kind {
            case .lookup: loop.lookup?.record(drafted: decided, kept: keptCount)
            case .model: loop.drafter?.record(drafted: decided, kept: keptCount)
            case .provisional: break
            }
            loop.acceptedDraftTokens += keptCount
        }
        defer { record(&self) }
        while true {
            if isCancelled() { dropDrafts(&pending); return finish(.interrupted) }
            if output.count >= maxTokens { dropDrafts(&pending); return finish(reasonAtLimit()) }
            // The context's reference to `history` ends with the step, so appending to it
            // below does not copy it.
            let decision = step(&logits, Context(
                history: history, completionTokens: output.count,
                remainingTokens: min(maxTokens - output.count, source.contextLength - history.count)))
            let chosen: Int, forced: [Int]
            var next: Int?
            switch decision {
            case .finish(let reason):
                dropDrafts(&pending)
                return finish(reason)
            case .append(let token, let tokens, let provisional):
                (chosen, forced, next) = (token, tokens, provisional)
            case .appendAndFinish(let token, let tokens, _):
                (chosen, forced) = (token, tokens)
            }
            if firstToken == nil { firstToken = clock.now }
            // The step chose the next drafted token: the source holds it already.
            let kept = pending > 0 && verifying[keptCount] == chosen
            if kept {
                pending -= 1
                keptCount += 1
            } else {
                refused = pending > 0
                dropDrafts(&pending)
            }
            if isEndOfGeneration(chosen) { dropDrafts(&pending); return finish(.stop) }
            output.append(chosen)
            history.append(chosen)
            output += forced
            history += forced
            if case .appendAndFinish(_, _, let reason) = decision { dropDrafts(&pending); return finish(reason) }
            if output.count >= maxTokens { dropDrafts(&pending); return finish(reasonAtLimit()) }
            if history.count > source.contextLength { dropDrafts(&pending); return finish(.exceededContext) }
            stepTokens.removeAll(keepingCapacity: true)
            // Forced tokens the draft holds next (a draft written under the grammar writes
            // what it forces) are kept with it.
            let draftHeldForced = kept && !forced.isEmpty && forced.count <= pending
                && verifying[keptCount ..< keptCount + forced.count].elementsEqual(forced)
            if draftHeldForced {
                pending -= forced.count
                keptCount += forced.count
            }
            if kept {
                // Nothing forced after it (or only what the draft held): the logits after it
                // are at hand (a provisional token the step proposes would be decided on
                // them), so the step after runs on them now, a pass saved. Other forced tokens
                // come before anything drafted after it: the rest of the draft goes.
                if forced.isEmpty || draftHeldForced {
                    if kind == .provisional { passesSavedByProvisionalTokens += 1 }
                    let rowLength = logits.count
                    logits.withUnsafeMutableBufferPointer { row in
                        draftLogits.withUnsafeBufferPointer { rows in
                            row.baseAddress!.update(from: rows.baseAddress! + (keptCount - 1) * rowLength, count: rowLength)
                        }
                    }
                    continue
                }
                dropDrafts(&pending)
            } else {
                stepTokens.append(chosen)
            }
            stepTokens += forced
            // The next draft, where it fits: once appended, its tokens must be within the
            // limits just checked. The step's provisional token, else the lookup's, else the
            // draft model's.
            let room = min(maxTokens - output.count, source.contextLength - history.count)
            record(&self)   // before the next draft, which the lookup sizes on it
            if let token = next, room >= 1, !isEndOfGeneration(token) {
                drafted.append(token)
                draftKind = .provisional
            } else if room >= 1, draftLimit > 0 {
                draftKind = .lookup
                let limit = min(room, draftLimit)
                var proposal = lookup?.draft(after: history, limit: limit) ?? []
                // A lookup's draft stops before the first token the grammar refuses.
                if !proposal.isEmpty {
                    _ = withDraftConstraint { constraint in
                        var allowed = 0
                        while allowed < proposal.count, constraint.accept(token: proposal[allowed]) { allowed += 1 }
                        constraint.rollback(allowed)
                        proposal.removeLast(proposal.count - allowed)
                    }
                }
                if proposal.isEmpty, mayRunDrafter, let drafter {
                    draftKind = .model
                    let constrained = withDraftConstraint { constraint in
                        proposal = drafter.draft(after: history, limit: limit, remaining: room, constraint: &constraint)
                    }
                    if !constrained { proposal = drafter.draft(after: history, limit: limit, remaining: room) }
                }
                for token in proposal {
                    if isEndOfGeneration(token) { break }
                    drafted.append(token)
                }
                draftedTokens += drafted.count
            }
            stepTokens += drafted
            return
        }
    }

    /// Takes the drafted tokens the steps did not choose out of the source (their pass stored
    /// them).
    private mutating func dropDrafts(_ pending: inout Int) {
        guard pending > 0 else { return }
        source.truncate(to: source.count - pending)
        pending = 0
    }

    /// ``advance(_:isCancelled:reasonAtLimit:onPrefill:step:)`` with `stepper`'s.
    mutating func advance(_ logits: inout [Float], stepper: some TokenStepper) {
        advance(&logits, isCancelled: { stepper.isCancelled }, reasonAtLimit: stepper.reasonAtLimit,
                onPrefill: stepper.prefillProgress, step: stepper.step, withDraftConstraint: stepper.withDraftConstraint)
    }

    /// ``run(prompt:opening:requested:isCancelled:reasonAtLimit:onPrefill:step:)`` with
    /// `stepper`'s step and hooks.
    func run(prompt: [Int], opening: [Int] = [], requested: ContinuousClock.Instant = .now, stepper: some TokenStepper) throws(ModelError) -> Outcome {
        try run(prompt: prompt, opening: opening, requested: requested, isCancelled: { stepper.isCancelled },
                reasonAtLimit: stepper.reasonAtLimit, onPrefill: stepper.prefillProgress,
                withDraftConstraint: stepper.withDraftConstraint, step: stepper.step)
    }

    /// Ends the run with `reason` (a driver's, for example when its evaluation failed or the
    /// generation was cancelled before its prompt was computed).
    mutating func finish(_ reason: FinishReason) {
        guard finishReason == nil else { return }
        finishReason = reason
        drafter?.release()
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
        stats.draftedTokens = draftedTokens
        stats.acceptedDraftTokens = acceptedDraftTokens
        stats.draftModelPasses = (drafter?.passes ?? 0) - draftModelPassesAtStart
        return Outcome(tokens: output, finishReason: finishReason ?? .interrupted, stats: stats)
    }
}
