import GGUF

/// A weight matrix ready for products: the GGUF tensor as mapped and, when the packed
/// kernels cover its type and shape, a ``PackedMatrix`` that the products read instead.
///
/// The packed copy is the same size as the tensor's data; after packing, the mapping's pages
/// of that tensor are only touched again for row lookups (embeddings), so resident memory
/// stays about one copy of the weights.
public struct WeightMatrix: Sendable {
    /// The tensor as stored in the file.
    public let tensor: GGUFTensor
    /// The packed copy the products use, if any.
    public let packed: PackedMatrix?

    /// Prepares `tensor` for products, packing it when `packing` is on and
    /// ``PackedMatrix/canPack(_:)`` holds.
    ///
    /// - Throws: ``KernelError/unsupportedType(_:operation:)`` for a type no product supports.
    public init(_ tensor: GGUFTensor, packing: Bool = true, threadCount: Int = 1) throws(KernelError) {
        guard Dequantization.supportedTypes.contains(tensor.type) else {
            throw .unsupportedType(tensor.type, operation: "matrix products")
        }
        self.tensor = tensor
        packed = packing && PackedMatrix.canPack(tensor) ? try PackedMatrix(tensor, threadCount: threadCount) : nil
    }

    private init(tensor: GGUFTensor, packed: PackedMatrix?) {
        self.tensor = tensor
        self.packed = packed
    }

    /// Rows `range`, sharing these weights (and their packed copy): a prefix of the output
    /// matrix, one expert's matrix of a 3-D tensor.
    ///
    /// - Precondition: `range` is non-empty, within ``rowCount``, its bounds multiples of 16
    ///   when the matrix is packed.
    public func rows(_ range: Range<Int>) -> WeightMatrix {
        WeightMatrix(tensor: tensor.rows(range), packed: packed?.rows(range))
    }

    /// Rows (outputs of a product).
    public var rowCount: Int { tensor.info.rowCount }
    /// Elements per row (inputs of a product).
    public var rowLength: Int { tensor.info.rowLength }
    /// The weight type.
    public var type: GGMLType { tensor.type }
    /// The activation format its products take.
    public var activationFormat: ActivationVector.Format { .init(for: tensor.type) }
}
