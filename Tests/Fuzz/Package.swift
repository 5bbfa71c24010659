// swift-tools-version: 6.0
//
// libFuzzer targets for Typeset's GGUF reader (FuzzGGUF), tokenizers (FuzzTokenizer), JSON
// Schema compiler (FuzzSchema) and chat-template renderer (FuzzTemplate). Kept
// out of the main package because they link libFuzzer's runtime, which ordinary builds must
// not. Build and run them with
//
//     bash Tests/Fuzz/run.sh [SECONDS] [FuzzGGUF|FuzzTokenizer|FuzzSchema|FuzzTemplate]
//
// (the flags it passes are explained there). See docs/gguf.md.
import PackageDescription

let package = Package(
    name: "TypesetFuzz",
    dependencies: [.package(name: "Typeset", path: "../..")],
    targets: [
        .target(name: "CLibFuzzer"),
        .executableTarget(name: "FuzzGGUF", dependencies: [
            "CLibFuzzer",
            .product(name: "GGUF", package: "Typeset"),
            .product(name: "TypesetTestSupport", package: "Typeset"),
        ]),
        .executableTarget(name: "FuzzTokenizer", dependencies: [
            "CLibFuzzer",
            .product(name: "GGUF", package: "Typeset"),
            .product(name: "TypesetTokenizer", package: "Typeset"),
            .product(name: "TypesetTestSupport", package: "Typeset"),
        ]),
        .executableTarget(name: "FuzzSchema", dependencies: [
            "CLibFuzzer",
            .product(name: "TypesetGrammar", package: "Typeset"),
            .product(name: "TypesetTestSupport", package: "Typeset"),
        ]),
        .executableTarget(name: "FuzzTemplate", dependencies: [
            "CLibFuzzer",
            .product(name: "ChatTemplating", package: "Typeset"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
