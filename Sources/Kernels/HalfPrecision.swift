/// Conversions from the 16-bit float formats GGUF stores, written out so they behave the same
/// on every platform (Swift's `Float16` is unavailable on Intel Macs).

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
