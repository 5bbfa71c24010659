import ArgumentParser
import GGUF
import Typeset

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a GGUF file's header, metadata and tensor table.",
        discussion: """
        Arrays longer than \(Inspect.shortArrayLimit) elements are summarised by their count and \
        first \(Inspect.arrayHeadCount) elements. Tensor offsets are relative to the data section, \
        as stored; file_offset is absolute. Shapes are in ggml order (row length first).
        """
    )

    static let shortArrayLimit = 16
    static let arrayHeadCount = 8

    @Argument(help: "A GGUF file, or a known model name (smollm2, gemma3, qwen0.5b, qwen1.5b). Default: the default model.")
    var model: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let path = try ModelStore.resolve(model)
        let start = monotonicSeconds()
        let file = try GGUFFile(contentsOf: path)
        let elapsed = monotonicSeconds() - start
        if json {
            print(report(file, path: path, openSeconds: elapsed).formatted())
        } else {
            printText(file, path: path, openSeconds: elapsed)
        }
    }

    // MARK: JSON

    func report(_ file: GGUFFile, path: String, openSeconds: Double) -> JSONValue {
        .object([
            ("path", .string(path)),
            ("version", JSONValue(Int(file.version))),
            ("tensor_count", JSONValue(file.tensorInfos.count)),
            ("kv_count", JSONValue(file.metadata.count)),
            ("alignment", JSONValue(file.alignment)),
            ("data_offset", JSONValue(file.dataSectionOffset)),
            ("file_size", JSONValue(file.fileSize)),
            ("open_ms", JSONValue((openSeconds * 1e6).rounded() / 1e3)),
            ("metadata", .array(file.metadata.map { entry in
                var members: [(String, JSONValue)] = [("key", .string(entry.key)), ("type", .string(entry.value.type.description))]
                if case let .array(array) = entry.value {
                    members.append(("element_type", .string(array.elementType.description)))
                    members.append(("count", JSONValue(array.count)))
                    members.append(array.count <= Self.shortArrayLimit
                        ? ("value", jsonValue(entry.value))
                        : ("head", .array(array.prefix(Self.arrayHeadCount).map(jsonValue))))
                } else {
                    members.append(("value", jsonValue(entry.value)))
                }
                return .object(members)
            })),
            ("tensors", .array(file.tensorInfos.map { info in
                .object([
                    ("name", .string(info.name)),
                    ("type", .string(info.type.name)),
                    ("shape", .array(info.shape.map { JSONValue($0) })),
                    ("offset", JSONValue(info.dataOffset)),
                    ("file_offset", JSONValue(info.fileOffset)),
                    ("n_bytes", JSONValue(info.byteCount)),
                ])
            })),
        ])
    }

    private func jsonValue(_ value: GGUFValue) -> JSONValue {
        switch value {
        case let .uint8(v): JSONValue(Int(v))
        case let .int8(v): JSONValue(Int(v))
        case let .uint16(v): JSONValue(Int(v))
        case let .int16(v): JSONValue(Int(v))
        case let .uint32(v): JSONValue(Int(v))
        case let .int32(v): JSONValue(Int(v))
        case let .uint64(v): JSONValue(v)
        case let .int64(v): JSONValue(Int(v))
        case let .float32(v): JSONValue(Double(v))
        case let .float64(v): JSONValue(v)
        case let .bool(v): .bool(v)
        case let .string(v): .string(v)
        case let .array(array):
            array.count <= Self.shortArrayLimit
                ? .array(array.map(jsonValue))
                : .object([("count", JSONValue(array.count)), ("head", .array(array.prefix(Self.arrayHeadCount).map(jsonValue)))])
        }
    }

    // MARK: Text

    private func printText(_ file: GGUFFile, path: String, openSeconds: Double) {
        print(path)
        print("  GGUF v\(file.version), \(file.tensorInfos.count) tensors, \(file.metadata.count) metadata entries, alignment \(file.alignment)")
        print("  \(formatBytes(file.fileSize)); header \(formatBytes(file.dataSectionOffset)), data section at byte \(file.dataSectionOffset)")
        print("  opened and indexed in \(formatMilliseconds(openSeconds))")
        print("")
        print("Metadata")
        let keyWidth = file.metadata.map(\.key.count).max() ?? 0
        let typeWidth = file.metadata.map(\.value.typeDescription.count).max() ?? 0
        for entry in file.metadata {
            let key = entry.key.padding(to: keyWidth)
            let type = entry.value.typeDescription.padding(to: typeWidth)
            print("  \(key)  \(type)  \(textValue(entry.value, limit: 120))")
        }
        print("")
        print("Tensors")
        let rows = file.tensorInfos.enumerated().map { index, info in
            [String(index), info.name, info.type.name, "[" + info.shape.map(String.init).joined(separator: ", ") + "]",
             String(info.dataOffset), formatBytes(info.byteCount)]
        }
        let header = ["#", "name", "type", "shape", "offset", "size"]
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            let cells = row.enumerated().map { column, cell in
                column == 0 || column >= 4 ? cell.padding(toLeft: widths[column]) : cell.padding(to: widths[column])
            }
            print("  " + cells.joined(separator: "  "))
        }
        let byType = Dictionary(grouping: file.tensorInfos, by: \.type)
            .sorted { $0.key.rawValue < $1.key.rawValue }
            .map { type, infos in "\(type.name) ×\(infos.count) (\(formatBytes(infos.reduce(0) { $0 + $1.byteCount })))" }
        print("")
        print("  by type: " + byType.joined(separator: ", "))
    }

    private func textValue(_ value: GGUFValue, limit: Int) -> String {
        let text: String
        switch value {
        case let .string(string):
            text = JSONValue.string(string).compactText
        case let .array(array):
            let shown = array.prefix(Self.arrayHeadCount).map { textValue($0, limit: 40) }
            let more = array.count > Self.arrayHeadCount ? ", …" : ""
            text = "\(array.count) × [" + shown.joined(separator: ", ") + more + "]"
        case let .float32(float): text = "\(float)"
        case let .float64(double): text = "\(double)"
        case let .bool(bool): text = "\(bool)"
        case let .uint64(integer): text = String(integer)
        default: text = value.integerValue.map(String.init) ?? "\(value)"
        }
        return text.count > limit ? String(text.prefix(limit - 1)) + "…" : text
    }
}

// MARK: - Formatting helpers

func monotonicSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func formatBytes(_ count: Int) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(count)
    var unit = 0
    while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
    return unit == 0 ? "\(count) B" : String(format1: value) + " " + units[unit]
}

func formatMilliseconds(_ seconds: Double) -> String {
    String(format1: seconds * 1000) + " ms"
}

extension String {
    /// `value` with one decimal.
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }

    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    func padding(toLeft width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
