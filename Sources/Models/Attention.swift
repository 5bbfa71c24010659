import Foundation
import Kernels

/// Causal attention for one row's query heads that share a key-value head, as llama.cpp's CPU
/// backend computes it without flash attention, shared by the threads that split the rows and
/// groups:
///
///     score[p] = Σ_d k[p][d]·q[d]           K in half precision (the cache), Q rounded to half
///     w[p]     = score[p] · scale            (Gemma scales Q instead, before the rounding)
///     prob[p]  = exp(w[p] − max) / Σ exp     ggml_v_expf, the sum in double by 16-lane chunks
///                                            (a head's sink logit, gpt-oss's, in max and Σ)
///     out[d]   = Σ_p v[p][d]·half(prob[p])   V in half precision, probabilities rounded to half
///
/// Dot products and sums run in the order of ggml's AVX-512 F16 GEMM (tinyBLAS): 16 lanes,
/// lane `l` a chain of fused multiply-adds over indices ≡ l (mod 16), the lanes summed in
/// halves. For a score the indices are dimensions; for an output dimension they are positions.
///
/// The cache holds its keys and values in half precision (`KVCache`). They are converted to
/// floats (exactly) a tile of positions at a time, once for all the query heads of the call,
/// which then read the tile: converting per head would cost one conversion per multiply-add,
/// and the conversions, not the multiply-adds, would bound the loops.
///
///     keys of positions from ..< end ──convert──▶ tile ──▶ head 0's scores, head 1's, …
///     values, likewise              ──convert──▶ tile ──▶ head 0's 16 lane sums, head 1's, …
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
    /// Floats per head: a positive multiple of 16 (`TransformerModel` checks it).
    let headWidth: Int
    let groupSize: Int
    /// Halves from one key-value head's run of positions to the next (the cache's
    /// `contextLength × headWidth`).
    let headStride: Int
    let window: Int
    let scale: Float
    /// A logit per query head (of `headCount`) in each softmax's maximum and denominator, with
    /// no value: gpt-oss's attention sinks (`nil`: none).
    var sinks: UnsafePointer<Float>? = nil

    /// Positions per tile: 16 KiB of floats, and a multiple of 16, so that a position's lane
    /// is the same counted from the tile's start as from position 0.
    var tilePositions: Int { max(16, (4096 / headWidth) & ~15) }

    /// Scratch for one thread, for up to `groupSize` query heads per call.
    struct Scratch {
        /// Head `i` of a call's scores at `scores + i × positionCapacity + p` for position
        /// `p`, its probabilities likewise.
        let scores: UnsafeMutablePointer<Float>
        let probabilities: UnsafeMutablePointer<Float>
        /// Floats per head in `scores` and `probabilities`: every position rounded up to 16,
        /// plus 16.
        let positionCapacity: Int
        /// `tilePositions × headWidth` floats: the tile's positions, each `headWidth` floats.
        let tile: UnsafeMutablePointer<Float>
        /// Head `i`'s accumulator of lane `l` for dimension `d` at `(i × 16 + l) × headWidth + d`.
        let laneSums: UnsafeMutablePointer<Float>
    }

    /// Calls `body` with scratch for attending to up to `positionCapacity − 16` positions.
    func withScratch(positionCapacity: Int, _ body: (Scratch) -> Void) {
        let lists = groupSize * positionCapacity, tile = tilePositions * headWidth
        withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * lists + tile + groupSize * 16 * headWidth) { buffer in
            let base = buffer.baseAddress!
            body(Scratch(scores: base, probabilities: base + lists, positionCapacity: positionCapacity,
                         tile: base + 2 * lists, laneSums: base + 2 * lists + tile))
        }
    }

    /// The first of the positions row `row` attends to.
    @inline(__always)
    private func firstPosition(row: Int) -> Int {
        window == Int.max ? 0 : max(0, start + row - window + 1)
    }

    /// The cached keys that row `row`'s query heads `heads` read: one run of halves.
    func keyRun(row: Int, heads: Range<Int>) -> UnsafeBufferPointer<UInt16> {
        let first = firstPosition(row: row)
        return UnsafeBufferPointer(start: keys + (heads.lowerBound / groupSize) * headStride + first * headWidth,
                                   count: (start + row + 1 - first) * headWidth)
    }

    /// Attends row `row`'s query heads `heads`, which must share one key-value head.
    ///
    /// The loads of cached halves bound this once a step's weights have streamed through the
    /// caches: a run of positions arrives at the pace of one stream. So while it converts the
    /// keys it asks for the same positions' values, and while it converts the values, for
    /// `nextKeys` (the next unit's keys, when the caller knows them): two streams in flight.
    func attend(row: Int, heads: Range<Int>, scratch: Scratch, nextKeys: UnsafeBufferPointer<UInt16>? = nil) {
        precondition(heads.count <= groupSize && heads.lowerBound / groupSize == (heads.upperBound - 1) / groupSize,
                     "query heads \(heads) do not share one key-value head")
        let position = start + row
        let first = firstPosition(row: row)
        let headOffset = (heads.lowerBound / groupSize) * headStride
        let capacity = scratch.positionCapacity

        // Scores, tile by tile. The first tile starts at `first`'s chunk, so that each tile
        // after it starts a chunk.
        var tileStart = first & ~15
        while tileStart <= position {
            let from = max(tileStart, first), end = min(tileStart &+ tilePositions, position &+ 1)
            let halves = (end &- from) &* headWidth
            convertHalves(keys + headOffset + from &* headWidth, count: halves, into: scratch.tile,
                          prefetching: UnsafeBufferPointer(start: values + headOffset + from &* headWidth, count: halves))
            for (index, head) in heads.enumerated() {
                scoreTile(query: queries + (row &* headCount &+ head) &* headWidth, positions: from ..< end,
                          tile: scratch.tile, into: scratch.scores + index &* capacity)
            }
            tileStart &+= tilePositions
        }
        for (index, head) in heads.enumerated() {
            softmax(scores: scratch.scores + index &* capacity, probabilities: scratch.probabilities + index &* capacity,
                    positions: first ... position, sink: sinks?[head])
        }

        // Output: the 16 lane sums of every dimension, tile by tile, then summed in halves.
        tileStart = first & ~15
        let positions = position &+ 1 &- first
        while tileStart <= position {
            let from = max(tileStart, first), end = min(tileStart &+ tilePositions, position &+ 1)
            // The next unit's keys in proportion: all of them by the last tile.
            var companion = UnsafeBufferPointer<UInt16>(start: nil, count: 0)
            if let nextKeys {
                let lower = nextKeys.count &* (from &- first) / positions, upper = nextKeys.count &* (end &- first) / positions
                companion = UnsafeBufferPointer(rebasing: nextKeys[lower ..< upper])
            }
            convertHalves(values + headOffset + from &* headWidth, count: (end &- from) &* headWidth, into: scratch.tile,
                          prefetching: companion)
            for index in 0 ..< heads.count {
                accumulateTile(probabilities: scratch.probabilities + index &* capacity, positions: from ..< end,
                               chunk: tileStart, continuing: tileStart > first & ~15, tile: scratch.tile,
                               into: scratch.laneSums + index &* 16 &* headWidth)
            }
            tileStart &+= tilePositions
        }
        for (index, head) in heads.enumerated() {
            let laneSums = UnsafeRawPointer(scratch.laneSums + index &* 16 &* headWidth)
            let destination = UnsafeMutableRawPointer(output + (row &* headCount &+ head) &* headWidth)
            for dimension in stride(from: 0, to: headWidth, by: 8) {
                @inline(__always) func lane(_ l: Int) -> SIMD8<Float> {
                    laneSums.loadUnaligned(fromByteOffset: 4 &* (l &* headWidth &+ dimension), as: SIMD8<Float>.self)
                }
                let halves = (lane(0) + lane(8), lane(1) + lane(9), lane(2) + lane(10), lane(3) + lane(11),
                              lane(4) + lane(12), lane(5) + lane(13), lane(6) + lane(14), lane(7) + lane(15))
                let quarters = (halves.0 + halves.4, halves.1 + halves.5, halves.2 + halves.6, halves.3 + halves.7)
                let sum = (quarters.0 + quarters.2) + (quarters.1 + quarters.3)
                destination.storeBytes(of: sum, toByteOffset: 4 &* dimension, as: SIMD8<Float>.self)
            }
        }
    }

    /// `count` halves (a multiple of 16) as floats, asking the caches for the lines of
    /// `companion` along the way, spread evenly over the conversion.
    @inline(__always)
    private func convertHalves(_ halves: UnsafePointer<UInt16>, count: Int, into floats: UnsafeMutablePointer<Float>,
                               prefetching companion: UnsafeBufferPointer<UInt16>) {
        let source = UnsafeRawPointer(halves), target = UnsafeMutableRawPointer(floats)
        // Each 16 halves converted owe `lines / steps` lines, the remainder carried over.
        let lines = (companion.count &+ 31) / 32, steps = count / 16
        var line = 0, owed = 0, index = 0
        while index < count {
            owed &+= lines
            while owed >= steps {
                prefetchForReading(companion.baseAddress! + line &* 32, byteCount: 64)
                line &+= 1
                owed &-= steps
            }
            target.storeBytes(of: floatsFromHalves(source.loadUnaligned(fromByteOffset: 2 &* index, as: SIMD16<UInt16>.self)),
                              toByteOffset: 4 &* index, as: SIMD16<Float>.self)
            index &+= 16
        }
    }

    /// The scaled scores of `positions`, whose keys are the tile's, from its first row on.
    /// Lane l of a score's accumulator sums the dimensions ≡ l (mod 16); four positions at a
    /// time, their lane sums reduced together (the same additions, position for position, as
    /// `_sumInHalves`), the rest one by one.
    @inline(__always)
    private func scoreTile(query: UnsafePointer<Float>, positions: Range<Int>, tile: UnsafePointer<Float>,
                           into scores: UnsafeMutablePointer<Float>) {
        let q = UnsafeRawPointer(query), groups = headWidth / 16, rowBytes = 4 &* headWidth
        // Four positions' lanes at once, group by group: each lane's chain of fused
        // multiply-adds in dimension order, the query's group loaded once for the four and
        // their chains independent of one another. (Four, not sixteen: sixteen positions'
        // 16-lane sums would not stay in sixteen 256-bit registers.)
        var past = positions.lowerBound
        var key = UnsafeRawPointer(tile)
        while past &+ 4 <= positions.upperBound {
            var l0 = SIMD16<Float>(), l1 = l0, l2 = l0, l3 = l0
            for group in 0 ..< groups {
                let queryGroup = q.loadUnaligned(fromByteOffset: 64 &* group, as: SIMD16<Float>.self)
                let column = key + 64 &* group
                @inline(__always) func add(_ lanes: inout SIMD16<Float>, _ index: Int) {
                    lanes = lanes.addingProductWhereFused(
                        column.loadUnaligned(fromByteOffset: index &* rowBytes, as: SIMD16<Float>.self), queryGroup)
                }
                add(&l0, 0); add(&l1, 1); add(&l2, 2); add(&l3, 3)
            }
            UnsafeMutableRawPointer(scores + past).storeBytes(of: _sumsInHalves((l0, l1, l2, l3)) * scale, as: SIMD4<Float>.self)
            past &+= 4
            key += 4 &* rowBytes
        }
        while past < positions.upperBound {
            var lanes = SIMD16<Float>()
            for group in 0 ..< groups {
                lanes = lanes.addingProductWhereFused(key.loadUnaligned(fromByteOffset: 64 &* group, as: SIMD16<Float>.self),
                                                      q.loadUnaligned(fromByteOffset: 64 &* group, as: SIMD16<Float>.self))
            }
            scores[past] = _sumInHalves(lanes) * scale
            past &+= 1
            key += rowBytes
        }
    }

    /// Probabilities of `positions` from their scores, rounded to half: 16-lane chunks
    /// aligned at position 0, positions outside the range contributing 0. A `sink` logit (not
    /// scaled) joins the maximum, and its exponential (`expf`) the sum after the positions', as
    /// ggml's `soft_max` takes its sinks.
    @inline(__always)
    private func softmax(scores: UnsafeMutablePointer<Float>, probabilities: UnsafeMutablePointer<Float>,
                         positions: ClosedRange<Int>, sink: Float?) {
        let first = positions.lowerBound, position = positions.upperBound
        var maxima = SIMD16<Float>(repeating: -.infinity)
        var past = first
        while past &+ 16 <= position &+ 1 {
            let chunk = UnsafeRawPointer(scores + past).loadUnaligned(as: SIMD16<Float>.self)
            maxima.replace(with: chunk, where: chunk .> maxima)
            past &+= 16
        }
        var maximum = maxima.max()
        while past <= position {
            maximum = max(maximum, scores[past])
            past &+= 1
        }
        if let sink { maximum = max(maximum, sink) }
        var total: Double = 0
        var chunk = first & ~15
        while chunk <= position {
            let lanes: SIMD16<Float>
            if chunk >= first && chunk &+ 15 <= position {
                lanes = UnsafeRawPointer(scores + chunk).loadUnaligned(as: SIMD16<Float>.self) - maximum
            } else {
                // The first and last chunks, put together where their probabilities will go:
                // positions outside first ... position are -∞.
                let staging = probabilities + chunk
                for lane in 0 ..< 16 {
                    let past = chunk &+ lane
                    staging[lane] = positions.contains(past) ? scores[past] - maximum : -.infinity
                }
                lanes = UnsafeRawPointer(staging).loadUnaligned(as: SIMD16<Float>.self)
            }
            let exponentials = _ggmlExponential(lanes)
            UnsafeMutableRawPointer(probabilities + chunk).storeBytes(of: exponentials, as: SIMD16<Float>.self)
            total += Double(_sumInHalves(exponentials))
            chunk &+= 16
        }
        if let sink { total += Double(expf(sink - maximum)) }
        // ggml scales by the f32 inverse of the double sum; the F16 product then sees them halved.
        let inverse = SIMD8<Float>(repeating: Float(1 / total))
        var index = first & ~15
        while index <= position {
            let target = UnsafeMutableRawPointer(probabilities + index)
            target.storeBytes(of: roundedToHalfPrecision(target.loadUnaligned(as: SIMD8<Float>.self) * inverse), as: SIMD8<Float>.self)
            index &+= 8
        }
    }

    /// Adds the tile's values of `positions` (its first row is `positions.lowerBound`'s),
    /// weighted by their probabilities, to the 16 lane sums of every dimension: lane l the
    /// positions ≡ l (mod 16), in order. `chunk` is the start of the chunk of 16 positions
    /// that holds the first. Unless `continuing`, the lane sums start from 0.
    ///
    /// Lane by lane, so that one lane's sums of 64 dimensions (eight 256-bit registers) stay
    /// in registers across its positions: position by position, 16 lanes of even 8 dimensions
    /// would not.
    @inline(__always)
    private func accumulateTile(probabilities: UnsafePointer<Float>, positions: Range<Int>, chunk: Int, continuing: Bool,
                                tile: UnsafePointer<Float>, into laneSums: UnsafeMutablePointer<Float>) {
        var dimension = 0
        while dimension &+ 64 <= headWidth {
            accumulateLanes(wide: true, dimension: dimension, probabilities: probabilities, positions: positions,
                            chunk: chunk, continuing: continuing, tile: tile, into: laneSums)
            dimension &+= 64
        }
        while dimension < headWidth {
            accumulateLanes(wide: false, dimension: dimension, probabilities: probabilities, positions: positions,
                            chunk: chunk, continuing: continuing, tile: tile, into: laneSums)
            dimension &+= 16
        }
    }

    /// ``accumulateTile``'s work for dimensions `dimension ..< dimension + 64` if `wide`, else
    /// `dimension ..< dimension + 16`. (`wide` is a constant where it is inlined, so each copy
    /// keeps its one, or four, 16-float sums in registers.)
    @inline(__always)
    private func accumulateLanes(
        wide: Bool, dimension: Int, probabilities: UnsafePointer<Float>, positions: Range<Int>, chunk: Int,
        continuing: Bool, tile: UnsafePointer<Float>, into laneSums: UnsafeMutablePointer<Float>
    ) {
        let rows = UnsafeRawPointer(tile + dimension), firstRow = positions.lowerBound, rowBytes = 4 &* headWidth
        let sums = UnsafeMutableRawPointer(laneSums + dimension)
        for lane in 0 ..< 16 {
            var past = chunk &+ lane
            if past < firstRow { past &+= 16 }
            let lanes = sums + lane &* rowBytes
            var s0 = SIMD16<Float>(), s1 = s0, s2 = s0, s3 = s0
            if continuing {
                s0 = lanes.loadUnaligned(as: SIMD16<Float>.self)
                if wide {
                    s1 = lanes.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
                    s2 = lanes.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self)
                    s3 = lanes.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self)
                }
            }
            while past < positions.upperBound {
                let row = rows + (past &- firstRow) &* rowBytes
                let weight = SIMD16<Float>(repeating: probabilities[past])
                s0 = s0.addingProductWhereFused(row.loadUnaligned(as: SIMD16<Float>.self), weight)
                if wide {
                    s1 = s1.addingProductWhereFused(row.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self), weight)
                    s2 = s2.addingProductWhereFused(row.loadUnaligned(fromByteOffset: 128, as: SIMD16<Float>.self), weight)
                    s3 = s3.addingProductWhereFused(row.loadUnaligned(fromByteOffset: 192, as: SIMD16<Float>.self), weight)
                }
                past &+= 16
            }
            lanes.storeBytes(of: s0, as: SIMD16<Float>.self)
            if wide {
                lanes.storeBytes(of: s1, toByteOffset: 64, as: SIMD16<Float>.self)
                lanes.storeBytes(of: s2, toByteOffset: 128, as: SIMD16<Float>.self)
                lanes.storeBytes(of: s3, toByteOffset: 192, as: SIMD16<Float>.self)
            }
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
    /// Each sequence's job and the numbers of its units, in order, from 0. The jobs share
    /// their head width and group size (one layer's).
    let jobs: UnsafeBufferPointer<(job: AttentionJob, units: Range<Int>)>
    /// Slices each group of query heads is cut into (1 ... groupSize): more than 1 only when
    /// whole groups would be too few units to keep the threads busy.
    let slices: Int
    /// Floats per list of scores or probabilities: every position rounded up to 16, plus 16.
    let positionCapacity: Int

    /// Units of `rows` rows of `job`.
    static func unitCount(rows: Int, job: AttentionJob, slices: Int) -> Int {
        rows * (job.headCount / job.groupSize) * slices
    }

    /// Unit `unit`'s job, row and query heads; `index` is where to start looking for its job
    /// (units are taken in increasing order), and is left at it.
    @inline(__always)
    private func locate(_ unit: Int, from index: inout Int) -> (job: AttentionJob, row: Int, heads: Range<Int>) {
        while !jobs[index].units.contains(unit) { index += 1 }
        let (job, numbers) = jobs[index]
        let local = unit - numbers.lowerBound
        let groupSize = job.groupSize, perRow = (job.headCount / groupSize) * slices
        let rows = numbers.count / perRow
        let order = local / perRow, group = (local % perRow) / slices, slice = local % slices
        let row = order % 2 == 0 ? order / 2 : rows - 1 - order / 2
        return (job, row, group * groupSize + slice * groupSize / slices ..< group * groupSize + (slice + 1) * groupSize / slices)
    }

    func run(_ range: Range<Int>) {
        jobs[0].job.withScratch(positionCapacity: positionCapacity) { scratch in
            var index = 0
            // Each unit is located once: as the next one, it is the current one after.
            var current = range.isEmpty ? nil : locate(range.lowerBound, from: &index)
            for unit in range {
                let (job, row, heads) = current!
                let next = unit + 1 < range.upperBound ? locate(unit + 1, from: &index) : nil
                job.attend(row: row, heads: heads, scratch: scratch, nextKeys: next.map { $0.job.keyRun(row: $0.row, heads: $0.heads) })
                current = next
            }
        }
    }
}
