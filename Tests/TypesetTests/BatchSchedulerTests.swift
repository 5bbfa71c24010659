import Dispatch
import Synchronization
import Testing
@testable import Typeset

/// Evaluates a batch of scripted sources one after another, recording what each step held.
final class SequentialEvaluator: BatchEvaluator, @unchecked Sendable {
    /// The tokens each source evaluated, step by step: one list per step.
    private(set) var steps: [[[Int]]] = []
    /// Holds the first step until every generation of a test is submitted, so which ones share
    /// steps does not depend on how fast the scheduler's thread runs on a loaded machine.
    let firstStep = DispatchSemaphore(value: 0)

    func evaluate(_ batch: [BatchEntry<ScriptedSource>], into logits: inout [Float]) throws(ModelError) {
        if steps.isEmpty { firstStep.wait() }
        logits.removeAll(keepingCapacity: true)
        var rows: [Float] = []
        for entry in batch {
            try entry.source.evaluate(entry.tokens, logitRows: entry.logitRows, into: &rows)
            logits += rows
        }
        steps.append(batch.map { Array($0.tokens) })
    }
}

/// Continuous batching without a model: replies decoded together are the replies decoded
/// alone, whatever joins, leaves or waits around them.
@Suite struct BatchSchedulerTests {
    typealias Scheduler = BatchScheduler<SequentialEvaluator>

    /// What the model "wants to write" in each case (greedy, byte-level), and their options.
    static let texts = ["Paris is the capital of France.", "Hello!", "A much longer reply, written one byte at a time, token after token."]

    final class Collected: @unchecked Sendable {
        var replies: [Int: Reply] = [:]
        var chunks: [Int: [String]] = [:]
        let lock = Mutex(())
        let group = DispatchGroup()
    }

    /// Submits a reply per text (the i-th after `delays[i]` steps of the first) and waits for all.
    static func decodeTogether(
        _ texts: [String], maximumSequences: Int, prefillTokensPerStep: Int = 512, prefillTokensPerStepWhileDecoding: Int = 256,
        promptLengths: [Int]? = nil,
        cancelAfterChunks: [Int: Int] = [:], options: GenerationOptions = GenerationOptions()
    ) -> (Collected, SequentialEvaluator) {
        let evaluator = SequentialEvaluator()
        let scheduler = Scheduler(evaluator: evaluator, maximumSequences: maximumSequences, prefillTokensPerStep: prefillTokensPerStep,
                                  prefillTokensPerStepWhileDecoding: prefillTokensPerStepWhileDecoding)
        let collected = Collected()
        for (index, text) in texts.enumerated() {
            let promptLength = promptLengths?[index] ?? 3
            let source = ByteVocabulary.writer(text, promptLength: promptLength)
            let cancellation = CancellationFlag()
            var chunkCount = 0
            let plan = ReplyPlan(
                prompt: [], options: options, constraint: nil,
                routing: ReplyPlan.Routing(options: options, constrained: false, calls: nil, forbidsCallOpening: false), cacheOwner: nil)
            let decoder = ReplyDecoder(plan: plan, tokenizer: ByteVocabulary.tokenizer, cancellation: cancellation) { event in
                guard case .chunk(let text) = event else { return }
                collected.lock.withLock { _ in collected.chunks[index, default: []].append(text) }
                chunkCount += 1
                if chunkCount == cancelAfterChunks[index] { cancellation.cancel() }
            }
            let loop = TokenLoop(source: source, maxTokens: 200, isEndOfGeneration: { ByteVocabulary.tokenizer.vocabulary.isEndOfGeneration($0) })
            collected.group.enter()
            let generation = Scheduler.Generation(loop: loop, stepper: decoder, prompt: Array(repeating: 32, count: promptLength)) { result in
                let reply = decoder.finish(try! result.get())
                collected.lock.withLock { _ in collected.replies[index] = reply }
                collected.group.leave()
            }
            scheduler.submit(generation)
        }
        evaluator.firstStep.signal()
        collected.group.wait()
        return (collected, evaluator)
    }

    @Test func repliesDecodedTogetherAreTheRepliesAlone() {
        let (collected, evaluator) = Self.decodeTogether(Self.texts, maximumSequences: 4)
        for (index, text) in Self.texts.enumerated() {
            #expect(collected.replies[index]?.message.content == text)
            #expect(collected.replies[index]?.finishReason == .stop)
            #expect(collected.chunks[index]?.joined() == text)
        }
        // They shared steps: far fewer forward passes than tokens.
        let tokens = Self.texts.reduce(0) { $0 + $1.utf8.count }
        #expect(evaluator.steps.count < tokens)
        #expect(evaluator.steps.contains { $0.count == 3 })
    }

    @Test func generationsBeyondTheLimitWaitTheirTurn() {
        let (collected, evaluator) = Self.decodeTogether(Self.texts, maximumSequences: 2)
        for (index, text) in Self.texts.enumerated() { #expect(collected.replies[index]?.message.content == text) }
        #expect(evaluator.steps.allSatisfy { $0.count <= 2 })
    }

    /// A long prompt is computed in chunks of the step's prefill budget (a smaller one while
    /// others decode), while the others go on decoding one token per step.
    @Test func aLongPromptDoesNotStallTheOthers() {
        let (collected, evaluator) = Self.decodeTogether(
            ["Short.", "Also short."], maximumSequences: 4, prefillTokensPerStep: 8, prefillTokensPerStepWhileDecoding: 5,
            promptLengths: [3, 40])
        #expect(collected.replies[0]?.message.content == "Short.")
        #expect(collected.replies[1]?.message.content == "Also short.")
        #expect(evaluator.steps.allSatisfy { step in step.reduce(0) { $0 + $1.count } <= 8 })
        // Once the first reply decodes, the long prompt goes five tokens a step.
        #expect(evaluator.steps.contains { step in step.contains { $0.count == 1 } && step.contains { $0.count == 5 } })
        #expect(evaluator.steps.allSatisfy { step in !step.contains { $0.count == 1 } || step.allSatisfy { $0.count <= 5 } })
        // The long prompt took several steps, during which the first reply kept decoding.
        let prefillSteps = evaluator.steps.filter { $0.contains { $0.count > 1 } }
        #expect(prefillSteps.count >= 4)
        #expect(prefillSteps.dropFirst().contains { $0.contains { $0.count == 1 } })
    }

    /// Cancelling one reply stops it within a token; the others are untouched.
    @Test func cancellingOneReplyLeavesTheOthers() {
        let (collected, _) = Self.decodeTogether(Self.texts, maximumSequences: 4, cancelAfterChunks: [2: 5])
        #expect(collected.replies[2]?.finishReason == .interrupted)
        #expect(collected.replies[2]?.message.content.count == 5)
        #expect(collected.replies[0]?.message.content == Self.texts[0])
        #expect(collected.replies[1]?.message.content == Self.texts[1])
    }
}
