import Foundation
import BrewLog
import GuidedGeneration
import JournalInsight
import LeapSamples
import StreamingOutline
import StructuredGeneration
import TypesetFoundationModels

// Runs the seed documents' Foundation Models and LEAP samples against Typeset's default model (or
// $TYPESET_MODEL), each as its document runs it, and prints what came back. Every typed
// value decodes and keeps its guides (the samples check their ranges); sense comes from the
// model.

func run(_ name: String, _ sample: () async throws -> String) async {
    let start = Date()
    do {
        let result = try await sample()
        print("\n[\(name)] (\(String(format: "%.1f", Date().timeIntervalSince(start))) s)\n\(result)")
    } catch {
        print("\n[\(name)] failed: \(error)")
        exit(1)
    }
}

let session = LanguageModelSession()
await run("001: a Float, not a String") { "\(try await tablespoonsInACup())" }
await run("001: CatProfile") { try await rescueCat(session: session) }
await run("001: a run-time schema") {
    let soup = try await dailySoup(session: session)
    precondition(["Tomato", "Chicken Noodle", "Clam Chowder"].contains(soup))
    return soup
}
await run("002: a book, typed") {
    try await bookRecommendation(session: LanguageModelSession())
    return "(printed above)"
}
await run("002: an Event with optionals") {
    try await teamMeeting()
    return "(printed above)"
}
await run("002: streaming a StoryOutline") {
    let (snapshots, outline) = try await streamedOutline()
    precondition(snapshots > 1, "the outline streamed in one piece")
    return "\(snapshots) snapshots; final: \(outline)"
}
let notes = "V60, 15 g to 250 g, 93 °C. Sharp and sour, thin body, a little lemony. Probably ground too coarse."
await run("004: BrewSummary") { try await summarizeInline(notes: notes) }
await run("004: BrewSummary with the history tool") { try await summarizeWithHistory(notes: notes) }
let words = try await LanguageModelSession(instructions: "Rate coffee from 1 to 5 in words.").respond(to: notes)
await run("004: the cautionary parser") { "\(cautionaryRating(response: words)) from \"\(words.content)\"" }

// LEAP (seeds 003 and 000): the streaming loop, the export, constrained replies decoded as
// the pages decode them, on the model SystemLanguageModel.default names, loaded as LEAP loads it.
let conversation = try await leapConversation(modelPath: try SystemLanguageModel.default.runner().url.path)
await run("003: the streaming loop") {
    await streamingLoop(conversation: conversation)
    precondition(conversation.history.count == 3, "the reply was not added to the history")
    return "(streamed above)"
}
await run("003: exportToJSON") { exported(conversation: conversation) }
await run("003: a CityFact held to its schema, decoded with JSONDecoder") {
    "\(try await cityFact(conversation: conversation.modelRunner.createConversation(systemPrompt: nil), about: "Lisbon"))"
}
await run("000: a Joke held to its schema, decoded with JSONDecoder") {
    try await programmingJoke(conversation: conversation.modelRunner.createConversation(systemPrompt: nil))
    return "(printed above)"
}
await run("000: the schema in the prompt") { "\(try schemaInThePrompt().content.count) part(s)" }
await run("000: a nested Recipe, read with the page's parser") {
    await recipe(conversation: conversation.modelRunner.createConversation(systemPrompt: nil))
}
