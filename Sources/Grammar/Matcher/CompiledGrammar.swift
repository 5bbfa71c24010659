import Dispatch

/// A grammar compiled against a vocabulary: the pushdown automaton plus, for every
/// position a matcher can stand at, the precomputed token mask. Immutable and shareable:
/// any number of `GrammarMatcher`s (one per generation) can run on one compiled grammar.
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
        public var maskSeconds: Double
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
    }

    public let vocabulary: GrammarVocabulary
    public let statistics: Statistics
    let automaton: PushdownAutomaton
    /// Shortest completions per position (for budgeted generation).
    let completionDistances: CompletionDistances
    /// `masks[rule][state]`, nil where a matcher never stands.
    let masks: [[PositionMask?]]
    /// Rules whose masks are an earlier identical rule's.
    let sharedRules: Set<Int>

    /// Bytes this grammar holds, approximately: its token masks, the automaton's transition
    /// tables (1 KiB per state) and the completion distances. What ``CompiledGrammarCache``
    /// counts. O(rules).
    public var byteCount: Int {
        let automatonBytes = automaton.rules.reduce(0) { total, rule in
            total + rule.transitions.count * 4 + rule.stateCount * 2 + rule.ruleEdges.reduce(0) { $0 + $1.count * 8 }
        }
        return statistics.maskBytes + automatonBytes + completionDistances.distance.reduce(0) { $0 + $1.count * 4 }
    }

    /// Compiles `grammar`'s automaton and precomputes its token masks over `vocabulary`.
    ///
    /// - Throws: `GrammarError.budgetExceeded` (the automaton within `budget.seconds` and
    ///   `budget.bytes`, or the time left of them when called inside a compilation that began
    ///   with the schema; the masks within `budget.maskSeconds`), `.leftRecursion`,
    ///   `.emptyLanguage`.
    /// - Complexity: one vocabulary-trie walk per position, pruned at the first rejected byte.
    public init(_ grammar: Grammar, vocabulary: GrammarVocabulary, budget: CompilationBudget = CompilationBudget()) throws(GrammarError) {
        let started = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
        let (automaton, completionDistances) = try CompilationMeter.metering(budget) { () throws(GrammarError) in
            let automaton = try PushdownAutomaton(grammar, stateLimit: budget.automatonStates)
            return (automaton, try CompletionDistances(automaton))
        }
        let automatonSeconds = elapsed()
        // A matcher stands at the root's start, at targets of byte edges and at return
        // states of calls; never at another rule's start unless something loops back to it.
        var masks: [[PositionMask?]] = []
        var accepted = 0, rejected = 0, undecided = 0, bytes = 0, positions = 0, sharedPositions = 0, slicedPositions = 0
        // Terminal rules with the same automaton and FOLLOW set (a schema's many plain string
        // properties) have the same masks state for state: the first computes, the others share.
        var terminalRows: [TerminalRuleSignature: Int] = [:]
        var sharedRules: Set<Int> = []
        // Positions with equal masks (a long string's states far from its length bounds) keep
        // one copy: the arrays are shared, only the first counts in `maskBytes`.
        var distinctMasks: [MaskContent: PositionMask] = [:]
        func count(_ mask: PositionMask) {
            accepted += mask.acceptedCount
            rejected += mask.rejectedCount
            undecided += mask.undecided.count
            positions += 1
        }
        for (index, dfa) in automaton.rules.enumerated() {
            if automaton.isTerminal[index], automaton.reachable[index], index != Int(automaton.root) {
                let signature = TerminalRuleSignature(
                    transitions: dfa.transitions, isFinal: dfa.isFinal, follow: automaton.follow[index])
                if let earlier = terminalRows[signature] {
                    let row = masks[earlier]
                    sharedRules.insert(index)
                    for case let mask? in row {
                        count(mask)
                        sharedPositions += 1
                    }
                    masks.append(row)
                    continue
                }
                terminalRows[signature] = index
            }
            var standing = [Bool](repeating: false, count: dfa.stateCount)
            if automaton.reachable[index] {
                if index == Int(automaton.root) { standing[0] = true }
                for state in 0 ..< dfa.stateCount {
                    for byte in 0 ..< 256 {
                        let target = dfa.transitions[state << 8 | byte]
                        if target >= 0 { standing[Int(target)] = true }
                    }
                    for edge in dfa.ruleEdges[state] { standing[Int(edge.target)] = true }
                }
            }
            var row: [PositionMask?] = []
            // Computed for the rule once one of its positions reads every plain first byte (the
            // cheap test rules out numbers and literals); then known for all its states.
            var unreadableLengths: [Int32]?
            for state in 0 ..< dfa.stateCount {
                guard standing[state], dfa.outgoingBytes(Int32(state)) != ByteSet() || !dfa.ruleEdges[state].isEmpty else {
                    row.append(nil)
                    continue
                }
                if elapsed() - automatonSeconds > budget.maskSeconds {
                    throw .budgetExceeded(what: "mask precomputation seconds", limit: Int(budget.maskSeconds.rounded(.up)))
                }
                let walkStarted = DispatchTime.now().uptimeNanoseconds
                if unreadableLengths == nil, !vocabulary.plainSlices.isEmpty,
                   PlainTextSlice.readsEveryPlainFirstByte(from: Int32(state), in: dfa) {
                    unreadableLengths = PlainTextSlice.unreadableLengths(in: dfa)
                }
                var mask = PositionMask.compute(
                    rule: Int32(index), state: Int32(state), automaton: automaton, vocabulary: vocabulary,
                    unreadableLength: unreadableLengths?[state])
                mask.computeNanoseconds = DispatchTime.now().uptimeNanoseconds - walkStarted
                count(mask)
                if mask.wholesaleCount > 0 { slicedPositions += 1 }
                let content = MaskContent(accepted: mask.accepted, undecided: mask.undecided)
                if let stored = distinctMasks[content] {
                    mask.accepted = stored.accepted
                    mask.undecided = stored.undecided
                } else {
                    distinctMasks[content] = mask
                    bytes += mask.storageBytes
                }
                row.append(mask)
            }
            masks.append(row)
        }
        self.vocabulary = vocabulary
        self.automaton = automaton
        self.completionDistances = completionDistances
        self.masks = masks
        self.sharedRules = sharedRules
        self.statistics = Statistics(
            rules: automaton.rules.count, automatonStates: automaton.stateCount, positions: positions,
            sharedPositions: sharedPositions, slicedPositions: slicedPositions, acceptedTokens: accepted, rejectedTokens: rejected, undecidedTokens: undecided, maskBytes: bytes,
            automatonSeconds: automatonSeconds, maskSeconds: elapsed() - automatonSeconds)
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

    /// Every precomputed position, in rule and state order.
    public var positionSummaries: [PositionSummary] {
        var result: [PositionSummary] = []
        for (rule, row) in masks.enumerated() {
            for (state, mask) in row.enumerated() {
                guard let mask else { continue }
                let form: String
                switch mask.accepted {
                case .listed: form = "listed"
                case .allExcept: form = "allExcept"
                case .bitset: form = "bitset"
                }
                result.append(PositionSummary(
                    rule: automaton.names[rule], state: state, accepted: mask.acceptedCount, rejected: mask.rejectedCount,
                    undecided: mask.undecided.count, storageBytes: mask.storageBytes, form: form,
                    computeMicroseconds: sharedRules.contains(rule) ? 0 : Double(mask.computeNanoseconds) / 1000,
                    isShared: sharedRules.contains(rule), wholesaleAccepted: mask.wholesaleCount))
            }
        }
        return result
    }
}

/// A position mask's meaning (without its statistics), for keeping one copy of equal masks.
struct MaskContent: Hashable {
    let accepted: PositionMask.Accepted
    let undecided: [Int32]
}

/// What decides a terminal rule's masks: its automaton (byte transitions and final states; a
/// terminal rule has no rule edges) and the bytes that may follow it.
struct TerminalRuleSignature: Hashable {
    let transitions: [Int32]
    let isFinal: [Bool]
    let follow: ByteSet
}
