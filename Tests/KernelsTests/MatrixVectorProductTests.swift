import GGUF
import Kernels
import Testing
import TypesetTestSupport

@Suite struct MatrixVectorProductTests {
    /// Checks every row of `weights · input` against the oracle, and against the exact product
    /// with unquantized inputs within the activation quantization's error bound.
    static func check(_ weights: GGUFTensor, _ input: ActivationVector, threads: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
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
            quantizationBound.append(MatrixVectorProduct.hasIntegerFastPath(weights.type) ? bound : 0)
        }
        for threadCount in threads {
            var output = [Float](repeating: .nan, count: rows)
            try output.withUnsafeMutableBufferPointer {
                try MatrixVectorProduct.multiply(weights, by: input, into: $0, threadCount: threadCount)
            }
            for index in 0..<rows {
                let value = Double(output[index])
                #expect(abs(value - expected[index]) <= tolerance[index],
                        "\(weights.type) row \(index), \(threadCount) threads: \(value) vs \(expected[index])", sourceLocation: sourceLocation)
                #expect(abs(value - exact[index]) <= quantizationBound[index] + 2 * tolerance[index],
                        "\(weights.type) row \(index) against the unquantized product", sourceLocation: sourceLocation)
            }
        }
    }

    static let types: [GGMLType] = [.f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K]

    @Test(arguments: types)
    func randomMatricesMatchTheReference(type: GGMLType) throws {
        var generator = SplitMix64(seed: UInt64(type.rawValue) + 1)
        for (blocks, rows) in [(1, 1), (3, 7), (2, 33)] {
            let rowLength = max(type.blockSize, 32) * blocks
            let data = SyntheticWeights.blocks(type, elements: rowLength * rows, using: &generator)
            let weights = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: rows, data: data)
            let input = ActivationVector((0..<rowLength).map { _ in Float.random(in: -2...2, using: &generator) })
            try Self.check(weights, input, threads: [1, 2, 3])
        }
    }

    @Test func activationQuantization() {
        var generator = SplitMix64(seed: 7)
        var values = (0..<96).map { _ in Float.random(in: -3...3, using: &generator) }
        for index in 32..<64 { values[index] = 0 }   // an all-zero block
        values[70] = -5                               // the block's extreme value
        let input = ActivationVector(values)
        #expect(input.scales.count == 3 && input.halfSums.count == 6)
        #expect(input.scales[1] == 0 && input.codes[32..<64].allSatisfy { $0 == 0 })
        #expect(input.codes[70] == -127)
        let dequantized = input.dequantized()
        for index in values.indices {
            #expect(abs(values[index] - dequantized[index]) <= input.scales[index / 32] / 2 * 1.0001)
        }
        for half in 0..<6 {
            #expect(input.halfSums[half] == input.codes[16 * half ..< 16 * half + 16].reduce(0) { $0 + Int32($1) })
        }
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
        let input = ActivationVector((0..<weights.info.rowLength).map { _ in Float.random(in: -1...1, using: &generator) })
        try Self.check(weights, input, threads: [2])
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.gemma3FileName)))
    func realTypesCoverTheFastPaths() throws {
        let file = try GGUFFile(contentsOf: TestModels.gemma3Path)
        var generator = SplitMix64(seed: 12)
        var checked = Set<GGMLType>()
        for tensor in file.tensors where tensor.info.shape.count == 2 && !checked.contains(tensor.type)
            && tensor.info.rowCount <= 4096 && Dequantization.supportedTypes.contains(tensor.type) {
            let input = ActivationVector((0..<tensor.info.rowLength).map { _ in Float.random(in: -1...1, using: &generator) })
            try Self.check(tensor, input, threads: [2])
            checked.insert(tensor.type)
        }
        #expect(checked.isSuperset(of: [.q5_0, .q4_K, .q6_K]))
    }

    @Test func mismatchedShapesAndTypesAreTypedErrors() throws {
        let weights = try SyntheticWeights.tensor(.q8_0, rowLength: 64, rows: 2, data: Array(repeating: 0, count: 136))
        var output = [Float](repeating: 0, count: 2)
        output.withUnsafeMutableBufferPointer { buffer in
            #expect(throws: KernelError.sizeMismatch(what: "input length for 'w'", expected: 64, actual: 32)) {
                try MatrixVectorProduct.multiply(weights, by: ActivationVector(Array(repeating: 1, count: 32)), into: buffer)
            }
            #expect(throws: KernelError.sizeMismatch(what: "output length for 'w'", expected: 2, actual: 1)) {
                try MatrixVectorProduct.multiply(weights, by: ActivationVector(Array(repeating: 1, count: 64)),
                                                 into: UnsafeMutableBufferPointer(rebasing: buffer[0..<1]))
            }
        }
        let iq = try SyntheticWeights.tensor(.iq4_NL, rowLength: 32, rows: 1, data: Array(repeating: 0, count: 18))
        var one = [Float](repeating: 0, count: 1)
        _ = one.withUnsafeMutableBufferPointer { buffer in
            #expect(throws: KernelError.unsupportedType(.iq4_NL, operation: "matrix-vector product")) {
                try MatrixVectorProduct.multiply(iq, by: ActivationVector(Array(repeating: 1, count: 32)), into: buffer)
            }
        }
    }
}
