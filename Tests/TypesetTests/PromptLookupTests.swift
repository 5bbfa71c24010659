import Testing
@testable import Typeset

/// Prompt lookup's drafts, and the loop running on them: the same tokens as without drafts,
/// in fewer passes where the reply repeats what came before.
@Suite struct PromptLookupTests {
    @Test func draftsWhatFollowedTheLatestOccurrenceOfTheLongestSuffix() {
        var lookup = PromptLookup(longestMatch: 3, shortestMatch: 2, maximumLength: 8)
        // "9 1 2 3" occurs at 1 and "1 2 3" at 5: the longest suffix that occurs before (3 tokens)
        // wins over the latest shorter one; what followed its latest occurrence is drafted.
        let history = [0, 9, 1, 2, 3, 4, 5, 1, 2, 3, 7, 8, 6, 1, 2, 3]
        #expect(lookup.draft(after: history, limit: 3) == [7, 8, 6])
        #expect(lookup.draft(after: history, limit: 100) == [7, 8, 6, 1])   // the current length, 4
        // Only two tokens match: [5, 1] occurs once before the end.
        #expect(lookup.draft(after: [5, 1, 4, 4, 5, 1], limit: 2) == [4, 4])
        // No suffix of 2 or more occurs before: nothing.
        #expect(lookup.draft(after: [1, 2, 3, 4], limit: 4) == [])
        #expect(lookup.draft(after: [1], limit: 4) == [])
        #expect(lookup.draft(after: history, limit: 0) == [])
        // A repeated token continues itself.
        #expect(lookup.draft(after: [5, 5, 5], limit: 4) == [5])
    }

    @Test func theLengthFollowsWhatTheStepsKeep() {
        var lookup = PromptLookup(maximumLength: 6)
        let history = Array(0 ..< 20) + Array(0 ..< 3)
        #expect(lookup.draft(after: history, limit: 50).count == 4)
        lookup.record(drafted: 4, kept: 4)
        #expect(lookup.draft(after: history, limit: 50).count == 5)
        lookup.record(drafted: 5, kept: 5)
        lookup.record(drafted: 6, kept: 6)
        #expect(lookup.draft(after: history, limit: 50).count == 6)   // at most maximumLength
        lookup.record(drafted: 6, kept: 2)
        #expect(lookup.draft(after: history, limit: 50).count == 3)   // what was kept, and one
        // A draft of which nothing is kept pauses drafting: 1 step, then 2, then 4.
        lookup.record(drafted: 3, kept: 0)
        #expect(lookup.draft(after: history, limit: 50).isEmpty)
        #expect(lookup.draft(after: history, limit: 50).count == 1)
        lookup.record(drafted: 1, kept: 0)
        #expect(lookup.draft(after: history, limit: 50).isEmpty && lookup.draft(after: history, limit: 50).isEmpty)
        #expect(!lookup.draft(after: history, limit: 50).isEmpty)
        lookup.record(drafted: 1, kept: 1)
        lookup.record(drafted: 2, kept: 0)
        #expect(lookup.draft(after: history, limit: 50).isEmpty)   // the misses' count began again
        #expect(!lookup.draft(after: history, limit: 50).isEmpty)
    }

    /// Logits that repeat a pattern with a variation, so some drafts are right and some wrong:
    /// 1 2 3 4 5 6, but after every third 6 comes 8, then 1; a close second for sampling.
    static func repeatingLogits(_ held: [Int]) -> [Float] {
        var logits = [Float](repeating: 0, count: 10)
        let sixes = held.filter { $0 == 6 }.count
        let next: Int = switch held.last! {
        case 6: sixes % 3 == 0 ? 8 : 1
        case 8: 1
        default: held.last! % 6 + 1
        }
        logits[next] = 2
        logits[(next + 3) % 10] = 1.5
        return logits
    }

    static func repeating(contextLength: Int = 200) -> ScriptedSource {
        ScriptedSource(contextLength: contextLength, logits: repeatingLogits)
    }

    static func greedy(_ logits: inout [Float], _ context: TokenStepContext) -> TokenStepDecision {
        .append(logits.indices.max { logits[$0] < logits[$1] }!)
    }

    @Test func greedyTokensAreTheSameInFewerPasses() throws {
        let plain = TokenLoop(source: Self.repeating(), maxTokens: 60, isEndOfGeneration: { $0 == 9 })
        var drafted = plain
        drafted.lookup = PromptLookup()
        let without = try plain.run(prompt: [1, 2], step: Self.greedy)
        let with = try drafted.run(prompt: [1, 2], step: Self.greedy)
        #expect(with.tokens == without.tokens && with.finishReason == without.finishReason)
        #expect(without.stats.decodePasses == 59)
        #expect(with.stats.decodePasses < 40, "passes: \(with.stats.decodePasses)")
        #expect(with.stats.draftedTokens > with.stats.acceptedDraftTokens && with.stats.acceptedDraftTokens > 20)
        // Every kept token but a last one (which nothing reads) saved its own pass.
        #expect((59 ... 60).contains(with.stats.decodePasses + with.stats.acceptedDraftTokens))
        // The source holds what was appended (the last token too when it was drafted), no
        // drafted token left over.
        #expect(([1, 2] + with.tokens).starts(with: drafted.source.held) && drafted.source.held.count >= 1 + with.tokens.count)
    }

    /// A source with recurrent state that cannot return to every position (here only to
    /// multiples of 16, and to the checkpoint the loop asks for 4 tokens before the prompt's
    /// end): a refused draft leaves it holding fewer tokens than the loop's history, and the
    /// loop computes the missing ones again before the next step's. The tokens are the plain
    /// run's, and the source ends holding the run's tokens.
    @Test func aSourceThatKeepsFewerTokensIsCaughtUpWith() throws {
        let plain = TokenLoop(source: Self.repeating(), maxTokens: 60, isEndOfGeneration: { $0 == 9 })
        let source = Self.repeating()
        source.restorable = Set(stride(from: 16, to: 200, by: 16))
        var drafted = TokenLoop(source: source, maxTokens: 60, isEndOfGeneration: { $0 == 9 })
        drafted.lookup = PromptLookup()
        let prompt = [1, 2, 3, 4, 5, 6, 1, 2, 3]
        let without = try plain.run(prompt: prompt, step: Self.greedy)
        let with = try drafted.run(prompt: prompt, step: Self.greedy)
        #expect(with.tokens == without.tokens)
        #expect(with.stats.draftedTokens > with.stats.acceptedDraftTokens, "no draft was refused")
        #expect(source.checkpoints == [prompt.count - 4])
        // Passes computed again what the source had to let go of: more tokens evaluated than
        // by the same drafted run on a source that keeps every position.
        var everyPosition = TokenLoop(source: Self.repeating(), maxTokens: 60, isEndOfGeneration: { $0 == 9 })
        everyPosition.lookup = PromptLookup()
        #expect(try everyPosition.run(prompt: prompt, step: Self.greedy).tokens == with.tokens)
        let evaluated = { (source: ScriptedSource) in source.evaluations.reduce(0) { $0 + $1.count } }
        #expect(evaluated(source) > evaluated(everyPosition.source))
        #expect((prompt + with.tokens).starts(with: source.held))
    }

    @Test func sampledTokensAreTheSameForTheSameSeed() throws {
        for seed: UInt64 in [1, 2, 3] {
            func sampled(_ lookup: PromptLookup?) throws -> [Int] {
                var sampler = Sampler(options: SamplingOptions(temperature: 1, seed: seed))
                var loop = TokenLoop(source: Self.repeating(), maxTokens: 80, isEndOfGeneration: { $0 == 9 })
                loop.lookup = lookup
                return try loop.run(prompt: [1, 2]) { logits, context in .append(sampler.sample(&logits, history: context.history)!) }.tokens
            }
            #expect(try sampled(PromptLookup()) == sampled(nil), "seed \(seed)")
        }
    }

    @Test func aRefusedDraftPausesTheNextOne() throws {
        // The prompt holds 1 2 3 and 2 9 5; the model writes 1 2 9 4 4 …. After 1 2 the lookup
        // drafts 3 2 9 5, refused at once (9); the pass after it drafts nothing, although the
        // history then ends with 2 9, which occurred before.
        let prompt = [1, 2, 3, 2, 9, 5]
        let source = ScriptedSource(contextLength: 100) { held in
            var logits = [Float](repeating: 0, count: 10)
            let reply = [1, 2, 9]
            logits[held.count - prompt.count < reply.count ? reply[held.count - prompt.count] : 4] = 1
            return logits
        }
        var loop = TokenLoop(source: source, maxTokens: 8, isEndOfGeneration: { $0 == 7 })
        loop.lookup = PromptLookup()
        let outcome = try loop.run(prompt: prompt, step: Self.greedy)
        #expect(outcome.tokens == [1, 2, 9, 4, 4, 4, 4, 4])
        #expect(Array(source.evaluations.prefix(4)) == [prompt, [1], [2, 3, 2, 9, 5], [9]])
    }

    @Test func forcedTokensAfterAKeptDraftDropTheRest() throws {
        // The step forces [0] after each 4 it chooses: a draft through a 4 is cut there.
        func step(_ logits: inout [Float], _ context: TokenStepContext) -> TokenStepDecision {
            let token = logits.indices.max { logits[$0] < logits[$1] }!
            return token == 4 ? .append(token, forced: [0]) : .append(token)
        }
        let source = ScriptedSource(contextLength: 200) { held in
            var logits = [Float](repeating: 0, count: 10)
            logits[held.last! == 0 ? 1 : held.last! % 5 + 1] = 1   // 0 1 2 3 4 | 0 1 2 3 4 | …
            return logits
        }
        var loop = TokenLoop(source: source, maxTokens: 40, isEndOfGeneration: { $0 == 9 })
        let plain = try loop.run(prompt: [0, 1], step: step)
        loop.lookup = PromptLookup()
        let drafted = try loop.run(prompt: [0, 1], step: step)
        #expect(drafted.tokens == plain.tokens)
        #expect(drafted.stats.acceptedDraftTokens > 0)
        #expect(([0, 1] + drafted.tokens).starts(with: source.held) && source.held.count >= 1 + drafted.tokens.count)
    }

    @Test func draftsStopAtTheLimits() throws {
        // Drafts never run past maxTokens or the context: the last pass is not longer than
        // what may still be appended.
        let source = Self.repeating()
        var loop = TokenLoop(source: source, maxTokens: 25, isEndOfGeneration: { $0 == 9 })
        loop.lookup = PromptLookup(maximumLength: 8)
        let outcome = try loop.run(prompt: [1, 2, 3, 4, 5, 6, 1, 2], step: Self.greedy)
        #expect(outcome.tokens.count == 25 && outcome.finishReason == .maxTokens)
        var appended = 8
        for tokens in source.evaluations.dropFirst() {
            #expect(appended + tokens.count <= 8 + 25)
            appended += 1
        }
        let small = Self.repeating(contextLength: 20)
        var bounded = TokenLoop(source: small, maxTokens: 100, isEndOfGeneration: { $0 == 9 })
        bounded.lookup = PromptLookup()
        let cut = try bounded.run(prompt: [1, 2, 3, 4, 5, 6, 1, 2], step: Self.greedy)
        #expect(cut.finishReason == .exceededContext && small.held.count <= 20)
    }
}
