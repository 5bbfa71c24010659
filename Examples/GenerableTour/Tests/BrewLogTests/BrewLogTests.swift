// The test code of seed 004, as the article writes it.
import Testing
@testable import BrewLog

struct StubSummarizer: Summarizer {
    let result: BrewSummary
    func summary(of text: String) async throws -> BrewSummary { result }
}

struct FailingSummarizer: Summarizer {
    struct Boom: Error {}
    func summary(of text: String) async throws -> BrewSummary { throw Boom() }
}

@Suite("Structured summary behavior")
struct BrewSummaryTests {

    @Test("a rogue high rating is clamped before it reaches the UI")
    func clampsAboveFive() {
        let summary = BrewSummary(flavor: "x", advice: "y", rating: 7, note: .bitter)
        #expect(summary.safeRating == 5)
    }

    @Test("a rogue zero rating is clamped up to the floor")
    func clampsBelowOne() {
        let summary = BrewSummary(flavor: "x", advice: "y", rating: 0, note: .sour)
        #expect(summary.safeRating == 1)
    }

    @Test("a typed summary flows through the model as a value, not a string")
    func typedSummaryFlowsThrough() async {
        let expected = BrewSummary(flavor: "Bright and citrusy.", advice: "Try a coarser grind.",
                                   rating: 4, note: .fruity)
        let model = NoteSummaryModel(summarizer: StubSummarizer(result: expected))
        await model.summarize(String(repeating: "tasting notes ", count: 5))
        #expect(model.state == .summarized(expected))   // BrewSummary is Equatable; compare the whole value
    }
}


@Test("the history tool reports the average for a method")
func toolReportsAverage() async throws {
    let store = BrewStore(brews: [.espresso(rating: 4), .espresso(rating: 2)])
    let tool = BrewHistoryTool(store: store)

    let output = try await tool.call(arguments: .init(method: "espresso"))

    #expect(output.contains("3"))   // (4 + 2) / 2
}
