/// What a GGUF file says about one tensor.
///
/// `shape` is in ggml order: `shape[0]` is the number of elements in a row (the fastest-varying
/// dimension), so a `[576, 1536]` matrix has 1,536 rows of 576 elements. This is the order
/// gguf-py's reader reports and the reverse of NumPy's.
public struct GGUFTensorInfo: Sendable, Equatable {
    /// ggml tensors have at most four dimensions.
    public static let maximumDimensions = 4

    public let name: String
    public let shape: [Int]
    public let type: GGMLType
    /// Offset of the tensor's bytes from the start of the data section, as stored in the file.
    public let dataOffset: Int
    /// Offset of the tensor's bytes from the start of the file.
    public let fileOffset: Int
    /// Product of `shape` (1 for a zero-dimensional tensor).
    public let elementCount: Int
    /// Bytes the tensor occupies: `elementCount / type.blockSize * type.blockByteCount`.
    public let byteCount: Int

    /// Elements per row (`shape[0]`), 1 for a zero-dimensional tensor.
    public var rowLength: Int { shape.first ?? 1 }
    /// Number of rows: `elementCount / rowLength` (0 when a dimension is 0).
    public var rowCount: Int { rowLength == 0 ? 0 : elementCount / rowLength }
    /// Bytes per row.
    public var rowByteCount: Int { rowLength / type.blockSize * type.blockByteCount }
}

/// A zero-copy view of one tensor's bytes inside a ``GGUFFile``.
///
/// The view keeps the file's mapping alive, so it stays valid after the `GGUFFile` value that
/// produced it is gone. The bytes are read-only.
public struct GGUFTensor: @unchecked Sendable {
    public let info: GGUFTensorInfo
    /// The tensor's encoded bytes (quantised blocks or plain elements), `info.byteCount` long.
    /// Aligned to the file's `general.alignment` relative to a page-aligned mapping.
    public let bytes: UnsafeRawBufferPointer
    private let owner: FileStorage

    init(info: GGUFTensorInfo, owner: FileStorage) {
        self.info = info
        self.owner = owner
        self.bytes = UnsafeRawBufferPointer(rebasing: owner.bytes[info.fileOffset ..< info.fileOffset + info.byteCount])
    }

    public var name: String { info.name }
    public var type: GGMLType { info.type }
    public var shape: [Int] { info.shape }

    /// Rows `range` of this tensor as a matrix, sharing its bytes (a view of the same name):
    /// the rows of every dimension after the first count in order, so the rows of expert `e`
    /// of a `[width, hidden, experts]` tensor are `e * hidden ..< (e + 1) * hidden`.
    ///
    /// - Precondition: `range` is non-empty and within `0 ..< info.rowCount`.
    public func rows(_ range: Range<Int>) -> GGUFTensor {
        precondition(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= info.rowCount, "rows \(range) of '\(name)'")
        let offset = range.lowerBound * info.rowByteCount
        let slice = GGUFTensorInfo(
            name: info.name, shape: [info.rowLength, range.count], type: info.type, dataOffset: info.dataOffset + offset,
            fileOffset: info.fileOffset + offset, elementCount: info.rowLength * range.count, byteCount: info.rowByteCount * range.count)
        return GGUFTensor(info: slice, owner: owner)
    }

    /// Releases the resident pages of this tensor's data in a memory-mapped file (for a
    /// tensor whose data was copied elsewhere): they are read again from the file if the
    /// tensor is used afterwards, so the view stays valid. No effect on in-memory files.
    public func releaseResidentPages() {
        owner.releasePages(info.fileOffset ..< info.fileOffset + info.byteCount)
    }

    /// Maps this tensor's pages of a memory-mapped file into the process in one call (on
    /// Linux 5.14 and later; elsewhere, and on older kernels, nothing happens and pages fault
    /// in as they are read). For a reader about to stream the whole tensor once.
    public func prefaultPages() {
        owner.prefaultPages(info.fileOffset ..< info.fileOffset + info.byteCount)
    }

    /// ``prefaultPages()`` for the bytes `range` of this tensor's data.
    public func prefaultPages(_ range: Range<Int>) {
        let clamped = range.clamped(to: 0 ..< info.byteCount)
        owner.prefaultPages(info.fileOffset + clamped.lowerBound ..< info.fileOffset + clamped.upperBound)
    }

    /// The bytes of row `index` (`info.rowByteCount` long). Precondition: `index < info.rowCount`.
    public func row(_ index: Int) -> UnsafeRawBufferPointer {
        precondition(index >= 0 && index < info.rowCount, "row \(index) out of 0..<\(info.rowCount)")
        let start = index * info.rowByteCount
        return UnsafeRawBufferPointer(rebasing: bytes[start ..< start + info.rowByteCount])
    }
}
