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
/// halves. The cache holds its keys and values in half precision (`KVCache`), converted to
/// floats sixteen at a time as they are read (exactly), so the products are those of the halves.
///
/// `@unchecked Sendable` is sound because the buffers outlive the synchronous
/// `KernelThreadPool.run` call that uses the job, queries, keys and values are only read, and
/// each (row, head) pair writes its own `headWidth` floats of output.
struct AttentionJob: @unchecked Sendable {
    /// Queries, already rotated, scaled where the family scales them, and rounded to half.
    let queries: UnsafePointer<Float>
    /// The cache's keys and values, IEEE halves, head-major: key-value head `h`'s position `p`
    /// at `h × headStride + p × headWidth`, its dimensions in order.
    let keys: UnsafePointer<UInt16>
    let values: UnsafePointer<UInt16>
    let output: UnsafeMutablePointer<Float>
    let start: Int
    let headCount: Int
    let headWidth: Int
    let groupSize: Int
    /// Halves from one key-value head's run of positions to the next (the cache's
    /// `contextLength × headWidth`).
    let headStride: Int
    let window: Int
    let scale: Float

    /// Scratch for one thread: scores and probabilities (room for every position rounded up
    /// to 16, plus 16).
    struct Scratch {
        let scores: UnsafeMutablePointer<Float>
        let probabilities: UnsafeMutablePointer<Float>
    }

    func attend(row: Int, head: Int, scratch: Scratch) {
        let position = start + row
        let first = window == Int.max ? 0 : max(0, position - window + 1)
        let query = queries + (row * headCount + head) * headWidth
        let headOffset = (head / groupSize) * headStride
        let groups = headWidth / 16

        // Scores: lane l of the accumulator sums the dimensions ≡ l (mod 16); four positions
        // at a time, their lane sums reduced together (the same additions, position for
        // position, as `_sumInHalves`), the rest one by one.
        var maximum = -Float.infinity
        let q = UnsafeRawPointer(query)
        let rowBytes = 2 &* headWidth
        @inline(__always) func lanes(_ past: Int) -> SIMD16<Float> {
            let key = UnsafeRawPointer(keys + (past &* headWidth &+ headOffset))
            var lanes = SIMD16<Float>()
            for group in 0..<groups {
                lanes = lanes.addingProductWhereFused(floatsFromHalves(key.loadUnaligned(fromByteOffset: 32 &* group, as: SIMD16<UInt16>.self)),
                                                      q.loadUnaligned(fromByteOffset: 64 &* group, as: SIMD16<Float>.self))
            }
            return lanes
        }
        // Four positions' lanes at once, group by group: each lane's chain of fused
        // multiply-adds in the order `lanes` makes it, with the query's group loaded once for
        // the four and their chains independent of one another. (Four, not sixteen: sixteen
        // positions' 16-lane sums would not stay in sixteen 256-bit registers.)
        @inline(__always) func fourScores(_ key: UnsafeRawPointer) -> SIMD4<Float> {
            var l0 = SIMD16<Float>(), l1 = l0, l2 = l0, l3 = l0
            for group in 0..<groups {
                let queryGroup = q.loadUnaligned(fromByteOffset: 64 &* group, as: SIMD16<Float>.self)
                let column = key + 32 &* group
                @inline(__always) func add(_ lanes: inout SIMD16<Float>, _ index: Int) {
                    lanes = lanes.addingProductWhereFused(
                        floatsFromHalves(column.loadUnaligned(fromByteOffset: index &* rowBytes, as: SIMD16<UInt16>.self)), queryGroup)
                }
                add(&l0, 0); add(&l1, 1); add(&l2, 2); add(&l3, 3)
            }
            return _sumsInHalves((l0, l1, l2, l3))
        }
        var past = first
        var maxima = SIMD4<Float>(repeating: -.infinity)
        while past &+ 4 <= position &+ 1 {
            let key = UnsafeRawPointer(keys + (past &* headWidth &+ headOffset))
            if past & 15 == 0 { prefetchForReading(key + 32 &* rowBytes, byteCount: 16 &* rowBytes) }
            let scores = fourScores(key) * scale
            UnsafeMutableRawPointer(scratch.scores + past).storeBytes(of: scores, as: SIMD4<Float>.self)
            maxima.replace(with: scores, where: scores .> maxima)
            past += 4
        }
        maximum = maxima.max()
        while past <= position {
            let score = _sumInHalves(lanes(past)) * scale
            scratch.scores[past] = score
            maximum = max(maximum, score)
            past += 1
        }

        // Softmax: 16-lane chunks aligned at position 0, masked positions contributing 0.
        var total: Double = 0
        var chunk = first & ~15
        while chunk <= position {
            let lanes: SIMD16<Float>
            if chunk >= first && chunk &+ 15 <= position {
                lanes = UnsafeRawPointer(scratch.scores + chunk).loadUnaligned(as: SIMD16<Float>.self) - maximum
            } else {
                // The first and last chunks, put together where their probabilities will go:
                // positions outside first ... position are -∞.
                let staging = scratch.probabilities + chunk
                for lane in 0..<16 {
                    let past = chunk &+ lane
                    staging[lane] = past >= first && past <= position ? scratch.scores[past] - maximum : -.infinity
                }
                lanes = UnsafeRawPointer(staging).loadUnaligned(as: SIMD16<Float>.self)
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
            target.storeBytes(of: roundedToHalfPrecision(target.load(as: SIMD8<Float>.self) * inverse), as: SIMD8<Float>.self)
            index += 8
        }

        // Output: lane p % 16 accumulates position p; the lanes are summed in halves. Eight
        // dimensions at a time (each dimension's sums are its own), so that the 16 lane
        // accumulators stay in registers across the positions.
        let destination = output + (row * headCount + head) * headWidth
        let probabilities = scratch.probabilities
        for slice in 0..<(headWidth / 8) {
            let column = values + headOffset + 8 * slice
            var a0 = SIMD8<Float>(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0
            var a8 = a0, a9 = a0, a10 = a0, a11 = a0, a12 = a0, a13 = a0, a14 = a0, a15 = a0
            var chunk = first & ~15
            while chunk <= position {
                if chunk >= first && chunk &+ 15 <= position {
                    // A whole chunk inside first ... position.
                    let rows = UnsafeRawPointer(column + chunk &* headWidth), weights = probabilities + chunk
                    if slice == 0 { prefetchForReading(rows + 32 &* rowBytes, byteCount: 16 &* rowBytes) }
                    @inline(__always) func add(_ accumulator: inout SIMD8<Float>, _ lane: Int) {
                        let value = floatsFromHalves(rows.loadUnaligned(fromByteOffset: lane &* rowBytes, as: SIMD8<UInt16>.self))
                        accumulator = accumulator.addingProductWhereFused(value, SIMD8(repeating: weights[lane]))
                    }
                    add(&a0, 0); add(&a1, 1); add(&a2, 2); add(&a3, 3); add(&a4, 4); add(&a5, 5); add(&a6, 6); add(&a7, 7)
                    add(&a8, 8); add(&a9, 9); add(&a10, 10); add(&a11, 11); add(&a12, 12); add(&a13, 13); add(&a14, 14); add(&a15, 15)
                } else {
                    // Positions outside first ... position are skipped, as their lanes would be.
                    @inline(__always) func add(_ accumulator: inout SIMD8<Float>, _ lane: Int) {
                        let past = chunk &+ lane
                        guard past >= first, past <= position else { return }
                        let value = floatsFromHalves(UnsafeRawPointer(column + past &* headWidth).loadUnaligned(as: SIMD8<UInt16>.self))
                        accumulator = accumulator.addingProductWhereFused(value, SIMD8(repeating: probabilities[past]))
                    }
                    add(&a0, 0); add(&a1, 1); add(&a2, 2); add(&a3, 3); add(&a4, 4); add(&a5, 5); add(&a6, 6); add(&a7, 7)
                    add(&a8, 8); add(&a9, 9); add(&a10, 10); add(&a11, 11); add(&a12, 12); add(&a13, 13); add(&a14, 14); add(&a15, 15)
                }
                chunk += 16
            }
            let halves = (a0 + a8, a1 + a9, a2 + a10, a3 + a11, a4 + a12, a5 + a13, a6 + a14, a7 + a15)
            let quarters = (halves.0 + halves.4, halves.1 + halves.5, halves.2 + halves.6, halves.3 + halves.7)
            let sum = (quarters.0 + quarters.2) + (quarters.1 + quarters.3)
            UnsafeMutableRawPointer(destination + 8 * slice).storeBytes(of: sum, as: SIMD8<Float>.self)
        }
    }
}

/// The work of an attention call in units a free thread takes in contiguous chunks (a
/// ``RangeJob``): a unit is one row's query heads that share one key-value head, or a slice of
/// them. One thread then reads a key-value head's positions for all of its query heads (from
/// its own cache after the first), where dealing single heads out would have both cores fetch
/// every key-value head.
///
/// Units of several jobs (one per sequence of the call) are numbered one job after another, so
/// the sequences of a batch share the threads in one dispatch. Within a job:
///
///     unit = order × (keyValueHeads × slices) + keyValueHead × slices + slice
///     row  = order / 2 if order is even, rows − 1 − order / 2 if odd
///
/// so that neighbouring units, which land in the same chunk, pair an early row (few positions
/// to attend to) with a late one, and the chunks cost about the same.
struct AttentionParts: RangeJob, @unchecked Sendable {
    /// Each sequence's job and the numbers of its units, in order, from 0.
    let jobs: UnsafeBufferPointer<(job: AttentionJob, units: Range<Int>)>
    /// Slices each group of query heads is cut into (1 ... groupSize): more than 1 only when
    /// whole groups would be too few units to keep the threads busy.
    let slices: Int
    /// Floats of scratch per list (scores, probabilities): every position rounded up to 16, plus 16.
    let positionCapacity: Int

    /// Units of `rows` rows of `job`.
    static func unitCount(rows: Int, job: AttentionJob, slices: Int) -> Int {
        rows * (job.headCount / job.groupSize) * slices
    }

    func run(_ range: Range<Int>) {
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * positionCapacity) { buffer in
            let scratch = AttentionJob.Scratch(scores: buffer.baseAddress!, probabilities: buffer.baseAddress! + positionCapacity)
            var index = 0
            for unit in range {
                while !jobs[index].units.contains(unit) { index += 1 }
                let (job, numbers) = jobs[index]
                let local = unit - numbers.lowerBound
                let groupSize = job.groupSize, perRow = (job.headCount / groupSize) * slices
                let rows = numbers.count / perRow
                let order = local / perRow, group = (local % perRow) / slices, slice = local % slices
                let row = order % 2 == 0 ? order / 2 : rows - 1 - order / 2
                for head in group * groupSize + slice * groupSize / slices ..< group * groupSize + (slice + 1) * groupSize / slices {
                    job.attend(row: row, head: head, scratch: scratch)
                }
            }
        }
    }
}
