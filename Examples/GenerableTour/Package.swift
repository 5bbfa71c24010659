// swift-tools-version: 6.0
//
// An app's-eye view of Typeset: a package that depends on it by path, declares its own
// @Generable types (the seed documents' CatProfile, RecipeDetails, StoryOutline and
// JournalAnalysis) and asks the default model for each. CI builds and runs it:
//
//     swift run -c release --package-path Examples/GenerableTour
import PackageDescription

let package = Package(
    name: "GenerableTour",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Typeset", path: "../..")],
    targets: [
        .executableTarget(name: "GenerableTour", dependencies: [.product(name: "Typeset", package: "Typeset")]),
    ],
    swiftLanguageModes: [.v6]
)
