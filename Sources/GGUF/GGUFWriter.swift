#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Builds GGUF files in memory: metadata of any of the thirteen value types (nested arrays
/// included) and tensors of any ``GGMLType``, laid out as llama.cpp lays them out (tensor data
/// in insertion order, each padded to the alignment).
///
///     var writer = GGUFWriter()
///     writer.setValue(.string("llama"), forKey: "general.architecture")
///     try writer.addTensor(name: "token_embd.weight", shape: [64, 8], type: .f32, data: bytes)
///     let file = try GGUFFile(bytes: try writer.encoded())
///
/// The writer exists for tests and tools; it keeps everything in memory.
public struct GGUFWriter: Sendable {
    /// The format version written, 2 or 3 (their little-endian layouts are identical).
    public var version: UInt32

    public private(set) var entries: [GGUFMetadataEntry] = []
    public private(set) var tensors: [Tensor] = []

    public struct Tensor: Sendable {
        public var name: String
        public var shape: [Int]
        public var type: GGMLType
        public var data: [UInt8]
    }

    public init(version: UInt32 = 3) {
        self.version = version
    }

    /// The alignment tensor data is written with: `general.alignment` if set, else 32.
    public var alignment: Int {
        for entry in entries where entry.key == "general.alignment" {
            if case let .uint32(value) = entry.value { return Int(value) }
        }
        return GGUFFile.defaultAlignment
    }

    /// Sets `key` to `value`, replacing an earlier value in place or appending a new entry.
    public mutating func setValue(_ value: GGUFValue, forKey key: String) {
        if let index = entries.firstIndex(where: { $0.key == key }) {
            entries[index] = GGUFMetadataEntry(key: key, value: value)
        } else {
            entries.append(GGUFMetadataEntry(key: key, value: value))
        }
    }

    /// Appends a tensor. `data` must hold exactly the tensor's encoded bytes.
    public mutating func addTensor(name: String, shape: [Int], type: GGMLType, data: [UInt8]) throws(GGUFError) {
        guard shape.count <= GGUFTensorInfo.maximumDimensions, shape.allSatisfy({ $0 >= 0 }) else {
            throw .cannotWrite("tensor '\(name)' has an invalid shape \(shape)")
        }
        guard !tensors.contains(where: { $0.name == name }) else {
            throw .cannotWrite("duplicate tensor name '\(name)'")
        }
        let elementCount = shape.reduce(1, *)
        guard (shape.first ?? 1) % type.blockSize == 0,
              let byteCount = type.byteCount(elementCount: elementCount), byteCount == data.count
        else {
            throw .cannotWrite("tensor '\(name)' of shape \(shape) and type \(type) needs a whole number of \(type.blockSize)-element blocks; got \(data.count) bytes")
        }
        tensors.append(Tensor(name: name, shape: shape, type: type, data: data))
    }

    /// The encoded file.
    public func encoded() throws(GGUFError) -> [UInt8] {
        let alignment = self.alignment
        guard alignment > 0, alignment & (alignment - 1) == 0 else {
            throw .cannotWrite("alignment \(alignment) is not a power of two")
        }
        var out: [UInt8] = []
        out.append(contentsOf: Array("GGUF".utf8))
        append(version, to: &out)
        append(UInt64(tensors.count), to: &out)
        append(UInt64(entries.count), to: &out)
        for entry in entries {
            appendString(entry.key, to: &out)
            append(entry.value.type.rawValue, to: &out)
            appendPayload(of: entry.value, to: &out)
        }
        var dataOffset = 0
        var dataOffsets: [Int] = []
        for tensor in tensors {
            dataOffsets.append(dataOffset)
            dataOffset = padded(dataOffset + tensor.data.count, to: alignment)
        }
        for (tensor, offset) in zip(tensors, dataOffsets) {
            appendString(tensor.name, to: &out)
            append(UInt32(tensor.shape.count), to: &out)
            for dimension in tensor.shape { append(UInt64(dimension), to: &out) }
            append(tensor.type.rawValue, to: &out)
            append(UInt64(offset), to: &out)
        }
        out.append(contentsOf: repeatElement(0, count: padded(out.count, to: alignment) - out.count))
        let dataStart = out.count
        for (tensor, offset) in zip(tensors, dataOffsets) {
            out.append(contentsOf: repeatElement(0, count: dataStart + offset - out.count))
            out.append(contentsOf: tensor.data)
        }
        return out
    }

    /// Writes the encoded file to `path`, replacing it.
    public func write(to path: String) throws(GGUFError) {
        let bytes = try encoded()
        guard let file = fopen(path, "wb") else { throw .cannotOpen(path: path, reason: _systemError()) }
        defer { fclose(file) }
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        guard written == bytes.count else { throw .cannotOpen(path: path, reason: "short write: \(_systemError())") }
    }

    // MARK: Encoding

    private func padded(_ value: Int, to alignment: Int) -> Int {
        (value + alignment - 1) / alignment * alignment
    }

    private func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    private func appendString(_ string: String, to out: inout [UInt8]) {
        let utf8 = Array(string.utf8)
        append(UInt64(utf8.count), to: &out)
        out.append(contentsOf: utf8)
    }

    private func appendPayload(of value: GGUFValue, to out: inout [UInt8]) {
        switch value {
        case let .uint8(v): append(v, to: &out)
        case let .int8(v): append(v, to: &out)
        case let .uint16(v): append(v, to: &out)
        case let .int16(v): append(v, to: &out)
        case let .uint32(v): append(v, to: &out)
        case let .int32(v): append(v, to: &out)
        case let .float32(v): append(v.bitPattern, to: &out)
        case let .bool(v): append(UInt8(v ? 1 : 0), to: &out)
        case let .string(v): appendString(v, to: &out)
        case let .uint64(v): append(v, to: &out)
        case let .int64(v): append(v, to: &out)
        case let .float64(v): append(v.bitPattern, to: &out)
        case let .array(array):
            append(array.elementType.rawValue, to: &out)
            append(UInt64(array.count), to: &out)
            for element in array { appendPayload(of: element, to: &out) }
        }
    }
}
