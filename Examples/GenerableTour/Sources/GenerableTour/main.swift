import Foundation
import Typeset

// Asks Qwen2.5-Coder-0.5B-Instruct (or $TYPESET_MODEL) for one value of each type, streaming
// the last one, and prints what came back. Every value decodes: decoding is held to each
// type's schema. (SmolLM2-135M fills the same schemas with repetitive text: structure is
// guaranteed, sense comes from the model.)

let path = try ModelStore.resolve(nil, fallback: .qwen05)
let runner = try await ModelRunner.load(from: URL(fileURLWithPath: path))
let options = GenerationOptions(maxTokens: 400)
print("model: \(runner.modelID)")

let cat = try await runner.createConversation()
    .respond(to: "Generate a cute rescue cat", generating: CatProfile.self, options: options).content
print("\n\(cat)")
precondition((0...20).contains(cat.age))

let recipe = try await runner.createConversation()
    .respond(to: "Butter chicken biryani", generating: RecipeDetails.self, options: options).content
print("\n\(recipe)")
precondition((5...240).contains(recipe.cookingTime))

let journal = try await runner.createConversation(systemPrompt: "You are a thoughtful journaling assistant.")
    .respond(to: "Today the storm kept me in a cafe, working on my book; I worry I will miss my flight to Bangkok tonight.",
             generating: JournalAnalysis.self, options: options)
print("\n\(journal.content)\njson: \(journal.rawContent.jsonString)")

print("\nStreaming a StoryOutline:")
let stream = runner.createConversation(systemPrompt: "You are a creative writing assistant.")
    .streamResponse(to: "Create a story outline about a time-traveling detective", generating: StoryOutline.self, options: options)
var snapshots = 0
for try await snapshot in stream {
    snapshots += 1
    if snapshots % 20 == 1 { print("  …title: \(snapshot.content.title ?? "–"), plot points so far: \(snapshot.content.plotPoints?.count ?? 0)") }
}
let outline = try await stream.collect().content
print("\(outline)\n(\(snapshots) snapshots)")
precondition((3...5).contains(outline.plotPoints.count))
