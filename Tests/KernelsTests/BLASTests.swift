import Kernels
import Testing

@Suite struct BLASTests {
    /// The naive triple loop, in Double, as the reference.
    static func reference(m: Int, n: Int, k: Int, a: [Float], b: [Float]) -> [Double] {
        var c = [Double](repeating: 0, count: m * n)
        for row in 0..<m {
            for column in 0..<n {
                var sum = 0.0
                for inner in 0..<k { sum += Double(a[row * k + inner]) * Double(b[column * k + inner]) }
                c[row * n + column] = sum
            }
        }
        return c
    }

    @Test(arguments: [(1, 1, 1), (1, 576, 64), (7, 13, 33), (32, 96, 576), (128, 64, 640), (3, 5, 0)])
    func multiplyTransposedMatchesReference(shape: (Int, Int, Int)) {
        let (m, n, k) = shape
        var generator = SystemRandomNumberGenerator()
        let a = (0..<m * k).map { _ in Float.random(in: -1...1, using: &generator) }
        let b = (0..<n * k).map { _ in Float.random(in: -1...1, using: &generator) }
        var c = [Float](repeating: .nan, count: m * n)
        BLAS.multiplyTransposed(m: m, n: n, k: k, a: a, b: b, c: &c)
        let expected = Self.reference(m: m, n: n, k: k, a: a, b: b)
        for index in c.indices {
            // Single-precision accumulation over k terms of magnitude <= 1.
            #expect(abs(Double(c[index]) - expected[index]) <= 1e-5 * Double(max(k, 1)), "element \(index)")
        }
    }

    @Test func alphaAndBetaAccumulate() {
        let a: [Float] = [1, 2, 3, 4]          // 2 × 2
        let b: [Float] = [1, 0, 0, 1, 1, 1]    // 3 × 2
        var c: [Float] = [1, 1, 1, 1, 1, 1]    // 2 × 3
        BLAS.multiplyTransposed(m: 2, n: 3, k: 2, a: a, b: b, c: &c, alpha: 2, beta: 0.5)
        #expect(c == [2.5, 4.5, 6.5, 6.5, 8.5, 14.5])
    }
}
