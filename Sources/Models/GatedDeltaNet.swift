import Foundation
import Kernels

/// Qwen 3.5's Gated DeltaNet block (llama.cpp's `build_layer_attn_linear`): a linear attention
/// whose memory of the past is a fixed-size state, not a cache growing with the context.
///
///     qkv = W_qkv · x   (queries and keys of K heads, values of V heads, S wide each)
///     z   = W_gate · x  (V · S)        α = W_α · x, β = W_β · x  (one per value head)
///     c   = SiLU(conv(qkv))            a causal convolution over the last L inputs of each channel
///     q, k, v = c's heads, q and k L2-normalized
///     per value head h, reading query and key head h mod K, per token:
///         g  = softplus(α + dt_bias) · a                     (a = ssm_a = −exp(A_log) < 0)
///         for each row j of the head's S × S matrix M:
///             Mⱼ ← e^g · Mⱼ,   dⱼ = σ(β) · (vⱼ − Mⱼ·k),   Mⱼ ← Mⱼ + dⱼ · k,   oⱼ = Mⱼ·q / √S
///     y   = W_out · (RMSNorm_w(o) ⊙ SiLU(z))                 per head
///
/// `M` (`S × S` per value head) and the last `L − 1` convolution inputs are the block's state,
/// which lives in the cache (``RecurrentState``); ``GatedDeltaNetRecurrence`` advances it.
struct GatedDeltaNetWeights: Sendable {
    /// `attn_qkv`: the convolution's inputs, queries then keys then values.
    let inputs: Projection
    /// `attn_gate`: `z`, the output gate.
    let outputGate: Projection
    /// `ssm_alpha` and `ssm_beta`: one row per value head, computed row by row (the same
    /// arithmetic whatever the batch: they have too few rows to pack).
    let decayInput: Projection
    let updateInput: Projection
    let recurrence: GatedDeltaNetRecurrence
    /// `ssm_norm`, applied to each value head's output.
    let norm: [Float]
    /// `ssm_out`.
    let output: Projection
}

/// The part of a Gated DeltaNet block that advances its state, with the small parameters it
/// needs (no matrices): the forward pass runs it on a pass's rows, and the cache on rows it
/// kept, to restore a state within the last pass (``RecurrentState``).
struct GatedDeltaNetRecurrence: Sendable {
    let shape: GatedDeltaNetConfiguration
    /// `ssm_conv1d`: `L` taps per channel, channel after channel, tap 0 for the oldest input.
    let kernel: [Float]
    /// `ssm_dt.bias` and `ssm_a`, one per value head.
    let timeStepBias: [Float]
    let decayRate: [Float]
    /// The RMS norm's epsilon, which the L2 norms of queries and keys share (divided by `S`).
    let epsilon: Float

    /// Advances a state over `rows` tokens: reads the state before them at `source`, writes the
    /// state after them at `destination` (which may be `source`), and, when `outputs` is given,
    /// each row's `V × S` outputs there, row after row. The state is the last `L − 1`
    /// convolution inputs (oldest first), then each value head's matrix `M`, row `j` of it
    /// `S` floats (llama.cpp's transposed layout).
    ///
    /// Row by row in order, as llama.cpp's fused kernel runs a prompt and a token alike, so a
    /// state does not depend on how its tokens were split into passes.
    ///
    /// - Complexity: O(rows × (C × L + V × S²)) for `C` convolution channels.
    func advance(
        rows: Int, inputs: RecurrenceInputs, from source: UnsafePointer<Float>, to destination: UnsafeMutablePointer<Float>,
        outputs: UnsafeMutablePointer<Float>?, scratch: UnsafeMutablePointer<Float>, threadCount: Int
    ) {
        precondition(rows > 0, "Recurrence.advance copies a state over no rows")
        let width = shape.convolutionWidth, length = shape.convolutionLength, history = length - 1
        let valueHeads = shape.valueHeadCount, keyHeads = shape.keyHeadCount, headWidth = shape.headWidth
        let rowWidth = shape.preparedRowWidth, epsilon = epsilon
        let series = scratch, prepared = scratch + (history + rows) * width
        inputs.writeConvolutionSeries(rows: rows, width: width, history: history, from: source, to: destination, series: series)
        // Each row: the convolution and its SiLU, the L2 norms of its query and key heads,
        // then each value head's decay exponent g and update weight σ(β).
        kernel.withUnsafeBufferPointer { kernel in
            timeStepBias.withUnsafeBufferPointer { bias in
                decayRate.withUnsafeBufferPointer { rate in
                    _forEachRowRange(rows, floatsPerRow: width * length, threadCount: threadCount) { range in
                        for row in range {
                            let target = prepared + row * rowWidth
                            _shortConvolution(history: UnsafePointer(series), position: history + row, width: width,
                                              kernel: kernel.baseAddress!, length: length, into: target)
                            _silu(UnsafeMutableBufferPointer(start: target, count: width))
                            for head in 0 ..< 2 * keyHeads { _l2Normalize(target + head * headWidth, width: headWidth, epsilon: epsilon) }
                            for head in 0 ..< valueHeads {
                                let perHead = inputs.heads + row * inputs.headStride
                                target[width + head] = _softplus(perHead[head] + bias[head]) * rate[head]
                                target[width + valueHeads + head] = 1 / (1 + expf(-perHead[valueHeads + head]))
                            }
                        }
                    }
                }
            }
        }
        let matrixCount = headWidth * headWidth
        let matrices = history * width
        // Each value head over the rows in order; the heads shared out across the threads.
        let scale = 1 / Float(headWidth).squareRoot()
        let valueOffset = 2 * keyHeads * headWidth
        _forEachRowRange(valueHeads, floatsPerRow: rows * matrixCount, threadCount: threadCount) { heads in
            for head in heads {
                // The first row reads the state before the pass and writes the new one: no copy.
                let matrix = destination + matrices + head * matrixCount
                let before = source + matrices + head * matrixCount
                let keyHead = head % keyHeads
                for row in 0 ..< rows {
                    let prepared = prepared + row * rowWidth
                    _deltaRuleStep(
                        matrix, from: row == 0 ? before : UnsafePointer(matrix), width: headWidth, query: prepared + keyHead * headWidth,
                        key: prepared + (keyHeads + keyHead) * headWidth, value: prepared + valueOffset + head * headWidth,
                        decay: expf(prepared[width + head]), update: prepared[width + valueHeads + head], scale: scale,
                        output: outputs.map { $0 + (row * valueHeads + head) * headWidth })
                }
            }
        }
    }
}

extension GatedDeltaNetConfiguration {
    /// Floats of one row's inputs to the recurrence per head: α, then β.
    var headInputWidth: Int { 2 * valueHeadCount }
    /// Floats of one prepared row: the convolution's outputs, then each value head's g and σ(β).
    var preparedRowWidth: Int { convolutionWidth + 2 * valueHeadCount }
}

// MARK: - Kernels

/// `x ← x / √(Σx² + ε)` over one head, as llama.cpp's `build_gdn_l2_norm` computes it: ggml's
/// RMS norm with `ε / n` (the squares summed in double), then a scale by `1 / √n`.
@inline(__always)
func _l2Normalize(_ head: UnsafeMutablePointer<Float>, width: Int, epsilon: Float) {
    var sum: Double = 0
    for index in 0 ..< width { sum += Double(head[index] * head[index]) }
    let count = Float(width)
    let scale = 1 / (Float(sum / Double(width)) + epsilon / count).squareRoot()
    let inverseRoot = 1 / count.squareRoot()
    for index in 0 ..< width { head[index] = head[index] * scale * inverseRoot }
}

/// ggml's `softplus`: `x` above 20, `log(1 + eˣ)` below.
@inline(__always)
func _softplus(_ x: Float) -> Float {
    x > 20 ? x : logf(1 + expf(x))
}

/// One token of the gated delta rule on one value head's `width × width` matrix `M` (row `j`
/// at `matrix + j × width`; the matrix before the token read at `source`, which may be
/// `matrix`), row by row, with llama.cpp's arithmetic (its fused kernel on an AVX-512 build):
///
///     Mⱼ ← decay · Mⱼ;   dⱼ = (vⱼ − Mⱼ·k) · update;   Mⱼ ← Mⱼ + dⱼ k (fused);   oⱼ = (Mⱼ·q) · scale
///
/// the dot products summed as ``_ggmlDotProduct(_:_:count:)`` sums them. Each row's steps
/// depend on that row only, so doing them row by row gives the values llama.cpp computes a
/// step at a time over all rows. Sixteen lanes at a time when `width` is a multiple of 16,
/// ``_deltaRuleStepReference`` (the same values) otherwise.
@inline(__always)
func _deltaRuleStep(
    _ matrix: UnsafeMutablePointer<Float>, from source: UnsafePointer<Float>, width: Int, query: UnsafePointer<Float>,
    key: UnsafePointer<Float>, value: UnsafePointer<Float>, decay: Float, update: Float, scale: Float,
    output: UnsafeMutablePointer<Float>?
) {
    guard width % 16 == 0 else {
        return _deltaRuleStepReference(matrix, from: source, width: width, query: query, key: key, value: value, decay: decay,
                                       update: update, scale: scale, output: output)
    }
    let keys = UnsafeRawPointer(key)
    let lanes = width / 16
    for row in 0 ..< width {
        let entries = matrix + row * width
        let raw = UnsafeMutableRawPointer(entries), before = UnsafeRawPointer(source + row * width)
        for lane in 0 ..< lanes {
            raw.storeBytes(of: before.loadUnaligned(fromByteOffset: lane * 64, as: SIMD16<Float>.self) * decay,
                           toByteOffset: lane * 64, as: SIMD16<Float>.self)
        }
        let delta = (value[row] - _ggmlDotProduct(UnsafePointer(entries), key, count: width)) * update
        for lane in 0 ..< lanes {
            var updated = raw.loadUnaligned(fromByteOffset: lane * 64, as: SIMD16<Float>.self)
            updated.addProduct(SIMD16(repeating: delta), keys.loadUnaligned(fromByteOffset: lane * 64, as: SIMD16<Float>.self))
            raw.storeBytes(of: updated, toByteOffset: lane * 64, as: SIMD16<Float>.self)
        }
        output?[row] = _ggmlDotProduct(UnsafePointer(entries), query, count: width) * scale
    }
}

/// `Σ x[i]·y[i]` as ggml's `ggml_vec_dot_f32` sums it on an AVX-512 build (read off its machine
/// code): runs of 64 into four 16-lane accumulators with fused multiply-adds, folded
/// `(a₀ + a₂) + (a₁ + a₃)` and reduced as `_mm512_reduce_add_ps`; then the rest as the
/// compiler vectorized the scalar loop: products of 16, then of 8, rounded and added one by
/// one in order, and the last few fused.
@inline(__always)
func _ggmlDotProduct(_ x: UnsafePointer<Float>, _ y: UnsafePointer<Float>, count: Int) -> Float {
    let left = UnsafeRawPointer(x), right = UnsafeRawPointer(y)
    func load(_ index: Int) -> (SIMD16<Float>, SIMD16<Float>) {
        (left.loadUnaligned(fromByteOffset: 4 * index, as: SIMD16<Float>.self),
         right.loadUnaligned(fromByteOffset: 4 * index, as: SIMD16<Float>.self))
    }
    let whole = count & ~63
    var sum: Float = 0
    if whole > 0 {
        var first = SIMD16<Float>(), second = first, third = first, fourth = first
        for start in stride(from: 0, to: whole, by: 64) {
            let (x0, y0) = load(start), (x1, y1) = load(start + 16), (x2, y2) = load(start + 32), (x3, y3) = load(start + 48)
            first.addProduct(x0, y0)
            second.addProduct(x1, y1)
            third.addProduct(x2, y2)
            fourth.addProduct(x3, y3)
        }
        sum = _sumInHalves((first + third) + (second + fourth))
    }
    var index = whole
    while count - index >= 16 {
        let (a, b) = load(index)
        let products = a * b
        for lane in 0 ..< 16 { sum += products[lane] }
        index += 16
    }
    if count - index >= 8 {
        for lane in 0 ..< 8 { sum += x[index + lane] * y[index + lane] }
        index += 8
    }
    while index < count {
        sum = sum.addingProduct(x[index], y[index])
        index += 1
    }
    return sum
}

/// ``_deltaRuleStep(_:from:width:query:key:value:decay:update:scale:output:)`` one element at a
/// time, the dot products through ``_ggmlDotProduct(_:_:count:)`` as there: the reference the
/// SIMD kernel is tested against, bit for bit.
func _deltaRuleStepReference(
    _ matrix: UnsafeMutablePointer<Float>, from source: UnsafePointer<Float>, width: Int, query: UnsafePointer<Float>,
    key: UnsafePointer<Float>, value: UnsafePointer<Float>, decay: Float, update: Float, scale: Float,
    output: UnsafeMutablePointer<Float>?
) {
    for row in 0 ..< width {
        let entries = matrix + row * width
        for index in 0 ..< width { entries[index] = source[row * width + index] * decay }
        let delta = (value[row] - _ggmlDotProduct(entries, key, count: width)) * update
        for index in 0 ..< width { entries[index] = entries[index].addingProduct(delta, key[index]) }
        output?[row] = _ggmlDotProduct(entries, query, count: width) * scale
    }
}
