import Dispatch

/// A grammar compiled against a vocabulary: the pushdown automaton plus, for every
/// position a matcher can stand at, the token mask (computed up front, or on first use and
/// then kept: ``MaskComputation``). Shareable: any number of `GrammarMatcher`s (one per
/// generation) can run on one compiled grammar, on any threads.
public final class CompiledGrammar: Sendable {
    /// Sizes and timings, for `typeset grammar compile` and the benchmarks.
    public struct Statistics: Sendable {
        public var rules: Int
        public var automatonStates: Int
        /// Positions with a precomputed mask (states a matcher can stand at).
        public var positions: Int
        /// Of `positions`, those whose mask is another rule's, shared rather than computed
        /// (a terminal rule with the same automaton and FOLLOW set as an earlier one).
        public var sharedPositions: Int
        /// Of the computed positions, those that accepted a slice of plain tokens wholesale
        /// and walked only the other tokens.
        public var slicedPositions: Int
        public var acceptedTokens: Int
        public var rejectedTokens: Int
        public var undecidedTokens: Int
        /// Bytes of all stored masks (shared masks counted once).
        public var maskBytes: Int
        public var automatonSeconds: Double
        /// Time spent computing masks, summed over the positions computed so far.
        public var maskSeconds: Double
        /// Positions whose mask is computed so far (all of them up front).
        public var computedPositions: Int
        /// Of those, the ones computed when a matcher first stood there, and in the background.
        public var onDemandPositions: Int
        public var backgroundPositions: Int
    }

    /// One position's counts, for researchers (`typeset grammar compile --json`).
    public struct PositionSummary: Sendable {
        public var rule: String
        public var state: Int
        public var accepted: Int
        public var rejected: Int
        public var undecided: Int
        public var storageBytes: Int
        /// "listed", "allExcept" or "bitset".
        public var form: String
        /// Time spent computing the mask, in microseconds (0 when shared).
        public var computeMicroseconds: Double
        /// Whether the mask is an identical earlier rule's (not computed for this rule).
        public var isShared: Bool
        /// Accepted tokens taken wholesale from a slice of plain tokens (string characters
        /// only) because the position reads every plain word that long; the walk covered
        /// only the others. 0 when every token was walked.
        public var wholesaleAccepted: Int
        /// Whether the mask was computed after compilation (on first use or in the background).
        public var isComputedLate: Bool
        /// In a rule that counts a string's characters (`minLength`, `maxLength`): the
        /// smallest character count this mask serves (counts that look alike as far as one
        /// token reads share a mask). `nil` in other rules.
        public var count: Int?
    }

    public let vocabulary: GrammarVocabulary
    let automaton: PushdownAutomaton
    /// Shortest completions per position (for budgeted generation).
    let completionDistances: CompletionDistances
    /// The positions' token masks.
    let masks: PositionMasks
    /// How the masks are computed.
    public let maskComputation: MaskComputation
    private let automatonSeconds: Double

    /// Bytes this grammar holds, approximately: its token masks (those computed so far), the
    /// automaton's transition tables (1 KiB per state) and the completion distances. What
    /// ``CompiledGrammarCache`` counts. O(rules).
    public var byteCount: Int {
        let automatonBytes = automaton.rules.reduce(0) { total, rule in
            total + rule.transitions.count * 4 + rule.stateCount * 2 + rule.ruleEdges.reduce(0) { $0 + $1.count * 8 }
        }
        let counterBytes = automaton.counters.reduce(0) { total, counter in total + (counter.map { $0.distances.count * 4 + $0.isUneven.count } ?? 0) }
        return masks.totals.bytes + automatonBytes + counterBytes + completionDistances.distance.reduce(0) { $0 + $1.count * 4 }
    }

    /// Compiles `grammar`'s automaton and computes its token masks over `vocabulary`, up front
    /// or later as `maskComputation` says.
    ///
    /// - Throws: `GrammarError.budgetExceeded` (the automaton within `budget.seconds` and
    ///   `budget.bytes`, or the time left of them when called inside a compilation that began
    ///   with the schema; masks computed up front within `budget.maskSeconds`),
    ///   `.leftRecursion`, `.emptyLanguage`.
    /// - Complexity: one vocabulary-trie walk per position, pruned at the first rejected byte
    ///   (up front, or when the position is first needed).
    public convenience init(
        _ grammar: Grammar, vocabulary: GrammarVocabulary, budget: CompilationBudget = CompilationBudget(),
        maskComputation: MaskComputation = .upfront
    ) throws(GrammarError) {
        let started = DispatchTime.now().uptimeNanoseconds
        let (automaton, completionDistances) = try CompilationMeter.metering(budget) { () throws(GrammarError) in
            let automaton = try PushdownAutomaton(grammar, stateLimit: budget.automatonStates, threads: budget.threads)
            return (automaton, try CompletionDistances(automaton))
        }
        let automatonSeconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let masks = PositionMasks(automaton: automaton, vocabulary: vocabulary)
        switch maskComputation {
        case .upfront: try masks.computeAll(started: started, seconds: automatonSeconds + budget.maskSeconds)
        case .onFirstUse: break
        case .onFirstUseAndInBackground: masks.computeRestInBackground()
        }
        self.init(vocabulary: vocabulary, automaton: automaton, completionDistances: completionDistances, masks: masks,
                  maskComputation: maskComputation, automatonSeconds: automatonSeconds)
    }

    /// A grammar from its parts (an archive's).
    init(
        vocabulary: GrammarVocabulary, automaton: PushdownAutomaton, completionDistances: CompletionDistances, masks: PositionMasks,
        maskComputation: MaskComputation, automatonSeconds: Double
    ) {
        self.vocabulary = vocabulary
        self.automaton = automaton
        self.completionDistances = completionDistances
        self.masks = masks
        self.maskComputation = maskComputation
        self.automatonSeconds = automatonSeconds
    }

    /// Sizes and timings so far (masks computed later add to them).
    public var statistics: Statistics {
        var statistics = Statistics(
            rules: automaton.rules.count, automatonStates: automaton.stateCount, positions: masks.positionCount, sharedPositions: 0,
            slicedPositions: 0, acceptedTokens: 0, rejectedTokens: 0, undecidedTokens: 0, maskBytes: 0,
            automatonSeconds: automatonSeconds, maskSeconds: 0, computedPositions: 0, onDemandPositions: 0, backgroundPositions: 0)
        for position in masks.known() {
            statistics.computedPositions += 1
            statistics.acceptedTokens += position.mask.acceptedCount
            statistics.rejectedTokens += position.mask.rejectedCount
            statistics.undecidedTokens += position.mask.undecided.count
            if position.isShared { statistics.sharedPositions += 1 } else if position.mask.wholesaleCount > 0 { statistics.slicedPositions += 1 }
        }
        let totals = masks.totals
        statistics.maskBytes = totals.bytes
        statistics.maskSeconds = totals.seconds
        statistics.onDemandPositions = totals.onDemand
        statistics.backgroundPositions = totals.background
        return statistics
    }

    /// The length in bytes of the grammar's shortest sentence (for a schema: its shortest
    /// value as the grammar writes it); `Int.max` when it has none.
    public var shortestSentenceLength: Int {
        let length = completionDistances.distance[Int(automaton.root)][0]
        return length == CompletionDistances.unreachable ? Int.max : Int(length)
    }

    /// A shortest sentence of the grammar (for a schema: a shortest value, with the smallest
    /// bytes where it has a choice), or `nil` when it is longer than `maximumBytes`. What a
    /// generation needs at the least, so a token budget too small for any value can be told
    /// before generating.
    public func shortestSentence(maximumBytes: Int = 1 << 16) -> [UInt8]? {
        completionDistances.shortestSentence(of: automaton.root, in: automaton, maximumBytes: maximumBytes)
    }

    /// One rule of the pushdown automaton, for researchers.
    public struct RuleSummary: Sendable {
        public var name: String
        /// States of the rule's deterministic automaton.
        public var states: Int
        /// Rules it calls.
        public var calls: [String]
        /// Whether it calls no rule (its automaton alone decides it).
        public var isTerminal: Bool
        public var isNullable: Bool
        /// The bytes that can start it and follow it, as byte classes.
        public var first: String
        public var follow: String
    }

    public var ruleSummaries: [RuleSummary] {
        automaton.rules.indices.filter { automaton.reachable[$0] }.map { index in
            let dfa = automaton.rules[index]
            var calls: [String] = []
            for edges in dfa.ruleEdges {
                for edge in edges where !calls.contains(automaton.names[Int(edge.rule)]) { calls.append(automaton.names[Int(edge.rule)]) }
            }
            return RuleSummary(name: automaton.names[index], states: dfa.stateCount, calls: calls, isTerminal: automaton.isTerminal[index],
                               isNullable: automaton.nullable[index], first: automaton.first[index].description,
                               follow: automaton.follow[index].description)
        }
    }

    /// Every position whose mask is computed so far, in rule and state order.
    public var positionSummaries: [PositionSummary] {
        masks.known().map { position in
            let mask = position.mask
            let form: String
            switch mask.accepted {
            case .listed: form = "listed"
            case .allExcept: form = "allExcept"
            case .bitset: form = "bitset"
            }
            return PositionSummary(
                rule: automaton.names[position.rule], state: position.state, accepted: mask.acceptedCount, rejected: mask.rejectedCount,
                undecided: mask.undecided.count, storageBytes: mask.storageBytes, form: form,
                computeMicroseconds: position.isShared ? 0 : Double(mask.computeNanoseconds) / 1000,
                isShared: position.isShared, wholesaleAccepted: mask.wholesaleCount, isComputedLate: position.isLate,
                count: position.count)
        }
    }
}

/// A position mask's meaning (without its statistics), for keeping one copy of equal masks.
struct MaskContent: Hashable {
    let accepted: PositionMask.Accepted
    let undecided: [Int32]
}

/// What decides a terminal rule's masks: its automaton (a terminal rule has no rule edges),
/// its length counter and the bytes that may follow it. Hashed as ``DFA`` hashes (the size
/// and the first rows); tables are compared whole only when the hashes agree.
struct TerminalRuleSignature: Hashable {
    let automaton: DFA
    let follow: ByteSet
    let counter: LengthCounter?
}
