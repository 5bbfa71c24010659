import Synchronization

/// Compiled JSON Schema grammars kept for reuse over one vocabulary, keyed by the schema's
/// JSON value and the compiler's options, bounded in bytes: the least recently used grammars
/// leave first. Thread-safe; a server shares one per model.
///
///     let cache = CompiledGrammarCache(vocabulary: vocabulary, capacityBytes: 256 << 20)
///     let grammar = try cache.grammar(forJSONSchema: schema, options: .generation)
///     print(cache.statistics.hits, cache.statistics.misses)
///
/// Two schemas that differ only in spacing or string escapes are one key (they parse to the
/// same value); a different property order is another key (it is another grammar: properties
/// are generated in declaration order). Compilation happens outside the lock, so two requests
/// for a new schema at once may both compile it.
public final class CompiledGrammarCache: Sendable {
    /// Counts since the cache was made.
    public struct Statistics: Sendable, Equatable {
        /// Lookups answered from the cache.
        public var hits = 0
        /// Lookups that compiled (and failures, which are not kept).
        public var misses = 0
        /// Grammars removed to make room.
        public var evictions = 0
        /// Grammars held now.
        public var count = 0
        /// Their ``CompiledGrammar/byteCount``, summed.
        public var byteCount = 0
        /// Seconds spent compiling (the misses, failures included).
        public var compileSeconds = 0.0

        /// All zero: no lookups yet.
        public init() {}
    }

    private struct Key: Hashable {
        var schema: JSONValue
        var options: JSONSchemaOptions
    }

    private struct Entry {
        var grammar: CompiledGrammar
        var byteCount: Int
        var lastUse: Int
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var clock = 0
        var statistics = Statistics()
    }

    /// The vocabulary every grammar is compiled against.
    public let vocabulary: GrammarVocabulary
    /// The most bytes the kept grammars may take; a grammar larger than this is compiled and
    /// returned but not kept.
    public let capacityBytes: Int
    /// When the grammars' masks are computed.
    public let maskComputation: MaskComputation
    private let state = Mutex(State())

    public init(vocabulary: GrammarVocabulary, capacityBytes: Int = 256 << 20, maskComputation: MaskComputation = .upfront) {
        self.vocabulary = vocabulary
        self.capacityBytes = max(0, capacityBytes)
        self.maskComputation = maskComputation
    }

    /// The grammar of `schema` under `options`, compiled now or earlier.
    ///
    /// - Throws: the compiler's ``GrammarError`` (unsupported keyword, `budget` exceeded, empty
    ///   language).
    /// - Complexity: a hash of the schema's value when cached; a compilation otherwise.
    public func grammar(
        forJSONSchema schema: JSONValue, options: JSONSchemaOptions = .generation,
        budget: CompilationBudget = CompilationBudget()
    ) throws(GrammarError) -> CompiledGrammar {
        let key = Key(schema: schema, options: options)
        let cached: CompiledGrammar? = state.withLock { state in
            state.clock += 1
            guard let entry = state.entries[key] else {
                state.statistics.misses += 1
                return nil
            }
            state.entries[key]!.lastUse = state.clock
            state.statistics.hits += 1
            return entry.grammar
        }
        if let cached { return cached }
        let clock = ContinuousClock(), started = clock.now
        defer {
            let elapsed = clock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            state.withLock { $0.statistics.compileSeconds += seconds }
        }
        // One budget for the schema and its automaton (the masks have their own).
        let compiled = try CompilationMeter.metering(budget) { () throws(GrammarError) in
            try CompiledGrammar(
                try Grammar(jsonSchema: schema, options: options, budget: budget), vocabulary: vocabulary, budget: budget,
                maskComputation: maskComputation)
        }
        let bytes = compiled.byteCount
        guard bytes <= capacityBytes else { return compiled }
        state.withLock { state in
            state.entries[key] = Entry(grammar: compiled, byteCount: bytes, lastUse: state.clock)
            // Masks computed on first use grow their grammars after they were stored: the
            // total is taken again, from each grammar's size now.
            for key in state.entries.keys { state.entries[key]!.byteCount = state.entries[key]!.grammar.byteCount }
            state.statistics.byteCount = state.entries.values.reduce(0) { $0 + $1.byteCount }
            while state.statistics.byteCount > capacityBytes,
                  let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                state.entries[oldest.key] = nil
                state.statistics.byteCount -= oldest.value.byteCount
                state.statistics.evictions += 1
            }
        }
        return compiled
    }

    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.count = state.entries.count
            return statistics
        }
    }

    /// Forgets every grammar (the counts stay).
    public func removeAll() {
        state.withLock { state in
            state.entries.removeAll()
            state.statistics.byteCount = 0
        }
    }
}
