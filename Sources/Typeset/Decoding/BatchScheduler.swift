import Foundation
import Models
import Synchronization

/// Computes the logits of several sequences in one step. (Its metatype is sendable: the
/// scheduler's thread and preparation queue refer to the evaluator's type.)
protocol BatchEvaluator: AnyObject, SendableMetatype {
    associatedtype Source: LogitsSource
    /// Appends each entry's tokens to its source and writes the logits after each of the
    /// entry's last `logitRows` tokens into `logits`, rows of vocabulary size, row after row in
    /// entry order (replacing what it held).
    ///
    /// - Precondition: every entry has tokens and asks for 1 to all of their rows; no two
    ///   entries share a source.
    func evaluate(_ batch: [BatchEntry<Source>], into logits: inout [Float]) throws(ModelError)
}

/// One sequence's share of a batched evaluation: the tokens that extend its source, and how
/// many of the last ones give logits.
struct BatchEntry<Source: LogitsSource> {
    let source: Source
    let tokens: ArraySlice<Int>
    let logitRows: Int
}

/// Sequences of one transformer evaluated together: one forward pass for the batch, the weights
/// read once per step whatever the number of sequences (``TransformerModel/evaluate(_:workspace:threadCount:into:)``).
final class ModelBatchEvaluator: BatchEvaluator {
    let model: TransformerModel
    let threadCount: Int
    private let workspace = ForwardWorkspace()
    private var entries: [TransformerModel.SequenceTokens] = []

    init(model: TransformerModel, threadCount: Int) {
        self.model = model
        self.threadCount = threadCount
    }

    /// - Precondition: every source is a sequence of this evaluator's model.
    func evaluate(_ batch: [BatchEntry<ModelSequence>], into logits: inout [Float]) throws(ModelError) {
        entries.removeAll(keepingCapacity: true)
        for entry in batch {
            precondition(entry.source.model === model, "a sequence of another model in the batch")
            entries.append(TransformerModel.SequenceTokens(cache: entry.source.cache, tokens: entry.tokens, logitRows: entry.logitRows))
        }
        defer { entries.removeAll(keepingCapacity: true) }
        try model.evaluate(entries, workspace: workspace, threadCount: threadCount, into: &logits)
    }
}

/// Runs the generations of one model together, each advancing by a step per forward pass:
/// continuous batching.
///
///     submit ─► waiting (first in, first out) ─► active (at most `maximumSequences`)
///                                                  │ each step: one forward pass over
///                                                  │   the last step's tokens of every decoding
///                                                  │   generation + a chunk of prompt for those
///                                                  │   still prefilling (≤ `prefillTokensPerStep`,
///                                                  │   fewer while others decode)
///                                                  │ then each generation's step on its logits
///                                                  ▼
///                                        finished, cancelled ─► completion, leaves at once
///
/// A generation that is submitted joins at the next step; a long prompt is computed in chunks
/// between the others' tokens, so it does not stall them; a generation whose stepper says it
/// is cancelled leaves before the next forward pass. Every generation's loop is a
/// ``TokenLoop`` driven here instead of by `TokenLoop.run`, and since a row's logits do not
/// depend on the other rows of the batch, each generation produces exactly what it would
/// produce alone.
///
/// The steps run on the scheduler's own thread (the forward pass splits its products across
/// ``KernelThreadPool``); so do the steppers and the completions, which must be short.
final class BatchScheduler<Evaluator: BatchEvaluator>: @unchecked Sendable {
    typealias Source = Evaluator.Source

    /// A generation handed to the scheduler.
    final class Generation {
        var loop: TokenLoop<Source>
        let stepper: any TokenStepper
        let prompt: [Int]
        let opening: [Int]
        let requested: ContinuousClock.Instant
        /// Called once, on the scheduler's thread, with the run's outcome or the error that
        /// ended it.
        var completion: (Result<TokenLoopOutcome, ModelError>) -> Void
        /// This generation's logits, kept from step to step.
        var logits: [Float] = []

        init(
            loop: TokenLoop<Source>, stepper: any TokenStepper, prompt: [Int], opening: [Int] = [],
            requested: ContinuousClock.Instant = .now,
            completion: @escaping (Result<TokenLoopOutcome, ModelError>) -> Void = { _ in }
        ) {
            self.loop = loop
            self.stepper = stepper
            self.prompt = prompt
            self.opening = opening
            self.requested = requested
            self.completion = completion
        }
    }

    /// What the scheduler has done, for metrics.
    struct Statistics: Sendable, Equatable {
        /// Forward passes run.
        var steps = 0
        /// Rows evaluated (prompt and generated tokens, and drafted ones, kept or not), over all steps.
        var evaluatedTokens = 0
        /// Generations in the last step's batch.
        var lastBatchSize = 0
        /// Generations over all steps' batches (their sum).
        var batchedGenerations = 0
        /// Generations waiting for a place.
        var waiting = 0
        /// Generations taking part in steps.
        var active = 0
    }

    /// The most generations taking part in steps at once; the others wait, in order.
    let maximumSequences: Int
    /// The most prompt tokens one step computes, over all the generations still prefilling.
    let prefillTokensPerStep: Int
    /// The same while other generations are decoding: a long prompt takes several shorter
    /// steps, so the replies under way go on at a steady pace instead of waiting for it.
    let prefillTokensPerStepWhileDecoding: Int
    /// Rows of logits a step's pass computes before drafts stop being nearly free: below it,
    /// the decoders' drafts share what their own rows leave. On the 2-core CPUs measured a
    /// pass costs about the weights' reading up to a few rows, then each row about a token's
    /// arithmetic (Qwen2.5-Coder-0.5B on a Zen 3: one row 13.8 ms, two 17.1, four 24.0,
    /// eight 45.4); drafting in each of four sequences cost 10 % of the aggregate there, so a
    /// full batch drafts nothing.
    static var draftRowsPerPass: Int { 4 }
    private let evaluator: Evaluator
    private let shared = Mutex(Shared())
    private let wakeUp = DispatchSemaphore(value: 0)
    /// Where the steps prepare their next step during a forward pass, and the wait for it.
    private let preparation = DispatchQueue(label: "typeset.batch-scheduler.preparation", qos: .userInitiated)
    private let prepared = DispatchGroup()

    /// Generations handed to the preparation queue: only it touches them until the scheduler
    /// waits for it, which is what makes the handing over sound.
    private struct UncheckedGenerations: @unchecked Sendable {
        let generations: [Generation]
        init(_ generations: [Generation]) { self.generations = generations }
    }

    private struct Shared: @unchecked Sendable {
        var waiting: [Generation] = []
        var isShuttingDown = false
        var isRunning = false
        var statistics = Statistics()
    }

    init(evaluator: Evaluator, maximumSequences: Int, prefillTokensPerStep: Int = 512, prefillTokensPerStepWhileDecoding: Int = 256) {
        self.evaluator = evaluator
        self.maximumSequences = max(1, maximumSequences)
        self.prefillTokensPerStep = max(1, prefillTokensPerStep)
        self.prefillTokensPerStepWhileDecoding = max(1, min(prefillTokensPerStep, prefillTokensPerStepWhileDecoding))
    }

    /// Queues `generation`; it joins the steps as soon as there is a place. After `shutdown()`
    /// it completes at once as interrupted.
    func submit(_ generation: Generation) {
        submit([generation])
    }

    /// Queues `generations` at once, so that the steps find them all waiting together (as many
    /// as there are places join the same step). After `shutdown()` they complete at once as
    /// interrupted.
    func submit(_ generations: [Generation]) {
        guard !generations.isEmpty else { return }
        let (accepted, starts) = shared.withLock { shared -> (Bool, Bool) in
            guard !shared.isShuttingDown else { return (false, false) }
            shared.waiting.append(contentsOf: generations)
            shared.statistics.waiting = shared.waiting.count
            let starts = !shared.isRunning
            shared.isRunning = true
            return (true, starts)
        }
        guard accepted else {
            for generation in generations {
                generation.loop.finish(.interrupted)
                generation.completion(.success(generation.loop.outcome))
            }
            return
        }
        if starts {
            let thread = Thread { [self] in run() }
            thread.name = "typeset.batch-scheduler"
            thread.qualityOfService = .userInitiated
            thread.start()
        } else {
            wakeUp.signal()
        }
    }

    /// Stops taking generations; those waiting complete as interrupted, the active ones at
    /// their next step (their steppers report cancellation, or they are cut there).
    func shutdown() {
        let waiting = shared.withLock { shared -> [Generation] in
            shared.isShuttingDown = true
            defer { shared.waiting.removeAll() }
            return shared.waiting
        }
        for generation in waiting {
            generation.loop.finish(.interrupted)
            generation.completion(.success(generation.loop.outcome))
        }
        wakeUp.signal()
    }

    /// A snapshot of the counts.
    var statistics: Statistics { shared.withLock { $0.statistics } }

    // MARK: The steps

    /// The scheduler's thread: steps while there is work, and ends when there is none (the
    /// next `submit` starts it again).
    private func run() {
        var active: [Generation] = []
        var batch: [BatchEntry<Source>] = []
        var members: [Generation] = []
        var rowCounts: [Int] = []
        var logits: [Float] = []
        while true {
            let (admitted, isShuttingDown) = shared.withLock { shared -> ([Generation], Bool) in
                let room = maximumSequences - active.count
                let admitted = Array(shared.waiting.prefix(max(0, room)))
                shared.waiting.removeFirst(admitted.count)
                if !admitted.isEmpty {
                    // Counted from their admission, not from the end of their first step.
                    shared.statistics.active = active.count + admitted.count
                    shared.statistics.waiting = shared.waiting.count
                }
                if active.isEmpty && admitted.isEmpty {
                    // Nothing to do: the thread ends (under the lock, so a submit either sees
                    // it running or starts a new one).
                    shared.isRunning = false
                    shared.statistics.active = 0
                    shared.statistics.waiting = shared.waiting.count
                }
                return (admitted, shared.isShuttingDown)
            }
            if active.isEmpty && admitted.isEmpty { return }
            for generation in admitted {
                do throws(ModelError) {
                    try generation.loop.begin(prompt: generation.prompt, opening: generation.opening, requested: generation.requested)
                    active.append(generation)
                } catch {
                    generation.completion(.failure(error))
                }
            }
            // Cancelled generations (and all of them once shutting down) leave before the pass.
            for generation in active where isShuttingDown || generation.stepper.isCancelled {
                generation.loop.finish(.interrupted)
            }
            complete(&active)

            batch.removeAll(keepingCapacity: true)
            members.removeAll(keepingCapacity: true)
            rowCounts.removeAll(keepingCapacity: true)
            let decoding = active.contains { !$0.loop.isPrefilling && !$0.loop.isFinished }
            var prefillBudget = decoding ? prefillTokensPerStepWhileDecoding : prefillTokensPerStep
            for generation in active {
                let prefilling = generation.loop.isPrefilling
                if prefilling && prefillBudget == 0 { continue }
                guard let tokens = generation.loop.nextTokens(limit: prefilling ? prefillBudget : .max) else { continue }
                if prefilling { prefillBudget -= tokens.count }
                batch.append(BatchEntry(source: generation.loop.source, tokens: tokens, logitRows: generation.loop.logitRows))
                members.append(generation)
                rowCounts.append(generation.loop.logitRows)
            }
            guard !batch.isEmpty else { continue }
            let evaluated = batch.reduce(0) { $0 + $1.tokens.count }
            // While the model computes the logits, the steps prepare what does not need them
            // (a grammar's next token mask) on another thread: the grammar's time overlaps the
            // forward pass instead of adding to it. Only generations with such work wake that
            // thread: on two cores a thread woken for nothing takes a core from the pass.
            let preparing = UncheckedGenerations(members.filter { !$0.loop.isPrefilling && $0.stepper.hasWorkToPrepare })
            if !preparing.generations.isEmpty {
                preparation.async(group: prepared) {
                    for generation in preparing.generations { generation.stepper.prepareNextStep() }
                }
            }
            do throws(ModelError) {
                try evaluator.evaluate(batch, into: &logits)
                prepared.wait()
            } catch {
                prepared.wait()
                active.removeAll { member in members.contains { $0 === member } }
                for generation in members {
                    generation.loop.finish(.error)
                    generation.completion(.failure(error))
                }
                continue
            }
            let rowLength = logits.count / rowCounts.reduce(0, +)
            // Drafts (prompt lookup) get the rows a pass has to spare: a lone decoder drafts
            // as its lookup decides; several share what is left below `draftRowsPerPass`.
            let decoders = members.count { !$0.loop.isFinished && !$0.loop.isPrefilling }
            let draftShare = decoders <= 1 ? Int.max : max(0, Self.draftRowsPerPass - decoders) / decoders
            // The batch's slices share the loops' token buffers: dropped before the steps
            // refill them, so refilling does not copy.
            batch.removeAll(keepingCapacity: true)
            var firstRow = 0
            for (generation, rows) in zip(members, rowCounts) {
                let length = rows * rowLength
                if generation.logits.count != length {
                    // In place: a reply's rows vary with its drafts (a provisional token, a lookup's).
                    generation.logits.removeAll(keepingCapacity: true)
                    generation.logits.append(contentsOf: repeatElement(0, count: length))
                }
                generation.logits.withUnsafeMutableBufferPointer { row in
                    logits.withUnsafeBufferPointer { all in
                        row.baseAddress!.update(from: all.baseAddress! + firstRow * rowLength, count: length)
                    }
                }
                firstRow += rows
                generation.loop.draftLimit = draftShare
                generation.loop.mayRunDrafter = active.count == 1
                generation.loop.advance(&generation.logits, stepper: generation.stepper)
            }
            shared.withLock { shared in
                shared.statistics.steps += 1
                shared.statistics.evaluatedTokens += evaluated
                shared.statistics.lastBatchSize = members.count
                shared.statistics.batchedGenerations += members.count
            }
            complete(&active)
        }
    }

    /// Removes the finished generations, updates the counts, then completes them (so that a
    /// caller woken by a completion sees counts without it).
    private func complete(_ active: inout [Generation]) {
        var finished: [Generation] = []
        active.removeAll { generation in
            guard generation.loop.isFinished else { return false }
            finished.append(generation)
            return true
        }
        let remaining = active.count
        shared.withLock { shared in
            shared.statistics.active = remaining
            shared.statistics.waiting = shared.waiting.count
        }
        for generation in finished { generation.completion(.success(generation.loop.outcome)) }
    }
}
