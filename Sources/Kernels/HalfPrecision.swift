/// Conversions from the 16-bit float formats GGUF stores, written out so they behave the same
/// on every platform (Swift's `Float16` is unavailable on Intel Macs).

#if TYPESET_AVX2
import VectorIntrinsics
#endif

/// IEEE 754 binary16 → binary32, exactly (every half value is representable as a float):
/// subnormals are normalised, infinities and NaNs (payload included) carried over.
/// Tested exhaustively over all 65,536 bit patterns against `Float(Float16(bitPattern:))`.
@inlinable @inline(__always)
public func floatFromHalf(_ bits: UInt16) -> Float {
    let sign = UInt32(bits & 0x8000) << 16
    let exponent = UInt32(bits >> 10) & 0x1F
    let mantissa = UInt32(bits & 0x03FF)
    if exponent == 0x1F {   // infinity or NaN
        return Float(bitPattern: sign | 0x7F80_0000 | (mantissa << 13))
    }
    if exponent == 0 {
        // Zero or subnormal: mantissa × 2^-24, exact in binary32.
        let magnitude = Float(mantissa) * 0x1p-24
        return sign == 0 ? magnitude : -magnitude
    }
    return Float(bitPattern: sign | ((exponent + 112) << 23) | (mantissa << 13))
}

/// bfloat16 → binary32: the 16 bits are the float's upper half.
@inlinable @inline(__always)
public func floatFromBFloat16(_ bits: UInt16) -> Float {
    Float(bitPattern: UInt32(bits) << 16)
}

/// binary32 → IEEE 754 binary16 bits, rounding to nearest, ties to even (what F16C's
/// `vcvtps2ph` and ggml's `GGML_FP32_TO_FP16` do): subnormal results are rounded, overflow
/// gives ±infinity, NaNs stay NaNs (quiet, payload truncated).
/// One conversion instruction where the target has it (tuned x86-64 Linux builds: F16C or
/// AVX512-FP16; arm64), else ``_portableHalfFromFloat(_:)``, the same rounding in integer
/// operations, tested against `Float16(Float)` on every platform that has it.
@inlinable @inline(__always)
public func halfFromFloat(_ value: Float) -> UInt16 {
    #if (TYPESET_TUNED_CPU && arch(x86_64) && os(Linux)) || arch(arm64)
    Float16(value).bitPattern
    #else
    _portableHalfFromFloat(value)
    #endif
}

/// ``halfFromFloat(_:)`` in integer operations, for targets without a conversion instruction.
@inlinable
func _portableHalfFromFloat(_ value: Float) -> UInt16 {
    let bits = value.bitPattern
    let sign = UInt16(truncatingIfNeeded: (bits >> 16) & 0x8000)
    let exponent = Int((bits >> 23) & 0xFF)
    let mantissa = bits & 0x7F_FFFF
    if exponent == 0xFF {
        return sign | 0x7C00 | (mantissa == 0 ? 0 : UInt16(truncatingIfNeeded: 0x200 | (mantissa >> 13)))
    }
    let halfExponent = exponent - 127 + 15
    if halfExponent >= 0x1F { return sign | 0x7C00 }
    // The significand with its implicit bit, and how many low bits rounding drops.
    let significand: UInt32
    let dropped: UInt32
    if halfExponent <= 0 {
        // Subnormal half (or zero): the value is significand × 2^-24 after the shift.
        guard halfExponent >= -10 else { return sign }   // below half the smallest subnormal
        significand = mantissa | 0x80_0000
        dropped = UInt32(14 - halfExponent)
    } else {
        significand = mantissa
        dropped = 13
    }
    var result = significand >> dropped
    let remainder = significand & ((1 << dropped) - 1)
    let halfway: UInt32 = 1 << (dropped - 1)
    if remainder > halfway || (remainder == halfway && result & 1 == 1) { result += 1 }
    if halfExponent > 0 {
        // A carry out of the mantissa increments the exponent, up to infinity: both correct.
        return sign | UInt16(truncatingIfNeeded: (UInt32(halfExponent) << 10) + result)
    }
    return sign | UInt16(truncatingIfNeeded: result)
}

// MARK: - Eight lanes at a time

/// The low 16 bits of each lane, IEEE halves, as floats. Exact for every finite half (zeros,
/// subnormals, normal numbers); infinities and NaNs become large finite values.
@inlinable @inline(__always)
public func floatsFromHalves(_ bits: SIMD8<UInt32>) -> SIMD8<Float> {
    // The half's exponent and mantissa moved to float position keep a bias of 15 instead of
    // 127; × 2^112 restores it (and normalises subnormals).
    let magnitude = unsafeBitCast((bits & 0x7FFF) &<< 13, to: SIMD8<Float>.self) * 0x1p112
    return unsafeBitCast(unsafeBitCast(magnitude, to: SIMD8<UInt32>.self) | ((bits & 0x8000) &<< 16), to: SIMD8<Float>.self)
}

/// Each lane rounded to an IEEE half, ties to even, as bits in the low 16 bits: lane for lane
/// what ``halfFromFloat(_:)`` returns (and F16C's `vcvtps2ph`), without branches.
@inlinable @inline(__always)
public func halvesFromFloats(_ values: SIMD8<Float>) -> SIMD8<UInt32> {
    let bits = unsafeBitCast(values, to: SIMD8<UInt32>.self)
    let sign = bits & 0x8000_0000
    let magnitude = bits ^ sign
    // Subnormal (or zero) halves: adding 2^-1 puts the half's 2^-24 unit at the float's last
    // place, so the float addition does the rounding.
    let denormalMagic: UInt32 = ((127 - 15) + (23 - 10) + 1) << 23
    let subnormal = unsafeBitCast(unsafeBitCast(magnitude, to: SIMD8<Float>.self) + unsafeBitCast(SIMD8(repeating: denormalMagic), to: SIMD8<Float>.self),
                                  to: SIMD8<UInt32>.self) &- denormalMagic
    // Normal halves: rebias the exponent and round the 13 dropped bits to even by hand.
    let odd = (magnitude &>> 13) & 1
    let normal = (magnitude &+ (UInt32(bitPattern: (15 - 127) << 23) &+ 0xFFF) &+ odd) &>> 13
    var half = normal.replacing(with: subnormal, where: magnitude .< (113 << 23))
    // Beyond the largest half: infinity, or a quiet NaN for a NaN.
    half.replace(with: SIMD8(repeating: 0x7C00), where: magnitude .>= ((127 + 16) << 23))
    half.replace(with: SIMD8(repeating: 0x7E00), where: magnitude .> (255 << 23))
    return half | (sign &>> 16)
}

// MARK: - Conversion instructions where the target has them

/// Each lane rounded to the nearest half (ties to even), as a float: the value an F16 tensor
/// would hold. On tuned x86-64 builds (the default for the root package; their CPUs have F16C) one
/// `vcvtps2ph` and one `vcvtph2ps`; elsewhere ``floatsFromHalves(_:)`` of
/// ``halvesFromFloats(_:)``. The two agree on every value below 65,520 in magnitude (beyond,
/// the instructions give infinities where the portable pair gives large finite values).
@inlinable @inline(__always)
public func roundedToHalfPrecision(_ values: SIMD8<Float>) -> SIMD8<Float> {
    #if TYPESET_TUNED_CPU && arch(x86_64) && os(Linux)
    SIMD8<Float>(SIMD8<Float16>(values))
    #else
    floatsFromHalves(halvesFromFloats(values))
    #endif
}

/// `value` rounded to the nearest half (ties to even), as a float: ``roundedToHalfPrecision(_:)``
/// for one value, two conversion instructions where the target has them.
@inlinable @inline(__always)
public func roundedToHalfPrecision(_ value: Float) -> Float {
    #if (TYPESET_TUNED_CPU && arch(x86_64) && os(Linux)) || arch(arm64)
    Float(Float16(value))
    #else
    floatFromHalf(halfFromFloat(value))
    #endif
}

/// Sixteen IEEE halves as floats, exact for every finite half. For reading half-precision
/// storage (the KV cache) where the float it stands for is wanted. Through VectorIntrinsics
/// on AVX2 targets (the standard library's conversion of `SIMD16<Float16>` is a call that
/// converts four lanes at a time): one 512-bit `vcvtph2ps` on AVX-512, two 256-bit ones on
/// AVX2; two F16C conversions of eight lanes on other tuned x86-64 builds and two `fcvtl`
/// pairs on arm64, ``floatsFromHalves(_:)`` of eight lanes at a time elsewhere.
@inlinable @inline(__always)
public func floatsFromHalves(_ halves: SIMD16<UInt16>) -> SIMD16<Float> {
    #if TYPESET_AVX2
    floatsFromHalves(bitPatterns: halves)
    #elseif (TYPESET_TUNED_CPU && arch(x86_64) && os(Linux)) || arch(arm64)
    SIMD16(lowHalf: SIMD8<Float>(unsafeBitCast(halves.lowHalf, to: SIMD8<Float16>.self)),
           highHalf: SIMD8<Float>(unsafeBitCast(halves.highHalf, to: SIMD8<Float16>.self)))
    #else
    SIMD16(lowHalf: floatsFromHalves(SIMD8<UInt32>(truncatingIfNeeded: halves.lowHalf)),
           highHalf: floatsFromHalves(SIMD8<UInt32>(truncatingIfNeeded: halves.highHalf)))
    #endif
}

/// Eight IEEE halves as floats, exact for every finite half: ``floatsFromHalves(_:)-(SIMD16<UInt16>)``
/// eight lanes at a time (one `vcvtph2ps` on AVX2 targets and other tuned x86-64 builds, an
/// `fcvtl` pair on arm64).
@inlinable @inline(__always)
public func floatsFromHalves(_ halves: SIMD8<UInt16>) -> SIMD8<Float> {
    #if TYPESET_AVX2
    floatsFromHalves(bitPatterns: halves)
    #elseif (TYPESET_TUNED_CPU && arch(x86_64) && os(Linux)) || arch(arm64)
    SIMD8<Float>(unsafeBitCast(halves, to: SIMD8<Float16>.self))
    #else
    floatsFromHalves(SIMD8<UInt32>(truncatingIfNeeded: halves))
    #endif
}

/// Each lane rounded to an IEEE half (ties to even), as its 16 bits: the low halves of what
/// ``halvesFromFloats(_:)`` returns, for every value below 65,520 in magnitude, through F16C's
/// `vcvtps2ph` on tuned x86-64 builds. For table lookups indexed by a half.
@inlinable @inline(__always)
public func halfBitPatterns(_ values: SIMD8<Float>) -> SIMD8<UInt16> {
    #if TYPESET_TUNED_CPU && arch(x86_64) && os(Linux)
    unsafeBitCast(SIMD8<Float16>(values), to: SIMD8<UInt16>.self)
    #else
    SIMD8<UInt16>(truncatingIfNeeded: halvesFromFloats(values))
    #endif
}

// MARK: - Fused multiply-add where it is an instruction

extension SIMD where Scalar == Float {
    /// `self + lhs × rhs` with one rounding (as llama.cpp's builds compute these sums) where
    /// the target CPU has a fused multiply-add instruction — tuned builds (see Package.swift)
    /// and arm64 — and with two roundings on the x86-64 baseline, where Swift's fused form is a
    /// library call per lane (measured at over 10× the cost of a whole prefill).
    @inlinable @inline(__always)
    public func addingProductWhereFused(_ lhs: Self, _ rhs: Self) -> Self {
        #if TYPESET_TUNED_CPU || arch(arm64)
        addingProduct(lhs, rhs)
        #else
        self + lhs * rhs
        #endif
    }
}

extension Float {
    /// ``Swift/SIMD/addingProductWhereFused(_:_:)`` for one value.
    @inlinable @inline(__always)
    public func addingProductWhereFused(_ lhs: Float, _ rhs: Float) -> Float {
        #if TYPESET_TUNED_CPU || arch(arm64)
        addingProduct(lhs, rhs)
        #else
        self + lhs * rhs
        #endif
    }
}
