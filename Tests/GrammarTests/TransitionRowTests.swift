import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// The helpers that read a transition row by runs and fill byte sets by ranges, against a
/// one-entry-at-a-time reference.
@Suite struct TransitionRowTests {
    /// The runs of a row read one entry at a time: maximal ranges of one target, -1 skipped.
    static func referenceRuns(_ row: [Int32]) -> [(Range<Int>, Int32)] {
        var runs: [(Range<Int>, Int32)] = []
        var start = 0
        for byte in 1 ... 256 where byte == 256 || row[byte] != row[start] {
            if row[start] >= 0 { runs.append((start ..< byte, row[start])) }
            start = byte
        }
        return runs
    }

    /// Rows of every shape the groups of sixteen must handle: empty, full, one byte at each
    /// group's edges, runs crossing groups, alternating entries, and random ranges.
    static func rows(_ random: inout SplitMix64) -> [[Int32]] {
        var rows: [[Int32]] = [
            [Int32](repeating: -1, count: 256),
            [Int32](repeating: 4, count: 256),
            (0 ..< 256).map { Int32($0 % 2 == 0 ? 1 : -1) },
            (0 ..< 256).map { Int32($0 / 3) },
        ]
        for byte in [0, 1, 15, 16, 17, 31, 32, 127, 128, 240, 254, 255] {
            var row = [Int32](repeating: -1, count: 256)
            row[byte] = 9
            rows.append(row)
            var full = [Int32](repeating: 2, count: 256)
            full[byte] = -1
            rows.append(full)
        }
        for _ in 0 ..< 200 {
            var row = [Int32](repeating: -1, count: 256)
            for _ in 0 ..< Int.random(in: 0 ... 12, using: &random) {
                let low = Int.random(in: 0 ..< 256, using: &random)
                let high = Int.random(in: low ..< min(256, low + Int.random(in: 1 ... 80, using: &random)), using: &random)
                let target = Int32.random(in: -1 ... 5, using: &random)
                for byte in low ... high { row[byte] = target }
            }
            rows.append(row)
        }
        return rows
    }

    @Test func runsAgreeWithTheReference() {
        var random = SplitMix64(seed: 11)
        for row in Self.rows(&random) {
            var runs: [(Range<Int>, Int32)] = []
            row.withUnsafeBufferPointer { buffer in
                DFA.forEachRun(in: buffer.baseAddress!) { bytes, target in runs.append((bytes, target)) }
            }
            let reference = Self.referenceRuns(row)
            #expect(runs.map(\.0) == reference.map(\.0))
            #expect(runs.map(\.1) == reference.map(\.1))
            let single = DFA(transitions: row.map { $0 >= 0 ? 0 : -1 }, ruleEdges: [[]], isFinal: [true])
            #expect(single.outgoingBytes(0) == ByteSet((0 ..< 256).filter { row[$0] >= 0 }.map(UInt8.init)))
        }
    }

    @Test func rangeInsertionAgreesWithBytes() {
        let bounds: [UInt8] = [0, 1, 62, 63, 64, 65, 127, 128, 191, 192, 200, 254, 255]
        for low in bounds {
            for high in bounds where high >= low {
                var bytewise = ByteSet([7])
                for byte in low ... high { bytewise.insert(byte) }
                var ranged = ByteSet([7])
                ranged.insert(low ... high)
                #expect(ranged == bytewise, "\(low)...\(high)")
                #expect(ByteSet(low ... high).count == Int(high) - Int(low) + 1)
            }
        }
    }

    /// A set's boundaries are the bytes where membership changes from the byte before
    /// (byte 0 when it is a member), across the four words' edges.
    @Test func boundariesMarkWhereMembershipChanges() {
        var random = SplitMix64(seed: 17)
        var sets: [ByteSet] = [ByteSet(), .all, ByteSet([0]), ByteSet([255]), ByteSet(63 ... 64), ByteSet(0 ... 127), ByteSet(128 ... 255)]
        for _ in 0 ..< 300 {
            var set = ByteSet()
            for _ in 0 ..< Int.random(in: 0 ... 6, using: &random) {
                let low = UInt8.random(in: 0 ... 255, using: &random)
                set.insert(low ... UInt8(min(255, Int(low) + Int.random(in: 0 ... 90, using: &random))))
            }
            sets.append(set)
        }
        for set in sets {
            let boundaries = set.boundaries
            for byte in 0 ... 255 {
                let changes = set.contains(UInt8(byte)) != (byte > 0 && set.contains(UInt8(byte - 1)))
                #expect(boundaries.contains(UInt8(byte)) == changes, "\(set) at \(byte)")
            }
        }
    }

    /// The subset construction (over the elementary intervals of each subset's labels)
    /// accepts what simulating the nondeterministic automaton accepts, on random automata
    /// with ε-moves and overlapping byte ranges; fragments determinized through one shared
    /// reading of their automaton get the tables each gets alone.
    @Test func subsetConstructionAgreesWithSimulation() throws {
        var random = SplitMix64(seed: 23)
        let alphabet: [UInt8] = [0x00, 0x5f, 0x60, 0x61, 0x63, 0x64, 0x67, 0x68, 0xff]
        var strings: [[UInt8]] = [[]]
        var frontier: [[UInt8]] = [[]]
        for _ in 0 ..< 3 {
            frontier = frontier.flatMap { prefix in alphabet.map { prefix + [$0] } }
            strings += frontier
        }
        func randomLabel() -> ByteSet {
            if Int.random(in: 0 ..< 8, using: &random) == 0 { return ByteSet(0x61 ... 0xff) }
            let low = UInt8.random(in: 0x60 ... 0x67, using: &random)
            var set = ByteSet(low ... UInt8.random(in: low ... 0x67, using: &random))
            if Bool.random(using: &random) { set.insert(UInt8.random(in: 0x60 ... 0x67, using: &random)) }
            return set
        }
        for _ in 0 ..< 60 {
            var automaton = ByteNFA()
            var fragments: [Fragment] = []
            for _ in 0 ..< 2 {
                let count = Int.random(in: 2 ... 7, using: &random)
                let states = (0 ..< count).map { _ in automaton.addState() }
                for _ in 0 ..< Int.random(in: 1 ... 14, using: &random) {
                    let source = states.randomElement(using: &random)!, target = states.randomElement(using: &random)!
                    automaton.addEdge(from: source, to: target, label: Int.random(in: 0 ..< 4, using: &random) == 0 ? nil : .bytes(randomLabel()))
                }
                fragments.append(Fragment(start: states[0], end: states[count - 1]))
            }
            var shared = EpsilonClosure(ReachableNFA(everythingIn: automaton, ends: fragments.map(\.end)))
            for fragment in fragments {
                let alone = try DFA(fragment, of: automaton)
                let together = try DFA(fragment, closure: &shared)
                #expect(together.transitions == alone.transitions)
                #expect(together.isFinal == alone.isFinal)
                for string in strings {
                    #expect(alone.accepts(string) == Self.simulate(automaton, fragment, string), "\(string)")
                }
            }
        }
    }

    /// Whether `fragment` of `automaton` accepts `string`, by carrying the set of states.
    static func simulate(_ automaton: ByteNFA, _ fragment: Fragment, _ string: [UInt8]) -> Bool {
        func closure(_ seeds: Set<Int32>) -> Set<Int32> {
            var result = seeds
            var stack = Array(seeds)
            while let state = stack.popLast() {
                for edge in automaton.edges(of: state) where edge.label == nil && result.insert(edge.target).inserted {
                    stack.append(edge.target)
                }
            }
            return result
        }
        var states = closure([fragment.start])
        for byte in string {
            var next: Set<Int32> = []
            for state in states {
                for edge in automaton.edges(of: state) {
                    if case .bytes(let bytes)? = edge.label, bytes.contains(byte) { next.insert(edge.target) }
                }
            }
            states = closure(next)
        }
        return states.contains(fragment.end)
    }

    /// Byte classes found from the runs' ends agree with comparing whole columns, on automata
    /// whose rows share some run ends and not others.
    @Test func byteClassesAgreeWithColumns() {
        var random = SplitMix64(seed: 5)
        for _ in 0 ..< 100 {
            let rows = Self.rows(&random).shuffled(using: &random).prefix(Int.random(in: 1 ... 30, using: &random))
            let dfa = DFA(transitions: rows.flatMap { $0.map { $0 >= 0 ? $0 % Int32(rows.count) : -1 } },
                          ruleEdges: [[DFA.RuleEdge]](repeating: [], count: rows.count), isFinal: [Bool](repeating: true, count: rows.count))
            #expect(dfa.byteClassRepresentatives() == dfa.byteClassRepresentativesComparingColumns())
        }
    }

    /// A random regular automaton whose rows are ranges over a small alphabet (so products
    /// cut runs of one by the runs of the other), with every state final at random.
    static func randomRegularAutomaton(_ random: inout SplitMix64) -> DFA {
        let count = Int.random(in: 1 ... 12, using: &random)
        var transitions = [Int32](repeating: -1, count: count << 8)
        for state in 0 ..< count {
            for _ in 0 ..< Int.random(in: 0 ... 3, using: &random) {
                let low = Int.random(in: 0x60 ..< 0x68, using: &random), high = Int.random(in: low ..< 0x68, using: &random)
                let target = Int32.random(in: 0 ..< Int32(count), using: &random)
                for byte in low ... high { transitions[state << 8 | byte] = target }
            }
        }
        let isFinal = (0 ..< count).map { _ in Int.random(in: 0 ..< 3, using: &random) == 0 }
        return DFA(transitions: transitions, ruleEdges: [[DFA.RuleEdge]](repeating: [], count: count), isFinal: isFinal)
    }

    /// Intersections and differences accept exactly the strings that membership in both
    /// operands says they should, on every string of up to five bytes over the alphabet.
    @Test func productsAgreeWithMembership() throws {
        var random = SplitMix64(seed: 3)
        var strings: [[UInt8]] = [[]]
        var frontier: [[UInt8]] = [[]]
        for _ in 0 ..< 5 {
            frontier = frontier.flatMap { prefix in (0x60 ..< 0x68).map { prefix + [UInt8($0)] } }
            strings += frontier
        }
        for _ in 0 ..< 60 {
            let left = Self.randomRegularAutomaton(&random), right = Self.randomRegularAutomaton(&random)
            let both = try left.intersection(right), onlyLeft = try left.subtracting(right)
            for string in strings {
                let inLeft = left.accepts(string), inRight = right.accepts(string)
                #expect(both.accepts(string) == (inLeft && inRight))
                #expect(onlyLeft.accepts(string) == (inLeft && !inRight))
            }
        }
    }

    /// Products too large for a table of all pairs (their pairs are hashed) agree with
    /// arithmetic: digit strings divisible by 257 and by 263, or by 257 and not 263.
    @Test func largeProductsAgreeWithArithmetic() throws {
        func multiples(of divisor: Int) -> DFA {
            var transitions = [Int32](repeating: -1, count: divisor << 8)
            for remainder in 0 ..< divisor {
                for digit in 0 ... 9 { transitions[remainder << 8 | (0x30 + digit)] = Int32((remainder * 10 + digit) % divisor) }
            }
            return DFA(transitions: transitions, ruleEdges: [[DFA.RuleEdge]](repeating: [], count: divisor),
                       isFinal: (0 ..< divisor).map { $0 == 0 })
        }
        let left = multiples(of: 257), right = multiples(of: 263)
        #expect(left.stateCount * (right.stateCount + 1) > 1 << 16)
        let both = try left.intersection(right, stateLimit: 1 << 17), onlyLeft = try left.subtracting(right, stateLimit: 1 << 17)
        #expect(both.stateCount == 257 * 263)
        var random = SplitMix64(seed: 29)
        var values = (0 ..< 400).map { _ in Int.random(in: 0 ..< 100_000_000, using: &random) }
        values += (0 ..< 200).map { _ in 257 * 263 * Int.random(in: 0 ..< 1000, using: &random) }
        values += (0 ..< 200).map { _ in 257 * Int.random(in: 0 ..< 100_000, using: &random) }
        for value in values {
            let digits = Array(String(value).utf8)
            #expect(both.accepts(digits) == (value % 257 == 0 && value % 263 == 0), "\(value)")
            #expect(onlyLeft.accepts(digits) == (value % 257 == 0 && value % 263 != 0), "\(value)")
        }
    }

    /// The trie of literals accepts exactly them, and minimises to what the subset
    /// construction from their union builds (the same language, so the same minimal table);
    /// a difference is the strings of one and not the other, built from the trie or the literals.
    @Test func literalTriesAgreeWithTheSubsetConstruction() throws {
        var random = SplitMix64(seed: 5)
        for _ in 0 ..< 40 {
            let literals: [[UInt8]] = (0 ..< Int.random(in: 1 ..< 12, using: &random)).map { _ in
                (0 ..< Int.random(in: 0 ..< 6, using: &random)).map { _ in UInt8.random(in: 0x61 ... 0x64, using: &random) }
            }
            let trie = try DFA(literals: literals)
            var automaton = ByteNFA()
            let pieces = literals.map { automaton.literal($0) }
            let built = try DFA(automaton.union(pieces), of: automaton)
            #expect(trie.minimized().transitions == built.transitions)
            #expect(trie.minimized().isFinal == built.isFinal)
            for literal in literals { #expect(trie.accepts(literal)) }
            #expect(trie.isFinal.filter { $0 }.count == Set(literals).count)

            let everything = try DFA(literals: [[0x61], [0x61, 0x62], [0x62, 0x63, 0x64], [0x64, 0x64, 0x64, 0x64]]).minimized()
            let difference = try everything.subtracting(trie)
            for string in literals + [[0x61], [0x61, 0x62], [0x62, 0x63, 0x64], [0x64, 0x64, 0x64, 0x64]] {
                #expect(difference.accepts(string) == (everything.accepts(string) && !literals.contains(string)))
            }
            #expect(try everything.subtracting(literals: literals) == difference)
        }
        #expect(try DFA(literals: []).isEmptyLanguage)
    }
}
