/// A JSON value with ordered object keys, so the CLI's `--json` output is stable for scripts
/// and diffs.
indirect enum JSONText {
    case null
    case bool(Bool)
    case integer(Int)
    case unsigned(UInt64)
    case number(Double)
    case string(String)
    case array([JSONText])
    case object([(String, JSONText)])

    /// Compact encoding when `indent` is nil, else pretty-printed with that many spaces.
    func encoded(indent: Int? = 2) -> String {
        var out = ""
        write(to: &out, indent: indent, depth: 0)
        return out
    }

    private func write(to out: inout String, indent: Int?, depth: Int) {
        switch self {
        case .null: out += "null"
        case let .bool(value): out += value ? "true" : "false"
        case let .integer(value): out += String(value)
        case let .unsigned(value): out += String(value)
        case let .number(value):
            if value.isFinite {
                out += value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) + ".0" : "\(value)"
            } else {
                out += "null"
            }
        case let .string(value): JSONText.writeString(value, to: &out)
        case let .array(values):
            guard !values.isEmpty else { out += "[]"; return }
            // Arrays of scalars stay on one line.
            let inline = indent == nil || values.allSatisfy(\.isScalar)
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += inline ? (indent == nil ? "," : ", ") : "," }
                if !inline { newline(&out, indent, depth + 1) }
                value.write(to: &out, indent: indent, depth: depth + 1)
            }
            if !inline { newline(&out, indent, depth) }
            out += "]"
        case let .object(members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                newline(&out, indent, depth + 1)
                JSONText.writeString(key, to: &out)
                out += indent == nil ? ":" : ": "
                value.write(to: &out, indent: indent, depth: depth + 1)
            }
            newline(&out, indent, depth)
            out += "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }

    private func newline(_ out: inout String, _ indent: Int?, _ depth: Int) {
        guard let indent else { return }
        out += "\n" + String(repeating: " ", count: indent * depth)
    }

    static func writeString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
