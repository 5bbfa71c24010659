// MARK: - tojson

/// Python's `json.dumps` as transformers configures it for the `tojson` filter:
/// `json.dumps(x, ensure_ascii=False, indent=indent, separators=None, sort_keys=False)`.
/// With an indent, items are separated by `","` plus a newline; without, by `", "`.
enum PythonJSON {
    struct Options {
        var ensureASCII = false
        /// The indentation string per level, or nil for single-line output.
        var indent: String?
        var itemSeparator = ", "
        var keySeparator = ": "
        var sortKeys = false
        /// Encoding stops with an error once the output passes this many UTF-8 bytes.
        var maximumLength = Int.max
    }

    struct EncodingError: Error {
        var message: String
        /// The output passed ``Options/maximumLength``.
        var isLimit = false
    }

    static func encode(_ value: RuntimeValue, options: Options) throws(EncodingError) -> String {
        var output = ""
        try write(value, options: options, level: 0, into: &output)
        return output
    }

    private static func write(_ value: RuntimeValue, options: Options, level: Int, into output: inout String) throws(EncodingError) {
        if level > RuntimeValue.maximumDataDepth {
            throw EncodingError(message: "maximum recursion depth exceeded while encoding a JSON object")
        }
        switch value {
        case .none:
            output += "null"
        case .boolean(let flag):
            output += flag ? "true" : "false"
        case .integer(let number):
            output += String(number)
        case .double(let number):
            output += floatText(number)
        case .string(let text):
            writeString(text, ensureASCII: options.ensureASCII, into: &output)
        case .list(let items), .tuple(let items):
            if items.isEmpty {
                output += "[]"
                return
            }
            output += "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += options.itemSeparator }
                newline(options: options, level: level + 1, into: &output)
                try write(item, options: options, level: level + 1, into: &output)
                try checkLength(output, options)
            }
            newline(options: options, level: level, into: &output)
            output += "]"
        case .dictionary(let dictionary):
            if dictionary.count == 0 {
                output += "{}"
                return
            }
            var entries = Array(dictionary.entries)
            if options.sortKeys {
                for (key, _) in entries {
                    if case .dictionary = key { throw EncodingError(message: "unhashable key") }
                }
                var failure = false
                entries.sort { left, right in
                    guard let less = RuntimeValue.pythonLess(left.0, right.0) else {
                        failure = true
                        return false
                    }
                    return less
                }
                if failure {
                    throw EncodingError(message: "'<' not supported between dictionary keys of different types")
                }
            }
            output += "{"
            for (index, (key, item)) in entries.enumerated() {
                if index > 0 { output += options.itemSeparator }
                newline(options: options, level: level + 1, into: &output)
                let keyText: String
                switch key {
                case .string(let text): keyText = text
                case .integer(let number): keyText = String(number)
                case .double(let number): keyText = floatText(number)
                case .boolean(let flag): keyText = flag ? "true" : "false"
                case .none: keyText = "null"
                default:
                    throw EncodingError(message: "keys must be str, int, float, bool or None, not \(key.typeName)")
                }
                writeString(keyText, ensureASCII: options.ensureASCII, into: &output)
                output += options.keySeparator
                try write(item, options: options, level: level + 1, into: &output)
                try checkLength(output, options)
            }
            newline(options: options, level: level, into: &output)
            output += "}"
        default:
            throw EncodingError(message: "Object of type \(value.typeName) is not JSON serializable")
        }
    }

    private static func checkLength(_ output: String, _ options: Options) throws(EncodingError) {
        if output.utf8.count > options.maximumLength {
            throw EncodingError(message: "JSON output longer than \(options.maximumLength) bytes", isLimit: true)
        }
    }

    private static func newline(options: Options, level: Int, into output: inout String) {
        guard let indent = options.indent else { return }
        output += "\n"
        for _ in 0..<level { output += indent }
    }

    private static func floatText(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return RuntimeValue.pythonFloatRepr(number)
    }

    private static let hexDigits = Array("0123456789abcdef".unicodeScalars)

    private static func appendUnicodeEscape(_ code: UInt32, into output: inout String) {
        output += "\\u"
        for shift in stride(from: 12, through: 0, by: -4) {
            output.unicodeScalars.append(hexDigits[Int((code >> UInt32(shift)) & 0xF)])
        }
    }

    static func writeString(_ text: String, ensureASCII: Bool, into output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            default:
                if scalar.value < 0x20 || (ensureASCII && scalar.value > 0x7E) {
                    if scalar.value > 0xFFFF {
                        let offset = scalar.value - 0x10000
                        appendUnicodeEscape(0xD800 + (offset >> 10), into: &output)
                        appendUnicodeEscape(0xDC00 + (offset & 0x3FF), into: &output)
                    } else {
                        appendUnicodeEscape(scalar.value, into: &output)
                    }
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}
