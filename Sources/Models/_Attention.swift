import Kernels

/// Causal attention for one (row, head) pair at a time, as llama.cpp's CPU backend computes it
/// without flash attention, shared by the threads that split the pairs:
///
///     score[p] = Σ_d k[p][d]·q[d]           K in half precision (the cache), Q rounded to half
///     w[p]     = score[p] · scale            (Gemma scales Q instead, before the rounding)
///     prob[p]  = exp(w[p] − max) / Σ exp     ggml_v_expf, the sum in double by 16-lane chunks
///     out[d]   = Σ_p v[p][d]·half(prob[p])   V in half precision, probabilities rounded to half
///
/// Dot products and sums run in the order of ggml's AVX-512 F16 GEMM (tinyBLAS): 16 lanes,
/// lane `l` a chain of fused multiply-adds over indices ≡ l (mod 16), the lanes summed in
/// halves. Keys and values are stored as `KVCache` describes ("paired halves").
///
/// `@unchecked Sendable` is sound because the buffers outlive the synchronous
/// `KernelThreadPool.run` call that uses the job, queries, keys and values are only read, and
/// each (row, head) pair writes its own `headWidth` floats of output.
struct _AttentionJob: @unchecked Sendable {
    /// Queries, already rotated, scaled where the family scales them, and rounded to half.
    let queries: UnsafePointer<Float>
    let keys: UnsafePointer<UInt32>
    let values: UnsafePointer<UInt32>
    let output: UnsafeMutablePointer<Float>
    let start: Int
    let headCount: Int
    let headWidth: Int
    let groupSize: Int
    let keyWidth: Int
    let window: Int
    let scale: Float

    /// Scratch for one thread: scores and probabilities (room for every position rounded up
    /// to 16, plus 16), and 16 lane accumulators of `headWidth` floats.
    struct Scratch {
        let scores: UnsafeMutablePointer<Float>
        let probabilities: UnsafeMutablePointer<Float>
        let lanes: UnsafeMutablePointer<Float>
    }

    func attend(row: Int, head: Int, scratch: Scratch) {
        let position = start + row
        let first = window == Int.max ? 0 : max(0, position - window + 1)
        let query = queries + (row * headCount + head) * headWidth
        let headOffset = (head / groupSize) * headWidth / 2   // in words of paired halves
        let wordsPerPosition = keyWidth / 2, groups = headWidth / 16

        // Scores: two 8-lane accumulators are lanes 0–7 and 8–15 of each 16-dimension group.
        var maximum = -Float.infinity
        for past in first ... position {
            let key = keys + past * wordsPerPosition + headOffset
            var low = SIMD8<Float>(), high = SIMD8<Float>()
            for group in 0..<groups {
                let words = UnsafeRawPointer(key + 8 * group).loadUnaligned(as: SIMD8<UInt32>.self)
                let q = UnsafeRawPointer(query + 16 * group)
                low = low.addingProductWhereFused(floatsFromHalves(words & 0xFFFF), q.loadUnaligned(as: SIMD8<Float>.self))
                high = high.addingProductWhereFused(floatsFromHalves(words &>> 16), q.loadUnaligned(fromByteOffset: 32, as: SIMD8<Float>.self))
            }
            let score = _sumInHalves(low + high) * scale
            scratch.scores[past] = score
            maximum = max(maximum, score)
        }

        // Softmax: 16-lane chunks aligned at position 0, masked positions contributing 0.
        var total: Double = 0
        var chunk = first & ~15
        while chunk <= position {
            var lanes = SIMD16<Float>(repeating: -.infinity)
            for lane in 0..<16 where chunk + lane >= first && chunk + lane <= position {
                lanes[lane] = scratch.scores[chunk + lane] - maximum
            }
            let exponentials = _ggmlExponential(lanes)
            UnsafeMutableRawPointer(scratch.probabilities + chunk).storeBytes(of: exponentials, as: SIMD16<Float>.self)
            total += Double(_sumInHalves(exponentials))
            chunk += 16
        }
        // ggml scales by the f32 inverse of the double sum; the F16 product then sees them halved.
        let inverse = SIMD8<Float>(repeating: Float(1 / total))
        var index = first & ~15
        while index <= position {
            let target = UnsafeMutableRawPointer(scratch.probabilities + index)
            target.storeBytes(of: floatsFromHalves(halvesFromFloats(target.load(as: SIMD8<Float>.self) * inverse)), as: SIMD8<Float>.self)
            index += 8
        }

        // Output: lane p % 16 accumulates position p; the lanes are summed in halves.
        let lanes = scratch.lanes
        lanes.update(repeating: 0, count: 16 * headWidth)
        for past in first ... position {
            let probability = scratch.probabilities[past]
            let value = values + past * wordsPerPosition + headOffset
            let accumulator = lanes + (past & 15) * headWidth
            let weight = SIMD8<Float>(repeating: probability)
            for group in 0..<groups {
                let words = UnsafeRawPointer(value + 8 * group).loadUnaligned(as: SIMD8<UInt32>.self)
                let target = UnsafeMutableRawPointer(accumulator + 16 * group)
                target.storeBytes(of: target.load(as: SIMD8<Float>.self).addingProductWhereFused(floatsFromHalves(words & 0xFFFF), weight), as: SIMD8<Float>.self)
                target.storeBytes(of: target.load(fromByteOffset: 32, as: SIMD8<Float>.self).addingProductWhereFused(floatsFromHalves(words &>> 16), weight),
                                  toByteOffset: 32, as: SIMD8<Float>.self)
            }
        }
        let destination = output + (row * headCount + head) * headWidth
        for offset in stride(from: 0, to: headWidth, by: 8) {
            func lane(_ index: Int) -> SIMD8<Float> { UnsafeRawPointer(lanes + index * headWidth + offset).load(as: SIMD8<Float>.self) }
            var halves = (lane(0) + lane(8), lane(1) + lane(9), lane(2) + lane(10), lane(3) + lane(11),
                          lane(4) + lane(12), lane(5) + lane(13), lane(6) + lane(14), lane(7) + lane(15))
            halves = (halves.0 + halves.4, halves.1 + halves.5, halves.2 + halves.6, halves.3 + halves.7,
                      halves.4, halves.5, halves.6, halves.7)
            let sum = (halves.0 + halves.2) + (halves.1 + halves.3)
            UnsafeMutableRawPointer(destination + offset).storeBytes(of: sum, as: SIMD8<Float>.self)
        }
    }
}
