import GGUF

/// Random weight tensors of any supported type, for tests and benchmarks: random encoded
/// blocks whose f16 scale fields are replaced with small finite values (MXFP4's exponent
/// bytes with 2⁻⁹ … 2⁻¹, gpt-oss's range), so every decoded value is finite and products stay
/// moderate.
public enum SyntheticWeights {
    /// Byte offsets of the f16 scale fields in one block of each quantized type.
    public static let halfFieldOffsets: [GGMLType: [Int]] = [
        .q4_0: [0], .q4_1: [0, 2], .q5_0: [0], .q5_1: [0, 2], .q8_0: [0],
        .q2_K: [80, 82], .q3_K: [108], .q4_K: [0, 2], .q5_K: [0, 2], .q6_K: [208],
    ]

    /// `elements` values of `type` (a whole number of blocks), encoded.
    public static func blocks(_ type: GGMLType, elements: Int, using generator: inout some RandomNumberGenerator) -> [UInt8] {
        switch type {
        case .f32:
            return (0..<elements).flatMap { _ in
                withUnsafeBytes(of: Float.random(in: -1...1, using: &generator).bitPattern.littleEndian) { Array($0) }
            }
        case .f16, .bf16:
            return (0..<elements).flatMap { _ -> [UInt8] in
                let value = Float.random(in: -1...1, using: &generator)
                let bits = type == .bf16 ? UInt16(value.bitPattern >> 16) : Float16(value).bitPattern
                return [UInt8(bits & 0xFF), UInt8(bits >> 8)]
            }
        default:
            let blockCount = elements / type.blockSize
            var bytes = [UInt8](repeating: 0, count: blockCount * type.blockByteCount)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
            for block in 0..<blockCount {
                if type == .mxfp4 { bytes[block * type.blockByteCount] = UInt8.random(in: 118...126, using: &generator) }
                for offset in halfFieldOffsets[type] ?? [] {
                    let bits = Float16(Float.random(in: -0.05...0.05, using: &generator)).bitPattern
                    bytes[block * type.blockByteCount + offset] = UInt8(bits & 0xFF)
                    bytes[block * type.blockByteCount + offset + 1] = UInt8(bits >> 8)
                }
            }
            return bytes
        }
    }

    /// A one-tensor in-memory GGUF file holding `rows` rows of `rowLength` random values.
    public static func tensor(_ type: GGMLType, rowLength: Int, rows: Int, seed: UInt64) throws -> GGUFTensor {
        var generator = SplitMix64(seed: seed)
        return try tensor(type, rowLength: rowLength, rows: rows, data: blocks(type, elements: rowLength * rows, using: &generator))
    }

    /// A one-tensor in-memory GGUF file holding `data`.
    public static func tensor(_ type: GGMLType, rowLength: Int, rows: Int, data: [UInt8]) throws -> GGUFTensor {
        var writer = GGUFWriter()
        try writer.addTensor(name: "w", shape: [rowLength, rows], type: type, data: data)
        return try GGUFFile(bytes: try writer.encoded()).tensor(named: "w")
    }
}
