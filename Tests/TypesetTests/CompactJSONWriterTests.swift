import Testing
@testable import Typeset
import TypesetTestSupport
import TypesetGrammar

/// The writer that streams a call's arguments: for JSON written with any whitespace and any
/// escapes, cut into pieces anywhere (inside a character's UTF-8 bytes, an escape, a surrogate
/// pair), the pieces it returns join to ``JSONValue/compactText`` of the value the text reads
/// as (the reference: the JSON reader and writer), and each prefix of them is a prefix of it.
struct CompactJSONWriterTests {
    static let characters: [Unicode.Scalar] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{08}", "\u{0C}", "\r", "\u{01}", "\u{1F}", "\u{7F}", "é", "ß", "€",
        "中", "\u{2028}", "\u{FEFF}", "😀", "\u{1F9D1}", "\u{10FFFF}",
    ]
    static let numbers = ["0", "-0", "12", "-7", "1.50", "3.0e5", "1E-2", "123456789012345678901234567890", "0.000"]

    /// A random value: objects (members named once), arrays, strings, numbers, literals.
    static func value(_ random: inout SplitMix64, depth: Int) -> JSONValue {
        switch depth > 3 ? 2 + random.below(3) : random.below(5) {
        case 0:
            let names = (0 ..< random.below(4)).map { "k\($0)" + string(&random) }
            return .object(names.map { ($0, value(&random, depth: depth + 1)) })
        case 1: return .array((0 ..< random.below(4)).map { _ in value(&random, depth: depth + 1) })
        case 2: return .string(string(&random))
        case 3: return .number(numbers[random.below(numbers.count)])
        default: return [JSONValue.null, .bool(true), .bool(false)][random.below(3)]
        }
    }

    static func string(_ random: inout SplitMix64) -> String {
        var text = ""
        for _ in 0 ..< random.below(6) { text.unicodeScalars.append(characters[random.below(characters.count)]) }
        return text
    }

    /// `value` as a model might write it: whitespace anywhere between tokens, and each
    /// character of a string raw or escaped (`\u` escapes, surrogate pairs above U+FFFF).
    static func written(_ value: JSONValue, _ random: inout SplitMix64) -> String {
        func space() -> String { ["", " ", "\n  ", "\t", "\r\n"][random.below(5)] }
        func literal(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                let short: [Unicode.Scalar: String] = ["\"": "\\\"", "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\u{08}": "\\b", "\u{0C}": "\\f"]
                if let escape = short[scalar], random.chance(80) {
                    out += escape
                } else if scalar == "/", random.chance(50) {
                    out += "\\/"
                } else if scalar.value < 0x20 || random.chance(30) {
                    for unit in String(scalar).utf16 { out += "\\u" + String(unit, radix: 16, uppercase: random.chance(50)).leftPadded(to: 4) }
                } else if let escape = short[scalar] {
                    out += escape
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        switch value {
        case .null: return "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let text): return text
        case .string(let text): return literal(text)
        case .array(let items):
            return "[" + space() + items.map { written($0, &random) + space() }.joined(separator: "," + space()) + "]"
        case .object(let members):
            let written = members.map { name, member in literal(name) + space() + ":" + space() + Self.written(member, &random) + space() }
            return "{" + space() + written.joined(separator: "," + space()) + "}"
        }
    }

    @Test func piecesJoinToTheCompactTextOfTheValue() throws {
        var random = SplitMix64(seed: 2026)
        for round in 0 ..< 2000 {
            let value = Self.value(&random, depth: 0)
            let text = space(&random) + Self.written(value, &random) + space(&random)
            let expected = Array(try JSONValue(parsing: text).compactText.utf8)
            // Cut anywhere, bytes at a time or more.
            let bytes = Array(text.utf8)
            var writer = CompactJSONWriter(), output: [UInt8] = [], offset = 0
            while offset < bytes.count {
                let length = min(bytes.count - offset, 1 + random.below(7))
                output += writer.append(bytes[offset ..< offset + length])
                offset += length
                #expect(expected.starts(with: output), "round \(round): \(text)")
            }
            #expect(!writer.stopped)
            #expect(output == expected, "round \(round): \(text) gave \(String(decoding: output, as: UTF8.self))")
        }
    }

    private func space(_ random: inout SplitMix64) -> String { ["", " ", "\n"][random.below(3)] }

    /// A lone surrogate (which reading rejects): the writer stops where it is, having
    /// returned only what precedes it.
    @Test func stopsAtALoneSurrogate() {
        for text in [#"{"a":"x\ud83dy"}"#, #"{"a":"x\ud83d\n"}"#, #"{"a":"x\ud83d\u0041"}"#] {
            var writer = CompactJSONWriter()
            let output = writer.append(text.utf8)
            #expect(writer.stopped, "\(text)")
            #expect(String(decoding: output, as: UTF8.self) == #"{"a":"x"#, "\(text)")
            #expect(writer.append(#"more"}"#.utf8).isEmpty)
        }
    }
}

extension SplitMix64 {
    fileprivate mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
