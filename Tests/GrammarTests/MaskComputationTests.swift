import Foundation
import Testing
@testable import TypesetGrammar

/// Masks computed on first use, in the background or up front are the same masks: a
/// generation cannot tell when its grammar computed them.
@Suite struct MaskComputationTests {
    static let vocabulary = MaskSharingTests.vocabulary

    static let schemas = [
        #"{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string","maxLength":4}},"n":{"type":"integer","minimum":-3,"maximum":120}},"required":["name","n"]}"#,
        ##"{"anyOf":[{"type":"string","pattern":"^a(b|é)*$"},{"type":"array","items":{"$ref":"#"}},{"enum":[null,true,"note"]}]}"##,
    ]
    static let instances = [
        [#"{"name":"ab","tags":["abc","é"],"n":12}"#, #"{"name":"","n":-3}"#, #"{"tags":[],"name":"a\"b","n":120}"#],
        [#""abéb""#, #"[["ab"],[],null,"note"]"#, #"[true]"#],
    ]

    /// The masks a matcher sees along `text`, byte by byte where tokens are not available:
    /// each position's full mask, as bits.
    static func masks(along text: String, in grammar: CompiledGrammar) -> [[UInt32]] {
        var matcher = GrammarMatcher(grammar)
        var mask = TokenBitmask(vocabularySize: grammar.vocabulary.size)
        var result: [[UInt32]] = []
        for byte in Array(text.utf8) {
            matcher.fillNextTokenMask(into: &mask)
            result.append(mask._words)
            guard matcher.accept(bytes: [byte]) else { break }
        }
        matcher.fillNextTokenMask(into: &mask)
        result.append(mask._words)
        return result
    }

    @Test(arguments: [MaskComputation.onFirstUse, .onFirstUseAndInBackground])
    func laterMasksAreTheUpfrontMasks(_ computation: MaskComputation) throws {
        for (schema, texts) in zip(Self.schemas, Self.instances) {
            let upfront = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
            let later = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary, maskComputation: computation)
            #expect(upfront.statistics.computedPositions == upfront.statistics.positions)
            if computation == .onFirstUse { #expect(later.statistics.computedPositions == 0) }
            for text in texts {
                #expect(Self.masks(along: text, in: later) == Self.masks(along: text, in: upfront), "\(text)")
            }
            MaskChecks.expectEveryMaskMatchesAFullWalk(later)
            if computation == .onFirstUse {
                // Only what the walks needed was computed, each at a matcher's request.
                let statistics = later.statistics
                #expect(statistics.onDemandPositions == statistics.computedPositions - statistics.sharedPositions)
                #expect(statistics.onDemandPositions > 0 && statistics.backgroundPositions == 0)
                #expect(later.positionSummaries.allSatisfy { $0.isComputedLate })
            }
        }
    }

    @Test func theBackgroundComputesEveryMask() async throws {
        let grammar = try CompiledGrammar(
            Grammar(jsonSchema: Self.schemas[0]), vocabulary: Self.vocabulary, maskComputation: .onFirstUseAndInBackground)
        // The root's first mask is there when compilation returns (computed then, not late).
        #expect(grammar.positionSummaries.contains { $0.rule == "root" && $0.state == 0 && !$0.isComputedLate })
        let clock = ContinuousClock(), deadline = clock.now + .seconds(30)
        while grammar.statistics.computedPositions < grammar.statistics.positions, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let statistics = grammar.statistics
        #expect(statistics.computedPositions == statistics.positions)
        MaskChecks.expectEveryMaskMatchesAFullWalk(grammar)
        let upfront = try CompiledGrammar(Grammar(jsonSchema: Self.schemas[0]), vocabulary: Self.vocabulary)
        #expect(statistics.maskBytes == upfront.statistics.maskBytes)
        #expect(statistics.acceptedTokens == upfront.statistics.acceptedTokens)
    }

    /// With nothing computed before returning but the root's first mask, the background
    /// thread computes the others, in the order a generation meets them.
    @Test func theBackgroundThreadFillsTheRest() async throws {
        let compiled = try CompiledGrammar(Grammar(jsonSchema: Self.schemas[0]), vocabulary: Self.vocabulary, maskComputation: .onFirstUse)
        let masks = PositionMasks(automaton: compiled.automaton, vocabulary: Self.vocabulary)
        masks.computeRestInBackground(synchronousSeconds: 0)
        let clock = ContinuousClock(), deadline = clock.now + .seconds(30)
        while masks.known().count < masks.positionCount, clock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(masks.known().count == masks.positionCount)
        #expect(masks.totals.background == masks.slotCount - 1)
        #expect(masks.known().first { $0.rule == Int(compiled.automaton.root) && $0.state == 0 }?.isLate == false)
    }

    /// Matchers on several threads of one grammar computing its masks on first use, at once,
    /// all see the masks a grammar computed up front gives.
    @Test func concurrentMatchersAgree() async throws {
        let schema = Self.schemas[0], texts = Self.instances[0]
        let upfront = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary)
        let expected = texts.map { Self.masks(along: $0, in: upfront) }
        for _ in 0 ..< 8 {
            let shared = try CompiledGrammar(Grammar(jsonSchema: schema), vocabulary: Self.vocabulary, maskComputation: .onFirstUse)
            let results = await withTaskGroup(of: [[[UInt32]]].self) { group in
                for _ in 0 ..< 4 { group.addTask { texts.map { Self.masks(along: $0, in: shared) } } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0 == expected })
        }
    }
}
