import TypesetGrammar

/// Function calls in the Python syntax Liquid's LFM models write, between
/// `<|tool_call_start|>` and `<|tool_call_end|>`:
///
///     [get_weather(city="Paris", days=3), set_alarm(at="07:00", repeat=True)]
///
/// Values are Python literals, which are JSON's but for `True`, `False` and `None`: the call
/// grammar (`JSONSchemaOptions.Syntax.pythonCalls`) writes strings with JSON's double quotes
/// and escapes, which Python reads the same.
enum PythonCallSyntax {
    /// `calls` as the model writes them.
    static func text(of calls: [FunctionCall]) -> String {
        var text = "["
        for (index, call) in calls.enumerated() {
            if index > 0 { text += ", " }
            text += call.name + "("
            if case .object(let members) = call.arguments {
                text += members.map { "\($0.0)=\(literal($0.1))" }.joined(separator: ", ")
            }
            text += ")"
        }
        return text + "]"
    }

    /// `value` as a Python literal.
    static func literal(_ value: JSONValue) -> String {
        switch value {
        case .null: return "None"
        case .bool(let flag): return flag ? "True" : "False"
        case .number, .string: return value.compactText
        case .array(let items): return "[" + items.map(literal).joined(separator: ", ") + "]"
        case .object(let members):
            return "{" + members.map { JSONValue.string($0.0).compactText + ": " + literal($0.1) }.joined(separator: ", ") + "}"
        }
    }

    /// The calls in `text` (`[name(key=value, …), …]`), their arguments as JSON objects; `nil`
    /// when `text` is not such a list.
    static func calls(in text: String) -> [(name: String, arguments: JSONValue)]? {
        var reader = Reader(bytes: Array(text.utf8))
        return reader.callList()
    }

    /// A recursive-descent reader of the call list and its literals. Nesting deeper than
    /// `depthLimit` is refused rather than followed.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        static let depthLimit = 256

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func callList() -> [(name: String, arguments: JSONValue)]? {
            skipSpace()
            guard take("[") else { return nil }
            var calls: [(name: String, arguments: JSONValue)] = []
            skipSpace()
            if take("]") { return atEnd() ? calls : nil }
            repeat {
                skipSpace()
                guard let name = identifier(), take("(") else { return nil }
                var arguments: [(String, JSONValue)] = []
                skipSpace()
                if !take(")") {
                    repeat {
                        skipSpace()
                        guard let key = identifier() else { return nil }
                        skipSpace()
                        guard take("=") else { return nil }
                        skipSpace()
                        guard let value = value(depth: 0) else { return nil }
                        arguments.append((key, value))
                        skipSpace()
                    } while take(",")
                    guard take(")") else { return nil }
                }
                calls.append((name, .object(arguments)))
                skipSpace()
            } while take(",")
            guard take("]") else { return nil }
            return atEnd() ? calls : nil
        }

        private mutating func value(depth: Int) -> JSONValue? {
            guard depth < Self.depthLimit, offset < bytes.count else { return nil }
            switch bytes[offset] {
            case UInt8(ascii: "\""):
                let start = offset
                offset += 1
                while offset < bytes.count, bytes[offset] != UInt8(ascii: "\"") {
                    offset += bytes[offset] == UInt8(ascii: "\\") ? 2 : 1
                }
                guard offset < bytes.count else { return nil }
                offset += 1
                return try? JSONValue(parsing: String(decoding: bytes[start ..< offset], as: UTF8.self))
            case UInt8(ascii: "["):
                offset += 1
                var items: [JSONValue] = []
                skipSpace()
                if take("]") { return .array(items) }
                repeat {
                    skipSpace()
                    guard let item = value(depth: depth + 1) else { return nil }
                    items.append(item)
                    skipSpace()
                } while take(",")
                return take("]") ? .array(items) : nil
            case UInt8(ascii: "{"):
                offset += 1
                var members: [(String, JSONValue)] = []
                skipSpace()
                if take("}") { return .object(members) }
                repeat {
                    skipSpace()
                    guard case .string(let key)? = value(depth: depth + 1) else { return nil }
                    skipSpace()
                    guard take(":") else { return nil }
                    skipSpace()
                    guard let item = value(depth: depth + 1) else { return nil }
                    members.append((key, item))
                    skipSpace()
                } while take(",")
                return take("}") ? .object(members) : nil
            default:
                let start = offset
                while offset < bytes.count, !Self.ends(bytes[offset]) { offset += 1 }
                switch String(decoding: bytes[start ..< offset], as: UTF8.self) {
                case "True": return .bool(true)
                case "False": return .bool(false)
                case "None": return .null
                case let word: return try? JSONValue(parsing: word)   // a number
                }
            }
        }

        private mutating func identifier() -> String? {
            let start = offset
            while offset < bytes.count, PythonIdentifier.allows(bytes[offset], first: offset == start) { offset += 1 }
            return offset > start ? String(decoding: bytes[start ..< offset], as: UTF8.self) : nil
        }

        private static func ends(_ byte: UInt8) -> Bool {
            [UInt8(ascii: ","), UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"), 0x20, 0x0A, 0x0D, 0x09].contains(byte)
        }

        private mutating func take(_ character: Unicode.Scalar) -> Bool {
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: character) else { return false }
            offset += 1
            return true
        }

        private mutating func skipSpace() {
            while offset < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[offset]) { offset += 1 }
        }

        private func atEnd() -> Bool { offset == bytes.count }
    }
}
