import Foundation

// ggml's vectorised math, operation for operation, so that the forward pass rounds where
// llama.cpp's CPU backend rounds (the parity tests hold us to it).

/// ggml's `ggml_v_expf` as its AVX-512 build computes it (vec.h), lane for lane: a
/// polynomial after range reduction by ln 2, scaled by 2^n; 0 below about −104 and +∞ above
/// about 88.4. Within 1.5 ulp of `expf`, and bit-identical to llama.cpp's softmax and SiLU.
@inline(__always)
func _ggmlExponential(_ x: SIMD16<Float>) -> SIMD16<Float> {
    let shifter = SIMD16<Float>(repeating: 0x1.8p23)
    let z = shifter.addingProductWhereFused(x, SIMD16(repeating: 0x1.715476p+0))
    let n = z - shifter
    let b = x.addingProductWhereFused(-n, SIMD16(repeating: 0x1.62e4p-1)).addingProductWhereFused(-n, SIMD16(repeating: 0x1.7f7d1cp-20))
    let u = b * b
    let inner = SIMD16<Float>(repeating: 0x1.573e2ep-5).addingProductWhereFused(SIMD16(repeating: 0x1.0e4020p-7), b)
    let middle = SIMD16<Float>(repeating: 0x1.fffdb6p-2).addingProductWhereFused(SIMD16(repeating: 0x1.555e66p-3), b)
    let outer = SIMD16<Float>(repeating: 1).addingProductWhereFused(SIMD16(repeating: 0x1.ffffecp-1), b)
    let j = outer.addingProductWhereFused(middle.addingProductWhereFused(inner, u), u)
    // scalef(j, n): n is z's integer part (z = 1.5·2²³ + n); two exact power-of-two factors,
    // so only a subnormal result rounds, once, as scalef does.
    let exponent = unsafeBitCast(z, to: SIMD16<Int32>.self) &- 0x4B40_0000
    let first = exponent &>> 1, second = exponent &- first
    func power(_ k: SIMD16<Int32>) -> SIMD16<Float> { unsafeBitCast((k &+ 127) &<< 23, to: SIMD16<Float>.self) }
    var result = j * power(first) * power(second)
    // |n| > 192: 0 for large negative x, +∞ for large positive x (and NaN stays NaN through n).
    let magnitude = unsafeBitCast(unsafeBitCast(n, to: SIMD16<UInt32>.self) & 0x7FFF_FFFF, to: SIMD16<Float>.self)
    let outside = magnitude .> 192
    if any(outside) {
        result.replace(with: SIMD16(repeating: 0), where: outside .& (n .<= 0))
        result.replace(with: SIMD16(repeating: .infinity), where: outside .& (n .> 0))
    }
    return result
}

/// `_mm512_reduce_add_ps`'s order: halves, then quarters, then pairs.
@inline(__always)
func _sumInHalves(_ x: SIMD16<Float>) -> Float {
    _sumInHalves(x.lowHalf + x.highHalf)
}

// The steps of `_sumInHalves` for several vectors at once, each adding the even groups of
// lanes to the odd ones: 8, then 4, 2 and 1.

/// Halves: a.low + a.high, b.low + b.high → [a8, b8].
@inline(__always)
private func _eights(_ a: SIMD16<Float>, _ b: SIMD16<Float>) -> SIMD16<Float> {
    SIMD16(lowHalf: a.lowHalf, highHalf: b.lowHalf) + SIMD16(lowHalf: a.highHalf, highHalf: b.highHalf)
}

/// [a8, b8], [c8, d8] → [a4, b4, c4, d4]: each 8 folded to 4.
@inline(__always)
private func _fours(_ x: SIMD16<Float>, _ y: SIMD16<Float>) -> SIMD16<Float> {
    SIMD16(lowHalf: SIMD8(lowHalf: x.lowHalf.lowHalf, highHalf: x.highHalf.lowHalf),
           highHalf: SIMD8(lowHalf: y.lowHalf.lowHalf, highHalf: y.highHalf.lowHalf))
        + SIMD16(lowHalf: SIMD8(lowHalf: x.lowHalf.highHalf, highHalf: x.highHalf.highHalf),
                 highHalf: SIMD8(lowHalf: y.lowHalf.highHalf, highHalf: y.highHalf.highHalf))
}

/// Each 4 folded to 2: lanes (0, 1) + (2, 3) of every quad.
@inline(__always)
private func _twos(_ x: SIMD16<Float>, _ y: SIMD16<Float>) -> SIMD16<Float> {
    // A pair of floats is one 64-bit lane: the even lanes then the odd ones.
    let x = unsafeBitCast(x, to: SIMD8<UInt64>.self), y = unsafeBitCast(y, to: SIMD8<UInt64>.self)
    return unsafeBitCast(SIMD8(lowHalf: x.evenHalf, highHalf: y.evenHalf), to: SIMD16<Float>.self)
        + unsafeBitCast(SIMD8(lowHalf: x.oddHalf, highHalf: y.oddHalf), to: SIMD16<Float>.self)
}

/// Each 2 folded to 1: lane 0 + lane 1 of every pair.
@inline(__always)
private func _ones(_ x: SIMD16<Float>, _ y: SIMD16<Float>) -> SIMD16<Float> {
    SIMD16(lowHalf: x.evenHalf, highHalf: y.evenHalf) + SIMD16(lowHalf: x.oddHalf, highHalf: y.oddHalf)
}

/// ``_sumInHalves(_:)-(SIMD16<Float>)`` of four vectors at once, by the same additions: lane
/// `i` of the result is the sum of `vectors.i`.
@inline(__always)
func _sumsInHalves(_ v: (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>, SIMD16<Float>)) -> SIMD4<Float> {
    let quarters = _fours(_eights(v.0, v.1), _eights(v.2, v.3))   // [a4, b4, c4, d4]
    let pairs = _twos(quarters, quarters)                          // [a2, b2, c2, d2] twice
    return _ones(pairs, pairs).lowHalf.lowHalf
}

@inline(__always)
func _sumInHalves(_ x: SIMD8<Float>) -> Float {
    let quarters = x.lowHalf + x.highHalf
    let pairs = quarters.lowHalf + quarters.highHalf
    return pairs[0] + pairs[1]
}

/// `y = silu(x) · up`, in place over `gates`, as ggml's `ggml_vec_swiglu_f32`: 16 lanes at
/// a time through `ggml_v_expf`, the rest with `expf`.
func _swiGLU(_ gates: UnsafeMutableBufferPointer<Float>, _ ups: UnsafeBufferPointer<Float>) {
    _silu(gates, times: ups.baseAddress)
}

/// `x = silu(x)`, in place, as ggml's `ggml_vec_silu_f32` (Gated DeltaNet's convolution
/// output): ``_swiGLU(_:_:)``'s arithmetic without the product.
func _silu(_ values: UnsafeMutableBufferPointer<Float>) {
    _silu(values, times: nil)
}

/// SiLU of `values`, each multiplied by its `factors` entry when given: 16 lanes at a time
/// through `ggml_v_expf`, the rest with `expf`.
@inline(__always)
private func _silu(_ values: UnsafeMutableBufferPointer<Float>, times factors: UnsafePointer<Float>?) {
    let count = values.count
    var index = 0
    while index + 16 <= count {
        let x = UnsafeRawPointer(values.baseAddress! + index).loadUnaligned(as: SIMD16<Float>.self)
        var silu = x / (1 + _ggmlExponential(SIMD16(repeating: 0) - x))
        if let factors { silu *= UnsafeRawPointer(factors + index).loadUnaligned(as: SIMD16<Float>.self) }
        UnsafeMutableRawPointer(values.baseAddress! + index).storeBytes(of: silu, as: SIMD16<Float>.self)
        index += 16
    }
    while index < count {
        let silu = values[index] / (1 + expf(-values[index]))
        values[index] = factors.map { silu * $0[index] } ?? silu
        index += 1
    }
}

/// OpenAI's clamped SwiGLU (gpt-oss's experts), as ggml's `swiglu_oai` computes it, element by
/// element with `expf`: x = min(gate, 7), y = clamp(up, −7, 7), out = x / (1 + e^(−1.702·x)) · (y + 1).
/// The gate is clamped from above only.
func _clampedSwiGLU(_ gates: UnsafeMutableBufferPointer<Float>, _ ups: UnsafeBufferPointer<Float>) {
    let alpha: Float = 1.702, limit: Float = 7
    for index in 0 ..< gates.count {
        let x = min(gates[index], limit)
        let y = min(max(ups[index], -limit), limit)
        gates[index] = x / (1 + expf(alpha * -x)) * (y + 1)
    }
}
