/// A ggml tensor element type, identified in GGUF files by its numeric id.
///
/// Quantized types store elements in fixed-size blocks: ``blockSize`` elements occupy
/// ``blockByteCount`` bytes. The sizes below are those of ggml's block structs
/// (`ggml-common.h`); a tensor row must hold a whole number of blocks.
///
/// Every type ggml currently defines is named here, including those Typeset cannot yet compute
/// with (the IQ and ternary families): the reader can still index, size and map such tensors.
/// Ids that ggml has retired (4, 5, 31–33, 36–38) are reported as
/// ``GGUFError/removedTensorType(_:name:tensor:offset:)``.
public enum GGMLType: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    case f32 = 0
    case f16 = 1
    case q4_0 = 2
    case q4_1 = 3
    case q5_0 = 6
    case q5_1 = 7
    case q8_0 = 8
    case q8_1 = 9
    case q2_K = 10
    case q3_K = 11
    case q4_K = 12
    case q5_K = 13
    case q6_K = 14
    case q8_K = 15
    case iq2_XXS = 16
    case iq2_XS = 17
    case iq3_XXS = 18
    case iq1_S = 19
    case iq4_NL = 20
    case iq3_S = 21
    case iq2_S = 22
    case iq4_XS = 23
    case i8 = 24
    case i16 = 25
    case i32 = 26
    case i64 = 27
    case f64 = 28
    case iq1_M = 29
    case bf16 = 30
    case tq1_0 = 34
    case tq2_0 = 35
    case mxfp4 = 39
    case nvfp4 = 40
    case q1_0 = 41

    /// The ggml name, as gguf-py and llama.cpp print it (`Q4_K`, `BF16`, `IQ2_XXS`).
    public var name: String {
        switch self {
        case .f32: "F32"
        case .f16: "F16"
        case .q4_0: "Q4_0"
        case .q4_1: "Q4_1"
        case .q5_0: "Q5_0"
        case .q5_1: "Q5_1"
        case .q8_0: "Q8_0"
        case .q8_1: "Q8_1"
        case .q2_K: "Q2_K"
        case .q3_K: "Q3_K"
        case .q4_K: "Q4_K"
        case .q5_K: "Q5_K"
        case .q6_K: "Q6_K"
        case .q8_K: "Q8_K"
        case .iq2_XXS: "IQ2_XXS"
        case .iq2_XS: "IQ2_XS"
        case .iq3_XXS: "IQ3_XXS"
        case .iq1_S: "IQ1_S"
        case .iq4_NL: "IQ4_NL"
        case .iq3_S: "IQ3_S"
        case .iq2_S: "IQ2_S"
        case .iq4_XS: "IQ4_XS"
        case .i8: "I8"
        case .i16: "I16"
        case .i32: "I32"
        case .i64: "I64"
        case .f64: "F64"
        case .iq1_M: "IQ1_M"
        case .bf16: "BF16"
        case .tq1_0: "TQ1_0"
        case .tq2_0: "TQ2_0"
        case .mxfp4: "MXFP4"
        case .nvfp4: "NVFP4"
        case .q1_0: "Q1_0"
        }
    }

    public var description: String { name }

    /// Elements per block (1 for plain scalar types).
    public var blockSize: Int {
        switch self {
        case .f32, .f16, .bf16, .f64, .i8, .i16, .i32, .i64: 1
        case .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q8_1, .iq4_NL, .mxfp4: 32
        case .nvfp4: 64
        case .q1_0: 128
        case .q2_K, .q3_K, .q4_K, .q5_K, .q6_K, .q8_K,
             .iq2_XXS, .iq2_XS, .iq3_XXS, .iq1_S, .iq3_S, .iq2_S, .iq4_XS, .iq1_M,
             .tq1_0, .tq2_0: 256
        }
    }

    /// Bytes per block, equal to `sizeof` the corresponding ggml block struct.
    public var blockByteCount: Int {
        switch self {
        case .f32: 4
        case .f16, .bf16: 2
        case .f64: 8
        case .i8: 1
        case .i16: 2
        case .i32: 4
        case .i64: 8
        case .q4_0: 18     // f16 d, 16 bytes of nibbles
        case .q4_1: 20     // f16 d, f16 m, 16 bytes of nibbles
        case .q5_0: 22     // f16 d, 4 bytes of high bits, 16 bytes of nibbles
        case .q5_1: 24     // f16 d, f16 m, 4 bytes of high bits, 16 bytes of nibbles
        case .q8_0: 34     // f16 d, 32 int8
        case .q8_1: 36     // f16 d, f16 s (= d * sum), 32 int8. (gguf-py's table says 40, from an older f32 layout.)
        case .q2_K: 84     // 16 scale bytes, 64 bytes of 2-bit quants, f16 d, f16 dmin
        case .q3_K: 110    // 32 bytes high-bit mask, 64 bytes of 2-bit quants, 12 scale bytes, f16 d
        case .q4_K: 144    // f16 d, f16 dmin, 12 scale bytes, 128 bytes of nibbles
        case .q5_K: 176    // f16 d, f16 dmin, 12 scale bytes, 32 bytes high bits, 128 bytes of nibbles
        case .q6_K: 210    // 128 bytes low nibbles, 64 bytes high 2 bits, 16 int8 scales, f16 d
        case .q8_K: 292    // f32 d, 256 int8, 16 int16 block sums
        case .iq2_XXS: 66
        case .iq2_XS: 74
        case .iq3_XXS: 98
        case .iq1_S: 50
        case .iq4_NL: 18
        case .iq3_S: 110
        case .iq2_S: 82
        case .iq4_XS: 136
        case .iq1_M: 56
        case .tq1_0: 54
        case .tq2_0: 66
        case .mxfp4: 17
        case .nvfp4: 36
        case .q1_0: 18
        }
    }

    /// Whether elements are stored in multi-element blocks with shared scales.
    public var isQuantized: Bool { blockSize > 1 }

    /// The number of bytes `elementCount` elements occupy, or `nil` when `elementCount` is not
    /// a whole number of blocks or the size overflows `Int`.
    public func byteCount(elementCount: Int) -> Int? {
        guard elementCount >= 0, elementCount % blockSize == 0 else { return nil }
        let (bytes, overflow) = (elementCount / blockSize).multipliedReportingOverflow(by: blockByteCount)
        return overflow ? nil : bytes
    }

    /// The ids ggml once used and has since removed, with their old names.
    public static let removedTypeNames: [UInt32: String] = [
        4: "Q4_2", 5: "Q4_3",
        31: "Q4_0_4_4", 32: "Q4_0_4_8", 33: "Q4_0_8_8",
        36: "IQ4_NL_4_4", 37: "IQ4_NL_4_8", 38: "IQ4_NL_8_8",
    ]
}
