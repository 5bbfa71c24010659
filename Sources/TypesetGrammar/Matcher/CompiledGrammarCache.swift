import Foundation
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
///
/// With a `directory`, grammars also persist across processes: each one compiled is archived
/// there (`CompiledGrammar.archive(key:)`, one file per schema, options and vocabulary, with
/// the masks computed by then), and a schema missing from memory is loaded from its file
/// before it is compiled. A file that is not a valid archive for this key and vocabulary
/// (truncated, altered, another format version, a name collision) is ignored, counted in
/// ``Statistics/rejectedArchives``, and replaced by a new compilation: never trusted.
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
        /// Grammars loaded from the directory instead of compiled.
        public var loads = 0
        /// Grammars written to the directory.
        public var stores = 0
        /// Files in the directory that were not a valid archive for their key, and were rebuilt.
        public var rejectedArchives = 0

        /// All zero: no lookups yet.
        package init() {}
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
    /// Where compiled grammars are archived and looked for (`nil`: memory only).
    public let directory: String?
    private let state = Mutex(State())

    /// - Parameter directory: a directory to archive grammars in and load them from; created
    ///   if missing. Share one only between processes that trust each other: a grammar loaded
    ///   from it is not compiled again under the caller's budget.
    public init(
        vocabulary: GrammarVocabulary, capacityBytes: Int = 256 << 20, maskComputation: MaskComputation = .upfront,
        directory: String? = nil
    ) {
        self.vocabulary = vocabulary
        self.capacityBytes = max(0, capacityBytes)
        self.maskComputation = maskComputation
        self.directory = directory
        if let directory { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
    }

    /// What a grammar is compiled from, as an archive's key.
    static func archiveKey(schema: JSONValue, options: JSONSchemaOptions) -> String {
        schema.compactText + "\n" + String(describing: options)
    }

    /// The file of `key` in `directory`.
    func archivePath(key: String, in directory: String) -> String {
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return directory + "/" + hex(GrammarArchive.fnv1a(key.utf8)) + "-" + hex(vocabulary.fingerprint) + ".grammar"
    }

    /// The grammar archived under `key`, if its file is a valid archive.
    private func load(key: String) -> CompiledGrammar? {
        guard let directory, let data = FileManager.default.contents(atPath: archivePath(key: key, in: directory)) else { return nil }
        do {
            let grammar = try CompiledGrammar(archive: [UInt8](data), key: key, vocabulary: vocabulary, maskComputation: maskComputation)
            state.withLock { $0.statistics.loads += 1 }
            return grammar
        } catch {
            state.withLock { $0.statistics.rejectedArchives += 1 }
            return nil
        }
    }

    private func store(_ grammar: CompiledGrammar, key: String) {
        guard let directory else { return }
        let path = archivePath(key: key, in: directory)
        do {
            try Data(grammar.archive(key: key)).write(to: URL(fileURLWithPath: path), options: .atomic)
            state.withLock { $0.statistics.stores += 1 }
        } catch {
            // A directory that cannot be written leaves the cache in memory only.
        }
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
        let archiveKey = directory == nil ? "" : Self.archiveKey(schema: schema, options: options)
        if directory != nil, let loaded = load(key: archiveKey) {
            keep(loaded, under: key)
            return loaded
        }
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
        if directory != nil { store(compiled, key: archiveKey) }
        keep(compiled, under: key)
        return compiled
    }

    private func keep(_ compiled: CompiledGrammar, under key: Key) {
        let bytes = compiled.byteCount
        guard bytes <= capacityBytes else { return }
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
