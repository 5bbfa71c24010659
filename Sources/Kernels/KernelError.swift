import GGUF

/// Why a kernel cannot run on its input.
public enum KernelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The operation is not implemented for this tensor type (for example an IQ type).
    case unsupportedType(GGMLType, operation: String)
    /// Buffers do not match: `expected` bytes or elements were needed, `actual` given.
    case sizeMismatch(what: String, expected: Int, actual: Int)
    /// An element count that is not a whole number of the type's blocks.
    case partialBlock(GGMLType, elementCount: Int)
    /// An ``ActivationVector`` quantized for another weight type (formats by name).
    case activationFormatMismatch(weights: GGMLType, expected: String, actual: String)

    public var description: String {
        switch self {
        case let .unsupportedType(type, operation):
            "\(operation) is not supported for tensor type \(type.name) (id \(type.rawValue))"
        case let .sizeMismatch(what, expected, actual):
            "\(what): expected \(expected), got \(actual)"
        case let .partialBlock(type, count):
            "\(count) elements are not a whole number of \(type.name) blocks of \(type.blockSize)"
        case let .activationFormatMismatch(type, expected, actual):
            "\(type.name) weights take \(expected) activations, got \(actual)"
        }
    }
}
