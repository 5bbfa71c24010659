import TypesetFoundationModels

// The Swift samples of seed 004 (NativeFirst, "@Generable: Make Apple's On-Device Model Hand You a Swift Struct"), as the seed writes them but for the import; what a sample
// leaves out (a session, a Playground, a function around top-level statements) is marked
// "context".

// 004_02 (with the `note` the article adds in its next step: "Add let note: DominantNote to
// BrewSummary")
import TypesetFoundationModels

@Generable
struct BrewSummary {
    @Guide(description: "One short, plain sentence describing how the coffee tasted. No marketing words.")
    let flavor: String

    @Guide(description: "One concrete thing to try next time, like 'grind finer' or 'lower the water temperature'.")
    let advice: String

    @Guide(description: "Honest overall quality, from 1 (undrinkable) to 5 (excellent).", .range(1...5))
    let rating: Int

    let note: DominantNote
}

// context: the article's tests compare whole summaries ("BrewSummary is Equatable")
extension BrewSummary: Equatable {}

// 004_03
@Generable
enum DominantNote {
    case fruity, nutty, chocolatey, floral, sour, bitter, balanced
}

// context: 004_01 (a reply in words to parse)
public func cautionaryRating(response: LanguageModelSession.Response<String>) -> Int {
    // Please don't. This is the cautionary example.
    let text = response.content   // "Sharp and sour. I'd give it a 2 out of 5. Grind finer."

    let rating = text
        .components(separatedBy: " out of 5").first?
        .components(separatedBy: " ").last
        .flatMap(Int.init) ?? 3   // and the day the model says "two out of five"? It breaks.
    return rating
}

// context: 004_04
public func summarizeInline(notes: String) async throws -> String {
    let session = LanguageModelSession(
        instructions: """
        You read freeform coffee tasting notes and extract a structured summary.
        Be honest about the rating. Keep the flavor to one plain sentence.
        """
    )

    let response = try await session.respond(to: notes, generating: BrewSummary.self)
    let summary = response.content   // a real BrewSummary. Not a String.

    summary.rating    // Int. It compiles. There is no parsing step.
    summary.note      // DominantNote. An enum. The compiler knows the cases.
    precondition((1...5).contains(summary.rating))
    return "\(summary)"
}

// 004_05
protocol Summarizer {
    func summary(of text: String) async throws -> BrewSummary   // was: -> String
}

// 004_06
import TypesetFoundationModels

struct OnDeviceSummarizer: Summarizer {
    func summary(of text: String) async throws -> BrewSummary {
        let session = LanguageModelSession(
            instructions: """
            Read coffee tasting notes and extract a structured summary:
            the flavor in one plain sentence, one concrete piece of advice,
            an honest 1–5 rating, and the dominant flavor note.
            """
        )
        return try await session.respond(to: text, generating: BrewSummary.self).content
    }
}

// 004_07
extension BrewSummary {
    /// @Guide asks for 1...5. "Asks" is not "enforces at runtime on a thermally
    /// throttled Neural Engine." Clamp so a rogue value can't reach the UI.
    var safeRating: Int { min(5, max(1, rating)) }
}

// 004_10
import TypesetFoundationModels

struct BrewHistoryTool: Tool {
    let name = "lookUpAverageRating"
    let description = "Returns the user's historical average rating (1–5) for a brewing method."

    let store: BrewStore   // your own data, injected — same DI as everything else

    @Generable
    struct Arguments {
        @Guide(description: "The brewing method, e.g. 'espresso' or 'V60'.")
        let method: String
    }

    func call(arguments: Arguments) async throws -> String {
        let average = store.averageRating(forMethod: arguments.method)
        return "The user's average \(arguments.method) rating is \(average) out of 5."
    }
}

// context: 004_11
public func summarizeWithHistory(notes: String) async throws -> String {
    let store = BrewStore(brews: [.espresso(rating: 4), .espresso(rating: 2), .v60(rating: 5)])
    let session = LanguageModelSession(
        tools: [BrewHistoryTool(store: store)],
        instructions: "Summarize the brew, and compare it to the user's usual when relevant."
    )
    let response = try await session.respond(to: notes, generating: BrewSummary.self)
    precondition((1...5).contains(response.content.rating))
    return "\(response.content)"
}

// context: the app's own types the article's samples use and leave out

/// The user's brews.
struct BrewStore: Sendable {
    struct Brew: Sendable {
        var method: String
        var rating: Int
        static func espresso(rating: Int) -> Brew { Brew(method: "espresso", rating: rating) }
        static func v60(rating: Int) -> Brew { Brew(method: "V60", rating: rating) }
    }

    var brews: [Brew]

    func averageRating(forMethod method: String) -> Double {
        let ratings = brews.filter { $0.method.lowercased() == method.lowercased() }.map(\.rating)
        return ratings.isEmpty ? 0 : Double(ratings.reduce(0, +)) / Double(ratings.count)
    }
}

/// The view model the article's tests drive.
final class NoteSummaryModel {
    enum State: Equatable {
        case idle, summarizing, summarized(BrewSummary), failed
    }

    private let summarizer: any Summarizer
    private(set) var state: State = .idle

    init(summarizer: any Summarizer) { self.summarizer = summarizer }

    func summarize(_ notes: String) async {
        state = .summarizing
        do { state = .summarized(try await summarizer.summary(of: notes)) } catch { state = .failed }
    }
}
