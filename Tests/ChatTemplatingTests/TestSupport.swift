import Foundation
@testable import ChatTemplating

// MARK: - Fixture locations

enum Fixtures {
    /// `Tests/ChatTemplatingTests/Fixtures`, found relative to this source file so the test
    /// target needs no resources.
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(relativePath), encoding: .utf8)
    }

    static func json(_ relativePath: String) throws -> TemplateValue {
        var reader = OrderedJSONReader(text: try text(relativePath))
        return try reader.read()
    }
}

// MARK: - Order-preserving JSON

/// A small JSON reader that keeps object key order (Foundation's JSONSerialization does not),
/// because `tojson` output depends on it. Integers become `.integer`, numbers with a fraction
/// or exponent `.double`, as Python's `json.load` does.
struct OrderedJSONReader {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(text: String) {
        scalars = Array(text.unicodeScalars)
    }

    mutating func read() throws -> TemplateValue {
        let value = try readValue()
        skipWhitespace()
        guard index == scalars.count else { throw Failure(description: "trailing data at \(index)") }
        return value
    }

    private mutating func skipWhitespace() {
        while index < scalars.count, [" ", "\n", "\r", "\t"].contains(scalars[index]) { index += 1 }
    }

    private mutating func expect(_ scalar: Unicode.Scalar) throws {
        skipWhitespace()
        guard index < scalars.count, scalars[index] == scalar else {
            throw Failure(description: "expected \(scalar) at \(index)")
        }
        index += 1
    }

    private mutating func readValue() throws -> TemplateValue {
        skipWhitespace()
        guard index < scalars.count else { throw Failure(description: "unexpected end") }
        switch scalars[index] {
        case "{":
            index += 1
            var entries: [(key: String, value: TemplateValue)] = []
            skipWhitespace()
            if scalars[index] == "}" {
                index += 1
                return .object(entries)
            }
            while true {
                skipWhitespace()
                let key = try readString()
                try expect(":")
                entries.append((key, try readValue()))
                skipWhitespace()
                if scalars[index] == "," {
                    index += 1
                    continue
                }
                try expect("}")
                return .object(entries)
            }
        case "[":
            index += 1
            var items: [TemplateValue] = []
            skipWhitespace()
            if scalars[index] == "]" {
                index += 1
                return .array(items)
            }
            while true {
                items.append(try readValue())
                skipWhitespace()
                if scalars[index] == "," {
                    index += 1
                    continue
                }
                try expect("]")
                return .array(items)
            }
        case "\"":
            return .string(try readString())
        case "t":
            index += 4
            return .boolean(true)
        case "f":
            index += 5
            return .boolean(false)
        case "n":
            index += 4
            return .none
        default:
            let start = index
            while index < scalars.count, "+-0123456789.eE".unicodeScalars.contains(scalars[index]) { index += 1 }
            var literal = ""
            literal.unicodeScalars.append(contentsOf: scalars[start..<index])
            if literal.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
                guard let value = Double(literal) else { throw Failure(description: "bad number \(literal)") }
                return .double(value)
            }
            guard let value = Int(literal) else { throw Failure(description: "bad number \(literal)") }
            return .integer(value)
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard index + 4 <= scalars.count else { throw Failure(description: "bad escape") }
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars[index..<(index + 4)])
        index += 4
        guard let value = UInt32(text, radix: 16) else { throw Failure(description: "bad escape \(text)") }
        return value
    }

    private mutating func readString() throws -> String {
        try expect("\"")
        var result = String.UnicodeScalarView()
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            switch scalar {
            case "\"":
                return String(result)
            case "\\":
                let escaped = scalars[index]
                index += 1
                switch escaped {
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "b": result.append("\u{08}")
                case "f": result.append("\u{0C}")
                case "u":
                    var code = try hex4()
                    if code >= 0xD800 && code < 0xDC00, index + 1 < scalars.count, scalars[index] == "\\", scalars[index + 1] == "u" {
                        index += 2
                        let low = try hex4()
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let decoded = Unicode.Scalar(code) else { throw Failure(description: "bad code point") }
                    result.append(decoded)
                default: result.append(escaped)
                }
            default:
                result.append(scalar)
            }
        }
        throw Failure(description: "unterminated string")
    }
}

// MARK: - Reference errors

/// An exception recorded by `render_expected.py`.
struct ReferenceError: Sendable, CustomStringConvertible {
    var type: String
    var message: String

    init?(_ value: TemplateValue?) {
        guard let value, case .string(let type)? = value["type"], case .string(let message)? = value["message"] else {
            return nil
        }
        self.type = type
        self.message = message
    }

    var description: String { "\(type): \(message)" }

    /// Whether a Swift error is the counterpart of this Python exception (same kind and, for
    /// errors raised while rendering, the same message).
    func matches(_ error: ChatTemplateError) -> Bool {
        switch (type, error) {
        case ("raised", .raised(let actual)):
            return actual == message
        case ("UndefinedError", .undefinedValue(let actual, _, _)):
            return actual == message
        case ("SecurityError", .sandboxViolation(let actual, _, _)):
            return actual == message
        case ("OverflowError", .limitExceeded(let actual, _, _)):
            return actual == message
        case ("TypeError", .runtime(let actual, _, _)), ("ValueError", .runtime(let actual, _, _)),
             ("ZeroDivisionError", .runtime(let actual, _, _)), ("TemplateRuntimeError", .runtime(let actual, _, _)):
            return actual == message
        case ("TemplateSyntaxError", .syntax), ("TemplateAssertionError", .syntax), ("SyntaxError", .syntax):
            return true
        default:
            return false
        }
    }
}

/// A fixed instant for `strftime_now`: 2024-09-05 14:05:09 UTC, as in `render_expected.py`.
let fixedNow = Date(timeIntervalSince1970: 1_725_545_109)
let utc = TimeZone(identifier: "UTC")!
