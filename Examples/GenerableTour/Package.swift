// swift-tools-version: 6.0
//
// An app's-eye view of Typeset: a package that depends on it by path. GenerableTour declares
// @Generable types of its own, modelled on the seed documents' CatProfile, RecipeDetails,
// StoryOutline and JournalAnalysis, and asks the default model for each through Typeset's own
// API. The seed documents' Swift samples themselves, typed as printed, are the other targets,
// run by SeedSamples. CI builds and runs both:
//
//     swift run -c release --package-path Examples/GenerableTour
//     swift run -c release --package-path Examples/GenerableTour SeedSamples
import PackageDescription

let typeset: Target.Dependency = .product(name: "Typeset", package: "Typeset")
let foundationModels: Target.Dependency = .product(name: "TypesetFoundationModels", package: "Typeset")
let leap: Target.Dependency = .product(name: "TypesetLEAP", package: "Typeset")

let package = Package(
    name: "GenerableTour",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Typeset", path: "../..")],
    targets: [
        .executableTarget(name: "GenerableTour", dependencies: [typeset]),
        // The seed documents' Foundation Models and LEAP samples, one module per document part
        // (the parts declare types of the same names), run by SeedSamples; the article's
        // tests are BrewLogTests.
        .target(name: "GuidedGeneration", dependencies: [foundationModels]),
        .target(name: "StructuredGeneration", dependencies: [foundationModels]),
        .target(name: "JournalInsight", dependencies: [foundationModels]),
        .target(name: "StreamingOutline", dependencies: [foundationModels]),
        .target(name: "BrewLog", dependencies: [foundationModels]),
        .target(name: "LeapSamples", dependencies: [leap]),
        .executableTarget(
            name: "SeedSamples",
            dependencies: [foundationModels, "GuidedGeneration", "StructuredGeneration", "JournalInsight", "StreamingOutline", "BrewLog", "LeapSamples"]),
        .testTarget(name: "BrewLogTests", dependencies: ["BrewLog"]),
    ],
    swiftLanguageModes: [.v6]
)
