import Foundation

/// A type that can be made from generated content.
public protocol ConvertibleFromGeneratedContent: Sendable {
    /// Reads a value from `content`.
    ///
    /// - Throws: ``GeneratedContentError`` when the content does not fit the type.
    init(_ content: GeneratedContent) throws
}

/// A type whose values can be written as generated content (tool outputs, examples, the
/// JSON of a value).
/// Such a value is also a prompt or instructions (its JSON, a string as its text).
public protocol ConvertibleToGeneratedContent: PromptRepresentable, InstructionsRepresentable, Sendable {
    /// The value as content.
    var generatedContent: GeneratedContent { get }
}

/// A type a model can generate: it has a JSON Schema (which constrains decoding) and is read
/// back from the content generated for that schema.
///
/// `@Generable` makes structures and enumerations generable; `String`, `Bool`, the integer
/// types, `Double`, `Float`, `Decimal`, and arrays and optionals of generable types already
/// are.
public protocol Generable: ConvertibleFromGeneratedContent, ConvertibleToGeneratedContent {
    /// The type of the snapshots streamed while a value is generated: for `@Generable`
    /// structures, a structure whose properties are all optional and fill in as they arrive.
    associatedtype PartiallyGenerated: ConvertibleFromGeneratedContent = Self

    /// The schema generated values follow.
    static var generationSchema: GenerationSchema { get }
}

// MARK: Strings and booleans

extension String: Generable {
    public static var generationSchema: GenerationSchema { GenerationSchema(node: .string(StringConstraints())) }

    /// A string (in a snapshot, the part generated so far).
    public init(_ content: GeneratedContent) throws {
        guard case .string(let text) = content.jsonValue else {
            throw GeneratedContentError.typeMismatch(expected: "string", found: content.typeName, pointer: "")
        }
        self = text
    }

    public var generatedContent: GeneratedContent { GeneratedContent(complete: .string(self)) }
}

extension Bool: Generable {
    public static var generationSchema: GenerationSchema { GenerationSchema(node: .boolean) }

    public init(_ content: GeneratedContent) throws {
        guard case .bool(let value) = content.jsonValue else {
            throw GeneratedContentError.typeMismatch(expected: "boolean", found: content.typeName, pointer: "")
        }
        self = value
    }

    public var generatedContent: GeneratedContent { GeneratedContent(complete: .bool(self)) }
}

// MARK: Numbers

/// The integer types' shared conformance: JSON integers within the type's range (the
/// schema states the range for types narrower than 64 bits).
public protocol _GenerableInteger: Generable, FixedWidthInteger {}

extension _GenerableInteger {
    public static var generationSchema: GenerationSchema {
        let narrow = bitWidth < 64
        return GenerationSchema(node: .integer(
            minimum: narrow || !Self.isSigned ? String(Self.min) : nil,
            maximum: narrow ? String(Self.max) : nil))
    }

    public init(_ content: GeneratedContent) throws {
        guard case .number(let text) = content.jsonValue else {
            throw GeneratedContentError.typeMismatch(expected: "integer", found: content.typeName, pointer: "")
        }
        if let value = Self(text) {
            self = value
        } else if let double = Double(text), double.rounded() == double, abs(double) <= 0x1p53, let value = Self(exactly: double) {
            self = value   // 1e2, 3.0 (exact below 2^53)
        } else {
            throw GeneratedContentError.numberOutOfRange(text, type: String(describing: Self.self), pointer: "")
        }
    }

    public var generatedContent: GeneratedContent { GeneratedContent(complete: .number(String(self))) }
}

extension Int: _GenerableInteger {}
extension Int8: _GenerableInteger {}
extension Int16: _GenerableInteger {}
extension Int32: _GenerableInteger {}
extension Int64: _GenerableInteger {}
extension UInt: _GenerableInteger {}
extension UInt8: _GenerableInteger {}
extension UInt16: _GenerableInteger {}
extension UInt32: _GenerableInteger {}
extension UInt64: _GenerableInteger {}

/// The floating-point types' shared conformance: JSON numbers.
public protocol _GenerableFloatingPoint: Generable, BinaryFloatingPoint, LosslessStringConvertible {}

extension _GenerableFloatingPoint {
    public static var generationSchema: GenerationSchema { GenerationSchema(node: .number(minimum: nil, maximum: nil)) }

    public init(_ content: GeneratedContent) throws {
        guard case .number(let text) = content.jsonValue else {
            throw GeneratedContentError.typeMismatch(expected: "number", found: content.typeName, pointer: "")
        }
        guard let value = Self(text), value.isFinite else {
            throw GeneratedContentError.numberOutOfRange(text, type: String(describing: Self.self), pointer: "")
        }
        self = value
    }

    public var generatedContent: GeneratedContent { GeneratedContent(complete: .number(numberText(self))) }
}

extension Double: _GenerableFloatingPoint {}
extension Float: _GenerableFloatingPoint {}

extension Decimal: Generable {
    public static var generationSchema: GenerationSchema { GenerationSchema(node: .number(minimum: nil, maximum: nil)) }

    /// The number exactly as generated.
    public init(_ content: GeneratedContent) throws {
        guard case .number(let text) = content.jsonValue else {
            throw GeneratedContentError.typeMismatch(expected: "number", found: content.typeName, pointer: "")
        }
        guard let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
            throw GeneratedContentError.numberOutOfRange(text, type: "Decimal", pointer: "")
        }
        self = value
    }

    public var generatedContent: GeneratedContent { GeneratedContent(complete: .number(numberText(self))) }
}

// MARK: Containers

extension Array: ConvertibleToGeneratedContent where Element: ConvertibleToGeneratedContent {
    public var generatedContent: GeneratedContent { GeneratedContent(complete: .array(map(\.generatedContent.jsonValue))) }
}

extension Array: ConvertibleFromGeneratedContent where Element: ConvertibleFromGeneratedContent {
    /// The elements, each read as `Element`. In a snapshot (incomplete content), elements
    /// that cannot be read yet are left out.
    public init(_ content: GeneratedContent) throws {
        let elements = try content.elements()
        if content.isComplete {
            self = try elements.enumerated().map { index, element in
                try GeneratedContentError.located(at: String(index)) { try Element(element) }
            }
        } else {
            self = elements.compactMap { try? Element($0) }
        }
    }
}

extension Array: Generable where Element: Generable {
    public typealias PartiallyGenerated = [Element.PartiallyGenerated]

    public static var generationSchema: GenerationSchema {
        Element.generationSchema.mapRoot { .array(items: $0, minimumCount: nil, maximumCount: nil) }
    }
}

extension Optional: ConvertibleToGeneratedContent where Wrapped: ConvertibleToGeneratedContent {
    public var generatedContent: GeneratedContent { self?.generatedContent ?? GeneratedContent(complete: .null) }
}

extension Optional: ConvertibleFromGeneratedContent where Wrapped: ConvertibleFromGeneratedContent {
    /// `nil` for `null`, else the wrapped value.
    public init(_ content: GeneratedContent) throws {
        self = content.jsonValue == .null ? nil : try Wrapped(content)
    }
}

extension Optional: Generable where Wrapped: Generable {
    public typealias PartiallyGenerated = Wrapped.PartiallyGenerated

    public static var generationSchema: GenerationSchema { Wrapped.generationSchema.mapRoot { .nullable($0) } }
}

extension GeneratedContent: Generable {
    /// Any JSON value.
    public static var generationSchema: GenerationSchema { GenerationSchema(node: .anyValue) }

    public init(_ content: GeneratedContent) throws { self = content }

    public var generatedContent: GeneratedContent { self }
}
