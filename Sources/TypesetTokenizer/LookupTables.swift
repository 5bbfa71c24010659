// Open-addressing hash tables for the two lookups on the encoding hot path: byte string → token
// id, and (left id, right id) → merge. Both are built once per vocabulary and never change.

// MARK: - Byte strings

/// Maps byte strings to token ids. Keys live back to back in one buffer; lookups hash the
/// probe bytes in place, so no `String` or `Array` is created per lookup.
struct ByteStringTable: Sendable {
    private var keyBytes: [UInt8] = []
    /// Entry `i`'s key is `keyBytes[keyOffsets[i] ..< keyOffsets[i + 1]]`.
    private var keyOffsets: [Int32] = [0]
    private var values: [Int32] = []
    /// Entry index + 1 per slot; 0 is empty.
    private var slots: [Int32] = []
    private var mask = 0

    init(capacity: Int) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        slots = [Int32](repeating: 0, count: size)
        mask = size - 1
        keyBytes.reserveCapacity(capacity * 8)
        keyOffsets.reserveCapacity(capacity + 1)
        values.reserveCapacity(capacity)
    }

    var count: Int { values.count }

    /// Adds `key → value` unless `key` is already present (the first value wins).
    /// Returns whether it was added.
    @discardableResult
    mutating func insert(_ key: UnsafeRawBufferPointer, value: Int32) -> Bool {
        if lookup(key) != nil { return false }
        if (values.count + 1) * 2 > slots.count { grow() }
        let entry = Int32(values.count)
        keyBytes.append(contentsOf: key)
        keyOffsets.append(Int32(keyBytes.count))
        values.append(value)
        place(entry: entry, hash: _hashBytes(key))
        return true
    }

    private mutating func place(entry: Int32, hash: UInt64) {
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = entry + 1
    }

    private mutating func grow() {
        let size = slots.count * 2
        slots = [Int32](repeating: 0, count: size)
        mask = size - 1
        for entry in 0 ..< values.count {
            let range = Int(keyOffsets[entry]) ..< Int(keyOffsets[entry + 1])
            let hash = keyBytes.withUnsafeBytes { _hashBytes(UnsafeRawBufferPointer(rebasing: $0[range])) }
            place(entry: Int32(entry), hash: hash)
        }
    }

    /// The value stored for `key`, or `nil`.
    ///
    /// - Complexity: O(key length) expected.
    @inline(__always)
    func lookup(_ key: UnsafeRawBufferPointer) -> Int32? {
        let hash = _hashBytes(key)
        return keyBytes.withUnsafeBufferPointer { stored in
            keyOffsets.withUnsafeBufferPointer { offsets in
                slots.withUnsafeBufferPointer { slots in
                    var slot = Int(truncatingIfNeeded: hash) & mask
                    while true {
                        let entry = Int(slots[slot])
                        if entry == 0 { return nil }
                        let start = Int(offsets[entry - 1])
                        let length = Int(offsets[entry]) - start
                        if length == key.count
                            && (length == 0 || _bytesEqual(stored.baseAddress! + start, key.baseAddress!, length)) {
                            return values[entry - 1]
                        }
                        slot = (slot + 1) & mask
                    }
                }
            }
        }
    }

    func lookup(_ key: [UInt8]) -> Int32? {
        key.withUnsafeBytes { lookup($0) }
    }
}

@inline(__always)
private func _bytesEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    var index = 0
    while index + 8 <= count {
        if UnsafeRawPointer(a + index).loadUnaligned(as: UInt64.self) != b.loadUnaligned(fromByteOffset: index, as: UInt64.self) {
            return false
        }
        index += 8
    }
    while index < count {
        if a[index] != b.load(fromByteOffset: index, as: UInt8.self) { return false }
        index += 1
    }
    return true
}

/// A fast non-cryptographic hash of a short byte string (eight bytes per multiply).
@inline(__always)
func _hashBytes(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    let count = bytes.count
    var hash: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(count)
    var index = 0
    if let base = bytes.baseAddress {
        while index + 8 <= count {
            hash = (hash ^ base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 32
            index += 8
        }
        if index < count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while index < count {
                tail |= UInt64(base.load(fromByteOffset: index, as: UInt8.self)) << shift
                shift += 8
                index += 1
            }
            hash = (hash ^ tail) &* 0xFF51_AFD7_ED55_8CCD
        }
    }
    hash ^= hash >> 29
    hash &*= 0xC4CE_B9FE_1A85_EC53
    hash ^= hash >> 32
    return hash
}

// MARK: - Merges

/// Maps a pair of adjacent token ids to the merge that joins them: its rank (lower merges
/// first) and the resulting token id.
struct MergeTable: Sendable {
    private var keys: [UInt64]
    private var ranks: [Int32]
    private var results: [Int32]
    private let mask: Int
    private(set) var count = 0

    private static let empty = UInt64.max

    init(capacity: Int) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        keys = [UInt64](repeating: Self.empty, count: size)
        ranks = [Int32](repeating: 0, count: size)
        results = [Int32](repeating: 0, count: size)
        mask = size - 1
    }

    @inline(__always)
    private static func key(_ left: Int32, _ right: Int32) -> UInt64 {
        UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))
    }

    @inline(__always)
    private func slot(for key: UInt64) -> Int {
        var mixed = key &* 0x9E37_79B9_7F4A_7C15
        mixed ^= mixed >> 31
        return Int(truncatingIfNeeded: mixed) & mask
    }

    /// Adds the merge unless the pair already has one (the first, lowest rank wins).
    /// Must not be called more than `capacity` times.
    mutating func insert(left: Int32, right: Int32, rank: Int32, result: Int32) {
        let key = Self.key(left, right)
        var slot = slot(for: key)
        while keys[slot] != Self.empty {
            if keys[slot] == key { return }
            slot = (slot + 1) & mask
        }
        keys[slot] = key
        ranks[slot] = rank
        results[slot] = result
        count += 1
    }

    /// The merge of `left` followed by `right`, or `nil` when they do not merge.
    @inline(__always)
    func merge(_ left: Int32, _ right: Int32) -> (rank: Int32, result: Int32)? {
        let key = Self.key(left, right)
        return keys.withUnsafeBufferPointer { keys in
            var slot = slot(for: key)
            while true {
                let stored = keys[slot]
                if stored == key { return (ranks[slot], results[slot]) }
                if stored == Self.empty { return nil }
                slot = (slot + 1) & mask
            }
        }
    }
}
