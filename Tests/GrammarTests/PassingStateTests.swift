import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// Subset constructions read past passing states (one ε-move out and nothing else,
/// `ReachableNFA.bypassPassingStates`): the languages must be those of the automata as built,
/// whatever chains, cycles of ε-moves and exits with moves out of them they hold.
@Suite struct PassingStateTests {
    /// Every string over `a`, `b` of at most `length` bytes.
    static func strings(upTo length: Int) -> [[UInt8]] {
        var all: [[UInt8]] = [[]]
        var layer: [[UInt8]] = [[]]
        for _ in 0 ..< length {
            layer = layer.flatMap { [$0 + [UInt8(ascii: "a")], $0 + [UInt8(ascii: "b")]] }
            all += layer
        }
        return all
    }

    /// A random automaton rich in ε-moves: chains of passing states, cycles of them, states
    /// with several ε-moves, and an exit that has a move out of it.
    static func randomAutomaton(_ random: inout SplitMix64) -> (ByteNFA, Fragment) {
        var automaton = ByteNFA()
        let count = Int.random(in: 3 ... 14, using: &random)
        let states = (0 ..< count).map { _ in automaton.addState() }
        for state in states {
            for _ in 0 ..< Int.random(in: 0 ... 2, using: &random) {
                let target = states[Int.random(in: 0 ..< count, using: &random)]
                switch Int.random(in: 0 ..< 4, using: &random) {
                case 0: automaton.addEdge(from: state, to: target, label: .bytes(ByteSet([UInt8(ascii: "a")])))
                case 1: automaton.addEdge(from: state, to: target, label: .bytes(ByteSet([UInt8(ascii: "b")])))
                default: automaton.addEdge(from: state, to: target, label: nil)
                }
            }
        }
        return (automaton, Fragment(start: states[0], end: states[Int.random(in: 0 ..< count, using: &random)]))
    }

    @Test func languagesAreThoseOfTheAutomataAsBuilt() throws {
        var random = SplitMix64(seed: 29)
        let texts = Self.strings(upTo: 6)
        for _ in 0 ..< 400 {
            let (automaton, part) = Self.randomAutomaton(&random)
            let dfa = try DFA(part, of: automaton)
            for text in texts {
                #expect(dfa.accepts(text) == TransitionRowTests.simulate(automaton, part, text), "\(text)")
            }
        }
    }

    /// Rules read from one shared automaton: a rule whose exit has a single ε-move out (it is
    /// joined into a longer rule) keeps that exit, and the longer rule reads past it.
    @Test func rulesSharingAnAutomatonKeepTheirExits() throws {
        var automaton = ByteNFA()
        let short = automaton.sequence([automaton.literal(Array("ab".utf8)), automaton.empty(), automaton.empty()])
        let long = automaton.sequence([short, automaton.empty(), automaton.literal(Array("ba".utf8))])
        let cycle = automaton.star(automaton.star(automaton.empty()))
        let looping = automaton.sequence([cycle, automaton.literal(Array("a".utf8))])
        let parts = [short, long, looping]
        let reachable = ReachableNFA(everythingIn: automaton, ends: parts.map(\.end))
        var closure = EpsilonClosure(reachable)
        for part in parts {
            let dfa = try DFA(part, closure: &closure)
            for text in Self.strings(upTo: 5) {
                #expect(dfa.accepts(text) == TransitionRowTests.simulate(automaton, part, text), "\(part) \(text)")
            }
        }
    }
}
