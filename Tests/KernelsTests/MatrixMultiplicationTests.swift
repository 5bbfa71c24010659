import GGUF
import Kernels
import Testing
import TypesetTestSupport

@Suite struct MatrixMultiplicationTests {
    /// Σ over k in Double, with the dequantized weights: the oracle for both strategies.
    static func reference(_ weights: GGUFTensor, _ inputs: [Float], batch: Int) throws -> (values: [Double], magnitudes: [Double]) {
        let dequantized = try Dequantization.dequantize(weights)
        let n = weights.info.rowCount, k = weights.info.rowLength
        var values = [Double](repeating: 0, count: batch * n), magnitudes = values
        for item in 0..<batch {
            for row in 0..<n {
                var sum = 0.0, magnitude = 0.0
                for inner in 0..<k {
                    let product = Double(inputs[item * k + inner]) * Double(dequantized[row * k + inner])
                    sum += product
                    magnitude += abs(product)
                }
                values[item * n + row] = sum
                magnitudes[item * n + row] = magnitude
            }
        }
        return (values, magnitudes)
    }

    static func check(_ weights: GGUFTensor, batch: Int, seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        let k = weights.info.rowLength, n = weights.info.rowCount
        let inputs = (0 ..< batch * k).map { _ in Float.random(in: -1...1, using: &generator) }
        let (expected, magnitudes) = try reference(weights, inputs, batch: batch)
        let packs = PackedMatrix.canPack(weights)
        let matrix = try WeightMatrix(weights, packing: packs)
        for strategy in MatrixMultiplication.Strategy.allCases where strategy != .packed || packs {
            var output = [Float](repeating: .nan, count: batch * n)
            try inputs.withUnsafeBufferPointer { input in
                try output.withUnsafeMutableBufferPointer { result in
                    try MatrixMultiplication.multiply(matrix, inputs: input, batch: batch, into: result, threadCount: 2, strategy: strategy)
                }
            }
            for index in output.indices {
                // Integer kernels see inputs quantized to 8 bits (relative error ≤ 1/254 per term,
                // plus fp16 scales); BLAS tiles see them exactly.
                let exact = strategy == .blasTiles || ActivationVector.Format(for: weights.type) == .float
                let tolerance = (exact ? 1e-5 : 1.0 / 127) * magnitudes[index] + 1e-5
                #expect(abs(Double(output[index]) - expected[index]) <= tolerance,
                        "\(weights.type) \(strategy) element \(index): \(output[index]) vs \(expected[index])")
            }
        }
    }

    @Test(arguments: [GGMLType.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .mxfp4, .q3_K, .q4_K, .q6_K, .f16])
    func syntheticWeights(type: GGMLType) throws {
        var generator = SplitMix64(seed: UInt64(type.rawValue) &* 31)
        // 300 rows: more than one BLAS tile, and not a multiple of 16 (no packed copy);
        // 272: packed. Batches with and without a tail of fewer than four inputs.
        for (rows, blocks) in [(300, 2), (272, 3)] {
            let rowLength = max(type.blockSize, 32) * blocks
            let data = SyntheticWeights.blocks(type, elements: rowLength * rows, using: &generator)
            let weights = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: rows, data: data)
            for batch in [1, 2, 3, 4, 5, 11, 33] { try Self.check(weights, batch: batch, seed: UInt64(batch)) }
        }
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func realWeights() throws {
        let weights = try GGUFFile(contentsOf: TestModels.smolLM2Path).tensor(named: "blk.3.ffn_up.weight")
        try Self.check(weights, batch: 17, seed: 3)
    }

    /// Products of one input batch computed together (one quantization per activation format,
    /// one dispatch) give exactly the values of the same products computed one by one: two
    /// packed types sharing q8_0 activations, one taking q8_K, and a matrix without a packed
    /// copy (300 rows), over batches with and without tails.
    @Test func productsComputedTogetherEqualSingleProducts() throws {
        var generator = SplitMix64(seed: 77)
        let rowLength = 512
        let matrices = try [(GGMLType.q5_0, 48), (.q8_0, 32), (.q4_K, 64), (.q4_0, 300)].map { type, rows in
            let data = SyntheticWeights.blocks(type, elements: rowLength * rows, using: &generator)
            let tensor = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: rows, data: data)
            return try WeightMatrix(tensor, packing: PackedMatrix.canPack(tensor))
        }
        #expect(matrices.map { $0.packed != nil } == [true, true, true, false])
        for batch in [2, 7, 13, 24] {
            let inputs = (0 ..< batch * rowLength).map { _ in Float.random(in: -1...1, using: &generator) }
            var separate: [[Float]] = []
            for matrix in matrices {
                var output = [Float](repeating: .nan, count: batch * matrix.rowCount)
                try inputs.withUnsafeBufferPointer { input in
                    try output.withUnsafeMutableBufferPointer { result in
                        try MatrixMultiplication.multiply(matrix, inputs: input, batch: batch, into: result, threadCount: 2)
                    }
                }
                separate.append(output)
            }
            let outputs = matrices.map { UnsafeMutableBufferPointer<Float>.allocate(capacity: batch * $0.rowCount) }
            defer { for output in outputs { output.deallocate() } }
            for output in outputs { output.initialize(repeating: .nan) }
            try inputs.withUnsafeBufferPointer { input in
                try MatrixMultiplication.multiply(Array(zip(matrices, outputs)).map { (weights: $0, output: $1) },
                                                  inputs: input, batch: batch, threadCount: 2)
            }
            for (index, output) in outputs.enumerated() {
                #expect(output.map { $0.bitPattern } == separate[index].map { $0.bitPattern },
                        "\(matrices[index].type), batch \(batch)")
            }
        }
    }

    @Test func productsComputedTogetherCheckEverySizeFirst() throws {
        let good = try WeightMatrix(SyntheticWeights.tensor(.q8_0, rowLength: 32, rows: 16, data: Array(repeating: 0, count: 16 * 34)), packing: true)
        let bad = try WeightMatrix(SyntheticWeights.tensor(.q8_0, rowLength: 32, rows: 2, data: Array(repeating: 0, count: 68)))
        let inputs = [Float](repeating: 1, count: 64)
        let first = UnsafeMutableBufferPointer<Float>.allocate(capacity: 32), second = UnsafeMutableBufferPointer<Float>.allocate(capacity: 3)
        defer { first.deallocate(); second.deallocate() }
        first.initialize(repeating: .nan)
        let products = [(weights: good, output: first), (weights: bad, output: second)]
        inputs.withUnsafeBufferPointer { input in
            _ = #expect(throws: KernelError.sizeMismatch(what: "output for 'w' (batch 2)", expected: 4, actual: 3)) {
                try MatrixMultiplication.multiply(products, inputs: input, batch: 2)
            }
        }
        // Nothing was computed: the first product's output is untouched.
        #expect(first.allSatisfy { $0.isNaN })
    }

    @Test func sizesAreChecked() throws {
        let weights = try SyntheticWeights.tensor(.q8_0, rowLength: 32, rows: 2, data: Array(repeating: 0, count: 68))
        let inputs = [Float](repeating: 1, count: 64)
        var output = [Float](repeating: 0, count: 3)
        inputs.withUnsafeBufferPointer { input in
            _ = output.withUnsafeMutableBufferPointer { result in
                #expect(throws: KernelError.sizeMismatch(what: "output for 'w' (batch 2)", expected: 4, actual: 3)) {
                    try MatrixMultiplication.multiply(weights, inputs: input, batch: 2, into: result)
                }
            }
        }
    }
}
