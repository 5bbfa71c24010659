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
        self.angles(positions: positions, into: &angles)
        return angles
    }

    /// ``angles(positions:)`` written into `angles`, reusing its storage (a decode step's
    /// single position then allocates nothing).
    func angles(positions: Range<Int>, into angles: inout RotaryAngles) {
        let half = dimensionCount / 2
        let thetaScale = powf(base, -2 / Float(dimensionCount))
        angles.positions = positions
        angles.half = half
        angles.cosines.removeAll(keepingCapacity: true)
        angles.cosines.append(contentsOf: repeatElement(0, count: positions.count * half))
        angles.sines.removeAll(keepingCapacity: true)
        angles.sines.append(contentsOf: repeatElement(0, count: positions.count * half))
        var magnitude = attentionFactor
        if yarn != nil { magnitude *= 1 + 0.1 * logf(1 / frequencyScale) }
        for (row, position) in positions.enumerated() {
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
/// keys of every block that uses it.
struct RotaryAngles: Sendable {
    var positions: Range<Int> = 0 ..< 0
    /// Pairs per head.
    var half = 0
    /// `cosines[(p − first) × half + k]`, likewise `sines`.
    var cosines: [Float] = []
    var sines: [Float] = []
}

/// Rotates each head of rows `rows` (row `r` at position `angles.positions.lowerBound + r`,
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
