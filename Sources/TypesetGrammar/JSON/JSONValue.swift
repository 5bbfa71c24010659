/// A JSON value that keeps what a schema compiler needs and `Foundation` loses: the order
/// of object members (properties are generated in declaration order) and the exact text of
/// numbers (bounds like 9007199254740993 must not round).
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The number as written (`-1.50e3`), valid JSON number syntax.
    case number(String)
    case string(String)
    case array([JSONValue])
    /// Members in document order. Duplicate names keep the last value, as JSON parsers do.
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            // One storage (a subschema met again through the document) is equal without a walk.
            guard x.count == y.count else { return false }
            if x.withUnsafeBufferPointer({ $0.baseAddress }) == y.withUnsafeBufferPointer({ $0.baseAddress }) { return true }
            return zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let text): hasher.combine(text)
        case .string(let text): hasher.combine(text)
        case .array(let items): hasher.combine(items)
        case .object(let members):
            for (name, value) in members { hasher.combine(name); hasher.combine(value) }
        }
    }

    /// The value of member `name` of an object (`nil` otherwise).
    public subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.0 == name }?.1
    }

    /// The members of an object, `nil` for other values.
    public var members: [(String, JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The JSON type name (`"integer"` for numbers without fraction or exponent).
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number(let text): return text.contains(where: { ".eE".contains($0) }) ? "number" : "integer"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    // MARK: Parsing

    /// Parses a complete JSON text (RFC 8259; surrounding whitespace allowed) with
    /// ``IncrementalJSONParser``, all at once: a repeated member name keeps its first position
    /// and its last value; a `\u` escape of an unpaired surrogate reads as U+FFFD unless
    /// `loneSurrogates` is `.reject`. (A schema is read with `.reject`: a value holding a lone
    /// surrogate cannot be written in UTF-8, so the replacement would change what it admits.)
    ///
    /// - Throws: `GrammarError.invalidJSON` with the byte offset of the problem;
    ///   `.budgetExceeded` when read inside a compilation whose budget runs out.
    /// - Complexity: O(n); nesting deeper than `maximumDepth` is an error, not a stack overflow.
    public init(
        parsing text: String, maximumDepth: Int = 512, loneSurrogates: IncrementalJSONParser.LoneSurrogates = .replace
    ) throws(GrammarError) {
        try self.init(parsing: Array(text.utf8), maximumDepth: maximumDepth, loneSurrogates: loneSurrogates)
    }

    public init(
        parsing bytes: [UInt8], maximumDepth: Int = 512, loneSurrogates: IncrementalJSONParser.LoneSurrogates = .replace
    ) throws(GrammarError) {
        var parser = IncrementalJSONParser(maximumDepth: maximumDepth, loneSurrogates: loneSurrogates)
        // A long text is read in blocks, checking the budget of the compilation (if any) between them.
        let meter = CompilationMeter.current
        var start = 0
        while start < bytes.count {
            let end = meter == nil ? bytes.count : min(bytes.count, start + (1 << 20))
            try parser.append(bytes[start ..< end])
            try meter?.check("reading the schema (\(bytes.count) bytes)")
            start = end
        }
        try parser.finish()
        guard let value = parser.value else { throw .invalidJSON(offset: bytes.count, message: "unexpected end of input") }
        self = value
    }

    /// The value with each object's repeated member names resolved as the parser resolves
    /// them (first position, last value), at every depth.
    ///
    /// - Complexity: O(n).
    package var withUniqueMemberNames: JSONValue {
        switch self {
        case .null, .bool, .number, .string: return self
        case .array(let items): return .array(items.map(\.withUniqueMemberNames))
        case .object(let members): return .object(uniquing: members.lazy.map { ($0, $1.withUniqueMemberNames) })
        }
    }

    /// An object of `members` in which a repeated name keeps its first position and its last
    /// value (one level: the values are taken as they are).
    ///
    /// - Complexity: O(members).
    package static func object(uniquing members: some Sequence<(String, JSONValue)>) -> JSONValue {
        var unique: [(String, JSONValue)] = []
        var indices: [String: Int] = [:]
        for (name, value) in members {
            if let index = indices[name] { unique[index].1 = value; continue }
            indices[name] = unique.count
            unique.append((name, value))
        }
        return .object(unique)
    }

    // MARK: Serialization

    /// Compact JSON (`,` and `:` without spaces), strings in the canonical spelling the
    /// grammar generates (raw UTF-8; `\"`, `\\`, `\b\f\n\r\t`, `\u00xx` for other controls),
    /// numbers as written. This is `json.dumps(v, separators=(",", ":"), ensure_ascii=False)`
    /// for values parsed from such text.
    public var compactText: String {
        var bytes: [UInt8] = []
        appendCompact(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `compactText`, with numbers that have a fraction or an exponent rewritten as the
    /// shortest text that reads back as the same `Double` (`1E2` as `100.0`, `1.50` as
    /// `1.5`): what `json.dumps` writes for values read by Python's `json.load`. This is how
    /// the benchmarks (and MaskBench's peers) serialize test instances.
    package var compactTextWithDoubleNumbers: String {
        var bytes: [UInt8] = []
        appendCompact(to: &bytes, doubleNumbers: true)
        return String(decoding: bytes, as: UTF8.self)
    }

    func appendCompact(to bytes: inout [UInt8], doubleNumbers: Bool = false) {
        switch self {
        case .null: bytes += Array("null".utf8)
        case .bool(let value): bytes += Array((value ? "true" : "false").utf8)
        case .number(let text):
            if doubleNumbers, text.contains(where: { ".eE".contains($0) }), let value = Double(text), value.isFinite {
                bytes += Array(value.description.utf8)
            } else {
                bytes += Array(text.utf8)
            }
        case .string(let text): bytes += Lowering.jsonStringLiteral(text)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                item.appendCompact(to: &bytes, doubleNumbers: doubleNumbers)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, (name, value)) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += Lowering.jsonStringLiteral(name)
                bytes.append(UInt8(ascii: ":"))
                value.appendCompact(to: &bytes, doubleNumbers: doubleNumbers)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Indented JSON for people and diffs: one object member per line, `indent` spaces per
    /// level, `": "` after names; arrays of scalars stay on one line (`[1, 2, 3]`), other
    /// arrays take a line per element. Strings and numbers as in ``compactText``.
    public func formatted(indent: Int = 2) -> String {
        var bytes: [UInt8] = []
        appendFormatted(to: &bytes, indent: max(0, indent), depth: 0)
        return String(decoding: bytes, as: UTF8.self)
    }

    private func appendFormatted(to bytes: inout [UInt8], indent: Int, depth: Int) {
        func newline(_ depth: Int) {
            bytes.append(UInt8(ascii: "\n"))
            bytes += [UInt8](repeating: UInt8(ascii: " "), count: indent * depth)
        }
        switch self {
        case .array(let items) where !items.isEmpty:
            let inline = items.allSatisfy { if case .array = $0 { false } else if case .object = $0 { false } else { true } }
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes += inline ? Array(", ".utf8) : [UInt8(ascii: ",")] }
                if !inline { newline(depth + 1) }
                item.appendFormatted(to: &bytes, indent: indent, depth: depth + 1)
            }
            if !inline { newline(depth) }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members) where !members.isEmpty:
            bytes.append(UInt8(ascii: "{"))
            for (index, (name, value)) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(depth + 1)
                bytes += Lowering.jsonStringLiteral(name)
                bytes += Array(": ".utf8)
                value.appendFormatted(to: &bytes, indent: indent, depth: depth + 1)
            }
            newline(depth)
            bytes.append(UInt8(ascii: "}"))
        default:
            appendCompact(to: &bytes)
        }
    }
}

extension JSONValue {
    /// An integer as a JSON number.
    public init(_ value: some BinaryInteger) { self = .number(String(value)) }

    /// A double as a JSON number: the shortest text that reads back as the same value
    /// (`0.25`, `100.0`, `1e-07`); `null` for infinities and NaN, which JSON cannot write.
    public init(_ value: Double) { self = value.isFinite ? .number(value.description) : .null }
}
