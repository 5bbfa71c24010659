@testable import Kernels
import Testing
import TypesetTestSupport

/// `indexOfLargest` against the one-pass scalar reference beside it, on lengths around the
/// sixteen-lane chunks and on the values that make a maximum tricky: ties, NaNs, infinities,
/// signed zeros, a vocabulary masked to −∞.
@Suite struct LargestValueTests {
    static func values(count: Int, kind: Int, generator: inout SplitMix64) -> [Float] {
        var values = (0 ..< count).map { _ in Float.random(in: -8 ... 8, using: &generator) }
        guard count > 0 else { return values }
        func anyIndex() -> Int { Int.random(in: 0 ..< count, using: &generator) }
        switch kind {
        case 1: values = values.map { $0.rounded() }                                  // many ties
        case 2: for _ in 0 ..< 1 + count / 8 { values[anyIndex()] = .nan }             // NaNs among them
        case 3: values = [Float](repeating: -.infinity, count: count)                  // fully masked
        case 4: values = values.map { _ in .nan }                                      // every value NaN
        case 5:                                                                        // masked but a few
            values = [Float](repeating: -.infinity, count: count)
            for _ in 0 ..< 3 { values[anyIndex()] = Float.random(in: -1 ... 1, using: &generator) }
        case 6: values[anyIndex()] = .infinity; values[anyIndex()] = .infinity          // +∞, perhaps twice
        case 7: values = values.map { $0 < 0 ? -0.0 : 0.0 }                            // signed zeros only
        default: break
        }
        return values
    }

    @Test func matchesTheScalarReference() {
        var generator = SplitMix64(seed: 31)
        for count in Array(0 ... 70) + [255, 256, 257, 49_152, 151_936] {
            for kind in 0 ..< 8 {
                let values = Self.values(count: count, kind: kind, generator: &generator)
                let vector = values.withUnsafeBufferPointer(indexOfLargest)
                let scalar = values.withUnsafeBufferPointer(_indexOfLargestScalar)
                #expect(vector == scalar, "count \(count), kind \(kind)")
            }
        }
    }

    @Test func answersAsAPersonWould() {
        #expect([Float]().withUnsafeBufferPointer(indexOfLargest) == nil)
        #expect([Float](repeating: -.infinity, count: 40).withUnsafeBufferPointer(indexOfLargest) == nil)
        var tied = [Float](repeating: 0, count: 40)
        tied[17] = 3; tied[33] = 3
        #expect(tied.withUnsafeBufferPointer(indexOfLargest) == 17)
        tied[2] = .nan
        #expect(tied.withUnsafeBufferPointer(indexOfLargest) == 17)
    }
}
