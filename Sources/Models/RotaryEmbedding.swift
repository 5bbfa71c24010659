import Foundation
import Kernels

/// How a head's dimensions pair up for rotary position embedding.
enum RotaryPairing: Sendable, Equatable {
    /// (0,1), (2,3), …: ggml's "normal" RoPE (Llama; the GGUF converter permutes Q and K for it).
    case adjacent
    /// (i, i + d/2): ggml's "NeoX" RoPE (Gemma, Qwen, Phi-3, LFM2).
    case halves
}

/// One block's rotary position embedding, as ggml's `rope_ext` parameterises it. Blocks that
/// share one (all of a Llama's, Gemma's global blocks) share its angle table in a forward call.
///
/// The angle of pair `k` at position `p` is built as ggml builds it:
///
///     θ = p · s^k                      s = base^(−2/n), the power by repeated Float products
///     θ ← θ / factor[k]                (Llama 3 `rope_freqs`, LongRoPE's long or short set)
///     θ ← frequencyScale · θ           (linear and YaRN scaling: 1 / factor)
///     YaRN: θ ← θ·(1 − r) + θ_unscaled·r, r the ramp over the correction dimensions,
///           magnitude × (1 + 0.1 ln(1 / frequencyScale))
///     cos, sin = cosf(θ) · m, sinf(θ) · m    m = attentionFactor (× YaRN's magnitude)
///
/// where `n` is `dimensionCount`: only the first `n` dimensions of each head rotate (Phi-4-mini
/// rotates 96 of 128); the rest pass through.
struct RotaryEmbedding: Sendable, Equatable {
    var pairing: RotaryPairing
    /// Rotated dimensions per head, from the first; even.
    var dimensionCount: Int
    var base: Float
    /// Divisors of each pair's angle (`dimensionCount / 2` of them), when the model has them.
    var frequencyFactors: [Float]?
    /// Multiplies every angle: 1, or `1 / factor` under linear and YaRN scaling.
    var frequencyScale: Float = 1
    /// Multiplies cosines and sines (`rope.scaling.attn_factor`, and YaRN's correction).
    var attentionFactor: Float = 1
    /// YaRN's blend between interpolated and unscaled angles, when the model uses YaRN.
    var yarn: YaRN?

    /// YaRN's extrapolation parameters (llama.cpp keeps β_fast = 32, β_slow = 1, ext_factor 1).
    struct YaRN: Sendable, Equatable {
        /// The correction range: pairs below `low` keep their unscaled angle, above `high` the
        /// interpolated one, with a linear ramp between.
        var low: Float
        var high: Float

        init(dimensionCount: Int, originalContextLength: Int, base: Float) {
            // ggml_rope_yarn_corr_dims, with (float)M_PI (the nearest Float to π).
            func correctionDimension(_ rotations: Float) -> Float {
                Float(dimensionCount) * logf(Float(originalContextLength) / (rotations * 2 * Float(Double.pi))) / (2 * logf(base))
            }
            low = max(0, floorf(correctionDimension(32)))
            high = min(Float(dimensionCount - 1), ceilf(correctionDimension(1)))
        }

        /// The share of the unscaled angle for pair `pair`.
        func ramp(pair: Int) -> Float {
            let y = (Float(pair) - low) / max(0.001, high - low)
            return 1 - min(1, max(0, y))
        }
    }

    /// The cosines and sines of `positions` (`dimensionCount / 2` pairs each), laid out
    /// `[(p − first) × half + k]`. O(positions × half).
    func angles(positions: Range<Int>) -> RotaryAngles {
        var angles = RotaryAngles()
        appendAngles(positions: positions, to: &angles)
        return angles
    }

    /// Appends the rows of `positions` to `angles` (after the rows it holds): a batch of
    /// several sequences has one row per token, each at its own sequence's position.
    func appendAngles(positions: Range<Int>, to angles: inout RotaryAngles) {
        let half = dimensionCount / 2
        let thetaScale = powf(base, -2 / Float(dimensionCount))
        angles.half = half
        let first = angles.cosines.count / max(1, half)
        angles.cosines.append(contentsOf: repeatElement(0, count: positions.count * half))
        angles.sines.append(contentsOf: repeatElement(0, count: positions.count * half))
        var magnitude = attentionFactor
        if yarn != nil { magnitude *= 1 + 0.1 * logf(1 / frequencyScale) }
        for (offset, position) in positions.enumerated() {
            let row = first + offset
            var theta = Float(position)
            for pair in 0 ..< half {
                let unscaled = frequencyFactors.map { theta / $0[pair] } ?? theta
                var angle = frequencyScale * unscaled
                if let yarn {
                    let mix = yarn.ramp(pair: pair)
                    angle = angle * (1 - mix) + unscaled * mix
                }
                angles.cosines[row * half + pair] = cosf(angle) * magnitude
                angles.sines[row * half + pair] = sinf(angle) * magnitude
                theta *= thetaScale
            }
        }
    }
}

/// A forward call's cosines and sines for one ``RotaryEmbedding``, shared by the queries and
/// keys of every block that uses it: one row per token of the call, at that token's position.
struct RotaryAngles: Sendable {
    /// Pairs per head.
    var half = 0
    /// `cosines[row × half + k]`, likewise `sines`.
    var cosines: [Float] = []
    var sines: [Float] = []

    /// Forgets every row, keeping the storage.
    mutating func removeAll() {
        cosines.removeAll(keepingCapacity: true)
        sines.removeAll(keepingCapacity: true)
    }
}

/// Rotates each head of rows `rows` (row `r` with the angles of row `r` of `angles`,
/// `headCount` heads of `headWidth` floats) as ggml's `rope` does: each rotation is one product
/// and one fused multiply-add per output, as llama.cpp's build (GCC, `-ffp-contract=fast`)
/// computes it, and dimensions past the rotated ones are left as they are:
///
///     adjacent: y0 = fma(cos, x0, −sin·x1)    y1 = fma(cos, x1, sin·x0)
///     halves:   y0 = fma(cos, x0, −sin·x1)    y1 = fma(sin, x0, cos·x1)
func _applyRotary(
    _ buffer: UnsafeMutablePointer<Float>, rows: Range<Int>, headCount: Int, headWidth: Int, angles: RotaryAngles,
    pairing: RotaryPairing
) {
    let half = angles.half
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
