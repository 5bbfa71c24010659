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
    /// The masks a generation meets first for up to 2 ms while compiling (all of them, for
    /// small schemas), the rest in the background (one utility-priority thread per grammar),
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
///     rule 3 (counted)[ m5  m6  –  | m7  m8  – | … ]   one group of states per count class
///
/// A rule that counts characters (`LengthCounter`) has one mask per state and *count class*:
/// counts whose liveness looks the same for every state over the next `maximumDepth + 1`
/// counts (as far as one token can read) have the same masks. A string of up to 10,000
/// characters has one class for most of its counts and one per count near its bounds.
///
/// Thread-safe: masks are computed outside the lock (two threads may compute one mask; the
/// first stored wins) and stored under it. Equal masks keep one copy of their arrays.
final class PositionMasks: Sendable {
    let automaton: PushdownAutomaton
    let vocabulary: GrammarVocabulary
    /// Per rule, per count class and state (`class * states + state`), the position's slot,
    /// or −1.
    let slots: [[Int32]]
    /// Per counted rule, how its counts share masks (`nil` for other rules: one class).
    let countClasses: [CountClasses?]
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
        var countClasses: [CountClasses?] = []
        var next: Int32 = 0
        // Terminal rules with the same automaton, counter and FOLLOW set (a schema's many plain
        // string properties) have the same masks state for state: the first computes, the
        // others share.
        var terminalRows: [TerminalRuleSignature: Int] = [:]
        let window = vocabulary.trie.maximumDepth + 1
        for (index, dfa) in automaton.rules.enumerated() {
            if automaton.isTerminal[index], automaton.reachable[index], index != Int(automaton.root) {
                let signature = TerminalRuleSignature(automaton: dfa, follow: automaton.follow[index], counter: automaton.counters[index])
                if let earlier = terminalRows[signature] {
                    slots.append(slots[earlier])
                    owners.append(earlier)
                    countClasses.append(countClasses[earlier])
                    continue
                }
                terminalRows[signature] = index
            }
            owners.append(index)
            // A matcher stands at the root's start, at targets of byte edges and at return
            // states of calls; never at another rule's start unless something loops back to it.
            var standing = [Bool](repeating: false, count: dfa.stateCount)
            // States with a byte edge out (a matcher standing there has a mask to ask for).
            var reads = [Bool](repeating: false, count: dfa.stateCount)
            for state in 0 ..< dfa.stateCount {
                dfa.forEachRun(of: state) { _, target in
                    standing[Int(target)] = true
                    reads[state] = true
                }
            }
            if automaton.reachable[index] {
                if index == Int(automaton.root) { standing[0] = true }
                for state in 0 ..< dfa.stateCount {
                    for edge in dfa.ruleEdges[state] { standing[Int(edge.target)] = true }
                }
            } else {
                standing = [Bool](repeating: false, count: dfa.stateCount)
            }
            let counter = automaton.counters[index]
            let classes = counter.map { Self.countClasses(of: $0, states: dfa.stateCount, window: window) }
            countClasses.append(classes)
            var row: [Int32] = []
            for count in classes?.firstCounts ?? [0] {
                for state in 0 ..< dfa.stateCount {
                    let live = counter?.isLive(Int32(state), count) ?? true
                    if standing[state], live, reads[state] || dfa.callsRules[state] {
                        row.append(next)
                        next += 1
                    } else {
                        row.append(-1)
                    }
                }
            }
            slots.append(row)
        }
        self.slots = slots
        self.owners = owners
        self.countClasses = countClasses
        slotCount = Int(next)
        state = Mutex(State(masks: [PositionMask?](repeating: nil, count: Int(next)), computed: [Lateness?](repeating: nil, count: Int(next))))
    }

    /// How a counted rule's counts share masks: each count's class, each class's smallest
    /// count, and per class the token length (in bytes) up to which its masks are exact.
    struct CountClasses: Sendable {
        var classOfCount: [Int32]
        var firstCounts: [Int32]
        /// `nil`: exact for every token. Otherwise longer tokens are left undecided (checked
        /// against the real frame by the matcher), so counts that differ only farther ahead
        /// share the class.
        var exactLengths: [Int32?]
        /// Per class: whether its masks are computed only on first use (near a bound of a
        /// string longer than `exactCap`, which most values never come near).
        var isOnFirstUseOnly: [Bool]
    }

    /// Counts near a bound of a string longer than `exactCap` characters are told apart only
    /// as far as `nearWindow` characters ahead, and their masks leave longer tokens
    /// undecided: a string of up to 10,000 characters has about a hundred classes whatever
    /// the vocabulary's longest token (256 bytes in Qwen's, whose 300-odd tokens past 48
    /// bytes the matcher then checks itself; none of Gemma's is that long). Shorter strings
    /// have exact classes, as many as an automaton unrolled to the bound would have states.
    static let nearWindow = 48
    static let exactCap = 64

    /// The count classes of a counter. Counts whose liveness, for every state, is the same
    /// over the `window` counts from them on (as far as the longest token reads) share a
    /// class with an exact mask; near a bound of a string longer than `exactCap`, counts
    /// share a class when their liveness is the same over the next `nearWindow + 1` counts.
    /// Classes are numbered in the order of their first count (class 0 is count 0's).
    ///
    /// - Complexity: O(cap) plus O(states) per count not alike the next
    ///   (`LengthCounter.isAlikeNext`), plus O(states × min(window, cap − count)) per count
    ///   whose window differs from the one before.
    static func countClasses(of counter: LengthCounter, states: Int, window: Int) -> CountClasses {
        let cap = Int(counter.cap)
        func live(_ state: Int, _ count: Int) -> Bool {
            if count > cap { return counter.maximum == nil && counter.isLive(Int32(state), Int32(cap)) }
            return counter.isLive(Int32(state), Int32(count))
        }
        let nearWindow = cap > exactCap && window > Self.nearWindow + 1 ? Self.nearWindow + 1 : nil
        // changes[c]: some state's liveness differs between counts c and c + 1.
        let end = cap + window + 1
        // Past `cap` liveness no longer depends on the count: no change there.
        var changes = [Bool](repeating: false, count: end)
        for count in 0 ... cap where !counter.isAlikeNext(Int32(count)) {
            changes[count] = (0 ..< states).contains { live($0, count) != live($0, count + 1) }
        }
        // Each state's liveness at counts 0 ... cap + 1 as bits (one word more, so reading 64
        // bits from any of them stays inside the row): a window is a few words per state.
        // The stretch the counter reads as one count is filled a word at a time, so a
        // `maxLength` of a million costs words, not a million lookups per state.
        let wordsPerState = (cap + 2 + 63) / 64 + 1
        var liveness = [UInt64](repeating: 0, count: states * wordsPerState)
        let alike = Int(counter.lowEnd) + 1 ..< max(Int(counter.lowEnd) + 1, Int(counter.highStart))
        for state in 0 ..< states {
            let row = (state * wordsPerState) << 6
            for counts in [0 ..< alike.lowerBound, alike.upperBound ..< cap + 2] {
                for count in counts where live(state, count) { liveness[(row + count) >> 6] |= 1 << UInt64(count & 63) }
            }
            if !alike.isEmpty, live(state, alike.lowerBound - 1) {
                Self.setBits(row + alike.lowerBound ..< row + alike.upperBound, in: &liveness)
            }
        }
        var classes = CountClasses(classOfCount: [Int32](repeating: 0, count: cap + 1), firstCounts: [], exactLengths: [], isOnFirstUseOnly: [])
        var known: [[UInt64]: Int32] = [:]
        var changesInWindow = changes[0 ..< window - 1].count { $0 }  // changes in counts [c - 1, c + window - 1)
        for count in 0 ... cap {
            if count > 0 {
                // The window moves from [c - 1, c - 1 + window) to [c, c + window).
                if changes[count - 1 + window - 1] { changesInWindow += 1 }
                if count >= 2, changes[count - 2] { changesInWindow -= 1 }
            }
            if count > 0, changesInWindow == 0 {
                classes.classOfCount[count] = classes.classOfCount[count - 1]
                continue
            }
            // Liveness is constant over the whole window: the liveness here says it all.
            let isConstant = !changes[count ..< count + window - 1].contains(true)
            let width = isConstant ? 1 : nearWindow ?? window
            // A window reaching past `cap + 1` is read up to there only: its last offset read
            // stands for all the others. How far it is read is part of the signature, so no
            // two counts whose windows differ share a class. (Qwen's window is 257 counts:
            // read whole, a string of 64 characters cost 257 reads per state and count.)
            let read = min(width, cap + 2 - count)
            var signature = [UInt64](repeating: 0, count: 2 + (states * read + 63) / 64)
            signature[0] = UInt64(isConstant ? 0 : width == window ? 1 : 2) | UInt64(read) << 2
            for state in 0 ..< states {
                Self.copyBits(from: liveness, at: (state * wordsPerState) << 6 + count, count: read, to: &signature, at: 64 + state * read)
            }
            if let id = known[signature] {
                classes.classOfCount[count] = id
            } else {
                let id = Int32(classes.firstCounts.count)
                known[signature] = id
                classes.firstCounts.append(Int32(count))
                classes.exactLengths.append(isConstant || width == window ? nil : Int32(width - 1))
                classes.isOnFirstUseOnly.append(!isConstant && cap > exactCap)
                classes.classOfCount[count] = id
            }
        }
        return classes
    }

    /// Sets bits `range` of `words`, a word at a time.
    static func setBits(_ range: Range<Int>, in words: inout [UInt64]) {
        var bit = range.lowerBound
        while bit < range.upperBound {
            let take = min(64 - bit & 63, range.upperBound - bit)
            words[bit >> 6] |= (take == 64 ? UInt64.max : (1 << UInt64(take)) - 1) << UInt64(bit & 63)
            bit += take
        }
    }

    /// Ors bits `source ..< source + count` of `words` into bits `target ..< target + count`
    /// of `destination`, 64 at a time. Both must hold a word past the last bit they use.
    static func copyBits(from words: [UInt64], at source: Int, count: Int, to destination: inout [UInt64], at target: Int) {
        var done = 0
        while done < count {
            let take = min(64, count - done)
            let from = source + done, to = target + done
            var chunk = words[from >> 6] >> UInt64(from & 63)
            if from & 63 != 0 { chunk |= words[from >> 6 + 1] << UInt64(64 - from & 63) }
            if take < 64 { chunk &= (1 << UInt64(take)) - 1 }
            destination[to >> 6] |= chunk << UInt64(to & 63)
            if to & 63 != 0 { destination[to >> 6 + 1] |= chunk >> UInt64(64 - to & 63) }
            done += take
        }
    }

    /// The position of `rule`'s `state` in count class `classIndex` (0 for an uncounted rule),
    /// as its owner rule computes it; `nil` where a matcher never stands.
    @inline(__always)
    private func position(rule: Int, state: Int32, classIndex: Int) -> Position? {
        let classes = countClasses[rule]
        let slot = slots[rule][classIndex * automaton.rules[rule].stateCount + Int(state)]
        guard slot >= 0 else { return nil }
        return Position(rule: owners[rule], state: state, count: classes?.firstCounts[classIndex] ?? 0,
                        exactLength: classes?.exactLengths[classIndex], slot: slot)
    }

    /// The mask of `frame`'s position, computed now if it was not yet; `nil` where a matcher
    /// never stands.
    func mask(of frame: PushdownFrame) -> PositionMask? {
        let classIndex = countClasses[Int(frame.rule)].map { Int($0.classOfCount[Int(frame.count)]) } ?? 0
        guard let position = position(rule: Int(frame.rule), state: frame.state, classIndex: classIndex) else { return nil }
        if let known = state.withLock({ $0.masks[Int(position.slot)] }) { return known }
        return compute(position, late: .onDemand)
    }

    /// An owner position whose mask is to be computed: `(rule, state)` at `count`, masks
    /// exact up to `exactLength` (`CountClasses.exactLengths`), stored in `slot`.
    private struct Position {
        var rule: Int
        var state: Int32
        var count: Int32
        var exactLength: Int32?
        var slot: Int32
    }

    /// Computes the mask of `position` into its slot, or returns the one another thread
    /// stored first.
    @discardableResult
    private func compute(_ target: Position, late: Lateness) -> PositionMask {
        let rule = target.rule, position = target.state, slot = target.slot
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
            rule: Int32(rule), state: position, count: target.count, exactLength: target.exactLength, automaton: automaton, vocabulary: vocabulary,
            unreadableLength: unreadable?[Int(position)])
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
    /// return to (then any others). Found one at a time, so the first masks are computed
    /// before the whole order is known: in a grammar of 50,000 states, the walk alone takes
    /// milliseconds.
    private struct PositionOrder: Sendable {
        private var listed: [Bool]
        /// (rule, state) visited: a flag per state of every rule, rule by rule.
        private var firstState: [Int]
        private var visited: [Bool]
        private var queue: [(rule: Int, state: Int32)] = []
        private var head = 0
        /// After the walk: the rule and the index in its row of slots the sweep is at.
        private var sweptRule = 0
        private var sweptIndex = 0

        init(_ masks: PositionMasks) {
            let rules = masks.automaton.rules
            listed = [Bool](repeating: false, count: masks.slotCount)
            firstState = [Int](repeating: 0, count: rules.count + 1)
            for (rule, dfa) in rules.enumerated() { firstState[rule + 1] = firstState[rule] + dfa.stateCount }
            visited = [Bool](repeating: false, count: firstState[rules.count])
            visit(Int(masks.automaton.root), 0)
        }

        private mutating func visit(_ rule: Int, _ state: Int32) {
            guard !visited[firstState[rule] + Int(state)] else { return }
            visited[firstState[rule] + Int(state)] = true
            queue.append((rule, state))
        }

        mutating func next(in masks: PositionMasks) -> Position? {
            while head < queue.count {
                let (rule, state) = queue[head]
                head += 1
                let dfa = masks.automaton.rules[rule]
                dfa.forEachRun(of: Int(state)) { _, target in visit(rule, target) }
                for edge in dfa.ruleEdges[Int(state)] {
                    visit(Int(edge.rule), 0)
                    visit(rule, edge.target)
                }
                // Count 0's class: where a generation enters a counted string.
                if let position = masks.position(rule: rule, state: state, classIndex: 0), !listed[Int(position.slot)] {
                    listed[Int(position.slot)] = true
                    return position
                }
            }
            while sweptRule < masks.slots.count {
                let rule = sweptRule
                let row = masks.slots[rule]
                let states = masks.automaton.rules[rule].stateCount
                while masks.owners[rule] == rule, sweptIndex < row.count {
                    let index = sweptIndex
                    sweptIndex += 1
                    let slot = row[index]
                    guard slot >= 0, !listed[Int(slot)] else { continue }
                    // Near a long string's bounds, masks wait for a matcher to need them.
                    if let classes = masks.countClasses[rule], classes.isOnFirstUseOnly[index / states] { continue }
                    listed[Int(slot)] = true
                    return masks.position(rule: rule, state: Int32(index % states), classIndex: index / states)!
                }
                sweptRule += 1
                sweptIndex = 0
            }
            return nil
        }
    }

    /// Computes every mask now, within `seconds` (measured from `started`, in uptime
    /// nanoseconds).
    ///
    /// - Throws: `GrammarError.budgetExceeded` past the time.
    func computeAll(started: UInt64, seconds: Double) throws(GrammarError) {
        var order = PositionOrder(self)
        while let position = order.next(in: self) {
            if Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 > seconds {
                throw .budgetExceeded(what: "mask precomputation seconds", limit: Int(seconds.rounded(.up)))
            }
            compute(position, late: .upfront)
        }
    }

    /// How long ``computeRestInBackground()`` computes masks before it returns: the root's
    /// first masks (a generation's first tokens) are ready, and the compile is not held up by
    /// the rest (the median MaskBench schema's masks take about 10 ms with Qwen's vocabulary;
    /// a generation's prompt prefill, which the background overlaps, takes longer).
    static let synchronousSeconds = 0.002

    /// Computes masks in the order a generation meets them, the root's first always, for up
    /// to `synchronousSeconds`; then the rest on a utility-priority thread, one at a time. It
    /// stops when the grammar is released.
    func computeRestInBackground(synchronousSeconds: Double = PositionMasks.synchronousSeconds) {
        var order = PositionOrder(self)
        let started = DispatchTime.now().uptimeNanoseconds
        repeat {
            guard let next = order.next(in: self) else { return }
            if state.withLock({ $0.masks[Int(next.slot)] == nil }) { compute(next, late: .upfront) }
        } while Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 < synchronousSeconds
        let rest = order
        DispatchQueue.global(qos: .utility).async { [weak self] in
            var order = rest
            while let self, let position = order.next(in: self) {
                if self.state.withLock({ $0.masks[Int(position.slot)] != nil }) { continue }
                self.compute(position, late: .background)
            }
        }
    }

    // MARK: Archives

    /// Each slot's mask, `nil` where it is not computed yet.
    func storedMasks() -> [PositionMask?] { state.withLock { $0.masks } }

    /// Stores masks read from an archive: `slots[s]` is slot `s`'s index in `distinct`, or
    /// −1. Slots with one index share its arrays; they count as computed up front.
    ///
    /// - Precondition: `slots.count == slotCount`, every index −1 or within `distinct`.
    func restore(_ distinct: [PositionMask], slots: [Int32]) {
        precondition(slots.count == slotCount, "one index per slot")
        state.withLock { state in
            state.bytes += distinct.reduce(0) { $0 + $1.storageBytes }
            for (slot, index) in slots.enumerated() where index >= 0 && state.masks[slot] == nil {
                state.masks[slot] = distinct[Int(index)]
                state.computed[slot] = .upfront
            }
        }
    }

    // MARK: For researchers

    /// Every position whose mask is known, shared rules' included, in rule, count class and
    /// state order: `(rule, state, count, exactLength, mask, shared, computedLate)`, `count`
    /// the class's smallest count in a counted rule (`nil` in others), `exactLength` as
    /// `CountClasses.exactLengths` says.
    func known() -> [(rule: Int, state: Int, count: Int?, exactLength: Int32?, mask: PositionMask, isShared: Bool, isLate: Bool)] {
        state.withLock { state in
            var result: [(rule: Int, state: Int, count: Int?, exactLength: Int32?, mask: PositionMask, isShared: Bool, isLate: Bool)] = []
            for (rule, row) in slots.enumerated() {
                let states = automaton.rules[rule].stateCount
                for (index, slot) in row.enumerated() where slot >= 0 {
                    guard let mask = state.masks[Int(slot)] else { continue }
                    let count = countClasses[rule].map { Int($0.firstCounts[index / states]) }
                    let exactLength = countClasses[rule].flatMap { $0.exactLengths[index / states] }
                    result.append((rule, index % states, count, exactLength, mask, owners[rule] != rule, state.computed[Int(slot)] != .upfront))
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
