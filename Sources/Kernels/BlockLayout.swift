import GGUF

/// The byte layout of each ggml block the kernels read, spelled once: the reference
/// decoders, the row kernels and the repacking take their sizes and field offsets from here,
/// and `BlockLayoutTests` checks every size against GGUF's type table (`GGMLType.blockByteCount`,
/// what the file reader sizes tensors with). Multi-byte fields are little-endian; `d` and `m`
/// are IEEE halves unless noted (ggml-common.h).
///
///     Q4_0   [d 2][qs 16]                                   18 bytes, 32 elements
///     Q4_1   [d 2][m 2][qs 16]                              20
///     Q5_0   [d 2][qh 4][qs 16]                             22
///     Q5_1   [d 2][m 2][qh 4][qs 16]                        24
///     Q8_0   [d 2][qs 32 × int8]                            34
///     MXFP4  [e 1][qs 16]                                   17   (e: E8M0 exponent byte)
///     Q2_K   [scales 16][qs 64][d 2][dmin 2]                84 bytes, 256 elements
///     Q3_K   [hmask 32][qs 64][scales 12][d 2]              110
///     Q4_K   [d 2][dmin 2][scales 12][qs 128]               144
///     Q5_K   [d 2][dmin 2][scales 12][qh 32][qs 128]        176
///     Q6_K   [ql 128][qh 64][scales 16 × int8][d 2]         210
enum BlockLayout {
    enum Q4_0 {
        static var byteCount: Int { 18 }
        static var scale: Int { 0 }
        static var codes: Int { 2 }
    }

    enum Q4_1 {
        static var byteCount: Int { 20 }
        static var scale: Int { 0 }
        static var minimum: Int { 2 }
        static var codes: Int { 4 }
    }

    enum Q5_0 {
        static var byteCount: Int { 22 }
        static var scale: Int { 0 }
        /// 32 fifth bits, bit `i` for element `i`.
        static var fifthBits: Int { 2 }
        static var codes: Int { 6 }
    }

    enum Q5_1 {
        static var byteCount: Int { 24 }
        static var scale: Int { 0 }
        static var minimum: Int { 2 }
        static var fifthBits: Int { 4 }
        static var codes: Int { 8 }
    }

    enum Q8_0 {
        static var byteCount: Int { 34 }
        static var scale: Int { 0 }
        static var codes: Int { 2 }
    }

    /// OCP microscaling FP4 (gpt-oss's experts): a shared power-of-two scale and 32 E2M1
    /// codes, ordered as Q4_0's nibbles.
    enum MXFP4 {
        static var byteCount: Int { 17 }
        /// E8M0: the scale is 2^(e − 127); ggml halves it and doubles the code table.
        static var exponent: Int { 0 }
        static var codes: Int { 1 }
        /// The E2M1 values, doubled (ggml's `kvalues_mxfp4`): code `c` means `values[c]` × ½ × 2^(e − 127).
        static let values: [Int8] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12]
    }

    enum Q2_K {
        static var byteCount: Int { 84 }
        /// Sixteen bytes: low nibble the scale, high nibble the minimum, per 16 elements.
        static var scales: Int { 0 }
        static var codes: Int { 16 }
        static var scale: Int { 80 }
        static var minimumScale: Int { 82 }
    }

    enum Q3_K {
        static var byteCount: Int { 110 }
        static var highBits: Int { 0 }
        static var codes: Int { 32 }
        /// Twelve bytes holding sixteen 6-bit scales.
        static var scales: Int { 96 }
        static var scale: Int { 108 }
    }

    enum Q4_K {
        static var byteCount: Int { 144 }
        static var scale: Int { 0 }
        static var minimumScale: Int { 2 }
        /// Twelve bytes holding eight 6-bit scales and eight 6-bit minimums.
        static var scales: Int { 4 }
        static var codes: Int { 16 }
    }

    enum Q5_K {
        static var byteCount: Int { 176 }
        static var scale: Int { 0 }
        static var minimumScale: Int { 2 }
        static var scales: Int { 4 }
        static var fifthBits: Int { 16 }
        static var codes: Int { 48 }
    }

    enum Q6_K {
        static var byteCount: Int { 210 }
        /// 128 bytes of low nibbles.
        static var lowBits: Int { 0 }
        /// 64 bytes of high bit pairs.
        static var highBits: Int { 128 }
        /// Sixteen int8 scales, one per 16 elements.
        static var scales: Int { 192 }
        static var scale: Int { 208 }
    }

    /// Each layout's size, by type, for the test against GGUF's table.
    static let byteCounts: [GGMLType: Int] = [
        .q4_0: Q4_0.byteCount, .q4_1: Q4_1.byteCount, .q5_0: Q5_0.byteCount, .q5_1: Q5_1.byteCount,
        .q8_0: Q8_0.byteCount, .mxfp4: MXFP4.byteCount, .q2_K: Q2_K.byteCount, .q3_K: Q3_K.byteCount, .q4_K: Q4_K.byteCount,
        .q5_K: Q5_K.byteCount, .q6_K: Q6_K.byteCount,
    ]
}
