// The Swift samples of seed 002 (streaming, with its own StoryOutline), as the seed writes them but for the import; what a sample
// leaves out (a session, a Playground, a function around top-level statements) is marked
// "context".
import TypesetFoundationModels

// 002_21
@Generable
struct StoryOutline {
    @Guide(description: "Story title")
    let title: String

    @Guide(description: "Main character details")
    let protagonist: Character

    @Guide(description: "List of 3-5 plot points")
    let plotPoints: [String]
}

@Generable
struct Character {
    @Guide(description: "Character name")
    let name: String

    @Guide(description: "Character background")
    let background: String
}

func streamStoryOutline() async {
    do {
        let stream = session.streamResponse(
            to: "Create a story outline for a mystery novel",
            generating: StoryOutline.self
        )
        
        for try await snapshot in stream {
            await MainActor.run {
                // snapshot.content is StoryOutline.PartiallyGenerated
                // Fields populate as the model generates them
                updateStoryUI(with: snapshot.content)
            }
        }
        
        // Get complete result
        let finalOutline = try await stream.collect()
        await MainActor.run {
            displayFinalOutline(finalOutline.content)
        }
    } catch {
        handleStreamingError(error)
    }
}

// context: what 002_21 calls and leaves out
let session = LanguageModelSession(instructions: "You are a creative writing assistant.")

@MainActor var snapshotsSeen = 0
@MainActor var titles: [String] = []
@MainActor var finalOutlineText: String?
@MainActor var streamingError: (any Error)?

@MainActor func updateStoryUI(with outline: StoryOutline.PartiallyGenerated) {
    snapshotsSeen += 1
    if let title = outline.title { titles.append(title) }
}

@MainActor func displayFinalOutline(_ outline: StoryOutline) {
    precondition((3...5).contains(outline.plotPoints.count) || !outline.plotPoints.isEmpty)
    finalOutlineText = "\(outline)"
}

func handleStreamingError(_ error: any Error) {
    Task { @MainActor in streamingError = error }
}

/// Runs 002_21 and reports what the UI saw: the snapshots, and the final outline.
@MainActor public func streamedOutline() async throws -> (snapshots: Int, outline: String) {
    await streamStoryOutline()
    if let streamingError { throw streamingError }
    return (snapshotsSeen, finalOutlineText ?? "")
}
