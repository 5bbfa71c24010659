/// The thirteen metadata value types of GGUF, with their on-disk ids.
public enum GGUFValueType: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    case uint8 = 0
    case int8 = 1
    case uint16 = 2
    case int16 = 3
    case uint32 = 4
    case int32 = 5
    case float32 = 6
    case bool = 7
    case string = 8
    case array = 9
    case uint64 = 10
    case int64 = 11
    case float64 = 12

    public var description: String {
        switch self {
        case .uint8: "uint8"
        case .int8: "int8"
        case .uint16: "uint16"
        case .int16: "int16"
        case .uint32: "uint32"
        case .int32: "int32"
        case .float32: "float32"
        case .bool: "bool"
        case .string: "string"
        case .array: "array"
        case .uint64: "uint64"
        case .int64: "int64"
        case .float64: "float64"
        }
    }

    /// The smallest number of bytes one value of this type occupies in a file: its fixed size,
    /// or for strings the length field, or for arrays the element type and count fields.
    /// Counts are checked against it before anything is allocated.
    public var minimumEncodedSize: Int {
        switch self {
        case .uint8, .int8, .bool: 1
        case .uint16, .int16: 2
        case .uint32, .int32, .float32: 4
        case .uint64, .int64, .float64, .string: 8
        case .array: 12
        }
    }

    /// The encoded size of fixed-size types; `nil` for strings and arrays.
    var fixedSize: Int? {
        switch self {
        case .string, .array: nil
        default: minimumEncodedSize
        }
    }
}

/// One metadata value.
public enum GGUFValue: Sendable, Equatable {
    case uint8(UInt8)
    case int8(Int8)
    case uint16(UInt16)
    case int16(Int16)
    case uint32(UInt32)
    case int32(Int32)
    case float32(Float)
    case bool(Bool)
    case string(String)
    case array(GGUFArray)
    case uint64(UInt64)
    case int64(Int64)
    case float64(Double)

    public var type: GGUFValueType {
        switch self {
        case .uint8: .uint8
        case .int8: .int8
        case .uint16: .uint16
        case .int16: .int16
        case .uint32: .uint32
        case .int32: .int32
        case .float32: .float32
        case .bool: .bool
        case .string: .string
        case .array: .array
        case .uint64: .uint64
        case .int64: .int64
        case .float64: .float64
        }
    }

    /// The value as an integer when it is one of the eight integer types and fits in `Int`.
    public var integerValue: Int? {
        switch self {
        case let .uint8(v): Int(v)
        case let .int8(v): Int(v)
        case let .uint16(v): Int(v)
        case let .int16(v): Int(v)
        case let .uint32(v): Int(v)
        case let .int32(v): Int(v)
        case let .uint64(v): Int(exactly: v)
        case let .int64(v): Int(v)
        default: nil
        }
    }

    /// The value as a `Double` when it is a floating-point type.
    public var floatingPointValue: Double? {
        switch self {
        case let .float32(v): Double(v)
        case let .float64(v): v
        default: nil
        }
    }

    /// A short human-readable type name, with the element type for arrays: `array[string]`.
    public var typeDescription: String {
        if case let .array(array) = self { return "array[\(array.elementType)]" }
        return type.description
    }
}

/// A metadata array: `count` values of one `elementType`.
///
/// Arrays read from a file are not decoded up front. Flat arrays keep a view of their bytes
/// in the file and decode elements as they are iterated, so a 262,144-entry token list costs
/// nothing until someone reads it. Arrays of arrays are decoded when the file is parsed.
/// All bounds and UTF-8 were already checked by the parser, so iteration cannot fail.
public struct GGUFArray: Sendable, Sequence {
    public let elementType: GGUFValueType
    public let count: Int
    private let storage: Storage

    private enum Storage: Sendable {
        /// A flat array in a file: `count` elements of `elementType` encoded in `range`.
        case file(FileStorage, range: Range<Int>)
        case elements([GGUFValue])
    }

    /// An array of decoded values. Every element must have type `elementType`.
    public init(elementType: GGUFValueType, elements: [GGUFValue]) throws(GGUFError) {
        if let mismatch = elements.first(where: { $0.type != elementType }) {
            throw .cannotWrite("an array of \(elementType) holds a \(mismatch.type) element")
        }
        self.elementType = elementType
        self.count = elements.count
        self.storage = .elements(elements)
    }

    init(fileStorage: FileStorage, elementType: GGUFValueType, count: Int, range: Range<Int>) {
        precondition(elementType != .array, "nested arrays are decoded eagerly")
        self.elementType = elementType
        self.count = count
        self.storage = .file(fileStorage, range: range)
    }

    init(decoded elements: [GGUFValue], elementType: GGUFValueType) {
        self.elementType = elementType
        self.count = elements.count
        self.storage = .elements(elements)
    }

    // MARK: Iteration

    public struct Iterator: IteratorProtocol {
        fileprivate var elements: IndexingIterator<[GGUFValue]>?
        fileprivate var bytes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
        fileprivate var offset = 0
        fileprivate var remaining = 0
        fileprivate let elementType: GGUFValueType
        fileprivate let owner: FileStorage?

        public mutating func next() -> GGUFValue? {
            if elements != nil { return elements!.next() }
            guard remaining > 0 else { return nil }
            remaining -= 1
            return _decodeValidatedScalar(elementType, bytes, &offset)
        }
    }

    public func makeIterator() -> Iterator {
        switch storage {
        case let .elements(elements):
            return Iterator(elements: elements.makeIterator(), elementType: elementType, owner: nil)
        case let .file(owner, range):
            return Iterator(elements: nil, bytes: owner.bytes, offset: range.lowerBound,
                            remaining: count, elementType: elementType, owner: owner)
        }
    }

    public var underestimatedCount: Int { count }

    // MARK: Typed views

    /// The elements as strings, or `nil` when this is not an array of strings.
    public func strings() -> [String]? {
        guard elementType == .string else { return nil }
        var result: [String] = []
        result.reserveCapacity(count)
        forEachStringBytes { _, bytes in result.append(String(decoding: bytes, as: UTF8.self)) }
        return result
    }

    /// Calls `body` with each string element's index and exact UTF-8 bytes, without copying
    /// for arrays read from a file. Does nothing when this is not an array of strings.
    /// The buffer is valid only during the call.
    public func forEachStringBytes(_ body: (Int, UnsafeRawBufferPointer) throws -> Void) rethrows {
        guard elementType == .string else { return }
        switch storage {
        case let .file(owner, range):
            var offset = range.lowerBound
            for index in 0..<count {
                let length = Int(UInt64(littleEndian: owner.bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                offset += 8
                try body(index, UnsafeRawBufferPointer(rebasing: owner.bytes[offset ..< offset + length]))
                offset += length
            }
        case let .elements(elements):
            for (index, element) in elements.enumerated() {
                guard case var .string(string) = element else { continue }
                try string.withUTF8 { try body(index, UnsafeRawBufferPointer($0)) }
            }
        }
    }

    /// The elements as `Int`, or `nil` when the element type is not an integer type or a
    /// value does not fit.
    ///
    /// Complexity: O(`count`); a file-backed array is read in place, one load per element.
    public func integers() -> [Int]? {
        switch elementType {
        case .uint8: integers(UInt8.self)
        case .int8: integers(Int8.self)
        case .uint16: integers(UInt16.self)
        case .int16: integers(Int16.self)
        case .uint32: integers(UInt32.self)
        case .int32: integers(Int32.self)
        case .uint64: integers(UInt64.self)
        case .int64: integers(Int64.self)
        default: nil
        }
    }

    /// ``integers()`` of an array whose elements are `T`s: read in place, little-endian, from a
    /// file (whose range the parser validated), or converted one by one when built in memory.
    private func integers<T: FixedWidthInteger>(_: T.Type) -> [Int]? {
        var result: [Int] = []
        result.reserveCapacity(count)
        switch storage {
        case let .file(owner, range):
            for index in 0 ..< count {
                let value = T(littleEndian: owner.bytes.loadUnaligned(
                    fromByteOffset: range.lowerBound + index * MemoryLayout<T>.size, as: T.self))
                guard let integer = Int(exactly: value) else { return nil }
                result.append(integer)
            }
        case let .elements(elements):
            for element in elements {
                guard let integer = element.integerValue else { return nil }
                result.append(integer)
            }
        }
        return result
    }

    /// The elements as `Float`, or `nil` unless the element type is `float32`.
    public func floats() -> [Float]? {
        guard elementType == .float32 else { return nil }
        switch storage {
        case let .file(owner, range):
            return (0..<count).map { index in
                Float(bitPattern: UInt32(littleEndian: owner.bytes.loadUnaligned(
                    fromByteOffset: range.lowerBound + 4 * index, as: UInt32.self)))
            }
        case let .elements(elements):
            return elements.compactMap { if case let .float32(value) = $0 { value } else { nil } }
        }
    }

    /// The encoded byte range of a file-backed array, for tools that report layout.
    public var fileByteRange: Range<Int>? {
        if case let .file(_, range) = storage { return range }
        return nil
    }
}

extension GGUFArray: Equatable {
    public static func == (lhs: GGUFArray, rhs: GGUFArray) -> Bool {
        lhs.elementType == rhs.elementType && lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }
}

/// Decodes one already-validated scalar or string of `type` at `offset`, advancing it.
/// Only called on ranges the parser has checked; `type` is never `.array`.
@inline(__always)
func _decodeValidatedScalar(_ type: GGUFValueType, _ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> GGUFValue {
    func load<T: FixedWidthInteger>(_: T.Type) -> T {
        let value = T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        offset += MemoryLayout<T>.size
        return value
    }
    switch type {
    case .uint8: return .uint8(load(UInt8.self))
    case .int8: return .int8(load(Int8.self))
    case .uint16: return .uint16(load(UInt16.self))
    case .int16: return .int16(load(Int16.self))
    case .uint32: return .uint32(load(UInt32.self))
    case .int32: return .int32(load(Int32.self))
    case .float32: return .float32(Float(bitPattern: load(UInt32.self)))
    case .bool: return .bool(load(UInt8.self) != 0)
    case .uint64: return .uint64(load(UInt64.self))
    case .int64: return .int64(load(Int64.self))
    case .float64: return .float64(Double(bitPattern: load(UInt64.self)))
    case .string:
        let length = Int(load(UInt64.self))
        let string = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset ..< offset + length]), as: UTF8.self)
        offset += length
        return .string(string)
    case .array:
        preconditionFailure("nested arrays are decoded by the parser")
    }
}
