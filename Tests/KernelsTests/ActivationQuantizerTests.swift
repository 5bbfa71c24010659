@testable import Kernels
import Testing
import TypesetTestSupport

/// The vector activation quantizers against the scalar references beside them (ggml's C,
/// read line by line), on inputs that reach their edges: ties after scaling, zeros, one
/// extreme value in a block, the largest magnitude repeated with both signs, an infinity and
/// a NaN (which a broken model's activations can hold: no trap, the reference's codes).
@Suite struct ActivationQuantizerTests {
    /// Blocks of `size` values: random ones, and blocks built to hit the rounding's ties and
    /// the choice of `max`.
    static func blocks(size: Int, count: Int, seed: UInt64) -> [[Float]] {
        var generator = SplitMix64(seed: seed)
        var blocks: [[Float]] = []
        for index in 0 ..< count {
            var block = (0 ..< size).map { _ in Float.random(in: -4 ... 4, using: &generator) }
            switch index % 8 {
            case 1: block = block.map { ($0 * 8).rounded() / 8 }                    // many exact ties after × 127 / amax
            case 2: block = [Float](repeating: 0, count: size)
            case 3: block[Int.random(in: 0 ..< size, using: &generator)] = -50        // one extreme value
            case 4:                                                                    // amax twice, with both signs
                let magnitude: Float = 7
                block[size / 3] = magnitude
                block[size / 2] = -magnitude
            case 5: block = block.map { $0 * 1e-30 }                                   // tiny values
            case 6: block[Int.random(in: 0 ..< size, using: &generator)] = index % 16 == 6 ? -.infinity : .infinity
            case 7: block[Int.random(in: 0 ..< size, using: &generator)] = .nan
            default: break
            }
            blocks.append(block)
        }
        return blocks
    }

    @Test func q8_0MatchesTheScalarReference() {
        for (index, block) in Self.blocks(size: 32, count: 600, seed: 21).enumerated() {
            var vector = [Int8](repeating: 0, count: 32), scalar = vector
            let (vectorScale, vectorSum) = block.withUnsafeBufferPointer { x in vector.withUnsafeMutableBufferPointer { _quantizeQ8_0(x.baseAddress!, into: $0.baseAddress!) } }
            let (scalarScale, scalarSum) = block.withUnsafeBufferPointer { x in scalar.withUnsafeMutableBufferPointer { _quantizeQ8_0Scalar(x.baseAddress!, into: $0.baseAddress!) } }
            #expect(vector == scalar, "block \(index)")
            #expect(vectorScale.bitPattern == scalarScale.bitPattern && vectorSum == scalarSum, "block \(index)")
        }
    }

    @Test func q8_KMatchesTheScalarReference() {
        for (index, block) in Self.blocks(size: 256, count: 300, seed: 22).enumerated() {
            var vector = [Int8](repeating: 1, count: 256), scalar = vector
            var vectorSums = [Int32](repeating: 1, count: 16), scalarSums = vectorSums
            let vectorScale = block.withUnsafeBufferPointer { x in
                vector.withUnsafeMutableBufferPointer { codes in
                    vectorSums.withUnsafeMutableBufferPointer { _quantizeQ8_K(x.baseAddress!, into: codes.baseAddress!, sums: $0.baseAddress!) }
                }
            }
            let scalarScale = block.withUnsafeBufferPointer { x in
                scalar.withUnsafeMutableBufferPointer { codes in
                    scalarSums.withUnsafeMutableBufferPointer { _quantizeQ8_KScalar(x.baseAddress!, into: codes.baseAddress!, sums: $0.baseAddress!) }
                }
            }
            #expect(vector == scalar && vectorSums == scalarSums, "block \(index)")
            #expect(vectorScale.bitPattern == scalarScale.bitPattern, "block \(index)")
        }
    }
}
