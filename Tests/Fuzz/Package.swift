// swift-tools-version: 6.0
//
// libFuzzer target for Typeset's GGUF reader. Kept out of the main package because it links
// libFuzzer's runtime, which ordinary builds must not. Build and run it with
//
//     bash Tests/Fuzz/run.sh [SECONDS]
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
    ],
    swiftLanguageModes: [.v6]
)
