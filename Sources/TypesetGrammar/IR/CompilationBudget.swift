import Dispatch
import Foundation
import Synchronization

/// What compiling one schema, regular expression or grammar text may spend before it fails
/// with ``GrammarError/budgetExceeded(what:limit:)``.
///
/// The limits are checked where the work happens (merging `allOf`s and expanding `anyOf`s,
/// building an object's property list, unrolling repetitions, determinizing automata, building
/// the pushdown automaton), so a hostile schema is refused within about its time budget
/// whatever its shape. A server lowers them for requests it does not trust:
///
///     var budget = CompilationBudget()
///     budget.seconds = 0.5
///     budget.bytes = 128 << 20
///     let grammar = try cache.grammar(forJSONSchema: schema, budget: budget)
public struct CompilationBudget: Sendable, Hashable {
    /// Wall-clock seconds from the schema's text to its pushdown automaton (parsing, the schema
    /// compiler, determinization). Default 2.
    public var seconds: Double
    /// Bytes the compiler's structures may hold at once, estimated from their sizes (automaton
    /// states and edges, the schema document). Default 512 MiB.
    public var bytes: Int
    /// Deterministic automaton states over all rules of the pushdown automaton. Default 65,536.
    public var automatonStates: Int
    /// Wall-clock seconds for precomputing the token masks, after the automaton. Default 30
    /// (large vocabularies over large automata take seconds; see docs/grammar.md).
    public var maskSeconds: Double
    /// Threads that may determinize a large grammar's rules at once (small grammars use one).
    /// Default: the machine's active processors, at most 4. A server that keeps its cores for
    /// decoding sets 1. The initializer takes a count below 1 as 1.
    public var threads: Int

    public init(seconds: Double = 2, bytes: Int = 512 << 20, automatonStates: Int = 1 << 16, maskSeconds: Double = 30,
                threads: Int = CompilationBudget.defaultThreads) {
        self.seconds = seconds
        self.bytes = bytes
        self.automatonStates = automatonStates
        self.maskSeconds = maskSeconds
        self.threads = max(1, threads)
    }

    /// The machine's active processors, at most 4.
    public static let defaultThreads = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))
}

extension CompilationBudget {
    /// Runs `body` so that every compilation inside it spends this one budget: a grammar
    /// built from a schema and then compiled against a vocabulary has `seconds` for both
    /// steps, not `seconds` each. (``CompiledGrammarCache`` does this for its misses.)
    package func spending<Result>(_ body: () throws(GrammarError) -> Result) throws(GrammarError) -> Result {
        try CompilationMeter.metering(self, body)
    }
}

/// Spends a ``CompilationBudget`` during one compilation: a deadline, and a check of the bytes
/// the caller estimates its structures hold against the budget's.
///
/// The meter of the compilation under way is a task-local (``current``), so the automaton
/// constructions deep inside the compiler check it without a parameter threaded through every
/// call. Outside a compilation there is none and the checks cost one task-local read.
final class CompilationMeter: Sendable {
    let budget: CompilationBudget
    /// `DispatchTime` uptime nanoseconds at which the time budget runs out.
    let deadline: UInt64
    /// Bytes held by the structure the compilation keeps growing (the grammar's automaton),
    /// as last reported; the other checks add their own structure's bytes to it.
    let retainedBytes = Atomic<Int>(0)

    init(_ budget: CompilationBudget) {
        self.budget = budget
        let nanoseconds = budget.seconds.isFinite ? max(0, budget.seconds) * 1e9 : Double(UInt64.max / 2)
        deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(min(nanoseconds, Double(UInt64.max / 2)))
    }

    @TaskLocal static var current: CompilationMeter?

    /// Runs `body` with `meter` as the current one (or the one already running, when nested:
    /// a compilation inside a compilation spends the outer budget).
    static func metering<Result>(
        _ budget: CompilationBudget, _ body: () throws(GrammarError) -> Result
    ) throws(GrammarError) -> Result {
        if current != nil { return try body() }
        let meter = CompilationMeter(budget)
        do {
            return try $current.withValue(meter) { try body() }
        } catch let error as GrammarError {
            throw error
        } catch {
            preconditionFailure("only GrammarError is thrown inside a compilation")
        }
    }

    /// Throws when the deadline has passed or `bytes` (the caller's estimate of what the
    /// compilation holds now) is over the budget. `what` names the work, for the error.
    func check(bytes: Int = 0, _ what: @autoclosure () -> String) throws(GrammarError) {
        let total = bytes + retainedBytes.load(ordering: .relaxed)
        if total > budget.bytes {
            throw .budgetExceeded(what: "memory in MiB (about \(total >> 20)) while \(what())", limit: budget.bytes >> 20)
        }
        if DispatchTime.now().uptimeNanoseconds > deadline {
            throw .budgetExceeded(what: "milliseconds while \(what())", limit: Int((budget.seconds * 1000).rounded(.up)))
        }
    }

    /// Records the bytes of the structure the compilation keeps (see ``retainedBytes``) and
    /// checks them.
    func retain(bytes: Int, _ what: @autoclosure () -> String) throws(GrammarError) {
        retainedBytes.store(bytes, ordering: .relaxed)
        try check(what())
    }

    /// ``check(bytes:_:)`` against the current meter, if any.
    static func check(bytes: Int = 0, _ what: @autoclosure () -> String) throws(GrammarError) {
        guard let meter = current else { return }
        try meter.check(bytes: bytes, what())
    }

    /// Estimated bytes per state of a `ByteNFA` under construction: its edge array (header and
    /// allocation) and one to two edges of 40 bytes.
    static let bytesPerNFAState = 112
    /// Estimated bytes per state of a `DFA`: the 256 transitions and the state's bookkeeping.
    static let bytesPerDFAState = 1024 + 64
}
