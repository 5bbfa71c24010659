import Dispatch

// MARK: Compiled grammars as bytes

/// Why an archived grammar was not loaded. Every one means "compile it again": an archive is
/// checked, never trusted.
public enum GrammarArchiveError: Error, Equatable, CustomStringConvertible {
    /// The bytes do not start like an archive of this format.
    case notAnArchive
    /// Written by another version of the format.
    case otherFormatVersion(Int)
    /// The payload's checksum does not match: the file was cut short or changed.
    case checksumMismatch
    /// Compiled for another vocabulary, or under another key (schema and options).
    case stale(String)
    /// The payload is not a consistent grammar (a state, rule or token out of range…), at
    /// this byte offset.
    case corrupt(offset: Int, reason: String)

    public var description: String {
        switch self {
        case .notAnArchive: return "not a compiled grammar archive"
        case .otherFormatVersion(let version): return "archive format version \(version), expected \(GrammarArchive.formatVersion)"
        case .checksumMismatch: return "archive checksum mismatch (truncated or altered)"
        case .stale(let what): return "archive is stale: \(what)"
        case .corrupt(let offset, let reason): return "corrupt archive at byte \(offset): \(reason)"
        }
    }
}

/// The layout of an archived `CompiledGrammar` (little-endian throughout):
///
///     ┌────────────┬─────────┬──────────────┬────────────┬──────────────────────────────┐
///     │ "TSGRAMMR" │ version │ payload size │ FNV-1a 64  │ payload                      │
///     │  8 bytes   │ u32     │ u64          │ of payload │                              │
///     └────────────┴─────────┴──────────────┴────────────┴──────────────────────────────┘
///     payload: vocabulary fingerprint · key text · rules (name, byte runs, rule edges,
///              final states, length bounds) · root · nullable/first/follow/terminal/
///              reachable/distinct-item · shortest completions · the masks computed so
///              far, per slot
///
/// The key text (what the grammar was compiled from: schema and options) is stored whole and
/// compared on load, so two keys whose file names collide cannot mix.
enum GrammarArchive {
    static let magic = Array("TSGRAMMR".utf8)
    /// Bumped whenever the payload or the meaning of what it stores changes.
    static let formatVersion = 3

    /// FNV-1a of `bytes`, byte by byte: a stable hash (Swift's `Hasher` is seeded per process).
    static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash = FNV1a()
        for byte in bytes { hash.combine(UInt64(byte)) }
        return hash.value
    }

    /// The payload's checksum: FNV-1a over 64-bit little-endian words (the tail byte by
    /// byte), eight times faster than over bytes on archives of tens of megabytes.
    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.withUnsafeBytes { raw in
            var hash = FNV1a()
            let words = raw.count / 8
            for index in 0 ..< words {
                hash.combine(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self)))
            }
            for index in words * 8 ..< raw.count { hash.combine(UInt64(raw[index])) }
            return hash.value
        }
    }

    /// Whether integers in memory are already in the archive's byte order.
    static let isLittleEndian = UInt16(1).littleEndian == 1

    struct Writer {
        var bytes: [UInt8] = []

        mutating func integer<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func integers<T: FixedWidthInteger>(_ values: [T]) {
            integer(UInt64(values.count))
            if GrammarArchive.isLittleEndian {
                values.withUnsafeBytes { bytes.append(contentsOf: $0) }
            } else {
                for value in values { integer(value) }
            }
        }

        mutating func flags(_ values: [Bool]) {
            integer(UInt64(values.count))
            bytes.append(contentsOf: values.map { $0 ? 1 : 0 })
        }

        mutating func text(_ value: String) {
            let utf8 = Array(value.utf8)
            integer(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }

        mutating func byteSet(_ set: ByteSet) {
            integer(set.words.0)
            integer(set.words.1)
            integer(set.words.2)
            integer(set.words.3)
        }
    }

    /// Reads what `Writer` wrote, every length and value checked against the bytes left.
    struct Reader {
        let bytes: [UInt8]
        var offset: Int

        func corrupt(_ reason: String) -> GrammarArchiveError { .corrupt(offset: offset, reason: reason) }

        mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) throws(GrammarArchiveError) -> T {
            let size = MemoryLayout<T>.size
            guard bytes.count - offset >= size else { throw corrupt("ends inside a number") }
            var value: T = 0
            for index in 0 ..< size { value |= T(truncatingIfNeeded: bytes[offset + index]) << (8 * index) }
            offset += size
            return value
        }

        /// A count of elements of `size` bytes each that the remaining bytes can hold.
        mutating func count(of size: Int) throws(GrammarArchiveError) -> Int {
            let count: UInt64 = try integer()
            guard count <= UInt64((bytes.count - offset) / max(1, size)) else { throw corrupt("count \(count) past the end") }
            return Int(count)
        }

        mutating func integers<T: FixedWidthInteger>(_: T.Type = T.self) throws(GrammarArchiveError) -> [T] {
            let count = try count(of: MemoryLayout<T>.size)
            guard GrammarArchive.isLittleEndian else {
                var values: [T] = []
                values.reserveCapacity(count)
                for _ in 0 ..< count { values.append(try integer()) }
                return values
            }
            let start = offset
            offset += count * MemoryLayout<T>.size
            return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
                bytes.withUnsafeBytes { raw in
                    UnsafeMutableRawBufferPointer(buffer).copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[start ..< offset]))
                }
                initialized = count
            }
        }

        mutating func flags() throws(GrammarArchiveError) -> [Bool] {
            let count = try count(of: 1)
            defer { offset += count }
            return bytes[offset ..< offset + count].map { $0 != 0 }
        }

        mutating func text() throws(GrammarArchiveError) -> String {
            let count = try count(of: 1)
            defer { offset += count }
            return String(decoding: bytes[offset ..< offset + count], as: UTF8.self)
        }

        mutating func byteSet() throws(GrammarArchiveError) -> ByteSet {
            var set = ByteSet()
            set.words = (try integer(), try integer(), try integer(), try integer())
            return set
        }
    }
}

extension CompiledGrammar {
    /// The grammar as bytes: its automaton, shortest completions and the masks computed so
    /// far, under `key` (what it was compiled from; ``init(archive:key:vocabulary:maskComputation:)``
    /// loads it only under the same key and vocabulary).
    ///
    /// - Complexity: O(automaton states × 256 + stored masks).
    public func archive(key: String) -> [UInt8] {
        var payload = GrammarArchive.Writer()
        payload.integer(vocabulary.fingerprint)
        payload.text(key)
        payload.integer(UInt32(automaton.rules.count))
        for (index, dfa) in automaton.rules.enumerated() {
            payload.text(automaton.names[index])
            payload.integer(UInt32(dfa.stateCount))
            // Byte edges as runs of consecutive bytes with one target.
            var runs: [Int32] = []
            for state in 0 ..< dfa.stateCount {
                var byte = 0
                while byte < 256 {
                    let target = dfa.transitions[DFA.transitionIndex(state, byte)]
                    var end = byte
                    while end + 1 < 256, dfa.transitions[DFA.transitionIndex(state, end + 1)] == target { end += 1 }
                    if target >= 0 { runs += [Int32(state), Int32(byte), Int32(end), target] }
                    byte = end + 1
                }
            }
            payload.integers(runs)
            payload.integers(dfa.ruleEdges.enumerated().flatMap { state, edges in edges.flatMap { [Int32(state), $0.rule, $0.target] } })
            payload.flags(dfa.isFinal)
            let counter = automaton.counters[index]
            payload.integer(counter?.minimum ?? -1)
            payload.integer(counter?.maximum ?? -1)
            payload.integers(completionDistances.distance[index])
        }
        payload.integer(automaton.root)
        payload.flags(automaton.nullable)
        payload.flags(automaton.isTerminal)
        payload.flags(automaton.reachable)
        payload.flags(automaton.distinctItems)
        for set in automaton.first { payload.byteSet(set) }
        for set in automaton.follow { payload.byteSet(set) }
        // The distinct masks computed so far, then each slot's (−1: not computed).
        let stored = masks.storedMasks()
        var distinct: [MaskContent: Int32] = [:]
        var list: [PositionMask] = []
        let slots: [Int32] = stored.map { mask in
            guard let mask else { return -1 }
            let content = MaskContent(accepted: mask.accepted, undecided: mask.undecided)
            if let known = distinct[content] { return known }
            distinct[content] = Int32(list.count)
            list.append(mask)
            return Int32(list.count - 1)
        }
        payload.integer(UInt64(list.count))
        for mask in list {
            switch mask.accepted {
            case .listed(let tokens): payload.integer(UInt8(1)); payload.integers(tokens)
            case .allExcept(let tokens): payload.integer(UInt8(2)); payload.integers(tokens)
            case .bitset(let words): payload.integer(UInt8(3)); payload.integers(words)
            }
            payload.integers(mask.undecided)
            payload.integer(Int64(mask.acceptedCount))
            payload.integer(Int64(mask.rejectedCount))
            payload.integer(Int64(mask.wholesaleCount))
        }
        payload.integers(slots)
        var archive = GrammarArchive.Writer()
        archive.bytes = GrammarArchive.magic
        archive.integer(UInt32(GrammarArchive.formatVersion))
        archive.integer(UInt64(payload.bytes.count))
        archive.integer(GrammarArchive.checksum(payload.bytes[...]))
        archive.bytes += payload.bytes
        return archive.bytes
    }

    /// Loads a grammar ``archive(key:)`` wrote, for `vocabulary` under `key`; masks the
    /// archive lacks are computed as `maskComputation` says (except `.upfront`, which loads
    /// what is there and computes the rest on first use).
    ///
    /// - Throws: `GrammarArchiveError` when the bytes are not such an archive, another
    ///   version's, altered, for another vocabulary or key, or inconsistent. Nothing in the
    ///   bytes is trusted: every state, rule, token and length is checked.
    public convenience init(
        archive bytes: [UInt8], key: String, vocabulary: GrammarVocabulary, maskComputation: MaskComputation = .onFirstUseAndInBackground
    ) throws(GrammarArchiveError) {
        let started = DispatchTime.now().uptimeNanoseconds
        guard bytes.count >= 28, Array(bytes[0 ..< 8]) == GrammarArchive.magic else { throw .notAnArchive }
        var header = GrammarArchive.Reader(bytes: bytes, offset: 8)
        let version: UInt32 = try header.integer()
        guard version == GrammarArchive.formatVersion else { throw .otherFormatVersion(Int(version)) }
        let size: UInt64 = try header.integer()
        let checksum: UInt64 = try header.integer()
        guard size == UInt64(bytes.count - 28), GrammarArchive.checksum(bytes[28...]) == checksum else { throw .checksumMismatch }
        var reader = GrammarArchive.Reader(bytes: bytes, offset: 28)
        guard try reader.integer(UInt64.self) == vocabulary.fingerprint else { throw .stale("compiled for another vocabulary") }
        guard try reader.text() == key else { throw .stale("compiled from another schema or options") }
        let ruleCount = Int(try reader.integer(UInt32.self))
        guard ruleCount > 0, ruleCount <= (bytes.count - reader.offset) / 8 else { throw reader.corrupt("\(ruleCount) rules") }
        var names: [String] = [], rules: [DFA] = [], bounds: [LengthBounds?] = [], distances: [[Int32]] = []
        for _ in 0 ..< ruleCount {
            names.append(try reader.text())
            let states = Int(try reader.integer(UInt32.self))
            guard states > 0, states <= 1 << 22, states * 256 <= 64 * bytes.count + 256 else { throw reader.corrupt("\(states) states") }
            var transitions = [Int32](repeating: -1, count: states << 8)
            let runs: [Int32] = try reader.integers()
            guard runs.count % 4 == 0 else { throw reader.corrupt("byte runs") }
            for run in stride(from: 0, to: runs.count, by: 4) {
                let state = Int(runs[run]), first = Int(runs[run + 1]), last = Int(runs[run + 2]), target = runs[run + 3]
                guard (0 ..< states).contains(state), 0 <= first, first <= last, last < 256, (0 ..< Int32(states)).contains(target) else {
                    throw reader.corrupt("byte run out of range")
                }
                for byte in first ... last { transitions[DFA.transitionIndex(state, byte)] = target }
            }
            let edgeTriples: [Int32] = try reader.integers()
            guard edgeTriples.count % 3 == 0 else { throw reader.corrupt("rule edges") }
            var ruleEdges = [[DFA.RuleEdge]](repeating: [], count: states)
            for edge in stride(from: 0, to: edgeTriples.count, by: 3) {
                let state = Int(edgeTriples[edge]), rule = edgeTriples[edge + 1], target = edgeTriples[edge + 2]
                guard (0 ..< states).contains(state), (0 ..< Int32(ruleCount)).contains(rule), (0 ..< Int32(states)).contains(target) else {
                    throw reader.corrupt("rule edge out of range")
                }
                ruleEdges[state].append(DFA.RuleEdge(rule: rule, target: target))
            }
            let isFinal = try reader.flags()
            guard isFinal.count == states else { throw reader.corrupt("final states") }
            rules.append(DFA(transitions: transitions, ruleEdges: ruleEdges, isFinal: isFinal))
            let minimum: Int32 = try reader.integer(), maximum: Int32 = try reader.integer()
            guard minimum >= -1, maximum >= -1, minimum >= 0 || maximum < 0 else { throw reader.corrupt("length bounds") }
            bounds.append(minimum < 0 ? nil : LengthBounds(minimum: Int(minimum), maximum: maximum < 0 ? nil : Int(maximum)))
            let distance: [Int32] = try reader.integers()
            guard distance.count == states, distance.allSatisfy({ $0 >= 0 }) else { throw reader.corrupt("shortest completions") }
            distances.append(distance)
        }
        let root: Int32 = try reader.integer()
        guard (0 ..< Int32(ruleCount)).contains(root) else { throw reader.corrupt("root rule") }
        let nullable = try reader.flags(), isTerminal = try reader.flags(), reachable = try reader.flags()
        let distinctItems = try reader.flags()
        guard nullable.count == ruleCount, isTerminal.count == ruleCount, reachable.count == ruleCount, distinctItems.count == ruleCount else {
            throw reader.corrupt("rule facts")
        }
        var first: [ByteSet] = [], follow: [ByteSet] = []
        for _ in 0 ..< ruleCount { first.append(try reader.byteSet()) }
        for _ in 0 ..< ruleCount { follow.append(try reader.byteSet()) }
        var counters: [LengthCounter?] = []
        for (index, bound) in bounds.enumerated() {
            guard let bound else { counters.append(nil); continue }
            guard !rules[index].hasRuleEdges, let counter = try? LengthCounter(rules[index], minimum: bound.minimum, maximum: bound.maximum) else {
                throw reader.corrupt("rule '\(names[index])' cannot count its length")
            }
            counters.append(counter)
        }
        let automaton = PushdownAutomaton(
            rules: rules, names: names, root: root, nullable: nullable, first: first, follow: follow, isTerminal: isTerminal,
            reachable: reachable, counters: counters, distinctItems: distinctItems)
        let masks = PositionMasks(automaton: automaton, vocabulary: vocabulary)
        let distinctCount = try reader.count(of: 1)
        var list: [PositionMask] = []
        list.reserveCapacity(distinctCount)
        let words = (vocabulary.size + 31) / 32
        func tokens(_ list: [Int32]) throws(GrammarArchiveError) -> [Int32] {
            guard list.allSatisfy({ $0 >= 0 && $0 < Int32(vocabulary.size) }) else { throw reader.corrupt("token out of range") }
            return list
        }
        for _ in 0 ..< distinctCount {
            let form: UInt8 = try reader.integer()
            let accepted: PositionMask.Accepted
            switch form {
            case 1: accepted = .listed(try tokens(try reader.integers()))
            case 2: accepted = .allExcept(try tokens(try reader.integers()))
            case 3:
                let bits: [UInt32] = try reader.integers()
                guard bits.count == words else { throw reader.corrupt("bitset of \(bits.count) words") }
                accepted = .bitset(bits)
            default: throw reader.corrupt("mask form \(form)")
            }
            let undecided = try tokens(try reader.integers())
            let acceptedCount = Int(try reader.integer(Int64.self)), rejectedCount = Int(try reader.integer(Int64.self))
            let wholesaleCount = Int(try reader.integer(Int64.self))
            list.append(PositionMask(accepted: accepted, undecided: undecided, acceptedCount: acceptedCount, rejectedCount: rejectedCount,
                                     wholesaleCount: wholesaleCount))
        }
        let slots: [Int32] = try reader.integers()
        guard slots.count == masks.slotCount else { throw reader.corrupt("\(slots.count) mask slots, the automaton has \(masks.slotCount)") }
        guard slots.allSatisfy({ $0 >= -1 && $0 < Int32(list.count) }) else { throw reader.corrupt("mask index out of range") }
        guard reader.offset == bytes.count else { throw reader.corrupt("\(bytes.count - reader.offset) bytes left over") }
        masks.restore(list, slots: slots)
        if maskComputation == .onFirstUseAndInBackground { masks.computeRestInBackground() }
        self.init(
            vocabulary: vocabulary, automaton: automaton, completionDistances: CompletionDistances(distance: distances), masks: masks,
            maskComputation: maskComputation, automatonSeconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
    }
}

extension GrammarVocabulary {
    /// A stable hash of the tokens' bytes and the end-of-generation tokens (FNV-1a, 64 bits):
    /// what an archived grammar is checked against.
    static func fingerprint(tokenBytes: [[UInt8]], endOfGeneration: [Int]) -> UInt64 {
        var hash = FNV1a()
        func mix(_ value: UInt64) {
            for shift in stride(from: 0, to: 64, by: 8) { hash.combine((value >> UInt64(shift)) & 0xFF) }
        }
        mix(UInt64(tokenBytes.count))
        for bytes in tokenBytes {
            mix(UInt64(bytes.count))
            for byte in bytes { hash.combine(UInt64(byte)) }
        }
        for token in endOfGeneration { mix(UInt64(token)) }
        return hash.value
    }
}
