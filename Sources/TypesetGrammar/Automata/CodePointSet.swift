/// A set of Unicode scalar values, kept as sorted, disjoint, non-adjacent closed ranges.
///
/// Character classes of regular expressions and grammar texts are built in this form, then
/// lowered to bytes (UTF-8, or the JSON string encoding) by `Lowering`.
public struct CodePointSet: Hashable, Sendable {
    /// Sorted, disjoint, non-adjacent.
    public private(set) var ranges: [ClosedRange<UInt32>]

    /// The largest scalar value.
    public static let maximum: UInt32 = 0x10FFFF
    /// The UTF-16 surrogates, which are not scalar values and have no UTF-8 encoding.
    public static let surrogates: ClosedRange<UInt32> = 0xD800 ... 0xDFFF

    public init() { ranges = [] }

    /// The scalars of `ranges` (in any order, overlapping or not). O(n log n).
    public init(_ ranges: [ClosedRange<UInt32>]) {
        var merged: [ClosedRange<UInt32>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where range.lowerBound <= Self.maximum {
            let upper = min(range.upperBound, Self.maximum)
            if let last = merged.last, range.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound ... max(last.upperBound, upper)
            } else {
                merged.append(range.lowerBound ... upper)
            }
        }
        self.ranges = merged
    }

    public init(_ scalar: UInt32) { self.init([scalar ... scalar]) }

    /// Every scalar value (the surrogates excluded).
    public static let all = CodePointSet([0 ... 0xD7FF, 0xE000 ... maximum])

    public var isEmpty: Bool { ranges.isEmpty }

    public func contains(_ scalar: UInt32) -> Bool {
        var low = 0, high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].upperBound < scalar { low = middle + 1 } else { high = middle }
        }
        return low < ranges.count && ranges[low].contains(scalar)
    }

    public mutating func insert(_ range: ClosedRange<UInt32>) {
        var lower = range.lowerBound, upper = min(range.upperBound, Self.maximum)
        guard lower <= upper else { return }
        var result: [ClosedRange<UInt32>] = []
        result.reserveCapacity(ranges.count + 1)
        var placed = false
        for existing in ranges {
            if existing.upperBound &+ 1 < lower {
                result.append(existing)
            } else if upper &+ 1 < existing.lowerBound {
                if !placed { result.append(lower ... upper); placed = true }
                result.append(existing)
            } else {
                lower = min(lower, existing.lowerBound)
                upper = max(upper, existing.upperBound)
            }
        }
        if !placed { result.append(lower ... upper) }
        ranges = result
    }

    public func union(_ other: CodePointSet) -> CodePointSet {
        var result = self
        for range in other.ranges { result.insert(range) }
        return result
    }

    /// Every scalar value (surrogates excluded) not in the set.
    public var inverted: CodePointSet {
        var result: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for range in ranges {
            if range.lowerBound > next { result.append(next ... range.lowerBound - 1) }
            next = range.upperBound &+ 1
        }
        if next <= Self.maximum { result.append(next ... Self.maximum) }
        return CodePointSet(result).subtracting(CodePointSet([Self.surrogates]))
    }

    public func intersection(_ other: CodePointSet) -> CodePointSet {
        var result: [ClosedRange<UInt32>] = []
        var i = 0, j = 0
        while i < ranges.count, j < other.ranges.count {
            let a = ranges[i], b = other.ranges[j]
            let lower = max(a.lowerBound, b.lowerBound), upper = min(a.upperBound, b.upperBound)
            if lower <= upper { result.append(lower ... upper) }
            if a.upperBound < b.upperBound { i += 1 } else { j += 1 }
        }
        return CodePointSet(result)
    }

    public func subtracting(_ other: CodePointSet) -> CodePointSet {
        var result: [ClosedRange<UInt32>] = []
        var j = 0
        for range in ranges {
            var lower = range.lowerBound
            let upper = range.upperBound
            var exhausted = false
            while j < other.ranges.count, other.ranges[j].upperBound < lower { j += 1 }
            var k = j
            while k < other.ranges.count, other.ranges[k].lowerBound <= upper {
                let cut = other.ranges[k]
                if cut.lowerBound > lower { result.append(lower ... cut.lowerBound - 1) }
                if cut.upperBound >= upper { exhausted = true; break }
                lower = cut.upperBound + 1
                k += 1
            }
            if !exhausted { result.append(lower ... upper) }
        }
        return CodePointSet(result)
    }

    /// Adds the other case of every ASCII letter (the only case folding the subset supports).
    public var addingASCIICaseVariants: CodePointSet {
        var result = self
        let upper = intersection(CodePointSet([0x41 ... 0x5A])), lower = intersection(CodePointSet([0x61 ... 0x7A]))
        for range in upper.ranges { result.insert(range.lowerBound + 32 ... range.upperBound + 32) }
        for range in lower.ranges { result.insert(range.lowerBound - 32 ... range.upperBound - 32) }
        return result
    }
}
