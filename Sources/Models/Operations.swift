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

/// Runs `body` on ranges of `0 ..< count` split across `threadCount` threads, or on all of
/// them here when they are few: `floatsPerRow` says how many floats a row's step touches, and
/// a step over at most ``floatsWorthSplitting`` of them runs on the calling thread. For the
/// per-row operations of the forward pass: `body` must touch only the rows of its range, which
/// is what makes handing it to several threads sound.
func _forEachRowRange(_ count: Int, floatsPerRow: Int, threadCount: Int, _ body: (Range<Int>) -> Void) {
    guard count > 1, threadCount > 1, count * floatsPerRow > floatsWorthSplitting else {
        if count > 0 { body(0 ..< count) }
        return
    }
    withoutActuallyEscaping(body) { body in
        KernelThreadPool.shared.forEachRange(of: count, parts: threadCount, job: UncheckedRowJob(body: body))
    }
}

/// The most floats a per-row step touches that it still runs on one thread: handing a step to
/// the other threads and waiting for them (the pool's shared counters' cache lines crossing
/// between the cores) costs more than a norm or a residual add over so few floats takes
/// (a few thousand multiply-adds). A decode step of a few sequences has a dozen such
/// steps per block: on one thread SmolLM2's and Qwen 0.5B's four-sequence steps got about
/// 1.5 % faster (medians of 14 and 10 alternated `typeset bench decode --sequences 4` pairs),
/// while a prompt's rows, or Qwen's feed-forward activation over four rows (19,456 floats),
/// still split.
let floatsWorthSplitting = 8192

/// A per-row body handed to the thread pool as a range job; see `_forEachRowRange`.
private struct UncheckedRowJob: RangeJob, @unchecked Sendable {
    let body: (Range<Int>) -> Void
    func run(_ range: Range<Int>) { body(range) }
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
        values[index] = roundedToHalfPrecision(values[index])
        index += 1
    }
}

/// `row += bias` for each row of `rows` (one `bias.count`-float row each): ggml's `add` of a
/// projection's bias vector.
func _addBias(_ bias: UnsafeBufferPointer<Float>, to buffer: UnsafeMutablePointer<Float>, rows: Range<Int>) {
    let width = bias.count
    for row in rows {
        let target = buffer + row * width
        for index in 0 ..< width { target[index] += bias[index] }
    }
}

/// `values[i] = 1 / (1 + e^(−values[i]))`, ggml's `sigmoid` on the CPU. A mixture of experts'
/// router scores, each expert's on its own.
func _sigmoid(_ values: UnsafeMutableBufferPointer<Float>) {
    for index in values.indices { values[index] = 1 / (1 + expf(-values[index])) }
}

/// `values = softmax(values)` as ggml's `soft_max` computes it on the CPU: the exponentials
/// of the differences from the largest value, their sum in double precision, each multiplied
/// by the sum's inverse rounded to single precision. A mixture of experts' router scores.
func _softmax(_ values: UnsafeMutableBufferPointer<Float>) {
    var largest = -Float.infinity
    for value in values { largest = max(largest, value) }
    var sum: Double = 0
    for index in values.indices {
        let exponential = expf(values[index] - largest)
        values[index] = exponential
        sum += Double(exponential)
    }
    let inverse = Float(1 / sum)
    for index in values.indices { values[index] *= inverse }
}
