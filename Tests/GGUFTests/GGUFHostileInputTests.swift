import GGUF
import Testing
import TypesetTestSupport

/// Corrupt and hostile files: each must produce a typed `GGUFError` that names the problem and
/// its byte offset, without trapping or allocating beyond what the file can justify.
@Suite struct GGUFHostileInputTests {
    // MARK: Building blocks

    /// A small valid file with every kind of structure: scalars, strings, a string array,
    /// a nested array, and three tensors.
    static func sampleFile() throws -> [UInt8] {
        var writer = GGUFWriter()
        writer.setValue(.string("llama"), forKey: "general.architecture")
        writer.setValue(.uint32(32), forKey: "general.alignment")
        writer.setValue(.float32(1e-5), forKey: "llama.attention.layer_norm_rms_epsilon")
        writer.setValue(.array(try GGUFArray(elementType: .string, elements: ["<s>", "▁a", "🙂"].map { .string($0) })), forKey: "tokenizer.ggml.tokens")
        writer.setValue(.array(try GGUFArray(elementType: .array, elements: [
            .array(try GGUFArray(elementType: .int32, elements: [.int32(7)])),
        ])), forKey: "nested")
        try writer.addTensor(name: "a", shape: [32, 2], type: .q8_0, data: Array(repeating: 1, count: 68))
        try writer.addTensor(name: "b", shape: [4], type: .f32, data: Array(repeating: 2, count: 16))
        try writer.addTensor(name: "c", shape: [256], type: .q4_K, data: Array(repeating: 3, count: 144))
        return try writer.encoded()
    }

    static func header(version: UInt32 = 3, tensors: UInt64, entries: UInt64) -> [UInt8] {
        var bytes = Array("GGUF".utf8)
        bytes += le(version) + le(tensors) + le(entries)
        return bytes
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    static func string(_ text: String) -> [UInt8] {
        le(UInt64(text.utf8.count)) + Array(text.utf8)
    }

    static func expectError(_ bytes: [UInt8], _ expected: GGUFError, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: expected, sourceLocation: sourceLocation) { try GGUFFile(bytes: bytes) }
    }

    // MARK: Header

    @Test func badMagic() {
        Self.expectError(Array("GGML\u{3}\0\0\0".utf8), .badMagic(found: Array("GGML".utf8)))
        Self.expectError([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0], .badMagic(found: [0x7f, 0x45, 0x4c, 0x46]))
        Self.expectError(Array("GGX".utf8), .badMagic(found: Array("GGX".utf8)))
    }

    @Test func emptyAndTinyFiles() {
        Self.expectError([], .truncated(what: "magic", offset: 0, needed: 4, available: 0))
        Self.expectError(Array("GG".utf8), .truncated(what: "magic", offset: 0, needed: 4, available: 2))
        Self.expectError(Array("GGUF".utf8), .truncated(what: "version", offset: 4, needed: 4, available: 0))
    }

    @Test func versions() {
        Self.expectError(Self.header(version: 1, tensors: 0, entries: 0), .unsupportedVersion(1))
        Self.expectError(Self.header(version: 4, tensors: 0, entries: 0), .unsupportedVersion(4))
        Self.expectError(Self.header(version: 0, tensors: 0, entries: 0), .unsupportedVersion(0))
        Self.expectError(Self.header(version: 3 << 24, tensors: 0, entries: 0), .bigEndianFile(version: 3 << 24))
        #expect(throws: Never.self) { try GGUFFile(bytes: Self.header(version: 2, tensors: 0, entries: 0)) }
    }

    @Test func hugeCountsAreRejectedBeforeAllocating() {
        Self.expectError(Self.header(tensors: 0, entries: 1 << 60),
                         .countExceedsFile(what: "metadata count", count: 1 << 60, minimumItemSize: 13, offset: 16, available: 0))
        Self.expectError(Self.header(tensors: UInt64.max, entries: 0),
                         .countExceedsFile(what: "tensor count", count: UInt64.max, minimumItemSize: 24, offset: 8, available: 0))
        // A string length of 2^60.
        Self.expectError(Self.header(tensors: 0, entries: 1) + Self.le(UInt64(1) << 60) + Array("key".utf8) + Array(repeating: 0, count: 16),
                         .countExceedsFile(what: "length of key of metadata entry 0", count: 1 << 60, minimumItemSize: 1, offset: 24, available: 19))
        // An array of 2^60 uint64 and of 2^62 strings.
        for (type, size) in [(GGUFValueType.uint64, 8), (.string, 8), (.array, 12), (.bool, 1)] {
            let bytes = Self.header(tensors: 0, entries: 1) + Self.string("k") + Self.le(UInt32(9))
                + Self.le(type.rawValue) + Self.le(UInt64(1) << 60) + [0, 0, 0, 0]
            Self.expectError(bytes, .countExceedsFile(what: "element count of value of 'k'", count: 1 << 60,
                                                      minimumItemSize: size, offset: 41, available: 4))
        }
    }

    @Test func unknownValueTypes() {
        let bytes = Self.header(tensors: 0, entries: 1) + Self.string("k") + Self.le(UInt32(13)) + [0]
        Self.expectError(bytes, .unknownValueType(13, what: "type of 'k'", offset: 33))
        let array = Self.header(tensors: 0, entries: 1) + Self.string("k") + Self.le(UInt32(9)) + Self.le(UInt32(0xFFFF_FFFF)) + Self.le(UInt64(0))
        Self.expectError(array, .unknownValueType(0xFFFF_FFFF, what: "element type of value of 'k'", offset: 37))
    }

    @Test func deepNesting() {
        var bytes = Self.header(tensors: 0, entries: 1) + Self.string("k") + Self.le(UInt32(9))
        for _ in 0..<20 { bytes += Self.le(UInt32(9)) + Self.le(UInt64(1)) }
        bytes += Self.le(UInt32(0)) + Self.le(UInt64(0))
        #expect(throws: GGUFError.self) { try GGUFFile(bytes: bytes) }
        do {
            _ = try GGUFFile(bytes: bytes)
        } catch {
            guard case .arrayNestingTooDeep = error else { Issue.record("unexpected \(error)"); return }
        }
    }

    @Test func invalidUTF8() {
        let key = Self.header(tensors: 0, entries: 1) + Self.le(UInt64(2)) + [0xC3, 0x28] + Self.le(UInt32(0)) + [0]
        Self.expectError(key, .invalidUTF8(what: "key of metadata entry 0", offset: 32))
        let value = Self.header(tensors: 0, entries: 1) + Self.string("k") + Self.le(UInt32(8)) + Self.le(UInt64(3)) + [0xED, 0xA0, 0x80]
        Self.expectError(value, .invalidUTF8(what: "value of 'k'", offset: 45))
    }

    /// Short array strings, as token strings are (the validator reads 8 bytes at a time where
    /// it can): every length to 9, one byte of each kind at each position, with the string
    /// followed by another or last in the file (fewer than 8 bytes after its start). Each array parses
    /// exactly when the standard library's validation accepts its bytes, and a bad one is
    /// reported at its first byte.
    @Test func shortArrayStringsAreValidatedLikeTheStandardLibrary() throws {
        let arrayHeader = Self.header(tensors: 0, entries: 1) + Self.string("k") + Self.le(UInt32(9)) + Self.le(UInt32(8))
        var invalid = 0
        for length in 0 ... 9 {
            for position in 0 ..< max(length, 1) {
                for byte: UInt8 in [0x41, 0x7F, 0x80, 0xBF, 0xC3, 0xE2, 0xF0, 0xFF] {
                    var element = [UInt8](repeating: 0x61, count: length)
                    if length > 0 { element[position] = byte }
                    let valid = String(validating: element, as: UTF8.self) != nil
                    for isLast in [false, true] {
                        let trailing = isLast ? [] : Self.string("after the string")
                        let bytes = arrayHeader + Self.le(UInt64(isLast ? 1 : 2)) + Self.le(UInt64(length)) + element + trailing
                        let start = arrayHeader.count + 8 + 8
                        if valid {
                            let file = try GGUFFile(bytes: bytes)
                            guard case let .array(array)? = file.metadata["k"] else { Issue.record("no array"); continue }
                            #expect(array.strings()?.first.map { Array($0.utf8) } == element)
                        } else {
                            invalid += 1
                            Self.expectError(bytes, .invalidUTF8(what: "element 0 of value of 'k'", offset: start))
                        }
                    }
                }
            }
        }
        #expect(invalid > 100)
    }

    @Test func duplicates() throws {
        let entry = Self.string("k") + Self.le(UInt32(0)) + [1]
        Self.expectError(Self.header(tensors: 0, entries: 2) + entry + entry, .duplicateKey("k", offset: 38))

        let info = Self.string("t") + Self.le(UInt32(1)) + Self.le(UInt64(8)) + Self.le(UInt32(0)) + Self.le(UInt64(0))
        let bytes = Self.header(tensors: 2, entries: 0) + info + info + Array(repeating: 0, count: 64)
        Self.expectError(bytes, .duplicateTensorName("t", offset: 24 + info.count))
    }

    @Test func alignmentValues() {
        for value: GGUFValue in [.uint32(0), .uint32(3), .uint32(48), .int32(32), .uint64(32), .string("32")] {
            var writer = GGUFWriter()
            writer.setValue(value, forKey: "general.alignment")
            let bytes = (try? writer.encoded()) ?? []
            if case .uint32 = value {
                // The writer itself refuses to lay out data with a bad alignment.
                #expect(bytes.isEmpty)
                let raw = Self.header(tensors: 0, entries: 1) + Self.string("general.alignment") + Self.le(UInt32(4)) + Self.le(UInt32({
                    if case let .uint32(v) = value { return v } else { return 0 } }()))
                Self.expectError(raw, .invalidAlignment("\(value)", offset: 24))
            } else {
                Self.expectError(bytes, .invalidAlignment("\(value)", offset: 24))
            }
        }
    }

    // MARK: Tensor infos

    static func tensorFile(name: String = "t", dims: [UInt64], type: UInt32, offset: UInt64, dataBytes: Int = 64) -> [UInt8] {
        var bytes = Self.header(tensors: 1, entries: 0) + Self.string(name) + Self.le(UInt32(dims.count))
        for dim in dims { bytes += Self.le(dim) }
        bytes += Self.le(type) + Self.le(offset)
        let padded = (bytes.count + 31) / 32 * 32
        return bytes + Array(repeating: 0, count: padded - bytes.count + dataBytes)
    }

    @Test func tensorTypes() {
        Self.expectError(Self.tensorFile(dims: [32], type: 42, offset: 0), .unknownTensorType(42, tensor: "t", offset: 45))
        Self.expectError(Self.tensorFile(dims: [32], type: 1_000_000, offset: 0), .unknownTensorType(1_000_000, tensor: "t", offset: 45))
        Self.expectError(Self.tensorFile(dims: [32], type: 4, offset: 0), .removedTensorType(4, name: "Q4_2", tensor: "t", offset: 45))
        Self.expectError(Self.tensorFile(dims: [32], type: 31, offset: 0), .removedTensorType(31, name: "Q4_0_4_4", tensor: "t", offset: 45))
    }

    @Test func tensorShapes() {
        Self.expectError(Self.tensorFile(dims: [1, 1, 1, 1, 1], type: 0, offset: 0), .tooManyDimensions(5, tensor: "t", offset: 33))
        Self.expectError(Self.tensorFile(dims: [UInt64.max], type: 0, offset: 0),
                         .invalidShape(tensor: "t", shape: [UInt64.max], reason: "a dimension exceeds 2^63-1", offset: 37))
        Self.expectError(Self.tensorFile(dims: [1 << 40, 1 << 40], type: 0, offset: 0),
                         .invalidShape(tensor: "t", shape: [1 << 40, 1 << 40], reason: "the element count overflows", offset: 37))
        Self.expectError(Self.tensorFile(dims: [33], type: 2, offset: 0),
                         .invalidShape(tensor: "t", shape: [33], reason: "row length 33 is not a multiple of Q4_0's block size 32", offset: 37))
        Self.expectError(Self.tensorFile(dims: [1 << 61, 2], type: 0, offset: 0),
                         .invalidShape(tensor: "t", shape: [1 << 61, 2], reason: "the byte size overflows", offset: 37))
    }

    @Test func tensorOffsets() {
        Self.expectError(Self.tensorFile(dims: [8], type: 0, offset: 3), .misalignedTensor(tensor: "t", dataOffset: 3, alignment: 32, offset: 49))
        Self.expectError(Self.tensorFile(dims: [8], type: 0, offset: 64),
                         .tensorOutOfBounds(tensor: "t", dataOffset: 64, byteCount: 32, dataSectionOffset: 64, fileSize: 128))
        Self.expectError(Self.tensorFile(dims: [8], type: 0, offset: UInt64.max - 31),
                         .tensorOutOfBounds(tensor: "t", dataOffset: UInt64.max - 31, byteCount: 32, dataSectionOffset: 64, fileSize: 128))
        Self.expectError(Self.tensorFile(dims: [32], type: 0, offset: 0),
                         .tensorOutOfBounds(tensor: "t", dataOffset: 0, byteCount: 128, dataSectionOffset: 64, fileSize: 128))
        #expect(throws: Never.self) { try GGUFFile(bytes: Self.tensorFile(dims: [16], type: 0, offset: 0)) }
    }

    @Test func filesOnDisk() {
        #expect(throws: GGUFError.self) { try GGUFFile(contentsOf: "/nonexistent/model.gguf") }
        #expect(throws: GGUFError.cannotOpen(path: "/tmp", reason: "it is a directory, not a GGUF file")) { try GGUFFile(contentsOf: "/tmp") }
        #expect(throws: GGUFError.cannotOpen(path: "/dev/zero", reason: "it is a device, not a regular file")) { try GGUFFile(contentsOf: "/dev/zero") }
    }

    /// Counts past what a model has are refused before anything is read (a 381 MB file of
    /// twenty million tiny entries took 3 GB and 36 s to read before).
    @Test func countsPastAModelsAreRefused() {
        var header = Array("GGUF".utf8) + [3, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 0]
        let entries = UInt64(GGUFFile.maximumMetadataEntries + 1)
        header += (0 ..< 8).map { UInt8(truncatingIfNeeded: entries >> (8 * $0)) }
        // Enough bytes that the count fits the file (13 per entry at least).
        let bytes = header + [UInt8](repeating: 0, count: 13 * Int(entries))
        Self.expectError(bytes, .countExceedsLimit(what: "metadata count", count: entries, limit: GGUFFile.maximumMetadataEntries, offset: 16))
    }

    // MARK: Exhaustive over a synthetic file

    /// Every strict prefix of a valid file is rejected with an error located inside the prefix.
    @Test func everyTruncationIsRejected() throws {
        let bytes = try Self.sampleFile()
        #expect(throws: Never.self) { try GGUFFile(bytes: bytes) }
        for length in 0 ..< bytes.count {
            do {
                _ = try GGUFFile(bytes: Array(bytes[..<length]))
                Issue.record("a \(length)-byte prefix of a \(bytes.count)-byte file was accepted")
            } catch {
                #expect(GGUFChecks.offset(of: error).map { $0 <= length } ?? true, "\(error)")
            }
        }
    }

    /// Every byte of a valid file set to several values: each result parses consistently or
    /// is a typed error.
    @Test func everyByteMutationIsHandled() throws {
        var bytes = try Self.sampleFile()
        var accepted = 0, rejected = 0
        for position in bytes.indices {
            let original = bytes[position]
            for replacement in GGUFChecks.mutations(of: original) {
                bytes[position] = replacement
                switch GGUFChecks.parseAndExercise(bytes) {
                case .accepted: accepted += 1
                case .rejected: rejected += 1
                }
            }
            bytes[position] = original
        }
        #expect(rejected > 0 && accepted > 0)
    }
}
