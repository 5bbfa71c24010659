import Foundation

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

/// Rotates each head of each row by its position, as ggml's `rope` does it: the angle of pair
/// `i` is `position · base^(-2i/d)`, the powers built by repeated multiplication in `Float`.
func _applyRotary(
    _ rows: UnsafeMutableBufferPointer<Float>, headCount: Int, headWidth: Int, positions: Range<Int>,
    base: Float, pairing: _RotaryPairing
) {
    let thetaScale = powf(base, -2 / Float(headWidth))
    let half = headWidth / 2
    var cosines = [Float](repeating: 0, count: half)
    var sines = [Float](repeating: 0, count: half)
    for (row, position) in positions.enumerated() {
        var theta = Float(position)
        for pair in 0 ..< half {
            cosines[pair] = cosf(theta)
            sines[pair] = sinf(theta)
            theta *= thetaScale
        }
        for head in 0 ..< headCount {
            let base = rows.baseAddress! + (row * headCount + head) * headWidth
            for pair in 0 ..< half {
                let (first, second) = pairing == .adjacent ? (2 * pair, 2 * pair + 1) : (pair, pair + half)
                let x0 = base[first], x1 = base[second]
                base[first] = x0 * cosines[pair] - x1 * sines[pair]
                base[second] = x0 * sines[pair] + x1 * cosines[pair]
            }
        }
    }
}

/// SiLU, `x · σ(x)`.
@inline(__always) func _silu(_ x: Float) -> Float { x / (1 + expf(-x)) }

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
    return _geluTable[Int(Float16(x).bitPattern)]
}

private let _geluTable: [Float] = (0 ..< 65536).map { bits in
    Float(Float16(_geluExact(Float(Float16(bitPattern: UInt16(bits))))))
}

/// Dot product of two float runs.
@inline(__always)
func _dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ count: Int) -> Float {
    var lanes = SIMD8<Float>()
    var index = 0
    while index + 8 <= count {
        lanes += UnsafeRawPointer(a + index).loadUnaligned(as: SIMD8<Float>.self)
            * UnsafeRawPointer(b + index).loadUnaligned(as: SIMD8<Float>.self)
        index += 8
    }
    var sum = lanes.sum()
    while index < count {
        sum += a[index] * b[index]
        index += 1
    }
    return sum
}

/// `destination += scale · source` over `count` floats.
@inline(__always)
func _addScaled(_ destination: UnsafeMutablePointer<Float>, _ source: UnsafePointer<Float>, _ scale: Float, _ count: Int) {
    var index = 0
    let factor = SIMD8<Float>(repeating: scale)
    while index + 8 <= count {
        let value = UnsafeRawPointer(destination + index).loadUnaligned(as: SIMD8<Float>.self)
            + factor * UnsafeRawPointer(source + index).loadUnaligned(as: SIMD8<Float>.self)
        UnsafeMutableRawPointer(destination + index).storeBytes(of: value, as: SIMD8<Float>.self)
        index += 8
    }
    while index < count {
        destination[index] += scale * source[index]
        index += 1
    }
}
