import Foundation
import Testing
import TypesetTestSupport
@testable import TypesetGrammar

/// Rules determinized on several threads (`PushdownAutomaton.determinize`) against one
/// thread: the same automata and facts, and past a limit the same error.
@Suite struct ParallelDeterminizationTests {
    /// Objects of many properties under `anyOf`, past `parallelStateThreshold` NFA states.
    static func largeSchema(objects: Int) -> String {
        let variants = (0 ..< objects).map { object in
            let properties = (0 ..< 12).map { property in
                let value = property.isMultiple(of: 3) ? #"{"type":"string","pattern":"^[a-z]{2,5}$"}"# : property.isMultiple(of: 2) ? #"{"enum":["one","two","three"]}"# : #"{"type":"integer"}"#
                return "\"field\(object)x\(property)\":\(value)"
            }
            return #"{"type":"object","properties":{\#(properties.joined(separator: ","))},"required":["field\#(object)x0"]}"#
        }
        return #"{"type":"array","items":{"anyOf":[\#(variants.joined(separator: ","))]}}"#
    }

    @Test func severalThreadsBuildWhatOneBuilds() throws {
        let grammar = try Grammar(jsonSchema: Self.largeSchema(objects: 30))
        #expect(ReachableNFA(everythingIn: grammar.automaton, ends: []).stateCount >= PushdownAutomaton.parallelStateThreshold)
        let one = try PushdownAutomaton(grammar, stateLimit: 1 << 16, threads: 1)
        for threads in [2, 3] {
            let several = try PushdownAutomaton(grammar, stateLimit: 1 << 16, threads: threads)
            let sameRules = several.rules == one.rules  // (not expanded: a failure would print every table)
            #expect(sameRules, "\(threads) threads")
            #expect(several.nullable == one.nullable && several.first == one.first && several.follow == one.follow)
        }
    }

    @Test func severalThreadsFailAsOneFails() throws {
        let grammar = try Grammar(jsonSchema: Self.largeSchema(objects: 30))
        let needed = try PushdownAutomaton(grammar, stateLimit: 1 << 16, threads: 1).rules.reduce(0) { $0 + $1.stateCount }
        for limit in [needed / 3, needed - 1] {
            var errors: [String] = []
            for threads in [1, 2] {
                do {
                    _ = try PushdownAutomaton(grammar, stateLimit: limit, threads: threads)
                    Issue.record("compiled within \(limit) states")
                } catch {
                    errors.append("\(error)")
                }
            }
            #expect(errors.count == 2 && errors[0] == errors[1], "\(errors)")
        }
        // Within the limit exactly, both build it.
        #expect(try PushdownAutomaton(grammar, stateLimit: needed, threads: 2).rules.count == grammar.ruleCount)
    }
}
