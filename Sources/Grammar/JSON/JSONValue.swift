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
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
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

    /// Parses a complete JSON text (RFC 8259; surrounding whitespace allowed).
    ///
    /// - Throws: `GrammarError.invalidJSON` with the byte offset of the problem.
    /// - Complexity: O(n); nesting deeper than `maximumDepth` is an error, not a stack overflow.
    public init(parsing text: String, maximumDepth: Int = 512) throws(GrammarError) {
        var parser = _JSONParser(bytes: Array(text.utf8), maximumDepth: maximumDepth)
        self = try parser.parseDocument()
    }

    public init(parsing bytes: [UInt8], maximumDepth: Int = 512) throws(GrammarError) {
        var parser = _JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        self = try parser.parseDocument()
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
    public var compactTextWithDoubleNumbers: String {
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
        case .string(let text): bytes += _Lowering.jsonStringLiteral(text)
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
                bytes += _Lowering.jsonStringLiteral(name)
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
                bytes += _Lowering.jsonStringLiteral(name)
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

struct _JSONParser {
    let bytes: [UInt8]
    let maximumDepth: Int
    var offset = 0
    var depth = 0

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func failure(_ message: String, at position: Int? = nil) -> GrammarError {
        .invalidJSON(offset: position ?? offset, message: message)
    }

    mutating func parseDocument() throws(GrammarError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard offset == bytes.count else { throw failure("unexpected text after the value") }
        return value
    }

    mutating func skipWhitespace() {
        while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
    }

    mutating func expect(_ literal: String) throws(GrammarError) {
        let expected = Array(literal.utf8)
        guard bytes.count - offset >= expected.count, Array(bytes[offset ..< offset + expected.count]) == expected else {
            throw failure("expected '\(literal)'")
        }
        offset += expected.count
    }

    mutating func parseValue() throws(GrammarError) -> JSONValue {
        guard offset < bytes.count else { throw failure("unexpected end of text") }
        switch bytes[offset] {
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "["):
            depth += 1
            defer { depth -= 1 }
            guard depth <= maximumDepth else { throw failure("nesting deeper than \(maximumDepth)") }
            offset += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
            while true {
                skipWhitespace()
                items.append(try parseValue())
                skipWhitespace()
                guard offset < bytes.count else { throw failure("unterminated array") }
                if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
                if bytes[offset] == UInt8(ascii: "]") { offset += 1; return .array(items) }
                throw failure("expected ',' or ']'")
            }
        case UInt8(ascii: "{"):
            depth += 1
            defer { depth -= 1 }
            guard depth <= maximumDepth else { throw failure("nesting deeper than \(maximumDepth)") }
            offset += 1
            var members: [(String, JSONValue)] = []
            skipWhitespace()
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
                let name = try parseString()
                skipWhitespace()
                try expect(":")
                skipWhitespace()
                let value = try parseValue()
                if let existing = members.firstIndex(where: { $0.0 == name }) { members.remove(at: existing) }
                members.append((name, value))
                skipWhitespace()
                guard offset < bytes.count else { throw failure("unterminated object") }
                if bytes[offset] == UInt8(ascii: ",") { offset += 1; continue }
                if bytes[offset] == UInt8(ascii: "}") { offset += 1; return .object(members) }
                throw failure("expected ',' or '}'")
            }
        case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"):
            return .number(try parseNumber())
        default:
            throw failure("unexpected character")
        }
    }

    mutating func parseNumber() throws(GrammarError) -> String {
        let start = offset
        func digits() -> Int {
            let first = offset
            while offset < bytes.count, (0x30 ... 0x39).contains(bytes[offset]) { offset += 1 }
            return offset - first
        }
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < bytes.count, (0x30 ... 0x39).contains(bytes[offset]) else { throw failure("expected a digit") }
        if bytes[offset] == UInt8(ascii: "0") { offset += 1 } else { _ = digits() }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            offset += 1
            guard digits() > 0 else { throw failure("expected a digit after '.'") }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard digits() > 0 else { throw failure("expected an exponent") }
        }
        return String(decoding: bytes[start ..< offset], as: UTF8.self)
    }

    mutating func parseHex4() throws(GrammarError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0 ..< 4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case 0x30 ... 0x39: digit = UInt32(byte - 0x30)
            case 0x41 ... 0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61 ... 0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw failure("bad hex digit in \\u escape")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    mutating func parseString() throws(GrammarError) -> String {
        offset += 1  // opening quote
        var scalars = String.UnicodeScalarView()
        var runStart = offset
        var raw: [UInt8] = []
        func flush(_ end: Int) throws(GrammarError) {
            guard runStart < end else { return }
            raw = Array(bytes[runStart ..< end])
            guard let text = String(validating: raw, as: UTF8.self) else { throw failure("invalid UTF-8 in string", at: runStart) }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard offset < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                try flush(offset)
                offset += 1
                return String(scalars)
            }
            if byte < 0x20 { throw failure("control character in string") }
            if byte != UInt8(ascii: "\\") { offset += 1; continue }
            try flush(offset)
            offset += 1
            guard offset < bytes.count else { throw failure("unterminated escape") }
            let escape = bytes[offset]
            offset += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var value = try parseHex4()
                if (0xD800 ... 0xDBFF).contains(value), bytes.count - offset >= 6,
                   bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") {
                    let save = offset
                    offset += 2
                    let low = try parseHex4()
                    if (0xDC00 ... 0xDFFF).contains(low) {
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        offset = save
                    }
                }
                // A lone surrogate has no scalar value; it becomes U+FFFD, as Swift strings must.
                scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
            default:
                throw failure("unknown escape", at: offset - 1)
            }
            runStart = offset
        }
    }
}
