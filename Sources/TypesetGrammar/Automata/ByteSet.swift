/// A set of byte values, 256 bits in four words. The label of a byte transition.
public struct ByteSet: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline var words: (UInt64, UInt64, UInt64, UInt64)

    /// The empty set.
    public init() { words = (0, 0, 0, 0) }

    /// The set of the given bytes.
    public init(_ bytes: some Sequence<UInt8>) {
        self.init()
        for byte in bytes { insert(byte) }
    }

    /// The bytes `range.lowerBound ... range.upperBound`.
    public init(_ range: ClosedRange<UInt8>) {
        self.init()
        insert(range)
    }

    /// Every byte.
    public static let all: ByteSet = ByteSet(0 ... 255)

    @inlinable
    public func contains(_ byte: UInt8) -> Bool {
        let bit = UInt64(1) << UInt64(byte & 63)
        switch byte >> 6 {
        case 0: return words.0 & bit != 0
        case 1: return words.1 & bit != 0
        case 2: return words.2 & bit != 0
        default: return words.3 & bit != 0
        }
    }

    public mutating func insert(_ byte: UInt8) {
        let bit = UInt64(1) << UInt64(byte & 63)
        switch byte >> 6 {
        case 0: words.0 |= bit
        case 1: words.1 |= bit
        case 2: words.2 |= bit
        default: words.3 |= bit
        }
    }

    /// Inserts the bytes `range.lowerBound ... range.upperBound`, a word at a time.
    public mutating func insert(_ range: ClosedRange<UInt8>) {
        /// The bits of word `index` (bytes `64 × index ..< 64 × index + 64`) in the range.
        func bits(_ index: Int) -> UInt64 {
            let low = max(Int(range.lowerBound), index << 6), high = min(Int(range.upperBound), index << 6 | 63)
            guard low <= high else { return 0 }
            let width = high - low + 1
            return (width == 64 ? ~0 : (UInt64(1) << UInt64(width)) - 1) << UInt64(low & 63)
        }
        words = (words.0 | bits(0), words.1 | bits(1), words.2 | bits(2), words.3 | bits(3))
    }

    public var isEmpty: Bool { words.0 | words.1 | words.2 | words.3 == 0 }
    public var count: Int {
        words.0.nonzeroBitCount + words.1.nonzeroBitCount + words.2.nonzeroBitCount + words.3.nonzeroBitCount
    }

    public func union(_ other: ByteSet) -> ByteSet {
        var result = self
        result.words = (words.0 | other.words.0, words.1 | other.words.1, words.2 | other.words.2, words.3 | other.words.3)
        return result
    }

    public func intersection(_ other: ByteSet) -> ByteSet {
        var result = self
        result.words = (words.0 & other.words.0, words.1 & other.words.1, words.2 & other.words.2, words.3 & other.words.3)
        return result
    }

    public func subtracting(_ other: ByteSet) -> ByteSet {
        var result = self
        result.words = (words.0 & ~other.words.0, words.1 & ~other.words.1, words.2 & ~other.words.2, words.3 & ~other.words.3)
        return result
    }

    public mutating func formUnion(_ other: ByteSet) { self = union(other) }

    /// The bytes where membership changes: each member whose predecessor is not one (byte 0
    /// when a member), and each non-member whose predecessor is one. They cut the bytes into
    /// the set's runs and the gaps between them.
    var boundaries: ByteSet {
        var result = self
        let shifted = (words.0 << 1, words.1 << 1 | words.0 >> 63, words.2 << 1 | words.1 >> 63, words.3 << 1 | words.2 >> 63)
        result.words = (words.0 ^ shifted.0, words.1 ^ shifted.1, words.2 ^ shifted.2, words.3 ^ shifted.3)
        return result
    }

    /// The members in increasing order.
    public var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        forEachMember { result.append($0) }
        return result
    }

    /// Calls `body` with each member in increasing order, without allocating.
    @inlinable
    public func forEachMember<Failure: Error>(_ body: (UInt8) throws(Failure) -> Void) throws(Failure) {
        for index in 0 ..< 4 {
            var rest = index == 0 ? words.0 : index == 1 ? words.1 : index == 2 ? words.2 : words.3
            while rest != 0 {
                try body(UInt8(index << 6 | rest.trailingZeroBitCount))
                rest &= rest - 1
            }
        }
    }

    public static func == (a: ByteSet, b: ByteSet) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0); hasher.combine(words.1); hasher.combine(words.2); hasher.combine(words.3)
    }

    /// Ranges in GBNF-like notation: `[0-9A-Fa-f]`, printable ASCII as itself, others as `\xNN`.
    public var description: String {
        var ranges: [ClosedRange<UInt8>] = []
        var start: Int? = nil
        for value in 0 ... 256 {
            let inside = value < 256 && contains(UInt8(value))
            if inside, start == nil { start = value }
            if !inside, let first = start {
                ranges.append(UInt8(first) ... UInt8(value - 1))
                start = nil
            }
        }
        func render(_ byte: UInt8) -> String {
            switch byte {
            case 0x21 ... 0x7E where !"[]\\-^".utf8.contains(byte): return String(UnicodeScalar(byte))
            default: return "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        if ranges.count == 1, ranges[0].count == 1 { return "'" + render(ranges[0].lowerBound) + "'" }
        return "[" + ranges.map { $0.count == 1 ? render($0.lowerBound) : render($0.lowerBound) + "-" + render($0.upperBound) }.joined() + "]"
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
