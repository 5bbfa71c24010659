// swift-tools-version: 6.0
//
// libFuzzer targets for Typeset's GGUF reader (FuzzGGUF) and tokenizers (FuzzTokenizer). Kept
// out of the main package because they link libFuzzer's runtime, which ordinary builds must
// not. Build and run them with
//
//     bash Tests/Fuzz/run.sh [SECONDS] [FuzzGGUF|FuzzTokenizer]
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
            .product(name: "Tokenizer", package: "Typeset"),
            .product(name: "TypesetTestSupport", package: "Typeset"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
