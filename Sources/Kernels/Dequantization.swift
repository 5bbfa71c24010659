import GGUF

/// Decoding GGUF tensor data to `Float`.
///
/// Supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
/// Results are bit-exact with gguf-py's `gguf.quants.dequantize` (tested on every tensor of
/// both real models and on synthetic blocks of every type). Other types throw
/// ``KernelError/unsupportedType(_:operation:)``.
public enum Dequantization {
    /// The types this module can decode: those with a reference decoder.
    public static let supportedTypes: Set<GGMLType> = Set(GGMLType.allCases.filter { referenceDecoder(for: $0) != nil })

    typealias BlockDecoder = (UnsafeRawPointer, UnsafeMutablePointer<Float>) -> Void

    /// The scalar reference decoder of one block of `type`, or `nil` when unsupported.
    static func referenceDecoder(for type: GGMLType) -> BlockDecoder? {
        switch type {
        case .f32: _dequantizeF32Reference
        case .f16: _dequantizeF16Reference
        case .bf16: _dequantizeBF16Reference
        case .q4_0: _dequantizeQ4_0Reference
        case .q4_1: _dequantizeQ4_1Reference
        case .q5_0: _dequantizeQ5_0Reference
        case .q5_1: _dequantizeQ5_1Reference
        case .q8_0: _dequantizeQ8_0Reference
        case .mxfp4: _dequantizeMXFP4Reference
        case .q2_K: _dequantizeQ2_KReference
        case .q3_K: _dequantizeQ3_KReference
        case .q4_K: _dequantizeQ4_KReference
        case .q5_K: _dequantizeQ5_KReference
        case .q6_K: _dequantizeQ6_KReference
        default: nil
        }
    }

    /// Decodes `output.count` elements of `type` from `source`, which must hold exactly that
    /// many elements' blocks.
    ///
    /// - Complexity: O(`output.count`); no allocation.
    public static func dequantize(
        _ type: GGMLType, from source: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<Float>
    ) throws(KernelError) {
        guard let decode = referenceDecoder(for: type) else {
            throw .unsupportedType(type, operation: "dequantization")
        }
        guard let byteCount = type.byteCount(elementCount: output.count) else {
            throw .partialBlock(type, elementCount: output.count)
        }
        guard source.count == byteCount else {
            throw .sizeMismatch(what: "\(type.name) bytes for \(output.count) elements", expected: byteCount, actual: source.count)
        }
        guard let input = source.baseAddress, let destination = output.baseAddress else { return }
        _decodeBlocks(0 ..< output.count / type.blockSize, of: type, with: decode, from: input, into: destination)
    }

    /// Decodes blocks `blocks` of a run of `type` blocks starting at `source` into the
    /// matching elements of `destination`. Callers have checked the sizes.
    static func _decodeBlocks(
        _ blocks: Range<Int>, of type: GGMLType, with decode: BlockDecoder,
        from source: UnsafeRawPointer, into destination: UnsafeMutablePointer<Float>
    ) {
        for block in blocks {
            decode(source + block * type.blockByteCount, destination + block * type.blockSize)
        }
    }

    /// Decodes the whole tensor into a new array (`info.elementCount` floats, row-major).
    public static func dequantize(_ tensor: GGUFTensor) throws(KernelError) -> [Float] {
        var values = [Float](repeating: 0, count: tensor.info.elementCount)
        try values.withUnsafeMutableBufferPointer { (buffer) throws(KernelError) in
            try dequantize(tensor.type, from: tensor.bytes, into: buffer)
        }
        return values
    }

    /// Decodes row `index` of a tensor into `output` (`info.rowLength` floats).
    public static func dequantizeRow(
        _ index: Int, of tensor: GGUFTensor, into output: UnsafeMutableBufferPointer<Float>
    ) throws(KernelError) {
        guard index >= 0, index < tensor.info.rowCount else {
            throw .sizeMismatch(what: "row index of '\(tensor.name)'", expected: tensor.info.rowCount, actual: index)
        }
        guard output.count == tensor.info.rowLength else {
            throw .sizeMismatch(what: "row buffer for '\(tensor.name)'", expected: tensor.info.rowLength, actual: output.count)
        }
        try dequantize(tensor.type, from: tensor.row(index), into: output)
    }
}
