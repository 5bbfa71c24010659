import Foundation

/// Where the tests find the real models and the committed fixtures.
///
/// Model tests are enabled when the model file is present (after `bash Fixtures/fetch.sh`).
/// When `TYPESET_REQUIRE_MODELS=1` (as `.ci/run` sets it) they are always enabled, so a
/// missing model fails the run instead of silently skipping.
public enum TestModels {
    public static let smolLM2FileName = "SmolLM2-135M-Instruct.Q4_1.gguf"
    public static let gemma3FileName = "gemma-3-270m-q4_k_m.gguf"

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

    /// Whether tests that need `fileName` should run.
    public static func shouldRun(_ fileName: String) -> Bool {
        modelsRequired || FileManager.default.fileExists(atPath: path(of: fileName))
    }

    /// Both real models, as (short name, path), for parameterised tests.
    public static let realModels: [(name: String, fileName: String)] = [
        ("smollm2", smolLM2FileName),
        ("gemma3", gemma3FileName),
    ]
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
}
