// swift-tools-version: 6.1
//
// Typeset: a pure-Swift LLM inference engine with a grammar compiler.
//
// Layers (one-way dependencies, bottom to top):
//
//     GGUF  <-  Kernels (+ COpenBLAS)  <-  Models  <-  Typeset  <-  TypesetServer  <-  typeset (CLI)
//       ^---  TypesetTokenizer  <----------------------'  |  ^         (Hummingbird)
//                  TypesetGrammar  <----------------------'  |
//                  ChatTemplating  <----------------------'  +--  TypesetFoundationModels
//                                                            '--  TypesetLEAP
//
// TypesetGrammar knows tokens only as byte strings and depends on nothing else; ChatTemplating
// (the Jinja subset for chat templates) likewise. The grammar and tokenizer modules carry the
// product's prefix because their main types are named `Grammar` and `Tokenizer`. `import
// Typeset` exposes the core API only: what it uses from the layers below is re-exported type
// by type (Sources/Typeset/Exports.swift), not module by module.
//
// Target CPU: built as the root package (`swift run`, `swift test` in this directory) or as a
// local path dependency on x86-64, the kernels compile for the machine that builds them
// (`-target-cpu native`), as llama.cpp does: AVX2/FMA/AVX-512 instead of the toolchain's SSE2
// baseline, three to nine times faster. Resolved by URL (a checkout under `.build/checkouts`
// or Xcode's `SourcePackages`), the package has no unsafe flags, as SwiftPM requires of remote
// dependencies, and compiles for the baseline. TYPESET_TARGET_CPU overrides the choice: a CPU
// name (`native`, `znver4`, `haswell`, …) or `baseline`. See docs/architecture.md for how a
// consumer resolving Typeset by URL gets the tuned kernels.
//
// Macros: `@Generable` and `@Guide` are declared in the Typeset module and expanded by the
// TypesetMacroPlugin compiler plugin, built with swift-syntax. Set TYPESET_WITHOUT_MACROS=1
// to build the engine without them (and without swift-syntax, the command line, the server
// and the macro tests), which is how the fuzzing stages of CI build in a fraction of the time.
// TYPESET_KERNELS_ONLY=1 goes further and declares only the GGUF and Kernels layers with their
// tests (and Models, which the test support's checkers load files with): CI's baseline-CPU
// kernel stage and ThreadSanitizer stage build nothing else.
import CompilerPluginSupport
import Foundation
import PackageDescription

let isCheckedOutDependency = ["/.build/checkouts/", "/SourcePackages/checkouts/"].contains { Context.packageDirectory.contains($0) }
let targetCPU: String? = {
    switch ProcessInfo.processInfo.environment["TYPESET_TARGET_CPU"] {
    case "baseline"?: return nil
    case let cpu? where !cpu.isEmpty: return cpu
    default:
        #if arch(x86_64)
        return isCheckedOutDependency ? nil : "native"
        #else
        return nil   // arm64's baseline already has NEON and fused multiply-add
        #endif
    }
}()
let cpuFlags: Set<Substring> = {
    guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) else { return [] }
    return Set(line.split(separator: " "))
}()
// Whether the target CPU has AVX2 with FMA and F16C (every x86-64 CPU since Haswell and Zen
// 1): "native" on a machine whose /proc/cpuinfo lists the three, or a CPU model that has
// them. The packed kernels then run on bytes (Kernels/PackedByteKernels.swift: `vpmaddubsw`
// on 256-bit halves) through the VectorIntrinsics module, which reaches LLVM's intrinsics with
// `-parse-stdlib`: an unsafe flag, so only in a tuned build, never in a dependency resolved by
// URL.
let avx512Models: Set<String> = [
    "x86-64-v4", "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client", "icelake-server",
    "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids", "znver4", "znver5",
]
let avx2Models: Set<String> = avx512Models.union([
    "haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake", "arrowlake", "lunarlake",
    "znver1", "znver2", "znver3",
])
let targetHasAVX2 = targetCPU.map { cpu in
    cpu == "native" ? ["avx2", "fma", "f16c"].allSatisfy { cpuFlags.contains($0) } : avx2Models.contains(cpu)
} ?? false
// Whether the target CPU has AVX-512 with byte and word instructions (32 vector registers,
// AVX512BW): "native" on a machine whose /proc/cpuinfo lists avx512f and avx512bw, or a CPU
// model that has them. The byte kernels then use 512-bit vectors, and the prefill kernels
// multiply eight activation columns per pass instead of four.
let targetHasAVX512 = targetCPU.map { cpu in
    cpu == "native" ? cpuFlags.contains("avx512f") && cpuFlags.contains("avx512bw") : avx512Models.contains(cpu)
} ?? false
// Whether the target CPU has AVX512-VNNI (byte dot products): the byte kernels then multiply
// with `vpdpbusd`, one instruction where AVX512BW takes two (`vpmaddubsw`, then `vpmaddwd`).
let vnniModels: Set<String> = [
    "cascadelake", "cooperlake", "icelake-client", "icelake-server", "tigerlake", "rocketlake",
    "sapphirerapids", "emeraldrapids", "graniterapids", "znver4", "znver5",
]
let targetHasVNNI = targetCPU.map { cpu in
    cpu == "native" ? cpuFlags.contains("avx512_vnni") : vnniModels.contains(cpu)
} ?? false
/// The defines that tell the kernels what the target CPU has (each implies the ones before).
let vectorDefines: [SwiftSetting] = (targetHasAVX2 ? [.define("TYPESET_AVX2")] : [])
    + (targetHasAVX512 ? [.define("TYPESET_AVX512")] : []) + (targetHasVNNI ? [.define("TYPESET_VNNI")] : [])
let kernelSettings: [SwiftSetting] = targetCPU.map {
    [.unsafeFlags(["-target-cpu", $0]), .define("TYPESET_TUNED_CPU")] + vectorDefines
} ?? []
let kernelsOnly = ProcessInfo.processInfo.environment["TYPESET_KERNELS_ONLY"].map { !$0.isEmpty && $0 != "0" } ?? false
let withMacros = !kernelsOnly && (ProcessInfo.processInfo.environment["TYPESET_WITHOUT_MACROS"].map { $0.isEmpty || $0 == "0" } ?? true)

let package = Package(
    name: "Typeset",
    platforms: [.macOS(.v15)],   // Synchronization (atomics) on Apple platforms
    products: [
        .library(name: "Typeset", targets: ["Typeset"]),
        // Foundation Models' API and LEAP's, each exactly, over Typeset: code written for them
        // changes only its import (`import TypesetFoundationModels`, `import TypesetLEAP`).
        .library(name: "TypesetFoundationModels", targets: ["TypesetFoundationModels"]),
        .library(name: "TypesetLEAP", targets: ["TypesetLEAP"]),
        .library(name: "GGUF", targets: ["GGUF"]),
        // The tokenizers alone (BPE and SentencePiece from GGUF metadata), with no model code.
        .library(name: "TypesetTokenizer", targets: ["TypesetTokenizer"]),
        // The grammar compiler alone (JSON Schema, regular expressions and GBNF to token masks
        // over any vocabulary), and the Jinja chat-template renderer alone.
        .library(name: "TypesetGrammar", targets: ["TypesetGrammar"]),
        .library(name: "ChatTemplating", targets: ["ChatTemplating"]),
        // Test helpers (model locations, hostile-input checkers), for Typeset's own test
        // targets and its fuzzer package; not part of the API.
        .library(name: "TypesetTestSupport", targets: ["TypesetTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // MARK: Layers
        .target(name: "GGUF"),
        .systemLibrary(
            name: "COpenBLAS",
            pkgConfig: "openblas",
            providers: [.apt(["libopenblas-dev"])]
        ),
        .target(
            name: "Kernels",
            dependencies: [
                "GGUF",
                .target(name: "COpenBLAS", condition: .when(platforms: [.linux])),
            ] + (targetHasAVX2 ? ["VectorIntrinsics"] : []),
            swiftSettings: kernelSettings,
            linkerSettings: [.linkedFramework("Accelerate", .when(platforms: [.macOS, .iOS]))]
        ),
        .target(
            name: "VectorIntrinsics",
            swiftSettings: [.unsafeFlags(["-parse-stdlib"] + (targetCPU.map { ["-target-cpu", $0] } ?? []))] + vectorDefines
        ),
        .target(name: "TypesetTokenizer", dependencies: ["GGUF"]),
        .target(name: "TypesetGrammar"),
        .target(name: "ChatTemplating"),
        .target(name: "Models", dependencies: ["GGUF", "Kernels"], swiftSettings: kernelSettings),
        .target(
            name: "Typeset",
            dependencies: ["GGUF", "Kernels", "TypesetTokenizer", "TypesetGrammar", "ChatTemplating", "Models"]
                + (withMacros ? ["TypesetMacroPlugin"] : []),
            swiftSettings: withMacros ? [.define("TYPESET_MACROS")] : []
        ),
        // The compatibility layers: each re-exports Typeset and declares the other API's types
        // under its names (which shadow Typeset's where they share one).
        .target(
            name: "TypesetFoundationModels", dependencies: ["Typeset", "TypesetGrammar"] + (withMacros ? ["TypesetMacroPlugin"] : []),
            swiftSettings: withMacros ? [.define("TYPESET_MACROS")] : []
        ),
        .target(
            name: "TypesetLEAP", dependencies: ["Typeset"] + (withMacros ? ["TypesetMacroPlugin"] : []),
            swiftSettings: withMacros ? [.define("TYPESET_MACROS")] : []
        ),

        // MARK: Command line and benchmarks
        // Random weight tensors of every type and a seedable generator: what the kernel
        // benchmarks multiply (shipped with the command line) and the tests check.
        .target(name: "SyntheticTensors", dependencies: ["GGUF"], path: "Benchmarks/SyntheticTensors"),
        .target(
            name: "KernelBenchmarks",
            dependencies: ["GGUF", "Kernels", "SyntheticTensors"],
            path: "Benchmarks/KernelBenchmarks",
            swiftSettings: kernelSettings
        ),

        // MARK: Tests
        .target(name: "TypesetTestSupport", dependencies: ["GGUF", "Kernels", "Models", "SyntheticTensors"], path: "Tests/TypesetTestSupport"),
        .testTarget(name: "GGUFTests", dependencies: ["GGUF", "TypesetTestSupport"]),
        .testTarget(name: "KernelsTests", dependencies: ["Kernels", "TypesetTestSupport"]),
        .testTarget(name: "TokenizerTests", dependencies: ["TypesetTokenizer", "TypesetTestSupport"]),
        .testTarget(name: "GrammarTests", dependencies: ["GGUF", "TypesetGrammar", "TypesetTokenizer", "TypesetTestSupport"]),
        .testTarget(name: "ChatTemplatingTests", dependencies: ["ChatTemplating", "TypesetTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "ModelsTests", dependencies: ["Models", "TypesetTestSupport"]),
        .testTarget(name: "TypesetTests", dependencies: ["GGUF", "Models", "TypesetTokenizer", "TypesetGrammar", "Typeset", "TypesetTestSupport"]),
        .testTarget(name: "TypesetFoundationModelsTests", dependencies: ["TypesetFoundationModels", "TypesetTestSupport"]),
        .testTarget(name: "TypesetLEAPTests", dependencies: ["TypesetLEAP", "TypesetTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

if withMacros {
    // 603 is the release that goes with Swift 6.3.
    package.dependencies += [
        .package(url: "https://github.com/swiftlang/swift-syntax", "603.0.0" ..< "604.0.0"),
        // The HTTP server of `typeset serve`, without swift-configuration (its default trait).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ]
    package.products.append(.executable(name: "typeset", targets: ["TypesetCLI"]))
    package.targets += [
        .macro(
            name: "TypesetMacroPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ]
        ),
        // `typeset serve`: the OpenAI-compatible HTTP API over Typeset's continuous batching.
        .target(
            name: "TypesetServer",
            dependencies: [
                "Typeset", "TypesetGrammar", "TypesetTokenizer", "Models",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The web page at /, compiled into the binary (PackageResources.index_html, …).
            resources: [
                .embedInCode("WebPage/index.html"), .embedInCode("WebPage/page.css"), .embedInCode("WebPage/page.js"),
                .embedInCode("WebPage/automaton.js"),
            ]
        ),
        .executableTarget(
            name: "TypesetCLI",
            dependencies: [
                "GGUF", "Models", "TypesetTokenizer", "TypesetGrammar", "ChatTemplating",
                "Typeset",
                "TypesetServer",
                "KernelBenchmarks",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "GenerableTests", dependencies: ["Typeset", "TypesetGrammar", "TypesetTestSupport"]),
        // Compiles fixtures with the real compiler and the built plugin (golden expansions,
        // diagnostics): no second, target-side build of swift-syntax.
        .testTarget(name: "TypesetMacroTests", dependencies: ["Typeset", "TypesetTestSupport"], exclude: ["Fixtures"]),
    ]
}

if kernelsOnly {
    // Models too: the test support's hostile-input checkers load files as models.
    let kept: Set<String> = ["GGUF", "COpenBLAS", "VectorIntrinsics", "Kernels", "Models", "SyntheticTensors", "TypesetTestSupport", "KernelsTests"]
    package.targets.removeAll { !kept.contains($0.name) }
    package.products.removeAll { !["GGUF", "TypesetTestSupport"].contains($0.name) }
    package.dependencies.removeAll()
}

if !targetHasAVX2 {
    // Nothing uses it, and its unsafe flag must not reach a dependency resolved by URL.
    package.targets.removeAll { $0.name == "VectorIntrinsics" }
}
