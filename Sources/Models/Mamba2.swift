import Foundation
import Kernels

/// Granite 4's Mamba2 block (llama.cpp's `build_mamba2_layer`): a selective state space whose
/// memory of the past is a fixed-size state per head, decayed by one scalar per head and token.
///
///     z, xBC, Δ = W_in · x            (z and x: H heads of P; B and C: G groups of N; Δ: one per head)
///     xBC      = SiLU(conv(xBC) + b)  a causal convolution over the last L inputs of each channel
///     per head h, reading group g = h / (H / G), per token:
///         Δ' = softplus(Δ + dt_bias),  a = e^(Δ' · A)               (A = ssm_a = −exp(A_log) < 0)
///         for each row i of the head's P × N state S:
///             Sᵢ ← a · Sᵢ + (xᵢ · Δ') · B_g,   yᵢ = Sᵢ · C_g + D · xᵢ
///     out = W_out · RMSNorm_w(y ⊙ SiLU(z))   the norm over each group's P · H / G outputs
///
/// `S` (`P × N` per head) and the last `L − 1` convolution inputs are the block's state, which
/// lives in the cache (``RecurrentState``); ``Mamba2Recurrence`` advances it.
struct Mamba2Weights: Sendable {
    /// `ssm_in`: `z`, the convolution's inputs, `Δ`, in that order in each row.
    let inputs: Projection
    let recurrence: Mamba2Recurrence
    /// `ssm_norm`: the grouped norm's weights, one per output.
    let norm: [Float]
    /// `ssm_out`.
    let output: Projection
}

/// The part of a Mamba2 block that advances its state, with the small parameters it needs:
/// the forward pass runs it on a pass's rows, and the cache on rows it kept (``RecurrentState``).
struct Mamba2Recurrence: Sendable {
    let shape: Mamba2Configuration
    /// `ssm_conv1d.weight`: `L` taps per channel, channel after channel, tap 0 for the oldest
    /// input; `ssm_conv1d.bias`, one per channel (`nil` where the file has none).
    let kernel: [Float]
    let convolutionBias: [Float]?
    /// `ssm_dt.bias`, `ssm_a` and `ssm_d`, one per head.
    let timeStepBias: [Float]
    let decayRate: [Float]
    let skip: [Float]

    /// Advances a state over `rows` tokens, as ``GatedDeltaNetRecurrence`` does (the same
    /// contract): reads the state at `source`, writes the new one at `destination` (which may
    /// be `source`), and each row's `innerSize` outputs at `outputs` when given. The state is
    /// the last `L − 1` convolution inputs (oldest first), then each head's `P × N` matrix,
    /// row `i` of it `N` floats (llama.cpp's layout). Row by row in order, as ggml's
    /// `ssm_scan` runs a prompt and a token alike.
    ///
    /// - Complexity: O(rows × (C × L + H × P × N)) for `C` convolution channels.
    func advance(
        rows: Int, inputs: RecurrenceInputs, from source: UnsafePointer<Float>, to destination: UnsafeMutablePointer<Float>,
        outputs: UnsafeMutablePointer<Float>?, scratch: UnsafeMutablePointer<Float>, threadCount: Int
    ) {
        precondition(rows > 0, "Recurrence.advance copies a state over no rows")
        let width = shape.convolutionWidth, length = shape.convolutionLength, history = length - 1
        let heads = shape.headCount, headWidth = shape.headWidth, stateSize = shape.stateSize, inner = shape.innerSize
        let preparedWidth = shape.preparedRowWidth
        let series = scratch, prepared = scratch + (history + rows) * width
        inputs.writeConvolutionSeries(rows: rows, width: width, history: history, from: source, to: destination, series: series)
        // Each row: the convolution, its bias and SiLU; each head's Δ' and decay a.
        kernel.withUnsafeBufferPointer { kernel in
            timeStepBias.withUnsafeBufferPointer { timeStepBias in
                decayRate.withUnsafeBufferPointer { rate in
                    (convolutionBias ?? []).withUnsafeBufferPointer { bias in
                        _forEachRowRange(rows, floatsPerRow: width * length, threadCount: threadCount) { range in
                            for row in range {
                                let target = prepared + row * preparedWidth
                                _shortConvolution(history: UnsafePointer(series), position: history + row, width: width,
                                                  kernel: kernel.baseAddress!, length: length, into: target)
                                if let bias = bias.baseAddress {
                                    for channel in 0 ..< width { target[channel] += bias[channel] }
                                }
                                _silu(UnsafeMutableBufferPointer(start: target, count: width))
                                for head in 0 ..< heads {
                                    let step = _softplus(inputs.heads[row * inputs.headStride + head] + timeStepBias[head])
                                    target[width + head] = step
                                    target[width + heads + head] = expf(step * rate[head])
                                }
                            }
                        }
                    }
                }
            }
        }
        let matrices = history * width, matrixCount = headWidth * stateSize
        let headsPerGroup = heads / shape.groupCount
        skip.withUnsafeBufferPointer { skip in
            _forEachRowRange(heads, floatsPerRow: rows * matrixCount, threadCount: threadCount) { range in
                for head in range {
                    // The first row reads the state before the pass and writes the new one.
                    let matrix = destination + matrices + head * matrixCount
                    let before = source + matrices + head * matrixCount
                    let group = head / headsPerGroup
                    for row in 0 ..< rows {
                        let prepared = prepared + row * preparedWidth
                        let x = prepared + head * headWidth
                        let b = prepared + inner + group * stateSize
                        let c = prepared + inner + (shape.groupCount + group) * stateSize
                        let step = prepared[width + head], decay = prepared[width + heads + head]
                        let from = row == 0 ? before : UnsafePointer(matrix)
                        for index in 0 ..< headWidth {
                            let y = _selectiveScanStep(
                                matrix + index * stateSize, from: from + index * stateSize, count: stateSize, decay: decay,
                                input: x[index] * step, inputWeights: b, outputWeights: c)
                            outputs?[row * inner + head * headWidth + index] = y + x[index] * skip[head]
                        }
                    }
                }
            }
        }
    }
}

extension Mamba2Configuration {
    /// Floats of one prepared row: the convolution's outputs, then each head's Δ', then its decay.
    var preparedRowWidth: Int { convolutionWidth + 2 * headCount }
}

// MARK: - Kernels

/// One row of a Mamba2 head's state over one token, as ggml's `ssm_scan` computes it:
///
///     Sᵢ ← Sᵢ · decay + Bᵢ · input   (products rounded, then added);   y = S · C
///
/// reading the row before the token at `source` (which may be `state`), the sum as
/// ``_ggmlDotProduct(_:_:count:)`` sums it (four 16-lane accumulators of fused products).
/// Sixteen lanes at a time; ``_selectiveScanStepReference`` is the same one at a time.
@inline(__always)
func _selectiveScanStep(
    _ state: UnsafeMutablePointer<Float>, from source: UnsafePointer<Float>, count: Int, decay: Float, input: Float,
    inputWeights: UnsafePointer<Float>, outputWeights: UnsafePointer<Float>
) -> Float {
    let before = UnsafeRawPointer(source), weights = UnsafeRawPointer(inputWeights), target = UnsafeMutableRawPointer(state)
    var index = 0
    while index + 16 <= count {
        let updated = before.loadUnaligned(fromByteOffset: 4 * index, as: SIMD16<Float>.self) * decay
            + weights.loadUnaligned(fromByteOffset: 4 * index, as: SIMD16<Float>.self) * input
        target.storeBytes(of: updated, toByteOffset: 4 * index, as: SIMD16<Float>.self)
        index += 16
    }
    while index < count {
        state[index] = source[index] * decay + inputWeights[index] * input
        index += 1
    }
    return _ggmlDotProduct(UnsafePointer(state), outputWeights, count: count)
}

/// ``_selectiveScanStep(_:from:count:decay:input:inputWeights:outputWeights:)`` one element at
/// a time: the reference the SIMD kernel is tested against, bit for bit.
func _selectiveScanStepReference(
    _ state: UnsafeMutablePointer<Float>, from source: UnsafePointer<Float>, count: Int, decay: Float, input: Float,
    inputWeights: UnsafePointer<Float>, outputWeights: UnsafePointer<Float>
) -> Float {
    for index in 0 ..< count {
        let decayed = source[index] * decay, added = inputWeights[index] * input
        state[index] = decayed + added
    }
    return _ggmlDotProduct(UnsafePointer(state), outputWeights, count: count)
}
