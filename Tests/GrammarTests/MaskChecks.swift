import Testing
@testable import TypesetGrammar

/// Checks shared by the mask suites: every stored mask against a fresh walk of every token.
enum MaskChecks {
    /// The mask as plain sets, whatever its storage form.
    static func sets(_ mask: PositionMask, vocabulary: GrammarVocabulary) -> (accepted: [Int32], undecided: [Int32]) {
        let accepted: [Int32]
        switch mask.accepted {
        case .listed(let list): accepted = list
        case .allExcept(let others):
            let excluded = Set(others)
            accepted = vocabulary.tokenBytes.indices.filter { !vocabulary.tokenBytes[$0].isEmpty && !excluded.contains(Int32($0)) }.map { Int32($0) }
        case .bitset(let words):
            accepted = (0 ..< vocabulary.size).filter { words[$0 >> 5] & (1 << UInt32($0 & 31)) != 0 }.map { Int32($0) }
        }
        return (accepted.sorted(), mask.undecided.sorted())
    }

    /// Every stored mask (shared, sliced or walked) equals the one a walk of the whole
    /// vocabulary trie gives at that position, with no slice and no sharing.
    static func expectEveryMaskMatchesAFullWalk(_ compiled: CompiledGrammar, sourceLocation: SourceLocation = #_sourceLocation) {
        for position in compiled.masks.known() {
            do {
                let rule = position.rule, state = position.state, mask = position.mask
                let fresh = PositionMask.compute(
                    rule: Int32(rule), state: Int32(state), count: Int32(position.count ?? 0), exactLength: position.exactLength, automaton: compiled.automaton,
                    vocabulary: compiled.vocabulary)
                let stored = sets(mask, vocabulary: compiled.vocabulary), expected = sets(fresh, vocabulary: compiled.vocabulary)
                let position = "\(compiled.automaton.names[rule])@\(state)" + (position.count.map { " count \($0)" } ?? "")
                // Differences only (whole sets run to thousands of tokens).
                let wronglyAccepted = Set(stored.accepted).subtracting(expected.accepted).sorted()
                let missing = Set(expected.accepted).subtracting(stored.accepted).sorted()
                #expect(wronglyAccepted.isEmpty && missing.isEmpty,
                        "accepted at \(position): \(wronglyAccepted.count) extra \(wronglyAccepted.prefix(8)), \(missing.count) missing \(missing.prefix(8))",
                        sourceLocation: sourceLocation)
                #expect(stored.undecided == expected.undecided, "undecided at \(position)", sourceLocation: sourceLocation)
                #expect(mask.rejectedCount == fresh.rejectedCount, "rejected at \(position)", sourceLocation: sourceLocation)
                #expect(mask.acceptedCount == fresh.acceptedCount, "accepted count at \(position)", sourceLocation: sourceLocation)
            }
        }
    }
}
