/// A cursor over untrusted little-endian bytes. Every read checks the bounds first and throws
/// ``GGUFError/truncated(what:offset:needed:available:)`` naming what was being read.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    /// Offset of the next byte to read, from the start of `bytes` (the start of the file).
    var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    @inline(__always)
    mutating func require(_ count: Int, _ what: @autoclosure () -> String) throws(GGUFError) {
        guard count <= remaining else {
            throw .truncated(what: what(), offset: offset, needed: count, available: remaining)
        }
    }

    @inline(__always)
    mutating func read<T: FixedWidthInteger>(_: T.Type, _ what: @autoclosure () -> String) throws(GGUFError) -> T {
        try require(MemoryLayout<T>.size, what())
        let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        offset += MemoryLayout<T>.size
        return value
    }

    mutating func readFloat32(_ what: @autoclosure () -> String) throws(GGUFError) -> Float {
        Float(bitPattern: try read(UInt32.self, what()))
    }

    mutating func readFloat64(_ what: @autoclosure () -> String) throws(GGUFError) -> Double {
        Double(bitPattern: try read(UInt64.self, what()))
    }

    /// Checks that `count` items of at least `minimumItemSize` bytes each could still fit in
    /// the file, before anything is allocated for them. `countOffset` is where the count was read.
    func requireFits(count: UInt64, minimumItemSize: Int, _ what: @autoclosure () -> String, countOffset: Int) throws(GGUFError) {
        let (needed, overflow) = count.multipliedReportingOverflow(by: UInt64(minimumItemSize))
        guard !overflow, needed <= UInt64(remaining) else {
            throw .countExceedsFile(what: what(), count: count, minimumItemSize: minimumItemSize,
                                    offset: countOffset, available: remaining)
        }
    }

    /// Reads a GGUF string header (a `uint64` byte length) and returns the range of its bytes,
    /// which are checked to lie in the file and to be valid UTF-8.
    mutating func readStringRange(_ what: @autoclosure () -> String) throws(GGUFError) -> Range<Int> {
        let lengthOffset = offset
        let length = try read(UInt64.self, "length of \(what())")
        guard length <= UInt64(remaining) else {
            throw .countExceedsFile(what: "length of \(what())", count: length, minimumItemSize: 1,
                                    offset: lengthOffset, available: remaining)
        }
        let range = offset ..< offset + Int(length)
        guard _isValidUTF8(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
            throw .invalidUTF8(what: what(), offset: offset)
        }
        offset = range.upperBound
        return range
    }

    /// Validates `count` consecutive GGUF strings (the payload of a string array) and moves
    /// past them. Errors name element `i` of `what`. This is the parser's hottest loop: a
    /// vocabulary holds hundreds of thousands of strings.
    mutating func skipStrings(count: Int, _ what: () -> String) throws(GGUFError) {
        guard let base = bytes.baseAddress else {
            if count > 0 { throw .truncated(what: "length of element 0 of \(what())", offset: offset, needed: 8, available: 0) }
            return
        }
        let end = bytes.count
        var position = offset
        for element in 0 ..< count {
            guard end - position >= 8 else {
                offset = position
                throw .truncated(what: "length of element \(element) of \(what())", offset: position, needed: 8, available: end - position)
            }
            let length = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            let start = position + 8
            guard length <= UInt64(end - start) else {
                offset = position
                throw .countExceedsFile(what: "length of element \(element) of \(what())", count: length, minimumItemSize: 1,
                                        offset: position, available: end - start)
            }
            let stop = start + Int(length)
            guard _isValidUTF8(UnsafeRawBufferPointer(start: base + start, count: stop - start)) else {
                offset = position
                throw .invalidUTF8(what: "element \(element) of \(what())", offset: start)
            }
            position = stop
        }
        offset = position
    }

    mutating func readString(_ what: @autoclosure () -> String) throws(GGUFError) -> String {
        let range = try readStringRange(what())
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}

/// Whether `bytes` is well-formed UTF-8 (no overlong forms, no surrogates, nothing above
/// U+10FFFF). ASCII runs are skipped eight bytes at a time; `String(validating:as:)` is the
/// test oracle.
///
/// Complexity: O(n), no allocation.
@usableFromInline
func _isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let count = bytes.count
    var index = 0
    while index + 8 <= count, base.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
        index += 8
    }
    while index < count, base.load(fromByteOffset: index, as: UInt8.self) < 0x80 {
        index += 1
    }
    return index == count || _isValidUTF8(base, from: index, count: count)
}

/// The general case of `_isValidUTF8(_:)`, from `index` on.
private func _isValidUTF8(_ base: UnsafeRawPointer, from start: Int, count: Int) -> Bool {
    var index = start
    @inline(__always) func byte(_ offset: Int) -> UInt8 { base.load(fromByteOffset: offset, as: UInt8.self) }
    while index < count {
        if index + 8 <= count, base.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            index += 8
            continue
        }
        let lead = byte(index)
        if lead < 0x80 { index += 1; continue }
        let length: Int
        var lower: UInt8 = 0x80, upper: UInt8 = 0xBF   // allowed range of the second byte
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: return false
        }
        guard index + length <= count else { return false }
        let second = byte(index + 1)
        guard second >= lower, second <= upper else { return false }
        var continuation = 2
        while continuation < length {
            guard byte(index + continuation) & 0xC0 == 0x80 else { return false }
            continuation += 1
        }
        index += length
    }
    return true
}
