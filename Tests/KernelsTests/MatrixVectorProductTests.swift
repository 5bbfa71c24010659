import GGUF
@testable import Kernels
import Testing
import TypesetTestSupport

@Suite struct MatrixVectorProductTests {
    /// Checks every row of `weights · input` against the oracle, and against the exact product
    /// with unquantized inputs within the activation quantization's error bound.
    static func check(_ weights: GGUFTensor, _ values: [Float], threads: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let input = ActivationVector(values, for: weights.type)
        let rows = weights.info.rowCount, length = weights.info.rowLength
        let dequantizedInput = input.dequantized()
        var row = [Float](repeating: 0, count: length)
        var expected: [Double] = [], tolerance: [Double] = [], exact: [Double] = [], quantizationBound: [Double] = []
        for index in 0..<rows {
            try row.withUnsafeMutableBufferPointer { try Dequantization.dequantizeRow(index, of: weights, into: $0) }
            expected.append(try MatrixVectorProduct.referenceDot(row: index, of: weights, with: input))
            var magnitude = 0.0, exactSum = 0.0, bound = 0.0
            for lane in 0..<length {
                let w = Double(row[lane])
                magnitude += abs(w) * abs(Double(input.values[lane]))
                exactSum += w * Double(input.values[lane])
                bound += abs(w) * abs(Double(input.values[lane]) - Double(dequantizedInput[lane]))
            }
            tolerance.append(1e-5 * magnitude + 1e-6)
            exact.append(exactSum)
            // q8_1's s is rounded to fp16: up to 2⁻¹¹ of each block's |m × Σ a| more.
            if input.format == .q8_1 { bound += q8_1Slack(weights, index, input) }
            quantizationBound.append(input.format == .float ? 0 : bound)
        }
        // The mapped tensor row by row, and (when it packs) the packed kernels.
        var paths: [(String, WeightMatrix)] = [("rows", try WeightMatrix(weights, packing: false))]
        if PackedMatrix.canPack(weights) { paths.append(("packed", try WeightMatrix(weights, packing: true))) }
        for (path, matrix) in paths {
            for threadCount in threads {
                var output = [Float](repeating: .nan, count: rows)
                try output.withUnsafeMutableBufferPointer {
                    try MatrixVectorProduct.multiply(matrix, by: input, into: $0, threadCount: threadCount)
                }
                for index in 0..<rows {
                    let value = Double(output[index])
                    #expect(abs(value - expected[index]) <= tolerance[index],
                            "\(weights.type) \(path) row \(index), \(threadCount) threads: \(value) vs \(expected[index])",
                            sourceLocation: sourceLocation)
                    #expect(abs(value - exact[index]) <= quantizationBound[index] + 2 * tolerance[index],
                            "\(weights.type) \(path) row \(index) against the unquantized product", sourceLocation: sourceLocation)
                }
            }
        }
    }

    /// How far q8_1's fp16 `s` can move row `index`'s result: Σ over blocks of |m| × |s| × 2⁻¹¹.
    static func q8_1Slack(_ weights: GGUFTensor, _ index: Int, _ input: ActivationVector) -> Double {
        let row = weights.row(index)
        var slack = 0.0
        for block in 0 ..< weights.info.rowLength / 32 {
            let bits = UInt16(row[20 * block + 2]) | UInt16(row[20 * block + 3]) << 8
            slack += Double(abs(floatFromHalf(bits))) * Double(abs(input.offsets[block])) * 0x1p-11
        }
        return slack
    }

    static let types: [GGMLType] = [.f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .mxfp4, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K]

    @Test(arguments: types)
    func randomMatricesMatchTheReference(type: GGMLType) throws {
        var generator = SplitMix64(seed: UInt64(type.rawValue) + 1)
        // Odd block counts (a packed pair with one block), row counts that pack (16, 48) and
        // that do not.
        for (blocks, rows) in [(1, 1), (3, 7), (2, 33), (1, 16), (3, 48), (8, 32)] {
            let rowLength = max(type.blockSize, 32) * blocks
            let data = SyntheticWeights.blocks(type, elements: rowLength * rows, using: &generator)
            let weights = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: rows, data: data)
            let values = (0..<rowLength).map { _ in Float.random(in: -2...2, using: &generator) }
            try Self.check(weights, values, threads: [1, 2, 3])
        }
        // F32 and F16 rows of any length (a router's): the last group of eight partial.
        guard type == .f32 || type == .f16 else { return }
        for rowLength in [37, 45, 5] {
            let data = SyntheticWeights.blocks(type, elements: rowLength * 3, using: &generator)
            let weights = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: 3, data: data)
            try Self.check(weights, (0..<rowLength).map { _ in Float.random(in: -2...2, using: &generator) }, threads: [1, 2])
        }
    }

    /// An F16 row's product is the F32 row's of its widened values, bit for bit: the same
    /// lanes, the same order.
    @Test func halfRowsSumAsTheirWidenedRows() {
        var generator = SplitMix64(seed: 16)
        for length in [8, 32, 37, 8960, 3] {
            let halves = (0 ..< length).map { _ in Float16(Float.random(in: -3 ... 3, using: &generator)).bitPattern }
            let widened = halves.map(floatFromHalf)
            let values = (0 ..< length).map { _ in Float.random(in: -2 ... 2, using: &generator) }
            let half = halves.withUnsafeBytes { row in values.withUnsafeBufferPointer { _dotF16Row(row.baseAddress!, length, $0.baseAddress!) } }
            let single = widened.withUnsafeBytes { row in values.withUnsafeBufferPointer { _dotF32Row(row.baseAddress!, length, $0.baseAddress!) } }
            #expect(half.bitPattern == single.bitPattern, "length \(length)")
        }
    }

    /// Weights at their types' largest codes against activations at ±127 (and at half that):
    /// the sums the byte kernels hold in 16-bit lanes between widenings reach their bounds
    /// here (PendingQuadSums), and any widening left out would wrap. Checked one column at a
    /// time against ggml's integer arithmetic, and in batches of one to nine columns (passes
    /// of eight, four, two and one) against the one-column products, bit for bit.
    @Test(arguments: [GGMLType.q4_0, .q4_1, .q5_0, .q8_0, .q4_K, .q6_K] + (PackedMatrix.supportedTypes.contains(.mxfp4) ? [.mxfp4] : []))
    func largestCodesAgainstLargestActivations(type: GGMLType) throws {
        let rowLength = 512, rows = 32
        for fill: UInt8 in [0xFF, 0x80, 0x77] {
            var data = [UInt8](repeating: fill, count: rowLength * rows / type.blockSize * type.blockByteCount)
            for block in 0 ..< rowLength * rows / type.blockSize {
                // MXFP4's scale 2⁻⁸ (0x77: codes of 12, the largest, + 12 = 24 in the byte kernels).
                if type == .mxfp4 { data[block * type.blockByteCount] = 120 }
                for offset in SyntheticWeights.halfFieldOffsets[type] ?? [] {
                    let bits = Float16(0.01).bitPattern
                    data[block * type.blockByteCount + offset] = UInt8(bits & 0xFF)
                    data[block * type.blockByteCount + offset + 1] = UInt8(bits >> 8)
                }
            }
            let weights = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: rows, data: data)
            #expect(PackedMatrix.canPack(weights))
            let matrix = try WeightMatrix(weights, packing: true)
            for value: Float in [1, -1, 0.5] {
                let values = [Float](repeating: value, count: rowLength)
                try Self.check(weights, values, threads: [1])
                var single = [Float](repeating: .nan, count: rows)
                try single.withUnsafeMutableBufferPointer { result in
                    try MatrixVectorProduct.multiply(matrix, by: ActivationVector(values, for: type), into: result)
                }
                for batch in 1 ... 9 {
                    let inputs = [Float](repeating: value, count: batch * rowLength)
                    var output = [Float](repeating: .nan, count: batch * rows)
                    try inputs.withUnsafeBufferPointer { input in
                        try output.withUnsafeMutableBufferPointer { result in
                            try MatrixMultiplication.multiply(matrix, inputs: input, batch: batch, into: result, threadCount: 2)
                        }
                    }
                    #expect(output == Array((0 ..< batch).map { _ in single }.joined()), "\(type) fill \(fill) value \(value) batch \(batch)")
                }
            }
        }
    }

    /// A packed matrix of more than a huge page starts on a huge-page boundary (on Linux,
    /// unless `TYPESET_NO_HUGE_PAGES` is set) and its products match the reference on every
    /// row, those in the whole huge page and those of the tail in ordinary pages.
    @Test func packedMatrixBeyondAHugePageMatchesTheReference() throws {
        var generator = SplitMix64(seed: 29)
        let type = GGMLType.q8_0, rowLength = 1024, rows = 2064
        let data = SyntheticWeights.blocks(type, elements: rowLength * rows, using: &generator)
        let weights = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: rows, data: data)
        let packed = try PackedMatrix(weights)
        #expect(packed.byteCount > MappedMemory.hugePageBytes)
        #if os(Linux)
        if MappedMemory.asksForHugePages {
            #expect(Int(bitPattern: packed.storage.bytes) % MappedMemory.hugePageBytes == 0)
        }
        #endif
        let values = (0 ..< rowLength).map { _ in Float.random(in: -2 ... 2, using: &generator) }
        try Self.check(weights, values, threads: [2])
    }

    /// Quantizing into a vector's storage gives the vector a fresh quantization gives, and
    /// leaves a copy taken before untouched (value semantics).
    @Test(arguments: ActivationVector.Format.allCases)
    func quantizingInPlaceEqualsQuantizingAfresh(format: ActivationVector.Format) {
        var generator = SplitMix64(seed: 11)
        var vector = ActivationVector(format: format, count: 512)
        for round in 0 ..< 3 {
            let values = (0 ..< 512).map { _ in Float.random(in: -4 ... 4, using: &generator) }
            let before = vector
            values.withUnsafeBufferPointer { vector.quantize($0) }
            let fresh = ActivationVector(values, format: format)
            #expect(vector.values == fresh.values && vector.scales == fresh.scales && vector.codes == fresh.codes
                    && vector.sums == fresh.sums && vector.offsets == fresh.offsets, "round \(round)")
            #expect(round == 0 || before.values != vector.values)
        }
    }

    /// Products run from a buffer with the input quantized into kept `ActivationBuffers` give
    /// the values of each product alone, for matrices of two activation formats (q8_0, q8_K),
    /// packed and mapped, over calls that reuse the buffers.
    @Test func productsReusingActivationBuffersEqualSingleProducts() throws {
        var generator = SplitMix64(seed: 78)
        let rowLength = 512
        let matrices = try [(GGMLType.q4_0, 48, true), (.q6_K, 32, true), (.q8_0, 20, false), (.q4_K, 16, false)].map { type, rows, packs in
            let data = SyntheticWeights.blocks(type, elements: rowLength * rows, using: &generator)
            let tensor = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: rows, data: data)
            return try WeightMatrix(tensor, packing: packs && PackedMatrix.canPack(tensor))
        }
        var buffers = ActivationBuffers()
        for round in 0 ..< 3 {
            let values = (0 ..< rowLength).map { _ in Float.random(in: -1 ... 1, using: &generator) }
            let expected = try matrices.map { matrix in
                var output = [Float](repeating: .nan, count: matrix.rowCount)
                try output.withUnsafeMutableBufferPointer { result in
                    try MatrixVectorProduct.multiply(matrix, by: ActivationVector(values, for: matrix.tensor.info.type), into: result)
                }
                return output
            }
            let outputs = matrices.map { UnsafeMutableBufferPointer<Float>.allocate(capacity: $0.rowCount) }
            defer { for output in outputs { output.deallocate() } }
            for output in outputs { output.initialize(repeating: .nan) }
            let products = zip(matrices, outputs).map { (weights: $0, output: $1) }
            try products.withUnsafeBufferPointer { products in
                try values.withUnsafeBufferPointer { input in
                    try MatrixVectorProduct.multiply(products, input: input, reusing: &buffers, threadCount: 2)
                }
            }
            for (index, output) in outputs.enumerated() {
                #expect(Array(output) == expected[index], "round \(round), matrix \(index)")
            }
        }
    }

    @Test(arguments: [ActivationVector.Format.q8_0, .q8_1, .q8_K])
    func activationQuantization(format: ActivationVector.Format) {
        var generator = SplitMix64(seed: 7)
        var values = (0..<512).map { _ in Float.random(in: -3...3, using: &generator) }
        for index in 256..<288 { values[index] = 0 }   // an all-zero block of 32
        values[70] = -5                                 // the extreme value of its blocks
        let input = ActivationVector(values, format: format)
        let blockSize = format.blockSize
        #expect(input.scales.count == 512 / blockSize && input.codes.count == 512)
        #expect(input.codes[70] == -127)   // q8_K's −127 / max maps max itself to −127 too
        #expect(input.codes[256..<288].allSatisfy { $0 == 0 })
        let dequantized = input.dequantized()
        for index in values.indices {
            // fp16 rounding of the scale adds up to 2⁻¹¹ relative to q8_0/q8_1.
            let scale: Float = abs(input.scales[index / blockSize])
            let bound: Float = scale * 0.501 + abs(values[index]) * 0x1p-10
            #expect(abs(values[index] - dequantized[index]) <= bound)
        }
        switch format {
        case .q8_0:
            for block in 0..<16 { #expect(input.sums[block] == input.codes[32 * block ..< 32 * block + 32].reduce(0) { $0 + Int32($1) }) }
        case .q8_K:
            for group in 0..<32 { #expect(input.sums[group] == input.codes[16 * group ..< 16 * group + 16].reduce(0) { $0 + Int32($1) }) }
        case .q8_1:
            for block in 0..<16 {
                let sum = Float(input.codes[32 * block ..< 32 * block + 32].reduce(0) { $0 + Int32($1) })
                #expect(abs(input.offsets[block] - input.scales[block] * sum) <= abs(input.scales[block] * sum) * 0x1p-9)
            }
        case .float: break
        }
    }

    @Test func halfRoundingMatchesFloat16() {
        var generator = SplitMix64(seed: 5)
        var samples: [Float] = [0, -0, .infinity, -.infinity, 65504, 65519.99, 65520, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26, 6.1e-5, -2.5e-8]
        for bits in stride(from: UInt32(0), to: 0xFFFF_FFFF - 4_000_000, by: 3_999_971) { samples.append(Float(bitPattern: bits)) }
        for _ in 0..<20_000 { samples.append(Float(bitPattern: UInt32.random(in: 0x3000_0000 ... 0x4800_0000, using: &generator))) }
        // Exactly halfway between two halves: ties go to even.
        for bits in stride(from: UInt16(0), to: 0x7BFF, by: 97) {
            let low = floatFromHalf(bits), high = floatFromHalf(bits + 1)
            samples.append((low + high) / 2)
        }
        for value in samples where !value.isNaN {
            #expect(_portableHalfFromFloat(value) == Float16(value).bitPattern, "\(value) (\(String(value.bitPattern, radix: 16)))")
            #expect(halfFromFloat(value) == Float16(value).bitPattern, "\(value) (\(String(value.bitPattern, radix: 16)))")
        }
        #expect(floatFromHalf(_portableHalfFromFloat(.nan)).isNaN)
        #expect(floatFromHalf(halfFromFloat(.nan)).isNaN)
    }

    /// The eight-lane conversions (F16C instructions on tuned x86-64 builds, bit operations
    /// elsewhere) round lane for lane as the scalar `halfFromFloat` does, over every half's
    /// neighbourhood below 65,520: the halves themselves, the midpoints between neighbours
    /// (ties to even) and values just either side of them.
    @Test func vectorHalfRoundingMatchesScalar() {
        var samples: [Float] = [0, -0, 65504, -65504, 65519.99, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1p-26, -2.5e-8]
        for bits in UInt16(0) ..< 0x7BFF {
            let low = floatFromHalf(bits), high = floatFromHalf(bits + 1), middle = (low + high) / 2
            samples += [low, -low, middle, -middle, middle.nextUp, middle.nextDown]
        }
        while samples.count % 8 != 0 { samples.append(1) }
        var mismatches: [Float] = []
        for start in stride(from: 0, to: samples.count, by: 8) {
            let lanes = SIMD8<Float>(samples[start ..< start + 8])
            let rounded = roundedToHalfPrecision(lanes), bits = halfBitPatterns(lanes)
            for lane in 0..<8 {
                let expected = halfFromFloat(lanes[lane])
                if bits[lane] != expected || rounded[lane].bitPattern != floatFromHalf(expected).bitPattern { mismatches.append(lanes[lane]) }
            }
        }
        #expect(samples.count > 180_000)
        #expect(mismatches.isEmpty, "first mismatches: \(mismatches.prefix(8))")
    }

    /// The sixteen-lane reading of halves (`vcvtph2ps` on tuned x86-64 builds and arm64)
    /// gives, for every finite half, the float the scalar `floatFromHalf` gives, bit for bit.
    @Test func sixteenLaneHalfReadingMatchesScalar() {
        let finite = (UInt16(0) ... 0xFFFF).filter { $0 & 0x7C00 != 0x7C00 }
        var mismatches: [UInt16] = []
        for start in stride(from: 0, to: finite.count, by: 16) {
            var halves = SIMD16<UInt16>(repeating: 0x3C00)
            for lane in 0 ..< min(16, finite.count - start) { halves[lane] = finite[start + lane] }
            let floats = floatsFromHalves(halves)
            for lane in 0 ..< 16 where floats[lane].bitPattern != floatFromHalf(halves[lane]).bitPattern { mismatches.append(halves[lane]) }
        }
        #expect(finite.count == 63_488)
        #expect(mismatches.isEmpty, "first mismatches: \(mismatches.prefix(8))")
    }

    /// One real tensor of each type in the two models, every row, two threads.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)),
          arguments: [
              (TestModels.smolLM2FileName, "blk.0.attn_q.weight"),     // Q4_1 576×576
              (TestModels.smolLM2FileName, "blk.0.ffn_down.weight"),   // Q4_1 1536→576
              (TestModels.gemma3FileName, "blk.0.attn_k.weight"),      // Q5_0
              (TestModels.gemma3FileName, "blk.0.ffn_gate.weight"),    // Q4_K or Q5_0
              (TestModels.gemma3FileName, "blk.0.ffn_down.weight"),    // Q6_K or Q4_K
          ])
    func realTensorsMatchTheReference(fileName: String, tensorName: String) throws {
        let weights = try GGUFFile(contentsOf: TestModels.path(of: fileName)).tensor(named: tensorName)
        var generator = SplitMix64(seed: 11)
        let values = (0..<weights.info.rowLength).map { _ in Float.random(in: -1...1, using: &generator) }
        try Self.check(weights, values, threads: [2])
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.gemma3FileName)))
    func realTypesCoverTheFastPaths() throws {
        let file = try GGUFFile(contentsOf: TestModels.gemma3Path)
        var generator = SplitMix64(seed: 12)
        var checked = Set<GGMLType>()
        for tensor in file.tensors where tensor.info.shape.count == 2 && !checked.contains(tensor.type)
            && tensor.info.rowCount <= 4096 && Dequantization.supportedTypes.contains(tensor.type) {
            let values = (0..<tensor.info.rowLength).map { _ in Float.random(in: -1...1, using: &generator) }
            try Self.check(tensor, values, threads: [2])
            checked.insert(tensor.type)
        }
        #expect(checked.isSuperset(of: [.q5_0, .q4_K, .q6_K]))
    }

    @Test func mismatchedShapesAndTypesAreTypedErrors() throws {
        let weights = try SyntheticWeights.tensor(.q8_0, rowLength: 64, rows: 2, data: Array(repeating: 0, count: 136))
        var output = [Float](repeating: 0, count: 2)
        output.withUnsafeMutableBufferPointer { buffer in
            #expect(throws: KernelError.sizeMismatch(what: "input length for 'w'", expected: 64, actual: 32)) {
                try MatrixVectorProduct.multiply(weights, by: ActivationVector(Array(repeating: 1, count: 32), for: .q8_0), into: buffer)
            }
            #expect(throws: KernelError.sizeMismatch(what: "output length for 'w'", expected: 2, actual: 1)) {
                try MatrixVectorProduct.multiply(weights, by: ActivationVector(Array(repeating: 1, count: 64), for: .q8_0),
                                                 into: UnsafeMutableBufferPointer(rebasing: buffer[0..<1]))
            }
            #expect(throws: KernelError.activationFormatMismatch(weights: .q8_0, expected: "q8_0", actual: "q8_1")) {
                try MatrixVectorProduct.multiply(weights, by: ActivationVector(Array(repeating: 1, count: 64), format: .q8_1),
                                                 into: buffer)
            }
        }
        let iq = try SyntheticWeights.tensor(.iq4_NL, rowLength: 32, rows: 1, data: Array(repeating: 0, count: 18))
        var one = [Float](repeating: 0, count: 1)
        _ = one.withUnsafeMutableBufferPointer { buffer in
            #expect(throws: KernelError.unsupportedType(.iq4_NL, operation: "matrix-vector product")) {
                try MatrixVectorProduct.multiply(iq, by: ActivationVector(Array(repeating: 1, count: 32), format: .float), into: buffer)
            }
        }
    }
}
