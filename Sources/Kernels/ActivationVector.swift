/// An input vector prepared for matrix-vector products: its `Float` values, and the same
/// values quantized for integer dot products against quantized weights.
///
/// Quantized layout, in blocks of 32 elements (one block per 32 inputs):
///
///     scales[b]        Float   amax(block) / 127 (0 for an all-zero block)
///     codes[32b ..<]   Int8    round(x / scale), in -127...127
///     halfSums[2b]     Int32   sum of codes 32b ..< 32b+16
///     halfSums[2b+1]   Int32   sum of codes 32b+16 ..< 32b+32
///
/// This is ggml's Q8_0/Q8_1 idea with a `Float` scale and sums per 16, so one format serves
/// every weight type: the 32-element sub-blocks of Q4_K/Q5_K line up with activation blocks,
/// the 16-element groups of Q2_K/Q3_K/Q6_K with half blocks, and the sums carry the
/// `min × Σ activation` terms of types with a minimum (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K).
/// ggml's Q8_K instead uses one scale per 256; per-32 scales cost a few more multiplies per
/// super-block and lose less precision.
///
/// Share one `ActivationVector` between the products that read the same input (the query, key
/// and value projections of a layer).
public struct ActivationVector: Sendable {
    public let values: [Float]
    public let scales: [Float]
    public let codes: [Int8]
    public let halfSums: [Int32]

    /// Elements; a multiple of 32.
    public var count: Int { values.count }

    /// Quantizes `values`. Precondition: `values.count` is a multiple of 32 (every supported
    /// weight type has rows of whole 32-element blocks).
    ///
    /// - Complexity: O(n).
    public init(_ values: [Float]) {
        precondition(values.count % 32 == 0, "activation length \(values.count) is not a multiple of 32")
        let blockCount = values.count / 32
        var scales = [Float](repeating: 0, count: blockCount)
        var codes = [Int8](repeating: 0, count: values.count)
        var halfSums = [Int32](repeating: 0, count: 2 * blockCount)
        for block in 0..<blockCount {
            var amax: Float = 0
            for index in 32 * block ..< 32 * block + 32 { amax = max(amax, abs(values[index])) }
            let scale = amax / 127
            let inverse: Float = scale == 0 ? 0 : 1 / scale
            scales[block] = scale
            for half in 0..<2 {
                var sum: Int32 = 0
                for index in 32 * block + 16 * half ..< 32 * block + 16 * half + 16 {
                    let code = Int8((values[index] * inverse).rounded(.toNearestOrAwayFromZero))
                    codes[index] = code
                    sum += Int32(code)
                }
                halfSums[2 * block + half] = sum
            }
        }
        self.values = values
        self.scales = scales
        self.codes = codes
        self.halfSums = halfSums
    }

    /// The quantized values as floats (`scale × code`), for references and error analysis.
    public func dequantized() -> [Float] {
        codes.indices.map { scales[$0 / 32] * Float(codes[$0]) }
    }
}
