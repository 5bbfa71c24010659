import Dispatch
import Synchronization

/// When a compiled grammar computes its token masks.
public enum MaskComputation: Sendable, Hashable {
    /// Every mask while compiling: the compile takes longer (a large schema, seconds), and
    /// every mask is then a lookup. What `typeset grammar compile` shows.
    case upfront
    /// Each position's mask the first time a matcher stands there, then kept: the grammar is
    /// ready once its automaton is, and a new position costs one vocabulary walk.
    case onFirstUse
    /// The masks a generation meets first for up to 10 ms while compiling (all of them, for
    /// most schemas), the rest in the background (one utility-priority thread per grammar),
    /// and any a matcher needs before the background reaches it on first use. What a server
    /// wants: the first token within milliseconds of the automaton, whatever the schema.
    case onFirstUseAndInBackground
}

/// The token masks of a compiled grammar, one per position a matcher can stand at, computed
/// up front or on first use (``MaskComputation``) and kept.
///
///     rule 0 (root)   [ m0  –  m1  m2 ]      slots: rule × state → index into `masks`,
///     rule 1 (string) [ m3  m4  –  ]          −1 where a matcher never stands
///     rule 2 (string) ── same row as rule 1 ── (a terminal rule identical to an earlier one)
///
/// Thread-safe: masks are computed outside the lock (two threads may compute one mask; the
/// first stored wins) and stored under it. Equal masks keep one copy of their arrays.
final class PositionMasks: Sendable {
    let automaton: PushdownAutomaton
    let vocabulary: GrammarVocabulary
    /// Per rule and state, the position's slot, or −1.
    let slots: [[Int32]]
    /// Per rule, the rule whose masks it shares (itself when it computes its own).
    let owners: [Int]
    /// The number of slots (positions whose masks are computed, not shared).
    let slotCount: Int

    /// When a slot's mask was computed.
    private enum Lateness { case upfront, onDemand, background }

    private struct State {
        var masks: [PositionMask?]
        /// Per slot, when its mask was computed (`nil` while it is not).
        var computed: [Lateness?]
        /// Per rule, `PlainTextSlice.unreadableLengths(in:)` once a position of it reads
        /// every plain first byte.
        var unreadableLengths: [Int: [Int32]] = [:]
        var distinct: [MaskContent: PositionMask] = [:]
        var bytes = 0
        var seconds = 0.0
    }

    private let state: Mutex<State>

    init(automaton: PushdownAutomaton, vocabulary: GrammarVocabulary) {
        self.automaton = automaton
        self.vocabulary = vocabulary
        var slots: [[Int32]] = []
        var owners: [Int] = []
        var next: Int32 = 0
        // Terminal rules with the same automaton and FOLLOW set (a schema's many plain string
        // properties) have the same masks state for state: the first computes, the others share.
        var terminalRows: [TerminalRuleSignature: Int] = [:]
        for (index, dfa) in automaton.rules.enumerated() {
            if automaton.isTerminal[index], automaton.reachable[index], index != Int(automaton.root) {
                let signature = TerminalRuleSignature(transitions: dfa.transitions, isFinal: dfa.isFinal, follow: automaton.follow[index])
                if let earlier = terminalRows[signature] {
                    slots.append(slots[earlier])
                    owners.append(earlier)
                    continue
                }
                terminalRows[signature] = index
            }
            owners.append(index)
            // A matcher stands at the root's start, at targets of byte edges and at return
            // states of calls; never at another rule's start unless something loops back to it.
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
            var row: [Int32] = []
            for state in 0 ..< dfa.stateCount {
                if standing[state], dfa.outgoingBytes(Int32(state)) != ByteSet() || !dfa.ruleEdges[state].isEmpty {
                    row.append(next)
                    next += 1
                } else {
                    row.append(-1)
                }
            }
            slots.append(row)
        }
        self.slots = slots
        self.owners = owners
        slotCount = Int(next)
        state = Mutex(State(masks: [PositionMask?](repeating: nil, count: Int(next)), computed: [Lateness?](repeating: nil, count: Int(next))))
    }

    /// The mask of position `(rule, state)`, computed now if it was not yet; `nil` where a
    /// matcher never stands.
    func mask(rule: Int32, state position: Int32) -> PositionMask? {
        let slot = slots[Int(rule)][Int(position)]
        guard slot >= 0 else { return nil }
        if let known = state.withLock({ $0.masks[Int(slot)] }) { return known }
        return compute(rule: owners[Int(rule)], state: position, slot: slot, late: .onDemand)
    }

    /// Computes the mask of `(rule, state)` (an owner rule) into `slot`, or returns the one
    /// another thread stored first.
    @discardableResult
    private func compute(rule: Int, state position: Int32, slot: Int32, late: Lateness) -> PositionMask {
        let started = DispatchTime.now().uptimeNanoseconds
        let dfa = automaton.rules[rule]
        var unreadable = state.withLock { $0.unreadableLengths[rule] }
        // Computed for the rule once one of its positions reads every plain first byte (the
        // cheap test rules out numbers and literals); then known for all its states. Both
        // walks give the same mask.
        if unreadable == nil, !vocabulary.plainSlices.isEmpty, PlainTextSlice.readsEveryPlainFirstByte(from: position, in: dfa) {
            let lengths = PlainTextSlice.unreadableLengths(in: dfa)
            state.withLock { $0.unreadableLengths[rule] = lengths }
            unreadable = lengths
        }
        var mask = PositionMask.compute(
            rule: Int32(rule), state: position, automaton: automaton, vocabulary: vocabulary, unreadableLength: unreadable?[Int(position)])
        mask.computeNanoseconds = DispatchTime.now().uptimeNanoseconds - started
        return state.withLock { state in
            if let stored = state.masks[Int(slot)] { return stored }
            let content = MaskContent(accepted: mask.accepted, undecided: mask.undecided)
            if let equal = state.distinct[content] {
                mask.accepted = equal.accepted
                mask.undecided = equal.undecided
            } else {
                state.distinct[content] = mask
                state.bytes += mask.storageBytes
            }
            state.masks[Int(slot)] = mask
            state.seconds += Double(mask.computeNanoseconds) / 1e9
            state.computed[Int(slot)] = late
            return mask
        }
    }

    /// The owner positions in the order a generation meets them: breadth first from the
    /// root's start, through byte edges, into called rules and back to the states calls
    /// return to (then any others).
    private var positions: [(rule: Int, state: Int32, slot: Int32)] {
        var result: [(rule: Int, state: Int32, slot: Int32)] = []
        var listed = [Bool](repeating: false, count: slotCount)
        var visited = Set<Int64>()
        var queue: [(rule: Int, state: Int32)] = [(Int(automaton.root), 0)]
        var head = 0
        func visit(_ rule: Int, _ state: Int32) {
            if visited.insert(Int64(rule) << 32 | Int64(state)).inserted { queue.append((rule, state)) }
        }
        visited.insert(Int64(automaton.root) << 32)
        while head < queue.count {
            let (rule, state) = queue[head]
            head += 1
            let slot = slots[rule][Int(state)]
            if slot >= 0, !listed[Int(slot)] {
                listed[Int(slot)] = true
                result.append((owners[rule], state, slot))
            }
            let dfa = automaton.rules[rule]
            for byte in 0 ..< 256 {
                let target = dfa.next(state, UInt8(byte))
                if target >= 0 { visit(rule, target) }
            }
            for edge in dfa.ruleEdges[Int(state)] {
                visit(Int(edge.rule), 0)
                visit(rule, edge.target)
            }
        }
        for (rule, row) in slots.enumerated() where owners[rule] == rule {
            for (state, slot) in row.enumerated() where slot >= 0 && !listed[Int(slot)] {
                listed[Int(slot)] = true
                result.append((rule, Int32(state), slot))
            }
        }
        return result
    }

    /// Computes every mask now, within `seconds` (measured from `started`, in uptime
    /// nanoseconds).
    ///
    /// - Throws: `GrammarError.budgetExceeded` past the time.
    func computeAll(started: UInt64, seconds: Double) throws(GrammarError) {
        for position in positions {
            if Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 > seconds {
                throw .budgetExceeded(what: "mask precomputation seconds", limit: Int(seconds.rounded(.up)))
            }
            compute(rule: position.rule, state: position.state, slot: position.slot, late: .upfront)
        }
    }

    /// How long ``computeRestInBackground()`` computes masks before it returns: most schemas'
    /// masks take less (the median MaskBench schema's, 10 ms with Qwen's vocabulary), so they
    /// are all lookups from the start; a large schema's first positions are ready.
    static let synchronousSeconds = 0.01

    /// Computes masks in the order a generation meets them, the root's first always, for up
    /// to `synchronousSeconds`; then the rest on a utility-priority thread, one at a time. It
    /// stops when the grammar is released.
    func computeRestInBackground(synchronousSeconds: Double = PositionMasks.synchronousSeconds) {
        var work = positions[...]
        let started = DispatchTime.now().uptimeNanoseconds
        while let next = work.first {
            compute(rule: next.rule, state: next.state, slot: next.slot, late: .upfront)
            work.removeFirst()
            if Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 >= synchronousSeconds { break }
        }
        guard !work.isEmpty else { return }
        let rest = Array(work)
        DispatchQueue.global(qos: .utility).async { [weak self] in
            for position in rest {
                guard let self else { return }
                if self.state.withLock({ $0.masks[Int(position.slot)] != nil }) { continue }
                self.compute(rule: position.rule, state: position.state, slot: position.slot, late: .background)
            }
        }
    }

    // MARK: For researchers

    /// Every position whose mask is known, shared rules' included, in rule and state order:
    /// `(rule, state, mask, shared, computedLate)`.
    func known() -> [(rule: Int, state: Int, mask: PositionMask, isShared: Bool, isLate: Bool)] {
        state.withLock { state in
            var result: [(rule: Int, state: Int, mask: PositionMask, isShared: Bool, isLate: Bool)] = []
            for (rule, row) in slots.enumerated() {
                for (position, slot) in row.enumerated() where slot >= 0 {
                    guard let mask = state.masks[Int(slot)] else { continue }
                    result.append((rule, position, mask, owners[rule] != rule, state.computed[Int(slot)] != .upfront))
                }
            }
            return result
        }
    }

    /// Positions in all (shared rules' included).
    var positionCount: Int { slots.reduce(0) { total, row in total + row.count { $0 >= 0 } } }

    /// Bytes of the distinct masks computed so far, seconds spent computing them, and how many
    /// were computed after compilation, at a matcher's request and in the background.
    var totals: (bytes: Int, seconds: Double, onDemand: Int, background: Int) {
        state.withLock { ($0.bytes, $0.seconds, $0.computed.count { $0 == .onDemand }, $0.computed.count { $0 == .background }) }
    }
}
