import Foundation
import Kernels

// The small per-element operations of a transformer block, on row-major float buffers. Each is
// written to match ggml's CPU definitions (the reference the parity tests hold us to).

/// `x ← x / rms(x) · weight` over each row of `width` elements (ggml's `rms_norm` then `mul`).
@inline(__always)
func _rmsNorm(_ rows: UnsafeMutableBufferPointer<Float>, width: Int, weight: UnsafeBufferPointer<Float>, epsilon: Float) {
    let rowCount = rows.count / width
    for row in 0 ..< rowCount {
        let base = rows.baseAddress! + row * width
        var sum: Double = 0  // ggml accumulates in double
        for index in 0 ..< width { sum += Double(base[index] * base[index]) }
        let scale = 1 / (Float(sum / Double(width)) + epsilon).squareRoot()
        for index in 0 ..< width { base[index] = base[index] * scale * weight[index] }
    }
}

/// How a head's dimensions pair up for rotary position embedding.
enum _RotaryPairing {
    /// (0,1), (2,3), …: ggml's "normal" RoPE (Llama; the GGUF converter permutes Q and K for it).
    case adjacent
    /// (i, i + d/2): ggml's "NeoX" RoPE (Gemma, Qwen, …).
    case halves
}

/// The cosines and sines of ggml's `rope` for consecutive positions and one base: the angle
/// of pair `i` at position `p` is `p · base^(-2i/d)`, the powers built by repeated
/// multiplication in `Float`. Computed once per forward call and base, then shared by the
/// queries and keys of every block with that base.
struct _RotaryAngles: Sendable {
    let positions: Range<Int>
    let half: Int
    /// `cosines[(p − first) × half + i]`, likewise `sines`.
    let cosines: [Float]
    let sines: [Float]

    init(positions: Range<Int>, headWidth: Int, base: Float) {
        let thetaScale = powf(base, -2 / Float(headWidth))
        let half = headWidth / 2
        var cosines = [Float](repeating: 0, count: positions.count * half), sines = cosines
        for (row, position) in positions.enumerated() {
            var theta = Float(position)
            for pair in 0 ..< half {
                cosines[row * half + pair] = cosf(theta)
                sines[row * half + pair] = sinf(theta)
                theta *= thetaScale
            }
        }
        self.positions = positions
        self.half = half
        self.cosines = cosines
        self.sines = sines
    }
}

/// Rotates each head of rows `rows` (row `r` at position `angles.positions.lowerBound + r`) as
/// ggml's `rope` does: each rotation is one product and one fused multiply-add per output, as
/// llama.cpp's build (GCC, `-ffp-contract=fast`) computes it:
///
///     adjacent: y0 = fma(cos, x0, −sin·x1)    y1 = fma(cos, x1, sin·x0)
///     halves:   y0 = fma(cos, x0, −sin·x1)    y1 = fma(sin, x0, cos·x1)
func _applyRotary(
    _ buffer: UnsafeMutablePointer<Float>, rows: Range<Int>, headCount: Int, angles: _RotaryAngles, pairing: _RotaryPairing
) {
    let half = angles.half, headWidth = 2 * half
    angles.cosines.withUnsafeBufferPointer { cosines in
        angles.sines.withUnsafeBufferPointer { sines in
            for row in rows {
                for head in 0 ..< headCount {
                    let base = buffer + (row * headCount + head) * headWidth
                    for pair in 0 ..< half {
                        let (first, second) = pairing == .adjacent ? (2 * pair, 2 * pair + 1) : (pair, pair + half)
                        let x0 = base[first], x1 = base[second], cosine = cosines[row * half + pair], sine = sines[row * half + pair]
                        base[first] = (-(sine * x1)).addingProductWhereFused(cosine, x0)
                        base[second] = pairing == .adjacent ? (sine * x0).addingProductWhereFused(cosine, x1) : (cosine * x1).addingProductWhereFused(sine, x0)
                    }
                }
            }
        }
    }
}

/// Runs `body` on ranges of `0 ..< count` split across `threadCount` threads (one range when
/// `count` is 1). For the per-row operations of the forward pass: `body` must touch only the
/// rows of its range, which is what makes handing it to several threads sound.
func _forEachRowRange(_ count: Int, threadCount: Int, _ body: (Range<Int>) -> Void) {
    withoutActuallyEscaping(body) { body in
        let rows = _UncheckedRowBody(body: body)
        KernelThreadPool.shared.forEachRange(of: count, parts: count > 1 ? threadCount : 1) { rows.body($0) }
    }
}

/// A per-row body handed to the thread pool; see `_forEachRowRange`.
private struct _UncheckedRowBody: @unchecked Sendable {
    let body: (Range<Int>) -> Void
}

/// GELU, tanh approximation, computed exactly.
@inline(__always) func _geluExact(_ x: Float) -> Float {
    let sqrtTwoOverPi: Float = 0.797_884_56
    return 0.5 * x * (1 + tanhf(sqrtTwoOverPi * x * (1 + 0.044_715 * x * x)))
}

/// GELU as ggml's CPU backend computes it: 0 below −10, the identity above 10, and in between
/// a 64K-entry table of half-precision results indexed by the input rounded to half precision.
/// Matching ggml's rounding keeps Gemma's activations closer to llama.cpp's, and a table
/// lookup is several times cheaper than `tanhf`.
@inline(__always) func _gelu(_ x: Float) -> Float {
    if x <= -10 { return 0 }
    if x >= 10 { return x }
    return _geluTable[Int(halfFromFloat(x))]
}

private let _geluTable: [Float] = (0 ..< 65536).map { bits in
    floatFromHalf(halfFromFloat(_geluExact(floatFromHalf(UInt16(bits)))))
}

/// `gate ← gelu(gate) · up` over the rows, as ggml's `ggml_vec_geglu_f32` with its half table:
/// eight inputs rounded to half at a time, then one table lookup each.
func _geGLU(_ gates: UnsafeMutableBufferPointer<Float>, _ ups: UnsafeBufferPointer<Float>) {
    _geluTable.withUnsafeBufferPointer { table in
        var index = 0
        while index + 8 <= gates.count {
            let x = UnsafeRawPointer(gates.baseAddress! + index).loadUnaligned(as: SIMD8<Float>.self)
            let halves = halfBitPatterns(x)
            var gelu = SIMD8<Float>()
            for lane in 0..<8 { gelu[lane] = table[Int(halves[lane])] }
            gelu.replace(with: 0, where: x .<= -10)
            gelu.replace(with: x, where: x .>= 10)
            let up = UnsafeRawPointer(ups.baseAddress! + index).loadUnaligned(as: SIMD8<Float>.self)
            UnsafeMutableRawPointer(gates.baseAddress! + index).storeBytes(of: gelu * up, as: SIMD8<Float>.self)
            index += 8
        }
        while index < gates.count {
            gates[index] = _gelu(gates[index]) * ups[index]
            index += 1
        }
    }
}

/// Rounds every value to the nearest half (ties to even), as llama.cpp's F16 conversion does.
func _roundToHalfPrecision(_ values: UnsafeMutableBufferPointer<Float>) {
    var index = 0
    while index + 8 <= values.count {
        let target = UnsafeMutableRawPointer(values.baseAddress! + index)
        target.storeBytes(of: roundedToHalfPrecision(target.loadUnaligned(as: SIMD8<Float>.self)), as: SIMD8<Float>.self)
        index += 8
    }
    while index < values.count {
        values[index] = floatFromHalf(halfFromFloat(values[index]))
        index += 1
    }
}
