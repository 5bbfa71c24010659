/// Everything that can go wrong while opening, parsing or querying a GGUF file.
///
/// A GGUF file is untrusted input. Every structural problem is reported with the byte offset
/// (from the start of the file) where the reader found it, and a short phrase naming what it
/// was reading, for example `"length of the key of metadata entry 12"` or
/// `"shape of tensor 'blk.0.attn_q.weight'"`. The reader never traps and never allocates more
/// than the file can justify: every count is checked against the bytes that remain before
/// anything is reserved.
public enum GGUFError: Error, Sendable, Equatable {
    /// The file could not be opened or mapped. `reason` is the operating system's message.
    case cannotOpen(path: String, reason: String)
    /// The first four bytes are not `GGUF`.
    case badMagic(found: [UInt8])
    /// The version field holds a value this reader does not understand. Versions 2 and 3
    /// are supported; version 1 used 32-bit counts and is obsolete.
    case unsupportedVersion(UInt32)
    /// The version field reads as a byte-swapped 2 or 3: the file was written big-endian.
    case bigEndianFile(version: UInt32)
    /// The file ended while reading `what` at `offset`: `needed` bytes were required but only
    /// `available` remained.
    case truncated(what: String, offset: Int, needed: Int, available: Int)
    /// A count or length at `offset` cannot be satisfied by the bytes that remain in the file
    /// (each of the `count` items needs at least `minimumItemSize` bytes).
    case countExceedsFile(what: String, count: UInt64, minimumItemSize: Int, offset: Int, available: Int)
    /// A count at `offset` is past what any model file holds (``GGUFFile/maximumMetadataEntries``,
    /// ``GGUFFile/maximumTensors``): refused before reading that many items.
    case countExceedsLimit(what: String, count: UInt64, limit: Int, offset: Int)
    /// A string at `offset` is not valid UTF-8.
    case invalidUTF8(what: String, offset: Int)
    /// A metadata value type id that GGUF does not define.
    case unknownValueType(UInt32, what: String, offset: Int)
    /// Arrays nested deeper than ``GGUFFile/maximumArrayNesting``.
    case arrayNestingTooDeep(what: String, offset: Int)
    /// The same metadata key appears twice.
    case duplicateKey(String, offset: Int)
    /// `general.alignment` is present but is not a non-zero power of two stored as `uint32`.
    case invalidAlignment(String, offset: Int)
    /// The same tensor name appears twice.
    case duplicateTensorName(String, offset: Int)
    /// A tensor's type id is not a ggml type id.
    case unknownTensorType(UInt32, tensor: String, offset: Int)
    /// A tensor's type id names a type that ggml has removed (for example Q4_2 or the
    /// repacked Q4_0_4_4), which no current file should contain.
    case removedTensorType(UInt32, name: String, tensor: String, offset: Int)
    /// A tensor declares more dimensions than ggml supports (four).
    case tooManyDimensions(UInt32, tensor: String, offset: Int)
    /// A tensor's shape is unusable: a dimension beyond `Int64.max`, an element count that
    /// overflows, or a row length that is not a multiple of its type's block size.
    case invalidShape(tensor: String, shape: [UInt64], reason: String, offset: Int)
    /// A tensor's data offset is not a multiple of the file's alignment.
    case misalignedTensor(tensor: String, dataOffset: UInt64, alignment: Int, offset: Int)
    /// A tensor's bytes (`dataOffset ..< dataOffset + byteCount`, relative to the data
    /// section at `dataSectionOffset`) do not lie inside the file.
    case tensorOutOfBounds(tensor: String, dataOffset: UInt64, byteCount: UInt64, dataSectionOffset: Int, fileSize: Int)

    // MARK: Queries on a parsed file

    /// A metadata key that the caller required is absent.
    case missingKey(String)
    /// A metadata value has a different type than the accessor expects.
    case typeMismatch(key: String, expected: String, found: String)
    /// An integer metadata value does not fit the accessor's type.
    case valueOutOfRange(key: String, value: String)
    /// No tensor has this name.
    case missingTensor(String)

    // MARK: Writing

    /// The writer was given something GGUF cannot represent.
    case cannotWrite(String)
}

extension GGUFError: CustomStringConvertible {
    public var description: String {
        switch self {
        case let .cannotOpen(path, reason):
            return "cannot open '\(path)': \(reason)"
        case let .badMagic(found):
            let shown = found.map { byte in
                (0x20...0x7e).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + hex(byte)
            }.joined()
            return "not a GGUF file: the first bytes are \"\(shown)\", expected \"GGUF\""
        case let .unsupportedVersion(version):
            return version == 1
                ? "GGUF version 1 (32-bit counts) is obsolete and not supported; convert the file to version 3"
                : "unsupported GGUF version \(version) (supported: 2 and 3)"
        case let .bigEndianFile(version):
            return "big-endian GGUF (version \(version.byteSwapped)) is not supported on this little-endian reader"
        case let .truncated(what, offset, needed, available):
            return "truncated file: reading \(what) at byte \(offset) needs \(needed) bytes, \(available) remain"
        case let .countExceedsFile(what, count, size, offset, available):
            return "\(what) at byte \(offset) is \(count), but \(count) items of at least \(size) bytes cannot fit in the \(available) bytes that remain"
        case let .countExceedsLimit(what, count, limit, offset):
            return "\(what) at byte \(offset) is \(count), more than the \(limit) a model file may have"
        case let .invalidUTF8(what, offset):
            return "\(what) at byte \(offset) is not valid UTF-8"
        case let .unknownValueType(type, what, offset):
            return "unknown metadata value type \(type) for \(what) at byte \(offset)"
        case let .arrayNestingTooDeep(what, offset):
            return "\(what) at byte \(offset) nests arrays deeper than \(GGUFFile.maximumArrayNesting) levels"
        case let .duplicateKey(key, offset):
            return "duplicate metadata key '\(key)' at byte \(offset)"
        case let .invalidAlignment(value, offset):
            return "general.alignment at byte \(offset) must be a non-zero power of two stored as uint32, found \(value)"
        case let .duplicateTensorName(name, offset):
            return "duplicate tensor name '\(name)' at byte \(offset)"
        case let .unknownTensorType(type, tensor, offset):
            return "tensor '\(tensor)' has unknown ggml type id \(type) at byte \(offset)"
        case let .removedTensorType(type, name, tensor, offset):
            return "tensor '\(tensor)' has type \(name) (id \(type)) at byte \(offset), which ggml has removed"
        case let .tooManyDimensions(count, tensor, offset):
            return "tensor '\(tensor)' declares \(count) dimensions at byte \(offset); at most \(GGUFTensorInfo.maximumDimensions) are supported"
        case let .invalidShape(tensor, shape, reason, offset):
            return "tensor '\(tensor)' has an invalid shape \(shape) at byte \(offset): \(reason)"
        case let .misalignedTensor(tensor, dataOffset, alignment, offset):
            return "tensor '\(tensor)' data offset \(dataOffset) (declared at byte \(offset)) is not a multiple of the alignment \(alignment)"
        case let .tensorOutOfBounds(tensor, dataOffset, byteCount, dataSectionOffset, fileSize):
            return "tensor '\(tensor)' spans bytes \(dataOffset)..<\(dataOffset &+ byteCount) of the data section at byte \(dataSectionOffset), beyond the end of the \(fileSize)-byte file"
        case let .missingKey(key):
            return "metadata key '\(key)' is missing"
        case let .typeMismatch(key, expected, found):
            return "metadata key '\(key)' holds \(found), expected \(expected)"
        case let .valueOutOfRange(key, value):
            return "metadata key '\(key)' holds \(value), which is out of range"
        case let .missingTensor(name):
            return "no tensor named '\(name)'"
        case let .cannotWrite(reason):
            return "cannot write GGUF: \(reason)"
        }
    }
}

private func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
}
