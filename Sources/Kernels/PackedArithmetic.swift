// Vector helpers of the packed kernels (see PackedMatrix.swift for the layouts).
//
// Lanes: a 16-row group is computed in 16 × 32-bit lanes, one row per lane (`SIMD16<Int32>`,
// `SIMD16<Float>`), or in 32 × 16-bit lanes, two per row (`SIMD32<Int16>`: lane 2r holds
// row r's even element of a pair, lane 2r + 1 its odd element).
//
// Only operations that lower to single vector instructions are used. Measured on Swift 6.3
// (documented in docs/kernels.md): the standard library's lane-width conversions
// (`SIMD16<Float>(SIMD16<Int32>)`, `SIMD16<UInt32>(truncatingIfNeeded: SIMD16<UInt16>)`)
// often compile to calls of unspecialized per-lane loops, and shifts of 16-bit lanes
// (`SIMD32<Int16> &>> 8`) to lane-by-lane code. So conversions here are bit tricks, shifts
// act on 32-bit lanes, and 16-bit lanes only add, subtract, multiply and mask. Where the
// target has AVX2 (and so F16C), the conversions are the instructions themselves, reached
// through VectorIntrinsics: one instruction (per 256-bit half on AVX2) instead of two to
// four, with the same results (every conversion here is exact, or rounds as `Float(_:)`).
#if TYPESET_AVX2
import VectorIntrinsics
#endif

/// `pair` (two sign-extended 16-bit codes) in every 32-bit lane, seen as 32 × 16-bit lanes.
@inline(__always)
func _broadcastPair(_ pair: UInt32) -> SIMD32<Int16> {
    unsafeBitCast(SIMD16<UInt32>(repeating: pair), to: SIMD32<Int16>.self)
}

/// Lane r = lane 2r + lane 2r + 1 of `sums`, widened to 32 bits: one sum per row.
@inline(__always)
func _widenPairs(_ sums: SIMD32<Int16>) -> SIMD16<Int32> {
    let words = unsafeBitCast(sums, to: SIMD16<Int32>.self)
    return ((words &<< 16) &>> 16) &+ (words &>> 16)
}

/// The low 16 bits of each lane, an IEEE half, as a float. Exact for zeros, subnormals and
/// normal numbers (every finite half). Infinities and NaNs, which weight scales never are,
/// become large finite values in the bit trick (the instruction keeps them).
@inline(__always)
func _floatFromHalves(_ bits: SIMD16<UInt32>) -> SIMD16<Float> {
    #if TYPESET_AVX2
    return floatsFromHalves(lowBitsOf: bits)
    #else
    // (bits & 0x7FFF) << 13 is the half's exponent and mantissa in float position with an
    // exponent bias of 15 instead of 127; × 2^112 restores the bias (and normalises subnormals).
    let magnitude = unsafeBitCast((bits & 0x7FFF) &<< 13, to: SIMD16<Float>.self) * 0x1p112
    return unsafeBitCast(unsafeBitCast(magnitude, to: SIMD16<UInt32>.self) | ((bits & 0x8000) &<< 16), to: SIMD16<Float>.self)
    #endif
}

/// Exact conversion of integers with |x| < 2²²: 1.5 × 2²³ + x has x in its mantissa.
@inline(__always)
func _floatFromSmallIntegers(_ x: SIMD16<Int32>) -> SIMD16<Float> {
    #if TYPESET_AVX2
    floatsFromIntegers(x)
    #else
    unsafeBitCast(x &+ 0x4B40_0000, to: SIMD16<Float>.self) - 12_582_912
    #endif
}

/// Any 32-bit integers, rounded to nearest as `Float(_:)` does: high and low 16 bits are
/// converted exactly and combined with one rounding.
@inline(__always)
func _floatFromIntegers(_ x: SIMD16<Int32>) -> SIMD16<Float> {
    #if TYPESET_AVX2
    return floatsFromIntegers(x)
    #else
    // high × 2^16 is exact, so the sum is the only rounding.
    let high = _floatFromSmallIntegers(x &>> 16), low = _floatFromSmallIntegers(x & 0xFFFF)
    return high * 65_536 + low
    #endif
}

/// The 16-bit halves of `words` shifted right by `shift` and masked to `mask` (per half):
/// a pair vector. Shifts act on 32-bit lanes, so `mask` must drop what crosses the halves.
@inline(__always)
func _pairVector(_ words: SIMD16<UInt32>, shift: UInt32, mask: UInt32) -> SIMD32<Int16> {
    unsafeBitCast((words &>> shift) & SIMD16(repeating: mask), to: SIMD32<Int16>.self)
}

/// Vector `index` (16 words) of a packed group.
@inline(__always)
func _words(_ base: UnsafeRawPointer, _ index: Int) -> SIMD16<UInt32> {
    base.loadUnaligned(fromByteOffset: 64 &* index, as: SIMD16<UInt32>.self)
}

// MARK: - Column sinks
//
// A block kernel produces the 16 pair vectors of a block one at a time and hands each to a
// sink, which multiplies it with one or four activation columns and accumulates in 16-bit
// lanes; `flush` widens those sums into 32-bit lanes before they could overflow (the kernel
// knows its value ranges and calls it in time). The same block kernel thus serves the
// matrix-vector product (one column) and the prefill product (four columns at a time).

protocol ColumnSink {
    /// Adds `pair` × the columns' activation pair `index` of the current block.
    mutating func consume(_ pair: SIMD32<Int16>, index: Int)
    /// Moves the 16-bit sums into the 32-bit sums.
    mutating func flush()
    /// Moves the 16-bit sums into the 32-bit sums, multiplied per row by `scales`.
    mutating func flush(scaledBy scales: SIMD16<Int32>)
}

/// One activation column.
struct OneColumn: ColumnSink {
    /// Activation pairs of the current block.
    var pairs: UnsafePointer<UInt32>
    var partial = SIMD32<Int16>()
    var sums = SIMD16<Int32>()

    init(pairs: UnsafePointer<UInt32>) { self.pairs = pairs }

    @inline(__always) mutating func consume(_ pair: SIMD32<Int16>, index: Int) {
        partial &+= pair &* _broadcastPair(pairs[index])
    }
    @inline(__always) mutating func flush() {
        sums &+= _widenPairs(partial)
        partial = SIMD32<Int16>()
    }
    @inline(__always) mutating func flush(scaledBy scales: SIMD16<Int32>) {
        sums &+= _widenPairs(partial) &* scales
        partial = SIMD32<Int16>()
    }
}

/// Four activation columns whose pairs are `stride` apart.
struct FourColumns: ColumnSink {
    var pairs: UnsafePointer<UInt32>
    let stride: Int
    var partial = (SIMD32<Int16>(), SIMD32<Int16>(), SIMD32<Int16>(), SIMD32<Int16>())
    var sums = (SIMD16<Int32>(), SIMD16<Int32>(), SIMD16<Int32>(), SIMD16<Int32>())

    init(pairs: UnsafePointer<UInt32>, stride: Int) {
        self.pairs = pairs
        self.stride = stride
    }

    @inline(__always) mutating func consume(_ pair: SIMD32<Int16>, index: Int) {
        let first = pairs + index
        partial.0 &+= pair &* _broadcastPair(first[0])
        partial.1 &+= pair &* _broadcastPair(first[stride])
        partial.2 &+= pair &* _broadcastPair(first[2 &* stride])
        partial.3 &+= pair &* _broadcastPair(first[3 &* stride])
    }
    @inline(__always) mutating func flush() {
        sums.0 &+= _widenPairs(partial.0)
        sums.1 &+= _widenPairs(partial.1)
        sums.2 &+= _widenPairs(partial.2)
        sums.3 &+= _widenPairs(partial.3)
        partial = (SIMD32<Int16>(), SIMD32<Int16>(), SIMD32<Int16>(), SIMD32<Int16>())
    }
    @inline(__always) mutating func flush(scaledBy scales: SIMD16<Int32>) {
        sums.0 &+= _widenPairs(partial.0) &* scales
        sums.1 &+= _widenPairs(partial.1) &* scales
        sums.2 &+= _widenPairs(partial.2) &* scales
        sums.3 &+= _widenPairs(partial.3) &* scales
        partial = (SIMD32<Int16>(), SIMD32<Int16>(), SIMD32<Int16>(), SIMD32<Int16>())
    }
}

/// Two sinks fed the same pair vectors: one weight unpacking serves both column sets.
struct JoinedSinks<First: ColumnSink, Second: ColumnSink>: ColumnSink {
    var first: First
    var second: Second

    @inline(__always) mutating func consume(_ pair: SIMD32<Int16>, index: Int) {
        first.consume(pair, index: index)
        second.consume(pair, index: index)
    }
    @inline(__always) mutating func flush() {
        first.flush()
        second.flush()
    }
    @inline(__always) mutating func flush(scaledBy scales: SIMD16<Int32>) {
        first.flush(scaledBy: scales)
        second.flush(scaledBy: scales)
    }
}
