import GGUF
@testable import Kernels
import Testing

/// The kernels' block layouts against GGUF's type table (an independent spelling: the one the
/// file reader sizes tensors with) and against themselves.
@Suite struct BlockLayoutTests {
    @Test func sizesMatchTheTypeTable() {
        #expect(BlockLayout.byteCounts.count == 11)
        for (type, byteCount) in BlockLayout.byteCounts {
            #expect(byteCount == type.blockByteCount, "\(type)")
        }
    }

    /// Each layout's fields, in order, tile its block exactly: (offset, size) pairs.
    @Test func fieldsTileEachBlock() {
        typealias L = BlockLayout
        let layouts: [(GGMLType, [(offset: Int, size: Int)])] = [
            (.q4_0, [(L.Q4_0.scale, 2), (L.Q4_0.codes, 16)]),
            (.q4_1, [(L.Q4_1.scale, 2), (L.Q4_1.minimum, 2), (L.Q4_1.codes, 16)]),
            (.q5_0, [(L.Q5_0.scale, 2), (L.Q5_0.fifthBits, 4), (L.Q5_0.codes, 16)]),
            (.q5_1, [(L.Q5_1.scale, 2), (L.Q5_1.minimum, 2), (L.Q5_1.fifthBits, 4), (L.Q5_1.codes, 16)]),
            (.q8_0, [(L.Q8_0.scale, 2), (L.Q8_0.codes, 32)]),
            (.mxfp4, [(L.MXFP4.exponent, 1), (L.MXFP4.codes, 16)]),
            (.q2_K, [(L.Q2_K.scales, 16), (L.Q2_K.codes, 64), (L.Q2_K.scale, 2), (L.Q2_K.minimumScale, 2)]),
            (.q3_K, [(L.Q3_K.highBits, 32), (L.Q3_K.codes, 64), (L.Q3_K.scales, 12), (L.Q3_K.scale, 2)]),
            (.q4_K, [(L.Q4_K.scale, 2), (L.Q4_K.minimumScale, 2), (L.Q4_K.scales, 12), (L.Q4_K.codes, 128)]),
            (.q5_K, [(L.Q5_K.scale, 2), (L.Q5_K.minimumScale, 2), (L.Q5_K.scales, 12), (L.Q5_K.fifthBits, 32), (L.Q5_K.codes, 128)]),
            (.q6_K, [(L.Q6_K.lowBits, 128), (L.Q6_K.highBits, 64), (L.Q6_K.scales, 16), (L.Q6_K.scale, 2)]),
        ]
        #expect(layouts.count == BlockLayout.byteCounts.count)
        for (type, fields) in layouts {
            var end = 0
            for field in fields {
                #expect(field.offset == end, "\(type): a field at \(field.offset), expected \(end)")
                end = field.offset + field.size
            }
            #expect(end == type.blockByteCount, "\(type)")
        }
    }
}
