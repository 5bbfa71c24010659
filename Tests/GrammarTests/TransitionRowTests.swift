import Testing
import TypesetTestSupport
@testable import Grammar

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

    /// The trie of literals accepts exactly them, and minimises to what the subset
    /// construction from their union builds (the same language, so the same minimal table);
    /// a difference left unminimised accepts what the minimised one does.
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

            let everything = try DFA(literals: [[0x61], [0x61, 0x62], [0x62, 0x63, 0x64], [0x64, 0x64, 0x64, 0x64]])
            let unminimized = try everything.subtracting(trie, minimizing: false)
            let minimized = try everything.subtracting(trie)
            for string in literals + [[0x61], [0x61, 0x62], [0x62, 0x63, 0x64], [0x64, 0x64, 0x64, 0x64]] {
                #expect(unminimized.accepts(string) == minimized.accepts(string))
                #expect(minimized.accepts(string) == (everything.accepts(string) && !literals.contains(string)))
            }
        }
        #expect(try DFA(literals: []).isEmptyLanguage)
    }
}
