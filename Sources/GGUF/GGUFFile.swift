/// A parsed GGUF file: header, metadata and tensor table, over memory-mapped bytes.
///
/// Layout of a (little-endian) GGUF file, versions 2 and 3:
///
///     +--------+---------+--------------+----------------+----------------------+-----+------------------+
///     | "GGUF" | version | tensor count | metadata count | metadata key/values  | ... | tensor infos ... |
///     | 4 B    | u32     | u64          | u64            | key: u64 len + bytes |     | name, n_dims u32 |
///     |        |         |              |                | type u32, value      |     | dims u64 × n,    |
///     |        |         |              |                |                      |     | type u32, off u64|
///     +--------+---------+--------------+----------------+----------------------+-----+------------------+
///     | padding to general.alignment (default 32) | tensor data: each tensor at data start + its offset   |
///     +-------------------------------------------+-------------------------------------------------------+
///
/// Opening a file maps it read-only and parses only the header region (metadata and tensor
/// infos); tensor data is never read or copied until a caller reads a ``GGUFTensor`` view.
/// Large metadata arrays are validated but decoded lazily (see ``GGUFArray``).
///
/// Every count, length and offset is validated against the file before it is used, so a
/// corrupt or hostile file produces a ``GGUFError`` that names the problem and its byte offset.
/// The work and memory of parsing are bounded by the file's size, and the number of entries
/// by what a model has (``maximumMetadataEntries``, ``maximumTensors``).
///
/// `GGUFFile` is an immutable value and is `Sendable`; tensor views share one mapping.
public struct GGUFFile: Sendable {
    /// `general.alignment` when the file does not set it.
    public static let defaultAlignment = 32
    /// Arrays of arrays may nest at most this deep.
    public static let maximumArrayNesting = 8
    /// The most metadata entries a file may declare (models have tens; the tokenizer's
    /// vocabulary is one entry, an array).
    public static let maximumMetadataEntries = 65_536
    /// The most tensors a file may declare (the largest mixture-of-experts models have tens of
    /// thousands).
    public static let maximumTensors = 1_000_000

    /// GGUF format version (2 or 3).
    public let version: UInt32
    public let metadata: GGUFMetadata
    /// Tensor infos in file order.
    public let tensorInfos: [GGUFTensorInfo]
    /// Alignment of tensor data in bytes.
    public let alignment: Int
    /// Offset of the data section (the first byte after the header region and its padding).
    public let dataSectionOffset: Int
    /// Size of the whole file in bytes.
    public var fileSize: Int { storage.bytes.count }

    private let storage: FileStorage
    private let tensorIndexByName: [String: Int]

    /// Maps and parses the file at `path`.
    public init(contentsOf path: String) throws(GGUFError) {
        try self.init(storage: FileStorage(mapping: path))
    }

    /// Parses a private copy of `bytes` (for tests and in-memory files).
    public init(bytes: [UInt8]) throws(GGUFError) {
        let storage = bytes.withUnsafeBytes { FileStorage(copying: $0) }
        try self.init(storage: storage)
    }

    /// Parses `bytes` in place, without copying them, and calls `body` with the result.
    ///
    /// For validating large buffers the caller already holds (a fuzzer's input, a mapping
    /// being mutated by a test). The `GGUFFile` and every view derived from it refer to
    /// `bytes` and must not be used after `body` returns.
    public static func withBorrowedBytes<Result>(
        _ bytes: UnsafeRawBufferPointer, _ body: (GGUFFile) throws -> Result
    ) throws -> Result {
        let file = try GGUFFile(storage: FileStorage(borrowing: bytes))
        return try body(file)
    }

    private init(storage: FileStorage) throws(GGUFError) {
        var parser = FileParser(storage: storage)
        let header = try parser.parse()
        self.storage = storage
        self.version = header.version
        self.metadata = header.metadata
        self.tensorInfos = header.tensors
        self.alignment = header.alignment
        self.dataSectionOffset = header.dataSectionOffset
        var index: [String: Int] = [:]
        index.reserveCapacity(header.tensors.count)
        for (position, info) in header.tensors.enumerated() { index[info.name] = position }
        self.tensorIndexByName = index
    }

    // MARK: Tensors

    /// The info of the tensor named `name`, if any. O(1).
    public func tensorInfo(named name: String) -> GGUFTensorInfo? {
        tensorIndexByName[name].map { tensorInfos[$0] }
    }

    /// A zero-copy view of the tensor named `name`.
    public func tensor(named name: String) throws(GGUFError) -> GGUFTensor {
        guard let info = tensorInfo(named: name) else { throw .missingTensor(name) }
        return GGUFTensor(info: info, owner: storage)
    }

    /// Zero-copy views of every tensor, in file order.
    public var tensors: [GGUFTensor] {
        tensorInfos.map { GGUFTensor(info: $0, owner: storage) }
    }

    /// Calls `body` with the whole file's bytes (valid only during the call).
    public func withUnsafeFileBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(storage.bytes)
    }
}

// MARK: - Parsing

/// The header region of a GGUF file, as read by `FileParser`.
struct ParsedHeader {
    var version: UInt32
    var metadata: GGUFMetadata
    var tensors: [GGUFTensorInfo]
    var alignment: Int
    var dataSectionOffset: Int
}

struct FileParser {
    let storage: FileStorage
    var reader: ByteReader

    init(storage: FileStorage) {
        self.storage = storage
        self.reader = ByteReader(storage.bytes)
    }

    mutating func parse() throws(GGUFError) -> ParsedHeader {
        // Magic: the ASCII bytes "GGUF".
        guard reader.remaining >= 4 else {
            if reader.remaining == 0 || Array(reader.bytes) == Array("GGUF".utf8.prefix(reader.remaining)) {
                throw .truncated(what: "magic", offset: 0, needed: 4, available: reader.remaining)
            }
            throw .badMagic(found: Array(reader.bytes))
        }
        let magic = Array(reader.bytes[0..<4])
        guard magic == Array("GGUF".utf8) else { throw .badMagic(found: magic) }
        reader.offset = 4

        let version = try reader.read(UInt32.self, "version")
        switch version {
        case 2, 3: break
        case 2 << 24, 3 << 24: throw .bigEndianFile(version: version)
        default: throw .unsupportedVersion(version)
        }

        let tensorCountOffset = reader.offset
        let tensorCount = try reader.read(UInt64.self, "tensor count")
        let metadataCountOffset = reader.offset
        let metadataCount = try reader.read(UInt64.self, "metadata count")
        // Each entry is at least a key length (8), a value type (4) and a one-byte value;
        // each tensor info at least a name length (8), n_dims (4), type (4) and offset (8).
        try reader.requireFits(count: metadataCount, minimumItemSize: 13, "metadata count", countOffset: metadataCountOffset)
        try reader.requireFits(count: tensorCount, minimumItemSize: 24, "tensor count", countOffset: tensorCountOffset)
        // And by what a model has: a file of twenty million tiny entries is an attack on the
        // reader's memory and time, not a model.
        guard metadataCount <= GGUFFile.maximumMetadataEntries else {
            throw .countExceedsLimit(what: "metadata count", count: metadataCount, limit: GGUFFile.maximumMetadataEntries, offset: metadataCountOffset)
        }
        guard tensorCount <= GGUFFile.maximumTensors else {
            throw .countExceedsLimit(what: "tensor count", count: tensorCount, limit: GGUFFile.maximumTensors, offset: tensorCountOffset)
        }

        // Counts are bounded by the file, but a hostile one can still be far larger than what
        // is really there: reserve modestly and let storage grow with what actually parses.
        var entries: [GGUFMetadataEntry] = []
        entries.reserveCapacity(Self.initialCapacity(metadataCount))
        var seenKeys = Set<String>(minimumCapacity: Self.initialCapacity(metadataCount))
        for entryIndex in 0 ..< Int(metadataCount) {
            let entryOffset = reader.offset
            let key = try reader.readString("key of metadata entry \(entryIndex)")
            guard seenKeys.insert(key).inserted else { throw .duplicateKey(key, offset: entryOffset) }
            let value = try readValue(of: try readValueType("type of '\(key)'"), "value of '\(key)'", depth: 0)
            entries.append(GGUFMetadataEntry(key: key, value: value, offset: entryOffset))
        }
        let metadata = try GGUFMetadata(entries)

        var alignment = GGUFFile.defaultAlignment
        if let entry = entries.first(where: { $0.key == "general.alignment" }) {
            guard case let .uint32(value) = entry.value, value > 0, value & (value - 1) == 0 else {
                throw .invalidAlignment("\(entry.value)", offset: entry.offset)
            }
            alignment = Int(value)
        }

        var tensors: [GGUFTensorInfo] = []
        tensors.reserveCapacity(Self.initialCapacity(tensorCount))
        var seenNames = Set<String>(minimumCapacity: Self.initialCapacity(tensorCount))
        var pending: [PendingTensor] = []
        pending.reserveCapacity(Self.initialCapacity(tensorCount))
        for tensorIndex in 0 ..< Int(tensorCount) {
            let infoOffset = reader.offset
            let tensor = try readTensorInfo(index: tensorIndex, alignment: alignment)
            guard seenNames.insert(tensor.name).inserted else {
                throw .duplicateTensorName(tensor.name, offset: infoOffset)
            }
            pending.append(tensor)
        }

        // The data section starts at the next multiple of the alignment.
        let headerEnd = reader.offset
        let dataSectionOffset = (headerEnd + alignment - 1) / alignment * alignment   // headerEnd <= file size
        let fileSize = reader.bytes.count
        for tensor in pending {
            let available = fileSize >= dataSectionOffset ? UInt64(fileSize - dataSectionOffset) : 0
            let (end, endOverflow) = tensor.dataOffset.addingReportingOverflow(UInt64(tensor.byteCount))
            guard dataSectionOffset <= fileSize, !endOverflow, end <= available else {
                throw .tensorOutOfBounds(tensor: tensor.name, dataOffset: tensor.dataOffset,
                                         byteCount: UInt64(tensor.byteCount),
                                         dataSectionOffset: dataSectionOffset, fileSize: fileSize)
            }
            let dataOffset = Int(tensor.dataOffset)
            tensors.append(GGUFTensorInfo(
                name: tensor.name, shape: tensor.shape, type: tensor.type,
                dataOffset: dataOffset, fileOffset: dataSectionOffset + dataOffset,
                elementCount: tensor.elementCount, byteCount: tensor.byteCount))
        }
        return ParsedHeader(version: version, metadata: metadata, tensors: tensors,
                             alignment: alignment, dataSectionOffset: dataSectionOffset)
    }

    /// Storage reserved up front for `count` items read from the file: all of them when few,
    /// otherwise a first slice (growth is amortised as real items parse).
    static func initialCapacity(_ count: UInt64) -> Int {
        Int(min(count, 4096))
    }

    // MARK: Values

    private mutating func readValueType(_ what: @autoclosure () -> String) throws(GGUFError) -> GGUFValueType {
        let typeOffset = reader.offset
        let raw = try reader.read(UInt32.self, what())
        guard let type = GGUFValueType(rawValue: raw) else {
            throw .unknownValueType(raw, what: what(), offset: typeOffset)
        }
        return type
    }

    private mutating func readValue(of type: GGUFValueType, _ what: @autoclosure () -> String, depth: Int) throws(GGUFError) -> GGUFValue {
        switch type {
        case .uint8: return .uint8(try reader.read(UInt8.self, what()))
        case .int8: return .int8(try reader.read(Int8.self, what()))
        case .uint16: return .uint16(try reader.read(UInt16.self, what()))
        case .int16: return .int16(try reader.read(Int16.self, what()))
        case .uint32: return .uint32(try reader.read(UInt32.self, what()))
        case .int32: return .int32(try reader.read(Int32.self, what()))
        case .float32: return .float32(try reader.readFloat32(what()))
        case .bool: return .bool(try reader.read(UInt8.self, what()) != 0)
        case .uint64: return .uint64(try reader.read(UInt64.self, what()))
        case .int64: return .int64(try reader.read(Int64.self, what()))
        case .float64: return .float64(try reader.readFloat64(what()))
        case .string: return .string(try reader.readString(what()))
        case .array: return .array(try readArray(what(), depth: depth + 1))
        }
    }

    private mutating func readArray(_ what: @autoclosure () -> String, depth: Int) throws(GGUFError) -> GGUFArray {
        guard depth <= GGUFFile.maximumArrayNesting else {
            throw .arrayNestingTooDeep(what: what(), offset: reader.offset)
        }
        let elementType = try readValueType("element type of \(what())")
        let countOffset = reader.offset
        let rawCount = try reader.read(UInt64.self, "element count of \(what())")
        try reader.requireFits(count: rawCount, minimumItemSize: elementType.minimumEncodedSize,
                               "element count of \(what())", countOffset: countOffset)
        let count = Int(rawCount)
        let start = reader.offset
        switch elementType {
        case .array:
            // Each inner array is at least 12 bytes, so `count` is bounded by the file.
            var elements: [GGUFValue] = []
            elements.reserveCapacity(Self.initialCapacity(rawCount))
            for element in 0 ..< count {
                elements.append(.array(try readArray("element \(element) of \(what())", depth: depth + 1)))
            }
            return GGUFArray(decoded: elements, elementType: .array)
        case .string:
            try reader.skipStrings(count: count, what)
        default:
            reader.offset += count * elementType.minimumEncodedSize   // fits: checked above
        }
        return GGUFArray(fileStorage: storage, elementType: elementType, count: count, range: start ..< reader.offset)
    }

    // MARK: Tensor infos

    struct PendingTensor {
        var name: String
        var shape: [Int]
        var type: GGMLType
        var dataOffset: UInt64
        var elementCount: Int
        var byteCount: Int
    }

    private mutating func readTensorInfo(index: Int, alignment: Int) throws(GGUFError) -> PendingTensor {
        let name = try reader.readString("name of tensor \(index)")
        let dimensionsOffset = reader.offset
        let dimensionCount = try reader.read(UInt32.self, "dimension count of tensor '\(name)'")
        guard dimensionCount <= UInt32(GGUFTensorInfo.maximumDimensions) else {
            throw .tooManyDimensions(dimensionCount, tensor: name, offset: dimensionsOffset)
        }
        let shapeOffset = reader.offset
        var rawShape: [UInt64] = []
        for dimension in 0 ..< Int(dimensionCount) {
            rawShape.append(try reader.read(UInt64.self, "dimension \(dimension) of tensor '\(name)'"))
        }
        var elementCount = 1
        for dimension in rawShape {
            guard dimension <= UInt64(Int64.max) else {
                throw .invalidShape(tensor: name, shape: rawShape, reason: "a dimension exceeds 2^63-1", offset: shapeOffset)
            }
            let (product, overflow) = elementCount.multipliedReportingOverflow(by: Int(dimension))
            guard !overflow else {
                throw .invalidShape(tensor: name, shape: rawShape, reason: "the element count overflows", offset: shapeOffset)
            }
            elementCount = product
        }
        let typeOffset = reader.offset
        let rawType = try reader.read(UInt32.self, "type of tensor '\(name)'")
        guard let type = GGMLType(rawValue: rawType) else {
            if let removed = GGMLType.removedTypeNames[rawType] {
                throw .removedTensorType(rawType, name: removed, tensor: name, offset: typeOffset)
            }
            throw .unknownTensorType(rawType, tensor: name, offset: typeOffset)
        }
        let rowLength = rawShape.first.map { Int($0) } ?? 1
        guard rowLength % type.blockSize == 0 else {
            throw .invalidShape(tensor: name, shape: rawShape,
                                reason: "row length \(rowLength) is not a multiple of \(type.name)'s block size \(type.blockSize)",
                                offset: shapeOffset)
        }
        guard let byteCount = type.byteCount(elementCount: elementCount) else {
            throw .invalidShape(tensor: name, shape: rawShape, reason: "the byte size overflows", offset: shapeOffset)
        }
        let offsetOffset = reader.offset
        let dataOffset = try reader.read(UInt64.self, "data offset of tensor '\(name)'")
        guard dataOffset % UInt64(alignment) == 0 else {
            throw .misalignedTensor(tensor: name, dataOffset: dataOffset, alignment: alignment, offset: offsetOffset)
        }
        return PendingTensor(name: name, shape: rawShape.map { Int($0) }, type: type,
                             dataOffset: dataOffset, elementCount: elementCount, byteCount: byteCount)
    }
}
