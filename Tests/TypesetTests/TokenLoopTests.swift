import Testing
@testable import Typeset

/// The one decoding loop on a scripted source: what it computes, when it stops and what it
/// counts, without a model.
@Suite struct TokenLoopTests {
    /// Logits that favour token `(last held + 1) % 8` out of 8, 7 being the end of generation.
    static func counting() -> ScriptedSource {
        ScriptedSource(contextLength: 32) { held in
            var logits = [Float](repeating: 0, count: 8)
            logits[(held.last! + 1) % 8] = 1
            return logits
        }
    }

    static func greedy(_ logits: inout [Float], _ context: TokenLoop<ScriptedSource>.Context) -> TokenStepDecision {
        .append(logits.indices.max { logits[$0] < logits[$1] }!)
    }

    @Test func prefillsThenStepsUntilTheEndOfGeneration() throws {
        let source = Self.counting()
        let loop = TokenLoop(source: source, maxTokens: 100, isEndOfGeneration: { $0 == 7 })
        let outcome = try loop.run(prompt: [1, 2], step: Self.greedy)
        #expect(outcome.tokens == [3, 4, 5, 6])
        #expect(outcome.finishReason == .stop)
        // The prompt in one call, then one call per token; the end of generation is not run.
        #expect(source.evaluations == [[1, 2], [3], [4], [5], [6]])
        #expect(outcome.stats.promptTokens == 2 && outcome.stats.completionTokens == 4 && outcome.stats.cachedPromptTokens == 0)
        #expect(outcome.stats.decodePasses == 4)
    }

    @Test func reusesTheHeldPrefix() throws {
        let source = Self.counting()
        let loop = TokenLoop(source: source, maxTokens: 2, isEndOfGeneration: { $0 == 7 })
        _ = try loop.run(prompt: [1, 2, 3], step: Self.greedy)
        #expect(source.held == [1, 2, 3, 4])
        // The next prompt shares [1, 2, 3, 4]: only what follows is computed.
        let outcome = try loop.run(prompt: [1, 2, 3, 4, 0], step: Self.greedy)
        #expect(source.evaluations.suffix(2) == [[0], [1]])
        #expect(outcome.stats.cachedPromptTokens == 4)
        #expect(outcome.tokens == [1, 2])
        // A prompt that diverges early drops what the source held after the divergence.
        _ = try loop.run(prompt: [1, 5], step: Self.greedy)
        #expect(source.held.prefix(2) == [1, 5])
    }

    @Test func aLongPromptIsComputedInChunks() throws {
        let source = ScriptedSource(contextLength: 32) { _ in [0, 1] }
        var loop = TokenLoop(source: source, maxTokens: 1, isEndOfGeneration: { _ in false })
        loop.prefillChunkLength = 3
        var progress: [[Int]] = []
        _ = try loop.run(prompt: [0, 0, 0, 0, 0, 0, 0, 0], onPrefill: { progress.append([$0, $1]) }, step: Self.greedy)
        #expect(source.evaluations.map(\.count) == [3, 3, 2])
        #expect(progress == [[3, 8], [6, 8], [8, 8]])
        // A last chunk of a single token is as good as any (a row's logits do not depend on
        // the rows evaluated with it: BatchedEvaluationTests).
        progress = []
        _ = try loop.run(prompt: [1, 0, 0, 0, 0, 0, 0], onPrefill: { progress.append([$0, $1]) }, step: Self.greedy)
        #expect(progress == [[3, 7], [6, 7], [7, 7]])
        // Reused tokens are not counted.
        progress = []
        _ = try loop.run(prompt: [1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1], onPrefill: { progress.append([$0, $1]) }, step: Self.greedy)
        #expect(progress == [[3, 4], [4, 4]])
        // Prefill chunks are not decode passes: one token, none after it.
        let outcome = try loop.run(prompt: [0, 0, 0, 0, 0, 0, 0], step: Self.greedy)
        #expect(source.evaluations.suffix(3).map(\.count) == [3, 3, 1] && outcome.stats.decodePasses == 0)
    }

    @Test func maxTokensEndsWithoutComputingTheLastToken() throws {
        let source = Self.counting()
        var asked = 0
        let loop = TokenLoop(source: source, maxTokens: 3, isEndOfGeneration: { $0 == 7 })
        let outcome = try loop.run(prompt: [0], reasonAtLimit: { asked += 1; return .constraint }, step: Self.greedy)
        #expect(outcome.tokens == [1, 2, 3])
        #expect(outcome.finishReason == .constraint && asked == 1)
        #expect(source.evaluations == [[0], [1], [2]])
    }

    @Test func forcedTokensAreOneStep() throws {
        let source = Self.counting()
        let loop = TokenLoop(source: source, maxTokens: 5, isEndOfGeneration: { $0 == 7 })
        var remaining: [Int] = []
        let outcome = try loop.run(prompt: [0]) { logits, context in
            remaining.append(context.remainingTokens)
            return context.completionTokens == 0 ? .append(1, forced: [5, 5]) : Self.greedy(&logits, context)
        }
        // [1, 5, 5] in one evaluation, then 6, then the end of generation (7).
        #expect(source.evaluations == [[0], [1, 5, 5], [6]])
        #expect(outcome.tokens == [1, 5, 5, 6])
        #expect(outcome.stats.decodePasses == 2)
        #expect(remaining == [5, 2, 1])
        #expect(outcome.finishReason == .stop)
    }

    /// A provisional token is computed in the pass of the tokens before it: kept without a
    /// pass of its own when the next step chooses it, taken out of the source when it does
    /// not; the tokens are those of the steps alone either way.
    @Test func provisionalTokensSavePassesAndChangeNoToken() throws {
        // After 1 the step proposes 2 (what the model chooses next); after 3 it proposes 5
        // (the model chooses 4); after 5 it proposes 7, the end of generation, which is never
        // computed.
        func proposing(_ logits: inout [Float], _ context: TokenLoop<ScriptedSource>.Context) -> TokenStepDecision {
            let token = logits.indices.max { logits[$0] < logits[$1] }!
            switch token {
            case 1: return .append(1, provisional: 2)
            case 3: return .append(3, provisional: 5)
            case 5: return .append(5, provisional: 7)
            default: return .append(token)
            }
        }
        let source = Self.counting()
        let loop = TokenLoop(source: source, maxTokens: 100, isEndOfGeneration: { $0 == 7 })
        var logitRows: [Int] = []
        let outcome = try loop.run(prompt: [0], step: proposing)
        #expect(outcome.tokens == [1, 2, 3, 4, 5, 6])
        #expect(outcome.finishReason == .stop)
        #expect(source.evaluations == [[0], [1, 2], [3, 5], [4], [5], [6]])
        // The rejected 5 left the source: it holds the prompt and the reply.
        #expect(source.held == [0, 1, 2, 3, 4, 5, 6])
        #expect(outcome.stats.decodePasses == 5 && outcome.stats.passesSavedByProvisionalTokens == 1)
        // Without proposals: a pass per token.
        let plain = try TokenLoop(source: Self.counting(), maxTokens: 100, isEndOfGeneration: { $0 == 7 }).run(prompt: [0], step: Self.greedy)
        #expect(plain.tokens == outcome.tokens && plain.stats.decodePasses == 6)
        // The driver's side: two rows for a pass that ends with a provisional token.
        var driven = TokenLoop(source: Self.counting(), maxTokens: 100, isEndOfGeneration: { $0 == 7 })
        try driven.begin(prompt: [0])
        var logits: [Float] = []
        while let tokens = driven.nextTokens() {
            logitRows.append(driven.logitRows)
            try driven.source.evaluate(tokens, logitRows: driven.logitRows, into: &logits)
            #expect(logits.count == 8 * driven.logitRows)
            driven.advance(&logits, isCancelled: { false }, reasonAtLimit: { .maxTokens }, onPrefill: nil, step: proposing)
        }
        #expect(logitRows == [1, 2, 2, 1, 1, 1])
        #expect(driven.outcome.tokens == outcome.tokens)
    }

    /// A provisional token that the budget or the end would leave out is not computed, and
    /// one computed when the run ends (cancelled, at its limit) leaves the source.
    @Test func provisionalTokensRespectTheLimitsAndLeaveWithTheRun() throws {
        let proposeNext: (inout [Float], TokenLoop<ScriptedSource>.Context) -> TokenStepDecision = { logits, _ in
            let token = logits.indices.max { logits[$0] < logits[$1] }!
            return .append(token, provisional: (token + 1) % 8)
        }
        // maxTokens 2: after 1 the provisional 2 fits; after 2 (kept), 3 would be the third token.
        let source = Self.counting()
        let outcome = try TokenLoop(source: source, maxTokens: 2, isEndOfGeneration: { $0 == 7 }).run(prompt: [0], step: proposeNext)
        #expect(outcome.tokens == [1, 2] && outcome.finishReason == .maxTokens)
        #expect(source.evaluations == [[0], [1, 2]])
        #expect(source.held == [0, 1, 2])
        // Cancelled after the pass that computed a provisional token: it is taken out.
        let cancelled = Self.counting()
        var steps = 0
        let interrupted = try TokenLoop(source: cancelled, maxTokens: 100, isEndOfGeneration: { $0 == 7 })
            .run(prompt: [0], isCancelled: { steps == 1 }) { logits, context in
                steps += 1
                return proposeNext(&logits, context)
            }
        #expect(interrupted.tokens == [1] && interrupted.finishReason == .interrupted)
        #expect(cancelled.evaluations == [[0], [1, 2]] && cancelled.held == [0, 1])
    }

    @Test func anOpeningIsPrefilledAndCounted() throws {
        let source = Self.counting()
        let loop = TokenLoop(source: source, maxTokens: 3, isEndOfGeneration: { $0 == 7 })
        let outcome = try loop.run(prompt: [0], opening: [4], step: Self.greedy)
        #expect(source.evaluations.first == [0, 4])
        #expect(outcome.tokens == [4, 5, 6])
        #expect(outcome.stats.promptTokens == 1 && outcome.stats.completionTokens == 3)
    }

    @Test func aFullContextEndsWithTheTokenThatDidNotFit() throws {
        let source = ScriptedSource(contextLength: 4) { _ in [0, 1] }
        let loop = TokenLoop(source: source, maxTokens: 100, isEndOfGeneration: { _ in false })
        let outcome = try loop.run(prompt: [0, 0], step: Self.greedy)
        // Positions 2 and 3 computed; the third token has no room.
        #expect(outcome.tokens == [1, 1, 1])
        #expect(outcome.finishReason == .exceededContext)
        #expect(source.count == 4)
        #expect(throws: ModelError.contextOverflow(needed: 5, available: 4)) {
            try loop.run(prompt: [0, 0, 0, 0, 0], step: Self.greedy)
        }
        #expect(throws: ModelError.emptyPrompt) { try loop.run(prompt: [], step: Self.greedy) }
    }

    @Test func cancellationIsCheckedBeforeEachStep() throws {
        let source = Self.counting()
        let loop = TokenLoop(source: source, maxTokens: 100, isEndOfGeneration: { _ in false })
        var steps = 0
        let outcome = try loop.run(prompt: [0], isCancelled: { steps == 2 }) { logits, context in
            steps += 1
            return Self.greedy(&logits, context)
        }
        #expect(outcome.tokens == [1, 2])
        #expect(outcome.finishReason == .interrupted)
    }

    @Test func stepsFinishWithOrWithoutTokens() throws {
        let loop = TokenLoop(source: Self.counting(), maxTokens: 100, isEndOfGeneration: { _ in false })
        let finished = try loop.run(prompt: [0]) { _, context in
            context.completionTokens < 2 ? .append(3) : .finish(.constraint)
        }
        #expect(finished.tokens == [3, 3] && finished.finishReason == .constraint)
        let source = Self.counting()
        let appended = try TokenLoop(source: source, maxTokens: 100, isEndOfGeneration: { _ in false })
            .run(prompt: [0]) { _, _ in .appendAndFinish(2, forced: [3], .stop) }
        #expect(appended.tokens == [2, 3] && appended.finishReason == .stop)
        #expect(source.evaluations == [[0]])
    }
}
