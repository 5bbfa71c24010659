import Foundation
import GGUF
import Kernels
import Testing
import TypesetTestSupport

/// Against ggml itself: what llama.cpp's CPU library computes, recorded by
/// `Fixtures/make_kernel_fixtures.py` (ctypes calls into llama-cpp-python 0.3.36's
/// libggml-cpu): activation quantization bit for bit, and dot products of real weight rows.
@Suite struct GGMLParityTests {
    static var fixture: [String: Any] {
        guard let data = try? Fixtures.data("kernels/ggml.json"),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }

    static func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.utf8.count / 2)
        var iterator = hex.utf8.makeIterator()
        func nibble(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : c - 48 }
        while let high = iterator.next(), let low = iterator.next() { bytes.append(nibble(high) << 4 | nibble(low)) }
        return bytes
    }

    static func floats(_ values: Any) -> [Float] { (values as! [NSNumber]).map { $0.floatValue } }

    @Test(arguments: [ActivationVector.Format.q8_0, .q8_1, .q8_K])
    func quantizationIsBitExact(format: ActivationVector.Format) throws {
        let cases = try #require((Self.fixture["quantize"] as? [String: Any])?[format.rawValue] as? [[String: Any]])
        for (index, testCase) in cases.enumerated() {
            let values = Self.floats(testCase["values"]!)
            let expected = Self.bytes(testCase["bytes"] as! String)
            let ours = ActivationVector(values, format: format)
            let blockSize = format.blockSize, blockBytes = format == .q8_K ? 292 : format == .q8_1 ? 36 : 34
            #expect(expected.count == values.count / blockSize * blockBytes)
            var mismatches = 0
            for block in 0 ..< values.count / blockSize {
                let base = block * blockBytes
                func half(_ offset: Int) -> Float { floatFromHalf(UInt16(expected[base + offset]) | UInt16(expected[base + offset + 1]) << 8) }
                let codesStart: Int
                switch format {
                case .q8_0:
                    if ours.scales[block].bitPattern != half(0).bitPattern { mismatches += 1 }
                    codesStart = 2
                case .q8_1:
                    if ours.scales[block].bitPattern != half(0).bitPattern || ours.offsets[block].bitPattern != half(2).bitPattern { mismatches += 1 }
                    codesStart = 4
                default:
                    let scale = Float(bitPattern: UInt32(expected[base]) | UInt32(expected[base + 1]) << 8
                                      | UInt32(expected[base + 2]) << 16 | UInt32(expected[base + 3]) << 24)
                    if ours.scales[block].bitPattern != scale.bitPattern { mismatches += 1 }
                    codesStart = 4
                    for group in 0..<16 {
                        let sum = Int16(bitPattern: UInt16(expected[base + 260 + 2 * group]) | UInt16(expected[base + 261 + 2 * group]) << 8)
                        if ours.sums[16 * block + group] != Int32(sum) { mismatches += 1 }
                    }
                }
                for lane in 0 ..< blockSize where ours.codes[block * blockSize + lane] != Int8(bitPattern: expected[base + codesStart + lane]) {
                    mismatches += 1
                }
            }
            #expect(mismatches == 0, "\(format) case \(index): \(mismatches) differences from ggml")
        }
    }

    /// Real rows against ggml's `vec_dot`: the integer sums are the same, so the results differ
    /// only by the order of float additions (a few ulps of the terms' magnitude).
    @Test func dotProductsMatchGGML() throws {
        let cases = try #require(Self.fixture["dot"] as? [[String: Any]])
        var types = Set<GGMLType>()
        for testCase in cases {
            let type = try #require(GGMLType.allCases.first { $0.name == testCase["type"] as! String })
            let rowLength = testCase["row_length"] as! Int
            let rows = (testCase["rows"] as! [String]).flatMap(Self.bytes)
            let weights = try SyntheticWeights.tensor(type, rowLength: rowLength, rows: 16, data: rows)
            let dequantized = try Dequantization.dequantize(weights)
            // ±inf comes as text (q8_1's fp16 `s` overflows for inputs near 10⁴, in ggml as here).
            let results = (testCase["results"] as! [[Any]]).map { $0.map { ($0 as? NSNumber)?.doubleValue ?? Double($0 as! String)! } }
            for (inputIndex, values) in (testCase["inputs"] as! [Any]).map(Self.floats).enumerated() {
                let input = ActivationVector(values, for: type)
                let activations = input.dequantized()
                for packing in [false, true] {
                    let matrix = try WeightMatrix(weights, packing: packing)
                    #expect(packing == (matrix.packed != nil) || !PackedMatrix.supportedTypes.contains(type))
                    var output = [Float](repeating: .nan, count: 16)
                    try output.withUnsafeMutableBufferPointer { try MatrixVectorProduct.multiply(matrix, by: input, into: $0, threadCount: 2) }
                    for row in 0..<16 {
                        var magnitude = 0.0
                        for lane in 0..<rowLength {
                            magnitude += abs(Double(dequantized[row * rowLength + lane]) * Double(activations[lane]))
                        }
                        let expected = results[row][inputIndex]
                        guard expected.isFinite else {
                            #expect(Double(output[row]) == expected, "\(type) row \(row) input \(inputIndex): ggml overflows to \(expected)")
                            continue
                        }
                        #expect(abs(Double(output[row]) - expected) <= 4e-6 * magnitude + 1e-6,
                                "\(type) (\(testCase["tensor"]!)) row \(row) input \(inputIndex) packed \(packing): \(output[row]) vs ggml \(expected)")
                    }
                }
            }
            types.insert(type)
        }
        #expect(types == [.q4_0, .q4_1, .q5_0, .q8_0, .q4_K, .q6_K, .mxfp4])
    }
}
