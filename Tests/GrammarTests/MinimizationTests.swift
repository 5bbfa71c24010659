import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// Hopcroft's minimisation against Moore's partition refinement, kept here as the reference:
/// both renumber the classes breadth-first from the start, so on every automaton they must
/// give the very same tables.
@Suite struct MinimizationTests {
    /// Moore: refine "final or not" by the classes each state's symbols lead to, until no
    /// class splits. Slow on long chains (one round per symbol of the longest distinguishing
    /// word), obviously right.
    static func mooreClasses(_ dfa: DFA) -> [Int32] {
        let count = dfa.stateCount
        var classes = dfa.isFinal.map { $0 ? Int32(1) : 0 }
        var classCount = Set(classes).count
        struct Signature: Hashable {
            var own: Int32
            var bytes: [Int32]
            var rules: [DFA.RuleEdge]
        }
        while true {
            var signatures: [Signature: Int32] = [:]
            var refined = [Int32](repeating: 0, count: count)
            for state in 0 ..< count {
                let row = (0 ..< 256).map { byte -> Int32 in
                    let target = dfa.transitions[state << 8 | byte]
                    return target >= 0 ? classes[Int(target)] : -1
                }
                let rules = dfa.ruleEdges[state].map { DFA.RuleEdge(rule: $0.rule, target: classes[Int($0.target)]) }.sorted { $0.rule < $1.rule }
                let signature = Signature(own: classes[state], bytes: row, rules: rules)
                if let known = signatures[signature] {
                    refined[state] = known
                } else {
                    refined[state] = Int32(signatures.count)
                    signatures[signature] = Int32(signatures.count)
                }
            }
            classes = refined
            if signatures.count == classCount { return classes }
            classCount = signatures.count
        }
    }

    /// A random automaton over a few bytes (some shared by ranges, so byte classes matter)
    /// with rule edges, trimmed.
    static func randomAutomaton(_ random: inout SplitMix64) -> DFA {
        let count = Int.random(in: 1 ... 40, using: &random)
        let alphabet: [UInt8] = [0x61, 0x62, 0x63, 0x64, 0x30, 0x31]
        var transitions = [Int32](repeating: -1, count: count << 8)
        var ruleEdges = [[DFA.RuleEdge]](repeating: [], count: count)
        var isFinal = [Bool](repeating: false, count: count)
        for state in 0 ..< count {
            isFinal[state] = Int.random(in: 0 ..< 4, using: &random) == 0
            for byte in alphabet where Int.random(in: 0 ..< 3, using: &random) > 0 {
                let target = Int32.random(in: 0 ..< Int32(count), using: &random)
                transitions[state << 8 | Int(byte)] = target
                // '0' and '1' often move together: one byte class.
                if byte == 0x30, Bool.random(using: &random) { transitions[state << 8 | 0x31] = target }
            }
            for rule in 0 ..< Int32(2) where Int.random(in: 0 ..< 5, using: &random) == 0 {
                ruleEdges[state].append(DFA.RuleEdge(rule: rule, target: Int32.random(in: 0 ..< Int32(count), using: &random)))
            }
        }
        let dfa = DFA(transitions: transitions, ruleEdges: ruleEdges, isFinal: isFinal)
        return dfa.keepingEntryByEntry(dfa.statesThatCanFinish { _ in true })
    }

    @Test(arguments: 0 ..< 8) func hopcroftAgreesWithMoore(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        for _ in 0 ..< 250 {
            let dfa = Self.randomAutomaton(&random)
            #expect(dfa.byteClassRepresentatives() == dfa.byteClassRepresentativesComparingColumns())
            let fast = dfa.minimized()
            let reference = dfa.quotient(Self.mooreClasses(dfa))
            #expect(fast.transitions == reference.transitions)
            #expect(fast.isFinal == reference.isFinal)
            #expect(fast.ruleEdges.map { Set($0) } == reference.ruleEdges.map { Set($0) })
        }
    }

    /// The subset construction's automaton keeps rows as runs until minimised: the same
    /// automaton as runs gives the same byte classes, the same minimal tables as Moore's
    /// refinement of the 256-entry table, and the same trimming.
    @Test(arguments: 0 ..< 4) func runRowsMinimizeAsTables(seed: UInt64) {
        var random = SplitMix64(seed: 100 + seed)
        for _ in 0 ..< 250 {
            let dfa = Self.randomAutomaton(&random)
            var runs = RunAutomaton()
            for state in 0 ..< dfa.stateCount {
                for byte in 0 ..< 256 where dfa.transitions[state << 8 | byte] >= 0 {
                    runs.appendMoves(on: byte ..< byte + 1, to: dfa.transitions[state << 8 | byte])
                }
                runs.endState(ruleEdges: dfa.ruleEdges[state], isFinal: dfa.isFinal[state])
            }
            #expect(runs.byteClassRepresentatives() == dfa.byteClassRepresentativesComparingColumns())
            #expect(runs.byteClassRepresentatives() == runs.byteClassRepresentativesComparingColumns())
            let minimal = runs.minimized()
            let reference = dfa.quotient(Self.mooreClasses(dfa))
            #expect(minimal.transitions == reference.transitions)
            #expect(minimal.isFinal == reference.isFinal)
            #expect(minimal.ruleEdges.map { Set($0) } == reference.ruleEdges.map { Set($0) })
            let alive = (0 ..< dfa.stateCount).map { $0 == 0 || Int.random(in: 0 ..< 4, using: &random) > 0 }
            #expect(RunAutomaton(keeping: alive, of: runs).minimized() == dfa.keepingEntryByEntry(alive).minimized())
        }
    }

    /// A counted chain of thousands of states, which Moore would refine one layer per round,
    /// comes out minimal: eight states per character of `[^.]{0,n}` plus the final one.
    @Test func longCountedChainsAreMinimal() throws {
        var automaton = CharacterNFA()
        let fragment = try RegularExpression.build("[^.]{0,1000}", search: false, into: &automaton, repetitionLimit: 2000)
        var bytes = ByteNFA()
        let lowered = Lowering.lower(fragment, of: automaton, into: &bytes) { set, nfa in Lowering.utf8(set, into: &nfa) }
        let dfa = try DFA(lowered, of: bytes, stateLimit: 1 << 20)
        #expect(dfa.stateCount == 8 * 1000 + 1)
    }

    /// Patterns determinized over characters and then spelled in bytes (`CharacterDFA`) give
    /// the very automaton of lowering every class to its JSON spelling first and determinizing
    /// the bytes (the construction it replaced, slow but direct): minimal automata renumbered
    /// breadth-first are equal exactly when their languages are.
    @Test(arguments: [
        "abc", "^(http)|(https)://(.*)$", ".{1,40}", "^[a-z]+(-[a-z0-9]+)*$", "[éè]x|[à-ÿ]+y", "\\d{2,3}|\\w+",
        "^(?:[^\\s\"]|\\\\)*$", "[\\u0000-\\u001f]+", "😀|[😁-😎]{2}|.", "(a|ab)(c|bcd)(d*)", "[^a-c]*b[^b]*",
        "^(portal)|(console)|(signup)|(libraries)|(swagger)|(X-[a-z0-9\\-]*)$", "[\\u{10000}-\\u{10FFFF}]", "",
    ]) func characterFirstDeterminizationAgreesWithBytes(pattern: String) throws {
        for search in [false, true] {
            var characters = CharacterNFA()
            let fragment = try RegularExpression.build(pattern, search: search, into: &characters)
            var fans: [[CodePointSet]: DFA] = [:]
            let fast = try CharacterDFA(fragment, of: characters).quotedJSONStrings(fans: &fans)
            var bytes = ByteNFA()
            let lowered = Lowering.lower(fragment, of: characters, into: &bytes) { set, nfa in Lowering.jsonStringCharacter(set, into: &nfa) }
            let whole = bytes.sequence([bytes.literal([0x22]), lowered, bytes.literal([0x22])])
            let reference = try DFA(whole, of: bytes, stateLimit: 1 << 20)
            #expect(fast.transitions == reference.transitions, "\(pattern), search \(search)")
            #expect(fast.isFinal == reference.isFinal, "\(pattern), search \(search)")
        }
    }
}

extension DFA {
    /// The states reachable from the start where `alive`, renumbered breadth-first, read and
    /// spelled entry by entry: the reference for trimming by runs (`RunAutomaton(keeping:of:)`).
    fileprivate func keepingEntryByEntry(_ alive: [Bool]) -> DFA {
        guard alive[0] else { return .empty }
        var renumber = [Int32](repeating: -1, count: stateCount)
        var order = [0]
        renumber[0] = 0
        func visit(_ target: Int32) {
            guard target >= 0, alive[Int(target)], renumber[Int(target)] < 0 else { return }
            renumber[Int(target)] = Int32(order.count)
            order.append(Int(target))
        }
        var cursor = 0
        while cursor < order.count {
            let state = order[cursor]
            cursor += 1
            for byte in 0 ..< 256 { visit(transitions[state << 8 | byte]) }
            for edge in ruleEdges[state] { visit(edge.target) }
        }
        var kept = [Int32](repeating: -1, count: order.count << 8)
        for (new, old) in order.enumerated() {
            for byte in 0 ..< 256 where transitions[old << 8 | byte] >= 0 { kept[new << 8 | byte] = renumber[Int(transitions[old << 8 | byte])] }
        }
        let keptRules = order.map { old in
            ruleEdges[old].compactMap { renumber[Int($0.target)] >= 0 ? RuleEdge(rule: $0.rule, target: renumber[Int($0.target)]) : nil }
        }
        return DFA(transitions: kept, ruleEdges: keptRules, isFinal: order.map { isFinal[$0] })
    }
}
