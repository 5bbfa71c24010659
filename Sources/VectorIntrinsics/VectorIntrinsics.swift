// Instructions Swift's SIMD types do not express, reached through the compiler's builtins.
//
// This module is compiled with `-parse-stdlib` (hence `import Swift`), which makes LLVM's
// intrinsics callable as `Builtin.int_<name>`; everything here is `@inlinable` and
// `@inline(__always)`, so it dissolves into the kernels that call it. Declared only for
// targets that have the instructions (Package.swift: a tuned build on a CPU with AVX2, FMA
// and F16C, TYPESET_AVX2; the 512-bit forms where the CPU also has AVX512BW, TYPESET_AVX512;
// `vpdpbusd` only where it has AVX512-VNNI, TYPESET_VNNI), and never in a dependency resolved
// by URL, where unsafe flags are refused.
//
// The functions take 16 32-bit lanes (or 32 16-bit ones), 512 bits, whatever the target: one
// instruction on AVX-512, the same instruction on each 256-bit half on AVX2 (a register
// pair there, so the split is free):
//
//     SIMD16<UInt32>  [ lanes 0 … 7 | lanes 8 … 15 ]
//                      \_ ymm, low _/ \_ ymm, high _/    (one zmm on AVX-512)
import Swift

/// The two 256-bit halves of 16 floats.
@inlinable @inline(__always)
func halves(_ lanes: SIMD16<Float>) -> (low: Builtin.Vec8xFPIEEE32, high: Builtin.Vec8xFPIEEE32) {
    let pair = unsafeBitCast(lanes, to: (SIMD8<Float>, SIMD8<Float>).self)
    return (pair.0._storage._value, pair.1._storage._value)
}

/// 16 floats from two halves of 8.
@inlinable @inline(__always)
func joined(_ low: Builtin.Vec8xFPIEEE32, _ high: Builtin.Vec8xFPIEEE32) -> SIMD16<Float> {
    var first = SIMD8<Float>(), second = SIMD8<Float>()
    first._storage._value = low
    second._storage._value = high
    return unsafeBitCast((first, second), to: SIMD16<Float>.self)
}

#if TYPESET_VNNI
/// `accumulator + Σ_{i<4} unsigned.byte(i) × signed.byte(i)` in each of the 16 lanes: 64
/// products of an unsigned and a signed byte in one instruction (`vpdpbusd`, AVX512-VNNI),
/// summed four by four into 32-bit lanes without intermediate saturation.
@inlinable @inline(__always)
public func dotProductOfBytes(_ accumulator: SIMD16<Int32>, unsigned: SIMD16<UInt32>, signed: SIMD16<UInt32>) -> SIMD16<Int32> {
    var result = SIMD16<Int32>()
    result._storage._value = Builtin.int_x86_avx512_vpdpbusd_512(
        accumulator._storage._value, unsigned._storage._value, signed._storage._value)
    return result
}
#endif

/// `unsigned.byte(2i) × signed.byte(2i) + unsigned.byte(2i + 1) × signed.byte(2i + 1)` in
/// each of the 32 16-bit lanes, saturated to the Int16 range (`vpmaddubsw`: one on AVX512BW,
/// one per 256-bit half on AVX2): 64 products of an unsigned and a signed byte, summed two by
/// two. Exact while every lane's sum stays within ±32,767 (an unsigned byte below 128 against
/// any signed one, for instance).
@inlinable @inline(__always)
public func productsOfBytePairs(unsigned: SIMD16<UInt32>, signed: SIMD16<UInt32>) -> SIMD32<Int16> {
    #if TYPESET_AVX512
    let unsignedBytes: Builtin.Vec64xInt8 = Builtin.bitcast_Vec16xInt32_Vec64xInt8(unsigned._storage._value)
    let signedBytes: Builtin.Vec64xInt8 = Builtin.bitcast_Vec16xInt32_Vec64xInt8(signed._storage._value)
    var result = SIMD32<Int16>()
    result._storage._value = Builtin.int_x86_avx512_pmaddubs_w_512(unsignedBytes, signedBytes)
    return result
    #else
    let u = unsafeBitCast(unsigned, to: (SIMD8<UInt32>, SIMD8<UInt32>).self)
    let s = unsafeBitCast(signed, to: (SIMD8<UInt32>, SIMD8<UInt32>).self)
    return unsafeBitCast((productsOfBytePairs(unsigned: u.0, signed: s.0), productsOfBytePairs(unsigned: u.1, signed: s.1)),
                         to: SIMD32<Int16>.self)
    #endif
}

/// `lanes(2i) × factors(2i) + lanes(2i + 1) × factors(2i + 1)` in each of the 16 32-bit lanes
/// (`vpmaddwd`: one on AVX512BW, one per 256-bit half on AVX2): with factors of 1, each pair
/// of 16-bit lanes widened and summed.
@inlinable @inline(__always)
public func productsOfWordPairs(_ lanes: SIMD32<Int16>, _ factors: SIMD32<Int16>) -> SIMD16<Int32> {
    #if TYPESET_AVX512
    var result = SIMD16<Int32>()
    result._storage._value = Builtin.int_x86_avx512_pmaddw_d_512(lanes._storage._value, factors._storage._value)
    return result
    #else
    let l = unsafeBitCast(lanes, to: (SIMD16<Int16>, SIMD16<Int16>).self)
    let f = unsafeBitCast(factors, to: (SIMD16<Int16>, SIMD16<Int16>).self)
    return unsafeBitCast((productsOfWordPairs(l.0, f.0), productsOfWordPairs(l.1, f.1)), to: SIMD16<Int32>.self)
    #endif
}

/// Each byte of `values` negated where the same byte of `signs` is negative, zeroed where it
/// is zero, kept where it is positive (`vpsignb`, one per 256-bit half: AVX-512 has no
/// 512-bit form). With `values` = `signs`, each byte's magnitude, read as unsigned (−128's is
/// 128). A byte of `values` of −128 against a negative sign stays −128.
@inlinable @inline(__always)
public func bytes(_ values: SIMD16<UInt32>, signedAs signs: SIMD16<UInt32>) -> SIMD16<UInt32> {
    let v = unsafeBitCast(values, to: (SIMD8<UInt32>, SIMD8<UInt32>).self)
    let s = unsafeBitCast(signs, to: (SIMD8<UInt32>, SIMD8<UInt32>).self)
    return unsafeBitCast((bytes(v.0, signedAs: s.0), bytes(v.1, signedAs: s.1)), to: SIMD16<UInt32>.self)
}

/// Each byte of `indices` (0…15) replaced by that byte of `table`'s 128-bit lane (`vpshufb`:
/// one on AVX512BW, one per 256-bit half on AVX2): sixteen-entry table lookups, 64 at once.
/// Every 128-bit lane of `table` must hold the same sixteen bytes.
@inlinable @inline(__always)
public func lookedUpBytes(_ indices: SIMD16<UInt32>, in table: SIMD16<UInt32>) -> SIMD16<UInt32> {
    #if TYPESET_AVX512
    var result = SIMD16<UInt32>()
    result._storage._value = Builtin.bitcast_Vec64xInt8_Vec16xInt32(Builtin.int_x86_avx512_pshuf_b_512(
        Builtin.bitcast_Vec16xInt32_Vec64xInt8(table._storage._value), Builtin.bitcast_Vec16xInt32_Vec64xInt8(indices._storage._value)))
    return result
    #else
    let i = unsafeBitCast(indices, to: (SIMD8<UInt32>, SIMD8<UInt32>).self)
    let t = unsafeBitCast(table, to: (SIMD8<UInt32>, SIMD8<UInt32>).self)
    return unsafeBitCast((lookedUpBytes(i.0, in: t.0), lookedUpBytes(i.1, in: t.1)), to: SIMD16<UInt32>.self)
    #endif
}

/// ``lookedUpBytes(_:in:)`` on a 256-bit vector (`vpshufb`, AVX2).
@inlinable @inline(__always)
func lookedUpBytes(_ indices: SIMD8<UInt32>, in table: SIMD8<UInt32>) -> SIMD8<UInt32> {
    var result = SIMD8<UInt32>()
    result._storage._value = Builtin.bitcast_Vec32xInt8_Vec8xInt32(Builtin.int_x86_avx2_pshuf_b(
        Builtin.bitcast_Vec8xInt32_Vec32xInt8(table._storage._value), Builtin.bitcast_Vec8xInt32_Vec32xInt8(indices._storage._value)))
    return result
}

/// ``bytes(_:signedAs:)`` on a 256-bit vector (`vpsignb`, AVX2).
@inlinable @inline(__always)
func bytes(_ values: SIMD8<UInt32>, signedAs signs: SIMD8<UInt32>) -> SIMD8<UInt32> {
    var result = SIMD8<UInt32>()
    result._storage._value = Builtin.bitcast_Vec32xInt8_Vec8xInt32(Builtin.int_x86_avx2_psign_b(
        Builtin.bitcast_Vec8xInt32_Vec32xInt8(values._storage._value), Builtin.bitcast_Vec8xInt32_Vec32xInt8(signs._storage._value)))
    return result
}

/// ``productsOfBytePairs(unsigned:signed:)`` on 256-bit vectors (`vpmaddubsw`, AVX2): 32
/// products summed two by two into 16 lanes.
@inlinable @inline(__always)
func productsOfBytePairs(unsigned: SIMD8<UInt32>, signed: SIMD8<UInt32>) -> SIMD16<Int16> {
    var result = SIMD16<Int16>()
    result._storage._value = Builtin.int_x86_avx2_pmadd_ub_sw(
        Builtin.bitcast_Vec8xInt32_Vec32xInt8(unsigned._storage._value), Builtin.bitcast_Vec8xInt32_Vec32xInt8(signed._storage._value))
    return result
}

/// ``productsOfWordPairs(_:_:)`` on 256-bit vectors (`vpmaddwd`, AVX2): 8 lanes.
@inlinable @inline(__always)
func productsOfWordPairs(_ lanes: SIMD16<Int16>, _ factors: SIMD16<Int16>) -> SIMD8<Int32> {
    var result = SIMD8<Int32>()
    result._storage._value = Builtin.int_x86_avx2_pmadd_wd(lanes._storage._value, factors._storage._value)
    return result
}

/// Each lane converted to the nearest float (`vcvtdq2ps`, one instruction for 16 lanes, two on AVX2):
/// exact below 2²⁴ in magnitude, rounded to nearest even above, as `Float(_:)` rounds.
@inlinable @inline(__always)
public func floatsFromIntegers(_ integers: SIMD16<Int32>) -> SIMD16<Float> {
    var result = SIMD16<Float>()
    result._storage._value = Builtin.sitofp_Vec16xInt32_Vec16xFPIEEE32(integers._storage._value)
    return result
}

/// The low 16 bits of each lane, read as an IEEE half, as a float (`vpmovdw` then
/// `vcvtph2ps` on AVX-512; on AVX2 the halves are packed together with `vpblendw`,
/// `vpackusdw` and `vpermq`, then two `vcvtph2ps`): exact for every half.
@inlinable @inline(__always)
public func floatsFromHalves(lowBitsOf bits: SIMD16<UInt32>) -> SIMD16<Float> {
    let halves: Builtin.Vec16xInt16 = Builtin.trunc_Vec16xInt32_Vec16xInt16(bits._storage._value)
    var result = SIMD16<Float>()
    result._storage._value = Builtin.fpext_Vec16xFPIEEE16_Vec16xFPIEEE32(Builtin.bitcast_Vec16xInt16_Vec16xFPIEEE16(halves))
    return result
}

/// Sixteen IEEE halves as floats (`vcvtph2ps` from memory or a 256-bit register, two 128-bit
/// ones on AVX2): exact for every half.
@inlinable @inline(__always)
public func floatsFromHalves(bitPatterns bits: SIMD16<UInt16>) -> SIMD16<Float> {
    var result = SIMD16<Float>()
    result._storage._value = Builtin.fpext_Vec16xFPIEEE16_Vec16xFPIEEE32(Builtin.bitcast_Vec16xInt16_Vec16xFPIEEE16(bits._storage._value))
    return result
}

/// Eight IEEE halves as floats (one 256-bit `vcvtph2ps`, from memory or a 128-bit
/// register): exact for every half.
@inlinable @inline(__always)
public func floatsFromHalves(bitPatterns bits: SIMD8<UInt16>) -> SIMD8<Float> {
    var result = SIMD8<Float>()
    result._storage._value = Builtin.fpext_Vec8xFPIEEE16_Vec8xFPIEEE32(Builtin.bitcast_Vec8xInt16_Vec8xFPIEEE16(bits._storage._value))
    return result
}

/// A hint that the thread is spinning on a memory location (`pause`): the core slows the
/// loop down and gives its execution resources to the sibling hyperthread, which is often
/// the thread being waited for.
@inlinable @inline(__always)
public func pauseWhileSpinning() {
    Builtin.int_x86_sse2_pause()
}

/// Asks the caches to start loading the 64-byte line holding `address` into the second level
/// (`prefetcht1`), for a read soon. Only a hint: it never faults, whatever the address.
@inlinable @inline(__always)
public func prefetchForReading(_ address: UnsafeRawPointer) {
    Builtin.int_prefetch_RawPointer(address._rawValue, Int32(0)._value, Int32(2)._value, Int32(1)._value)
}

/// The larger of each pair of lanes, as unsigned integers (`vpmaxud`).
@inlinable @inline(__always)
public func largerLanes(_ a: SIMD16<UInt32>, _ b: SIMD16<UInt32>) -> SIMD16<UInt32> {
    var result = SIMD16<UInt32>()
    result._storage._value = Builtin.int_umax_Vec16xInt32(a._storage._value, b._storage._value)
    return result
}

/// The largest lane, as an unsigned integer: four `vpmaxud` on halving widths. (The standard
/// library's `max()` walks the lanes one by one.)
@inlinable @inline(__always)
public func largestLane(_ lanes: SIMD16<UInt32>) -> UInt32 {
    UInt32(Builtin.int_vector_reduce_umax_Vec16xInt32(lanes._storage._value))
}

/// The lanes' sum, wrapping on overflow: four `vpaddd` on halving widths.
@inlinable @inline(__always)
public func wrappingSum(_ lanes: SIMD16<Int32>) -> Int32 {
    Int32(Builtin.int_vector_reduce_add_Vec16xInt32(lanes._storage._value))
}

/// `limit < value ? limit : value` lane by lane (`vminps`): the smaller of the two, and a
/// NaN value stays NaN.
@inlinable @inline(__always)
public func smallerLanes(_ values: SIMD16<Float>, _ limit: SIMD16<Float>) -> SIMD16<Float> {
    #if TYPESET_AVX512
    var result = SIMD16<Float>()
    result._storage._value = Builtin.int_x86_avx512_min_ps_512(limit._storage._value, values._storage._value, Int32(4)._value)
    return result
    #else
    let l = halves(limit), v = halves(values)
    return joined(Builtin.int_x86_avx_min_ps_256(l.low, v.low), Builtin.int_x86_avx_min_ps_256(l.high, v.high))
    #endif
}

/// Each lane's low byte (`vpmovdb` on AVX-512, byte shuffles on AVX2): the 16 lanes
/// truncated to bytes, in order.
@inlinable @inline(__always)
public func lowBytes(_ lanes: SIMD16<Int32>) -> SIMD16<Int8> {
    var result = SIMD16<Int8>()
    result._storage._value = Builtin.trunc_Vec16xInt32_Vec16xInt8(lanes._storage._value)
    return result
}

/// `value > running ? value : running` lane by lane (`vmaxps`): a running maximum that a NaN
/// value leaves unchanged.
@inlinable @inline(__always)
public func largerLanes(_ values: SIMD16<Float>, keeping running: SIMD16<Float>) -> SIMD16<Float> {
    #if TYPESET_AVX512
    var result = SIMD16<Float>()
    result._storage._value = Builtin.int_x86_avx512_max_ps_512(values._storage._value, running._storage._value, Int32(4)._value)
    return result
    #else
    let v = halves(values), r = halves(running)
    return joined(Builtin.int_x86_avx_max_ps_256(v.low, r.low), Builtin.int_x86_avx_max_ps_256(v.high, r.high))
    #endif
}

/// A bit per lane, lane 0 lowest: set where `a` and `b` are equal (`vcmpeqps` into a mask
/// register); NaNs equal nothing.
@inlinable @inline(__always)
public func equalLanes(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> UInt16 {
    UInt16(Builtin.bitcast_Vec16xInt1_Int16(Builtin.fcmp_oeq_Vec16xFPIEEE32(a._storage._value, b._storage._value)))
}
