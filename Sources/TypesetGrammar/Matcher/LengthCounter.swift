/// The character count of a rule whose sentences are quoted JSON strings with a bounded
/// length (`minLength`, `maxLength`): the counter a matcher's frame carries instead of an
/// automaton unrolled to one copy of the string's states per character.
///
///     frame (rule, state, count)          "  h  é  l  l  o  "
///     count after each byte:             0  1  2  2  3  4  5  5    (é is two bytes, one character)
///
/// A byte read at a character boundary inside the quotes, other than the closing quote,
/// starts a character and adds one. Counts stop at `cap` (the maximum; the minimum when there
/// is none, since past it every count is alike). A step is allowed only into a *live*
/// `(state, count)`, one from which a completion within the bounds exists, so a matcher never
/// stands where it cannot finish (as trimming guarantees for plain automata). The shortest
/// completions, which say both, come from one breadth-first search backwards over the
/// product of states and counts.
///
/// Between the bounds, far from both, every count behaves alike (the shortest completion fits),
/// so the table keeps `2 × margin + 2` counts there whatever the gap (`margin` is twice the
/// states plus two): a `maxLength` of 65,535 costs what one of a few dozen does.
///
///     counts   0 … min … min+margin ┆ (all alike) ┆ max−margin … max
///     table    0 … min … min+margin   min+margin+1 …        min+2·margin+1
///
/// - Complexity: O(states × (min + margin)) time and 4 bytes of memory per pair, once per rule.
struct LengthCounter: Sendable, Hashable {
    let minimum: Int32
    /// `nil`: no upper bound.
    let maximum: Int32?
    /// The largest count a frame holds: `maximum`, or `minimum` when there is no maximum.
    let cap: Int32
    /// Per state: whether it stands at a character boundary inside the quotes.
    let atBoundary: [Bool]
    /// `distances[state * stride + tableCount(count)]`: the fewest bytes that complete the
    /// rule from there within the bounds, `Int32.max` where none does (the pair is not live).
    let distances: [Int32]
    let stride: Int
    /// Counts `lowEnd + 1 ..< highStart` read as `lowEnd`; counts from `highStart` on as
    /// `count - shift`. `shift` is 0 when the table holds every count.
    let lowEnd: Int32
    let highStart: Int32
    let shift: Int32
    /// Per table count: whether some non-final state is not live there.
    let isUneven: [Bool]

    static let unreachable = Int32.max

    /// The product's pairs a counter may hold, summed over a grammar's counted rules.
    static let pairLimit = 1 << 22

    /// The counter of `dfa` (a trimmed automaton of quoted canonical JSON strings) between
    /// `minimum` and `maximum` characters; `nil` when `dfa` is not over quoted strings.
    ///
    /// - Throws: `DFA.TooLarge` when the table passes `pairLimit` pairs (a `minLength` in
    ///   the hundreds of thousands), or the compilation's budget runs out.
    init?(_ dfa: DFA, minimum: Int, maximum: Int?) throws(DFA.TooLarge) {
        guard minimum >= 0, minimum < Int(Int32.max) - 1, (maximum ?? 0) < Int(Int32.max) - 1 else { throw DFA.TooLarge() }
        let cap = maximum ?? minimum
        // The table's own maximum: the gap between the bounds shrunk to 2 × margin + 1.
        let margin = 2 * dfa.stateCount + 2
        var tableMaximum = maximum
        var lowEnd = cap, highStart = cap + 1, shift = 0
        if let maximum, maximum - minimum > 2 * margin + 1 {
            tableMaximum = minimum + 2 * margin + 1
            lowEnd = minimum + margin
            highStart = maximum - margin
            shift = maximum - tableMaximum!
        }
        let tableCap = tableMaximum ?? minimum
        let stride = tableCap + 1
        let pairs = dfa.stateCount.multipliedReportingOverflow(by: stride)
        guard !pairs.overflow, pairs.partialValue <= Self.pairLimit else { throw DFA.TooLarge() }
        try CompilationMeter.current?.checkConstruction(bytes: pairs.partialValue * 4, "counting string lengths up to \(cap)")
        guard let decoder = QuotedStringDecoder.states(of: dfa) else { return nil }
        let atBoundary = decoder.map { $0 == .boundary }
        self.minimum = Int32(minimum)
        self.maximum = maximum.map(Int32.init)
        self.cap = Int32(cap)
        self.atBoundary = atBoundary
        self.stride = stride
        self.lowEnd = Int32(lowEnd)
        self.highStart = Int32(highStart)
        self.shift = Int32(shift)
        // Predecessors of each state: (state, whether the edge starts a character).
        var predecessors = [[(state: Int32, counts: Bool)]](repeating: [], count: dfa.stateCount)
        for state in 0 ..< dfa.stateCount {
            var seen = Set<Int64>()
            for byte in 0 ..< 256 {
                let target = dfa.transitions[DFA.transitionIndex(state, byte)]
                guard target >= 0 else { continue }
                let counts = atBoundary[state] && byte != 0x22
                if seen.insert(Int64(target) << 1 | (counts ? 1 : 0)).inserted {
                    predecessors[Int(target)].append((Int32(state), counts))
                }
            }
        }
        // Breadth first backwards from the final states within the bounds, over the table's
        // counts (bounds `minimum … tableMaximum`).
        var distances = [Int32](repeating: Self.unreachable, count: pairs.partialValue)
        var queue: [Int32] = []
        queue.reserveCapacity(stride)
        if minimum <= tableCap {
            for state in 0 ..< dfa.stateCount where dfa.isFinal[state] {
                for count in minimum ... tableCap {
                    distances[state * stride + count] = 0
                    queue.append(Int32(state * stride + count))
                }
            }
        }
        var head = 0
        while head < queue.count {
            let node = Int(queue[head])
            head += 1
            let state = node / stride, count = node % stride
            let next = distances[node] + 1
            func reach(_ index: Int) {
                if distances[index] == Self.unreachable {
                    distances[index] = next
                    queue.append(Int32(index))
                }
            }
            for predecessor in predecessors[state] {
                // The counts before the edge that lead to `count` after it.
                let base = Int(predecessor.state) * stride
                if !predecessor.counts {
                    reach(base + count)
                } else {
                    if count > 0 { reach(base + count - 1) }
                    if tableMaximum == nil, count == tableCap { reach(base + count) }
                }
            }
        }
        self.distances = distances
        isUneven = (0 ..< stride).map { count in
            (0 ..< dfa.stateCount).contains { !dfa.isFinal[$0] && distances[$0 * stride + count] == Self.unreachable }
        }
    }

    /// Where `count` (at most `cap`) reads in the table.
    @inline(__always)
    func tableCount(_ count: Int32) -> Int {
        if count <= lowEnd { return Int(count) }
        return count >= highStart ? Int(count - shift) : Int(lowEnd)
    }

    /// Whether `count` and `count + 1` behave alike for every state (between the bounds, far
    /// from both): what lets mask classes skip the counts there.
    func isAlikeNext(_ count: Int32) -> Bool { count >= lowEnd && count + 1 < highStart }

    /// The count after reading `byte` at `state` with `count` so far (possibly past `cap`
    /// when there is a maximum: such a pair is never live).
    @inline(__always)
    func count(after count: Int32, at state: Int32, reading byte: UInt8) -> Int32 {
        guard atBoundary[Int(state)], byte != 0x22 else { return count }
        return maximum == nil ? Swift.min(count + 1, cap) : count + 1
    }

    /// Whether a completion within the bounds exists from `(state, count)`.
    @inline(__always)
    func isLive(_ state: Int32, _ count: Int32) -> Bool {
        count <= cap && distances[Int(state) * stride + tableCount(count)] != Self.unreachable
    }

    /// The fewest bytes completing the rule from `(state, count)`; `unreachable` when none.
    func distance(_ state: Int32, _ count: Int32) -> Int32 {
        count <= cap ? distances[Int(state) * stride + tableCount(count)] : Self.unreachable
    }

    /// Whether every non-final state is live at every count from `count` to `count + length`:
    /// then any `length` characters the rule's edges read from `count` on are within the
    /// bounds (what lets a mask accept a slice of plain tokens without walking them).
    func readsAnyCharacters(_ length: Int32, from count: Int32) -> Bool {
        var last = Int(count) + Int(length)
        if last > Int(cap) {
            guard maximum == nil else { return false }
            last = Int(cap)
        }
        return (Int(count) ... last).allSatisfy { !isUneven[tableCount(Int32($0))] }
    }

    static func == (a: LengthCounter, b: LengthCounter) -> Bool {
        a.minimum == b.minimum && a.maximum == b.maximum && a.atBoundary == b.atBoundary
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(minimum)
        hasher.combine(maximum)
        hasher.combine(atBoundary)
    }
}

/// Where a reader of a quoted canonical JSON string stands after some prefix of it.
enum QuotedStringDecoder: Hashable {
    case beforeOpeningQuote
    case boundary
    /// In a UTF-8 sequence with this many continuation bytes to come.
    case continuation(Int)
    case escape
    /// In `\u` with this many hex digits to come.
    case unicodeEscape(Int)
    case closed

    func next(_ byte: UInt8) -> QuotedStringDecoder? {
        switch self {
        case .beforeOpeningQuote: return byte == 0x22 ? .boundary : nil
        case .boundary:
            switch byte {
            case 0x22: return .closed
            case 0x5C: return .escape
            case 0x00 ... 0x7F: return .boundary
            case 0xC2 ... 0xDF: return .continuation(1)
            case 0xE0 ... 0xEF: return .continuation(2)
            case 0xF0 ... 0xF4: return .continuation(3)
            default: return nil
            }
        case .continuation(let remaining):
            guard (0x80 ... 0xBF).contains(byte) else { return nil }
            return remaining == 1 ? .boundary : .continuation(remaining - 1)
        case .escape: return byte == UInt8(ascii: "u") ? .unicodeEscape(4) : .boundary
        case .unicodeEscape(let remaining): return remaining == 1 ? .boundary : .unicodeEscape(remaining - 1)
        case .closed: return nil
        }
    }

    /// Each state's decoder state, for a trimmed automaton of quoted canonical JSON strings
    /// (a prefix code: every state stands either at a boundary or inside one character);
    /// `nil` when `dfa` is not one (a state reached both at a boundary and inside a character).
    static func states(of dfa: DFA) -> [QuotedStringDecoder]? {
        guard !dfa.isEmptyLanguage else { return [QuotedStringDecoder](repeating: .closed, count: dfa.stateCount) }
        var decoder = [QuotedStringDecoder?](repeating: nil, count: dfa.stateCount)
        decoder[0] = .beforeOpeningQuote
        var work: [Int32] = [0]
        while let state = work.popLast() {
            let here = decoder[Int(state)]!
            for byte in 0 ... 255 {
                let target = dfa.next(state, UInt8(byte))
                guard target >= 0 else { continue }
                guard let next = here.next(UInt8(byte)) else { return nil }
                if let known = decoder[Int(target)] {
                    if known != next { return nil }
                } else {
                    decoder[Int(target)] = next
                    work.append(target)
                }
            }
        }
        return decoder.map { $0 ?? .closed }
    }
}
