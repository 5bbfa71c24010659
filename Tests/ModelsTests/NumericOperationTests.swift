import Foundation
import Kernels
@testable import Models
import Testing
import TypesetTestSupport

/// The forward pass's numeric operations, each against a scalar reference written here from
/// its definition (in double precision where the operation's own rounding is not the point).
@Suite struct NumericOperationTests {
    static func randomFloats(_ count: Int, in range: ClosedRange<Float>, seed: UInt64) -> [Float] {
        var random = SplitMix64(seed: seed)
        return (0 ..< count).map { _ in Float.random(in: range, using: &random) }
    }

    /// Distance in units in the last place between two finite floats of the same sign.
    static func ulps(_ a: Float, _ b: Float) -> Int {
        abs(Int(Int32(bitPattern: a.bitPattern)) - Int(Int32(bitPattern: b.bitPattern)))
    }

    // MARK: ggml's exponential

    @Test func ggmlExponentialIsWithinTwoUlpsOfExp() {
        let inputs = Self.randomFloats(64_000, in: -87 ... 88, seed: 1) + [0, -0.0, 1, -1, 88.7, -87.3, 1e-8, -1e-8]
        var worst = 0
        for start in stride(from: 0, to: inputs.count - 15, by: 16) {
            let lanes = SIMD16<Float>(inputs[start ..< start + 16])
            let result = _ggmlExponential(lanes)
            for lane in 0 ..< 16 {
                let expected = Float(exp(Double(lanes[lane])))
                worst = max(worst, Self.ulps(result[lane], expected))
            }
        }
        #expect(worst <= 2, "worst error \(worst) ulp")
        let edges = _ggmlExponential(SIMD16([-200, -120, 89, 200, .infinity, -.infinity, .nan, 0, 0, 0, 0, 0, 0, 0, 0, 0]))
        #expect(edges[0] == 0 && edges[1] == 0)
        #expect(edges[2] == .infinity && edges[3] == .infinity && edges[4] == .infinity)
        #expect(edges[5] == 0 && edges[6].isNaN && edges[7] == 1)
    }

    // MARK: Per-element operations

    @Test func swiGLUMatchesItsDefinition() {
        for count in [16, 37, 5] {
            let gates = Self.randomFloats(count, in: -12 ... 12, seed: UInt64(count)), ups = Self.randomFloats(count, in: -3 ... 3, seed: 99)
            var result = gates
            result.withUnsafeMutableBufferPointer { output in ups.withUnsafeBufferPointer { _swiGLU(output, $0) } }
            for index in 0 ..< count {
                let x = Double(gates[index]), expected = x / (1 + exp(-x)) * Double(ups[index])
                #expect(abs(Double(result[index]) - expected) <= 1e-6 * max(1, abs(expected)), "\(index): \(result[index]) vs \(expected)")
            }
        }
    }

    /// The vector path (eight at a time) and the scalar tail give the same values: the table
    /// entry of the input rounded to half; and the table is GELU within half precision.
    @Test func geGLUMatchesTheScalarTableAndGELU() {
        let gates = Self.randomFloats(53, in: -11 ... 11, seed: 3) + [-10, 10, -9.99, 9.99, 0, -0.0, 1e-6]
        let ups = Self.randomFloats(gates.count, in: -2 ... 2, seed: 4)
        var result = gates
        result.withUnsafeMutableBufferPointer { output in ups.withUnsafeBufferPointer { _geGLU(output, $0) } }
        for index in gates.indices {
            #expect(result[index] == _gelu(gates[index]) * ups[index], "\(gates[index])")
            let x = Double(gates[index])
            let exact = 0.5 * x * (1 + tanh(0.7978845608 * x * (1 + 0.044715 * x * x)))
            #expect(abs(Double(_gelu(gates[index])) - exact) <= 2e-3 * max(1, abs(exact)), "\(gates[index])")
        }
    }

    @Test func rmsNormMatchesItsDefinition() {
        let width = 48, rows = 3
        let input = Self.randomFloats(width * rows, in: -4 ... 4, seed: 5), weight = Self.randomFloats(width, in: 0.5 ... 1.5, seed: 6)
        var result = input
        result.withUnsafeMutableBufferPointer { output in weight.withUnsafeBufferPointer { _rmsNorm(output, width: width, weight: $0, epsilon: 1e-6) } }
        for row in 0 ..< rows {
            let values = input[row * width ..< (row + 1) * width].map(Double.init)
            let scale = 1 / (values.reduce(0) { $0 + $1 * $1 } / Double(width) + 1e-6).squareRoot()
            for index in 0 ..< width {
                let expected = values[index] * scale * Double(weight[index])
                #expect(abs(Double(result[row * width + index]) - expected) <= 1e-5 * max(1, abs(expected)))
            }
        }
    }

    @Test func shortConvolutionIsCausalAndZeroBeforeTheStart() {
        // Two channels, three taps; history rows 0 … 2.
        let history: [Float] = [1, 10, 2, 20, 3, 30]
        let kernel: [Float] = [0.5, 0.25, 2, 1, -1, 0.5]   // channel 0: 0.5, 0.25, 2; channel 1: 1, −1, 0.5
        var output = [Float](repeating: 0, count: 2)
        for (position, expected) in [(0, [Float(2), 5]), (1, [4.25, 0]), (2, [7, 5])] {
            _shortConvolution(history: history, position: position, width: 2, kernel: kernel, length: 3, into: &output)
            #expect(output == expected, "position \(position)")
        }
    }

    // MARK: Rotary embedding

    @Test(arguments: [RotaryPairing.adjacent, .halves])
    func rotationMatchesItsDefinition(pairing: RotaryPairing) {
        let headWidth = 16, heads = 2, dimensions = 12   // four dimensions per head pass through
        let rope = RotaryEmbedding(pairing: pairing, dimensionCount: dimensions, base: 10_000)
        let positions = 3 ..< 7
        let angles = rope.angles(positions: positions)
        let input = Self.randomFloats(positions.count * heads * headWidth, in: -2 ... 2, seed: 7)
        var result = input
        result.withUnsafeMutableBufferPointer {
            _applyRotary($0.baseAddress!, rows: 0 ..< positions.count, headCount: heads, headWidth: headWidth, angles: angles, pairing: pairing)
        }
        for (row, position) in positions.enumerated() {
            for head in 0 ..< heads {
                let base = (row * heads + head) * headWidth
                for pair in 0 ..< dimensions / 2 {
                    let theta = Double(position) * pow(10_000, -2 * Double(pair) / Double(dimensions))
                    let (first, second) = pairing == .adjacent ? (2 * pair, 2 * pair + 1) : (pair, pair + dimensions / 2)
                    let x0 = Double(input[base + first]), x1 = Double(input[base + second])
                    #expect(abs(Double(result[base + first]) - (x0 * cos(theta) - x1 * sin(theta))) < 1e-5)
                    #expect(abs(Double(result[base + second]) - (x0 * sin(theta) + x1 * cos(theta))) < 1e-5)
                }
                for dimension in dimensions ..< headWidth { #expect(result[base + dimension] == input[base + dimension]) }
            }
        }
    }

    // MARK: The cache and attention

    /// Keys and values are stored as the inputs rounded to half, dimension for dimension (an
    /// F16 cache's halves), each key-value head's positions in a run of their own.
    @Test func cacheStoresValuesRoundedToHalfHeadByHead() {
        let headWidth = 16, heads = 2, positions = 3, contextLength = 8
        let cache = KVCache(contextLength: contextLength, keyValueHeads: [heads], headWidths: [headWidth])
        let width = heads * headWidth
        let keys = Self.randomFloats(positions * width, in: -60_000 ... 60_000, seed: 8), values = Self.randomFloats(positions * width, in: -1 ... 1, seed: 9)
        keys.withUnsafeBufferPointer { cache.store(UnsafeBufferPointer(rebasing: $0[width...]), slot: 0, position: 1, keys: true) }
        values.withUnsafeBufferPointer { cache.store(UnsafeBufferPointer(rebasing: $0[width...]), slot: 0, position: 1, keys: false) }
        let (k, v, headStride) = cache.storage(slot: 0)
        #expect(headStride == contextLength * headWidth)
        for position in 1 ..< positions {
            for head in 0 ..< heads {
                let stored = (head * contextLength + position) * headWidth, given = (position * heads + head) * headWidth
                #expect(Array(UnsafeBufferPointer(start: k + stored, count: headWidth)) == keys[given ..< given + headWidth].map(halfFromFloat))
                #expect(Array(UnsafeBufferPointer(start: v + stored, count: headWidth)) == values[given ..< given + headWidth].map(halfFromFloat))
            }
        }
    }

    /// `AttentionJob.attend` for every row and head, each group of query heads cut into
    /// `slices` calls: the output, `rows × heads × headWidth` floats (NaN where nothing was
    /// written). Keys and values are IEEE halves, head-major, `positions` per key-value head.
    static func attention(
        queries: [Float], keys: [UInt16], values: [UInt16], start: Int, rows: Int, heads: Int, groupSize: Int,
        headWidth: Int, positions: Int, window: Int, scale: Float, slices: Int = 1, sinks: [Float]? = nil
    ) -> [Float] {
        var output = [Float](repeating: .nan, count: rows * heads * headWidth)
        let capacity = (positions + 15) / 16 * 16 + 16
        queries.withUnsafeBufferPointer { q in
            keys.withUnsafeBufferPointer { k in
                values.withUnsafeBufferPointer { v in
                    output.withUnsafeMutableBufferPointer { o in
                      (sinks ?? []).withUnsafeBufferPointer { sinkLogits in
                        let job = AttentionJob(queries: q.baseAddress!, keys: k.baseAddress!, values: v.baseAddress!, output: o.baseAddress!,
                                                start: start, headCount: heads, headWidth: headWidth, groupSize: groupSize,
                                                headStride: positions * headWidth, window: window, scale: scale,
                                                sinks: sinks == nil ? nil : sinkLogits.baseAddress)
                        // Every unit in order, each told the next one's keys (a prefetch hint only).
                        var units: [(row: Int, heads: Range<Int>)] = []
                        for row in 0 ..< rows {
                            for group in 0 ..< heads / groupSize {
                                for slice in 0 ..< slices {
                                    units.append((row, group * groupSize + slice * groupSize / slices ..< group * groupSize + (slice + 1) * groupSize / slices))
                                }
                            }
                        }
                        job.withScratch(positionCapacity: capacity) { scratch in
                            for (index, unit) in units.enumerated() {
                                let next = index + 1 < units.count ? job.keyRun(row: units[index + 1].row, heads: units[index + 1].heads) : nil
                                job.attend(row: unit.row, heads: unit.heads, scratch: scratch, nextKeys: next)
                            }
                        }
                      }
                    }
                }
            }
        }
        return output
    }

    /// A row's key run is its key-value head's positions from the window's first to its own.
    @Test func keyRunCoversTheWindowOfItsKeyValueHead() {
        let headWidth = 16, positions = 40
        let keys = [UInt16](repeating: 0, count: 2 * positions * headWidth)
        keys.withUnsafeBufferPointer { k in
            let job = AttentionJob(queries: UnsafePointer(bitPattern: 16)!, keys: k.baseAddress!, values: k.baseAddress!,
                                   output: UnsafeMutablePointer(bitPattern: 16)!, start: 10, headCount: 4, headWidth: headWidth,
                                   groupSize: 2, headStride: positions * headWidth, window: 8, scale: 1)
            // Row 5 is position 15: positions 8 ... 15 of key-value head 1 (query heads 2 and 3).
            let run = job.keyRun(row: 5, heads: 2 ..< 4)
            #expect(run.baseAddress! - k.baseAddress! == (positions + 8) * headWidth)
            #expect(run.count == 8 * headWidth)
            // Without a window, from position 0.
            let unwindowed = AttentionJob(queries: UnsafePointer(bitPattern: 16)!, keys: k.baseAddress!, values: k.baseAddress!,
                                          output: UnsafeMutablePointer(bitPattern: 16)!, start: 10, headCount: 4, headWidth: headWidth,
                                          groupSize: 2, headStride: positions * headWidth, window: .max, scale: 1)
            #expect(unwindowed.keyRun(row: 5, heads: 0 ..< 1).baseAddress! == k.baseAddress!)
            #expect(unwindowed.keyRun(row: 5, heads: 0 ..< 1).count == 16 * headWidth)
        }
    }

    /// Causal attention (two query heads sharing one key head) against softmax attention in
    /// double precision with the same half-precision probabilities.
    @Test func attentionMatchesSoftmaxAttention() {
        let headWidth = 32, heads = 2, positions = 21, scale = 1 / Float(headWidth).squareRoot()
        let half = { (x: Float) in floatFromHalf(halfFromFloat(x)) }
        let queries = Self.randomFloats(positions * heads * headWidth, in: -1 ... 1, seed: 10).map(half)
        let keys = Self.randomFloats(positions * headWidth, in: -1 ... 1, seed: 11).map(half)
        let values = Self.randomFloats(positions * headWidth, in: -1 ... 1, seed: 12).map(half)
        let output = Self.attention(
            queries: queries, keys: keys.map(halfFromFloat), values: values.map(halfFromFloat), start: 0, rows: positions,
            heads: heads, groupSize: heads, headWidth: headWidth, positions: positions, window: .max, scale: scale)
        var worst = 0.0
        for row in 0 ..< positions {
            for head in 0 ..< heads {
                let query = (0 ..< headWidth).map { Double(queries[(row * heads + head) * headWidth + $0]) }
                let logits = (0 ... row).map { past in
                    (0 ..< headWidth).reduce(0.0) { $0 + query[$1] * Double(keys[past * headWidth + $1]) } * Double(scale)
                }
                let maximum = logits.max()!
                let weights = logits.map { exp($0 - maximum) }
                let total = weights.reduce(0, +)
                let rounded = weights.map { Double(half(Float($0 / total))) }
                for dimension in 0 ..< headWidth {
                    let expected = (0 ... row).reduce(0.0) { $0 + rounded[$1] * Double(values[$1 * headWidth + dimension]) }
                    worst = max(worst, abs(Double(output[(row * heads + head) * headWidth + dimension]) - expected))
                }
            }
        }
        // Half-precision probabilities can round one way or the other at a boundary.
        #expect(worst < 2e-3, "largest difference \(worst)")
    }

    /// Attention's documented order (the type's comment), one scalar operation at a time: each
    /// score's 16 lane chains of fused multiply-adds summed in halves, the softmax by 16-lane
    /// chunks aligned at position 0 with the sum in `Double`, probabilities rounded to half,
    /// and each output dimension's 16 lane accumulators (lane p % 16 for position p) summed in
    /// halves.
    static func attentionInGGMLOrder(
        query: ArraySlice<Float>, keys: [UInt16], values: [UInt16], keyOffset: Int, headWidth: Int,
        first: Int, position: Int, scale: Float, sink: Float? = nil
    ) -> [Float] {
        func sumInHalves(_ lanes: [Float]) -> Float {
            let halves = (0 ..< 8).map { lanes[$0] + lanes[$0 + 8] }
            let quarters = (0 ..< 4).map { halves[$0] + halves[$0 + 4] }
            return (quarters[0] + quarters[2]) + (quarters[1] + quarters[3])
        }
        let q = Array(query)
        var scores = [Float](repeating: -.infinity, count: position + 1)
        for past in first ... position {
            var lanes = [Float](repeating: 0, count: 16)
            for dimension in 0 ..< headWidth {
                let key = floatFromHalf(keys[keyOffset + past * headWidth + dimension])
                lanes[dimension % 16] = lanes[dimension % 16].addingProduct(key, q[dimension])
            }
            scores[past] = sumInHalves(lanes) * scale
        }
        let maximum = max(scores[first ... position].max()!, sink ?? -.infinity)
        var exponentials = [Float](repeating: 0, count: (position / 16 + 1) * 16)
        var total = 0.0
        for chunk in stride(from: first & ~15, through: position, by: 16) {
            var lanes = SIMD16<Float>(repeating: -.infinity)
            for lane in 0 ..< 16 where (first ... position).contains(chunk + lane) { lanes[lane] = scores[chunk + lane] - maximum }
            let chunkExponentials = _ggmlExponential(lanes)
            for lane in 0 ..< 16 { exponentials[chunk + lane] = chunkExponentials[lane] }
            total += Double(sumInHalves((0 ..< 16).map { chunkExponentials[$0] }))
        }
        // A sink's exponential joins the sum last, as ggml's soft_max adds it.
        if let sink { total += Double(expf(sink - maximum)) }
        let inverse = Float(1 / total)
        let probabilities = exponentials.map { roundedToHalfPrecision($0 * inverse) }
        return (0 ..< headWidth).map { dimension in
            var lanes = [Float](repeating: 0, count: 16)
            for past in first ... position {
                let probability = probabilities[past]
                let value = floatFromHalf(values[keyOffset + past * headWidth + dimension])
                lanes[past % 16] = lanes[past % 16].addingProduct(value, probability)
            }
            return sumInHalves(lanes)
        }
    }

    /// The attention the forward pass runs gives, bit for bit, what the documented order gives
    /// (``attentionInGGMLOrder``): rows of every length around the 4- and 16-position steps,
    /// grouped query heads attended together and one by one, a sliding window that starts
    /// positions mid-chunk, and head widths whose tiles (`AttentionJob.tilePositions`) hold
    /// fewer positions than a row attends to (256: 32 positions) or whose dimensions are not
    /// a multiple of 64 (96, 32).
    /// With `sinks`, each head's sink logit (gpt-oss's) joins the maximum and the sum: some
    /// above every score, some below.
    @Test(arguments: [(headWidth: 64, window: Int.max, slices: 1, sinks: false), (headWidth: 64, window: Int.max, slices: 3, sinks: false),
                      (headWidth: 32, window: 11, slices: 1, sinks: false), (headWidth: 128, window: 16, slices: 3, sinks: false),
                      (headWidth: 96, window: Int.max, slices: 1, sinks: false), (headWidth: 256, window: Int.max, slices: 1, sinks: false),
                      (headWidth: 256, window: 37, slices: 3, sinks: false),
                      (headWidth: 64, window: 11, slices: 3, sinks: true), (headWidth: 32, window: Int.max, slices: 1, sinks: true)])
    func attentionFollowsTheGGMLOrderBitForBit(headWidth: Int, window: Int, slices: Int, sinks: Bool) {
        let heads = 6, groupSize = 3, keyValueHeads = heads / groupSize, positions = 75, start = 2, rows = positions - start
        let scale = 1 / Float(headWidth).squareRoot()
        let half = { (x: Float) in floatFromHalf(halfFromFloat(x)) }
        let queries = Self.randomFloats(rows * heads * headWidth, in: -2 ... 2, seed: 21).map(half)
        let keys = Self.randomFloats(keyValueHeads * positions * headWidth, in: -2 ... 2, seed: 22).map(halfFromFloat)
        let values = Self.randomFloats(keyValueHeads * positions * headWidth, in: -1 ... 1, seed: 23).map(halfFromFloat)
        let sinkLogits: [Float] = [-3, 0.5, 4, 9, -0.25, 2]
        let output = Self.attention(
            queries: queries, keys: keys, values: values, start: start, rows: rows, heads: heads, groupSize: groupSize,
            headWidth: headWidth, positions: positions, window: window, scale: scale, slices: slices,
            sinks: sinks ? sinkLogits : nil)
        var mismatches = 0
        for row in 0 ..< rows {
            let position = start + row
            let first = window == Int.max ? 0 : max(0, position - window + 1)
            for head in 0 ..< heads {
                let base = (row * heads + head) * headWidth
                let expected = Self.attentionInGGMLOrder(
                    query: queries[base ..< base + headWidth], keys: keys, values: values,
                    keyOffset: (head / groupSize) * positions * headWidth, headWidth: headWidth,
                    first: first, position: position, scale: scale, sink: sinks ? sinkLogits[head] : nil)
                for dimension in 0 ..< headWidth where output[base + dimension].bitPattern != expected[dimension].bitPattern {
                    mismatches += 1
                }
            }
        }
        #expect(mismatches == 0, "\(mismatches) of \(output.count) outputs differ from the documented order")
    }

    /// The gated delta rule's 16-lane kernel gives its scalar reference's values bit for bit
    /// (the same operations in the same order, `_ggmlDotProduct` for the dot products), over
    /// several tokens on one state, the first read from another matrix.
    @Test(arguments: [128, 32, 64, 48])
    func deltaRuleKernelMatchesItsReference(width: Int) {
        var generator = SplitMix64(seed: UInt64(width))
        func random(_ count: Int, _ spread: Float) -> [Float] { (0 ..< count).map { _ in Float.random(in: -spread ... spread, using: &generator) } }
        let before = random(width * width, 0.5)
        var simd = [Float](repeating: .nan, count: width * width), scalar = simd
        var first = true
        for _ in 0 ..< 5 {
            let query = random(width, 0.2), key = random(width, 0.2), value = random(width, 1)
            let decay = Float.random(in: 0.8 ... 1, using: &generator), update = Float.random(in: 0 ... 1, using: &generator)
            var simdOutput = [Float](repeating: 0, count: width), scalarOutput = simdOutput
            let fromFirst = first
            before.withUnsafeBufferPointer { before in
                simd.withUnsafeMutableBufferPointer { matrix in
                    _deltaRuleStep(matrix.baseAddress!, from: fromFirst ? before.baseAddress! : UnsafePointer(matrix.baseAddress!),
                                   width: width, query: query, key: key, value: value, decay: decay, update: update, scale: 0.125,
                                   output: &simdOutput)
                }
                scalar.withUnsafeMutableBufferPointer { matrix in
                    _deltaRuleStepReference(matrix.baseAddress!, from: fromFirst ? before.baseAddress! : UnsafePointer(matrix.baseAddress!),
                                            width: width, query: query, key: key, value: value, decay: decay, update: update,
                                            scale: 0.125, output: &scalarOutput)
                }
            }
            first = false
            #expect(simdOutput.map(\.bitPattern) == scalarOutput.map(\.bitPattern), "width \(width)")
        }
        #expect(simd.map(\.bitPattern) == scalar.map(\.bitPattern), "width \(width)")
        // ggml's dot product: its four accumulators over runs of 64, then the leftovers.
        let x = random(200, 1), y = random(200, 1)
        let exact = zip(x, y).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
        #expect(abs(Double(_ggmlDotProduct(x, y, count: 200)) - exact) < 1e-4)
    }

    /// Mamba2's state row kernel (16 lanes) gives its scalar reference's values bit for bit over
    /// several tokens on one row, the first read from another row, at state sizes with and
    /// without leftovers; and the outputs are the state's dot products with `C`, to rounding.
    @Test(arguments: [128, 64, 16, 40])
    func selectiveScanKernelMatchesItsReference(count: Int) {
        var generator = SplitMix64(seed: UInt64(count))
        func random(_ count: Int, _ spread: Float) -> [Float] { (0 ..< count).map { _ in Float.random(in: -spread ... spread, using: &generator) } }
        let before = random(count, 0.5)
        var simd = [Float](repeating: .nan, count: count), scalar = simd
        for token in 0 ..< 5 {
            let b = random(count, 1), c = random(count, 1)
            let decay = Float.random(in: 0.7 ... 1, using: &generator), input = Float.random(in: -0.3 ... 0.3, using: &generator)
            let previous = token == 0 ? before : scalar
            var simdOutput: Float = 0, scalarOutput: Float = 0
            before.withUnsafeBufferPointer { before in
                simd.withUnsafeMutableBufferPointer { row in
                    simdOutput = _selectiveScanStep(row.baseAddress!, from: token == 0 ? before.baseAddress! : UnsafePointer(row.baseAddress!),
                                                    count: count, decay: decay, input: input, inputWeights: b, outputWeights: c)
                }
                scalar.withUnsafeMutableBufferPointer { row in
                    scalarOutput = _selectiveScanStepReference(
                        row.baseAddress!, from: token == 0 ? before.baseAddress! : UnsafePointer(row.baseAddress!),
                        count: count, decay: decay, input: input, inputWeights: b, outputWeights: c)
                }
            }
            #expect(simdOutput.bitPattern == scalarOutput.bitPattern, "count \(count), token \(token)")
            #expect(simd.map(\.bitPattern) == scalar.map(\.bitPattern), "count \(count), token \(token)")
            // The update and the output, in double precision from the row before.
            var exact = 0.0
            for index in 0 ..< count {
                let state = Double(previous[index]) * Double(decay) + Double(b[index]) * Double(input)
                #expect(abs(state - Double(scalar[index])) < 1e-5)
                exact += state * Double(c[index])
            }
            #expect(abs(exact - Double(scalarOutput)) < 1e-4)
        }
    }
}
