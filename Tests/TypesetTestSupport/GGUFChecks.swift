import GGUF
import Kernels
import Models

/// Shared checkers for hostile-input tests and the fuzzer.
public enum GGUFChecks {
    /// The byte offset an error reports, when it reports one.
    public static func offset(of error: GGUFError) -> Int? {
        switch error {
        case let .truncated(_, offset, _, _), let .countExceedsFile(_, _, _, offset, _),
             let .invalidUTF8(_, offset), let .unknownValueType(_, _, offset), let .arrayNestingTooDeep(_, offset),
             let .duplicateKey(_, offset), let .invalidAlignment(_, offset), let .duplicateTensorName(_, offset),
             let .unknownTensorType(_, _, offset), let .removedTensorType(_, _, _, offset),
             let .tooManyDimensions(_, _, offset), let .invalidShape(_, _, _, offset), let .misalignedTensor(_, _, _, offset):
            return offset
        case .badMagic, .unsupportedVersion, .bigEndianFile:
            return 0
        default:
            return nil
        }
    }

    /// Replacement values tried at each byte position: zero, all ones, the high bit flipped,
    /// off by one either way.
    public static func mutations(of byte: UInt8) -> [UInt8] {
        Array(Set([0x00, 0xFF, byte ^ 0x80, byte &+ 1, byte &- 1]).subtracting([byte])).sorted()
    }

    public enum Outcome { case accepted, rejected(GGUFError) }

    /// Parses `bytes`; when the parse succeeds, touches everything a consumer could touch
    /// (every array element, every tensor's first and last byte, every typed accessor), so a
    /// validation gap would trap here instead of in a user's program.
    public static func parseAndExercise(_ bytes: [UInt8]) -> Outcome {
        let file: GGUFFile
        do {
            file = try GGUFFile(bytes: bytes)
        } catch {
            return .rejected(error)
        }
        exercise(file, deep: true)
        return .accepted
    }

    /// Touches every part of a parsed file. `deep` decodes every element of every array;
    /// otherwise arrays longer than 4,096 elements are walked without decoding (string bytes,
    /// raw floats), which reads the same memory at a fraction of the cost.
    public static func exercise(_ file: GGUFFile, deep: Bool) {
        var checksum = 0
        for entry in file.metadata {
            checksum &+= entry.key.utf8.count
            guard case let .array(array) = entry.value else { continue }
            if deep || array.count <= 4096 {
                checksum &+= walk(array)
            } else {
                array.forEachStringBytes { _, bytes in checksum &+= bytes.count }
                checksum &+= array.floats()?.last.map { Int($0.bitPattern) } ?? 0
            }
        }
        _ = try? file.metadata.architecture
        _ = try? file.metadata.hyperparameters.contextLength
        _ = try? file.metadata.tokenizer.scores
        _ = try? file.metadata.tokenizer.tokenTypes
        for tensor in file.tensors where tensor.bytes.count > 0 {
            checksum &+= Int(tensor.bytes[0]) &+ Int(tensor.bytes[tensor.bytes.count - 1])
            if tensor.info.rowCount > 0 { checksum &+= tensor.row(tensor.info.rowCount - 1).count }
        }
        precondition(checksum != Int.min)
    }

    /// What loading `file` as a model reads: its configuration (every key validated), every
    /// weight's name, shape and type (experts' counts and 3-D tensors included), and the first
    /// and last rows of every tensor of a type the kernels decode (MXFP4's exponent bytes among
    /// them). A file that is not a model is refused with a typed error; none may trap.
    public static func exerciseAsModel(_ file: GGUFFile) {
        _ = try? TransformerModel(file: file, packsWeights: false)
        var checksum: Float = 0
        for tensor in file.tensors where Dequantization.supportedTypes.contains(tensor.type)
            && tensor.info.rowCount > 0 && tensor.info.rowLength <= 1 << 16 {
            var row = [Float](repeating: 0, count: tensor.info.rowLength)
            for index in Set([0, tensor.info.rowCount - 1]) {
                row.withUnsafeMutableBufferPointer { buffer in
                    try? Dequantization.dequantizeRow(index, of: tensor, into: buffer)
                }
                checksum += row.first ?? 0
            }
        }
        precondition(!checksum.isSignalingNaN)
    }

    private static func walk(_ array: GGUFArray) -> Int {
        var total = 0
        for element in array {
            switch element {
            case let .array(inner): total &+= walk(inner)
            case let .string(string): total &+= string.utf8.count
            default: total &+= 1
            }
        }
        array.forEachStringBytes { _, bytes in total &+= bytes.count }
        total &+= array.integers()?.count ?? 0
        total &+= array.floats()?.count ?? 0
        return total
    }
}
