import Foundation
import GGUF
import SyntheticTensors

/// Where the tests find the real models and the committed fixtures.
///
/// Model tests are enabled when the model file is present (after `bash Fixtures/fetch.sh`).
/// When `TYPESET_REQUIRE_MODELS=1` (as `.ci/run` sets it) they are always enabled, so a
/// missing model fails the run instead of silently skipping.
public enum TestModels {
    public static let smolLM2FileName = "SmolLM2-135M-Instruct.Q4_1.gguf"
    public static let gemma3FileName = "gemma-3-270m-q4_k_m.gguf"
    public static let qwen05FileName = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    /// The demo's model: its parity tests run with `TYPESET_LARGE_MODELS=1` (CI keeps model-level
    /// tests on the small models).
    public static let qwen15FileName = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

    public static var cacheDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let cache = environment["TYPESET_CACHE"], !cache.isEmpty { return cache }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.cache/typeset"
    }

    public static var modelsRequired: Bool {
        ProcessInfo.processInfo.environment["TYPESET_REQUIRE_MODELS"] == "1"
    }

    public static func path(of fileName: String) -> String {
        cacheDirectory + "/models/" + fileName
    }

    public static var smolLM2Path: String { path(of: smolLM2FileName) }
    public static var gemma3Path: String { path(of: gemma3FileName) }
    public static var qwen05Path: String { path(of: qwen05FileName) }

    /// Whether tests that need `fileName` should run.
    public static func shouldRun(_ fileName: String) -> Bool {
        modelsRequired || FileManager.default.fileExists(atPath: path(of: fileName))
    }

    /// The real models fetched by default, as (short name, file name), for parameterised tests.
    public static let realModels: [(name: String, fileName: String)] = [
        ("smollm2", smolLM2FileName),
        ("gemma3", gemma3FileName),
        ("qwen0.5b", qwen05FileName),
    ]

    /// Where `Fixtures/make_synthetic_models.py write` (run by `Fixtures/fetch.sh`) puts the
    /// random-weight model `name` (`qwen3`, `lfm2`, …).
    public static func syntheticPath(of name: String) -> String {
        cacheDirectory + "/synthetic/" + name + ".gguf"
    }

    /// The synthetic model `name` with each half-precision matrix (they mix in F16 on purpose,
    /// a type without packed kernels) replaced by random Q8_0 weights: the model is random
    /// anyway, and this way every product is packed, as in the real models, so a row's logits
    /// do not depend on the rows evaluated with it.
    public static func packableSynthetic(of name: String) throws -> GGUFFile {
        let file = try GGUFFile(contentsOf: syntheticPath(of: name))
        var writer = GGUFWriter()
        for entry in file.metadata.entries where !entry.key.hasPrefix("GGUF.") { writer.setValue(entry.value, forKey: entry.key) }
        var generator = SplitMix64(seed: 7)
        for tensor in file.tensors {
            if tensor.shape.count == 2, tensor.type == .f16 || tensor.type == .bf16 {
                let data = SyntheticWeights.blocks(.q8_0, elements: tensor.shape[0] * tensor.shape[1], using: &generator)
                try writer.addTensor(name: tensor.name, shape: tensor.shape, type: .q8_0, data: data)
            } else {
                try writer.addTensor(name: tensor.name, shape: tensor.shape, type: tensor.type, data: Array(tensor.bytes))
            }
        }
        return try GGUFFile(bytes: try writer.encoded())
    }

    /// Whether the synthetic-family tests should run: the files are there, or models are required.
    public static var shouldRunSynthetic: Bool {
        modelsRequired || FileManager.default.fileExists(atPath: cacheDirectory + "/synthetic")
    }

    /// The file name of a real model by its short name (`smollm2`, `gemma3`, `qwen0.5b`, `qwen1.5b`).
    public static func fileName(of name: String) -> String {
        if name == "qwen1.5b" { return qwen15FileName }
        return realModels.first { $0.name == name }!.fileName
    }

    /// The names parity tests run on: the small models, and Qwen 1.5B with `TYPESET_LARGE_MODELS=1`.
    public static var parityModelNames: [String] {
        let large = ProcessInfo.processInfo.environment["TYPESET_LARGE_MODELS"] == "1"
        return realModels.map(\.name) + (large ? ["qwen1.5b"] : [])
    }
}

/// Paths inside the repository's `Fixtures/` directory.
public enum Fixtures {
    /// The repository root, found from this source file's location.
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }   // Tests/TestSupport/TestModels.swift
        return url.path
    }()

    public static func path(_ relative: String) -> String {
        repositoryRoot + "/Fixtures/" + relative
    }

    public static func data(_ relative: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path(relative)))
    }

    /// The seed documents' example types as JSON Schemas (`brew_summary.json`, `event.json`, …),
    /// written by hand: `Fixtures/schemas`.
    public static var seedSchemasDirectory: String { path("schemas") }

    /// The text of the seed schema `fileName` (`"brew_summary.json"`).
    public static func seedSchema(_ fileName: String) throws -> String {
        try String(contentsOfFile: seedSchemasDirectory + "/" + fileName, encoding: .utf8)
    }

    /// The seed schemas' paths, sorted.
    public static func seedSchemaPaths() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: seedSchemasDirectory)
            .filter { $0.hasSuffix(".json") }.sorted().map { seedSchemasDirectory + "/" + $0 }
    }
}

/// The MaskBench slice: 2,778 schemas with valid and invalid instances, committed as
/// `Fixtures/maskbench/maskbench-dev.tar.xz` and unpacked into the cache by `Fixtures/fetch.sh`
/// (Fixtures/maskbench/README.md says where they come from).
public enum MaskBenchSlice {
    public static var directory: String { TestModels.cacheDirectory + "/maskbench-dev" }

    /// Whether tests that read the slice should run: it is unpacked, or models are required
    /// (then a missing slice fails the run instead of skipping).
    public static var shouldRun: Bool {
        TestModels.modelsRequired || FileManager.default.fileExists(atPath: directory)
    }

    /// The path of one of its files (`"Github_easy---o68405.json"`).
    public static func path(of fileName: String) -> String { directory + "/" + fileName }
}

/// The tokenizer parity corpus: documents built by `Fixtures/make_tokenizer_corpus.py` (run by
/// `Fixtures/fetch.sh`) from pinned PyPI packages, listed with their SHA-256 in
/// `Fixtures/tokenizer/corpus.json`.
public enum TokenizerCorpus {
    public struct Document: Sendable {
        public let index: Int
        public let name: String
        public let bytes: [UInt8]
    }

    public static var directory: String { TestModels.cacheDirectory + "/tokenizer-corpus" }

    /// Whether corpus tests should run: the corpus is present, or models are required.
    public static var shouldRun: Bool {
        TestModels.modelsRequired || FileManager.default.fileExists(atPath: directory)
    }

    public enum LoadError: Error, CustomStringConvertible {
        case missing(String)
        case digestMismatch(String)
        public var description: String {
            switch self {
            case let .missing(file): "corpus document \(file) is missing; run bash Fixtures/fetch.sh"
            case let .digestMismatch(file): "corpus document \(file) differs from Fixtures/tokenizer/corpus.json"
            }
        }
    }

    /// Every document, checked against its recorded SHA-256.
    public static func documents() throws -> [Document] {
        let manifest = try JSONSerialization.jsonObject(with: Fixtures.data("tokenizer/corpus.json")) as! [String: Any]
        var result: [Document] = []
        for (index, entry) in (manifest["documents"] as! [[String: Any]]).enumerated() {
            let file = entry["file"] as! String
            guard let data = FileManager.default.contents(atPath: directory + "/" + file) else { throw LoadError.missing(file) }
            let bytes = [UInt8](data)
            var digest = SHA256Digest()
            digest.update(bytes)
            guard digest.finalize() == entry["sha256"] as! String else { throw LoadError.digestMismatch(file) }
            result.append(Document(index: index, name: entry["name"] as! String, bytes: bytes))
        }
        return result
    }
}
