// The Swift samples of seed 002 (the detailed journal analysis, which declares Challenge and Timeline again), as the seed writes them but for the import; what a sample
// leaves out (a session, a Playground, a function around top-level statements) is marked
// "context".
import TypesetFoundationModels


// context: 002_13's Mood, which 002_15 uses
@Generable
enum Mood: String, CaseIterable {
    case happy, sad, excited, anxious, reflective, grateful, frustrated, neutral
}

// 002_15
@Generable
struct DetailedJournalInsight {
    @Guide(description: "Overall emotional analysis")
    let emotional: EmotionalAnalysis
    
    @Guide(description: "Goals and aspirations mentioned")
    let goals: [Goal]
    
    @Guide(description: "Challenges or concerns raised")
    let challenges: [Challenge]
    
    @Guide(description: "Growth opportunities identified")
    let growthAreas: [String]
}

@Generable
struct EmotionalAnalysis {
    @Guide(description: "Primary emotion expressed")
    let primary: Mood
    
    @Guide(description: "Secondary emotions present")
    let secondary: [Mood]
    
    @Guide(description: "Emotional intensity from 1-10", .range(1...10))
    let intensity: Int
}

@Generable
struct Goal {
    @Guide(description: "The specific goal or aspiration")
    let description: String
    
    @Guide(description: "Timeline mentioned: short-term, medium-term, long-term")
    let timeline: Timeline
    
    @Guide(description: "Confidence level in achieving this goal from 1-10", .range(1...10))
    let confidence: Int
}

@Generable
struct Challenge {
    @Guide(description: "Description of the challenge or concern")
    let description: String
    
    @Guide(description: "Severity level from 1-10", .range(1...10))
    let severity: Int
}

@Generable
enum Timeline: String, CaseIterable {
    case shortTerm = "short-term"
    case mediumTerm = "medium-term" 
    case longTerm = "long-term"
}

// 002_16 (the seed indents its closing quotes past the text, which Swift rejects: aligned here)
public func detailedJournalInsight() async throws {
    let session = LanguageModelSession(
        instructions: "You are an expert journal analyst. Analyze emotions, goals, and challenges in detail."
    )
    
    let detailedInsight = try await session.respond(
        to: """
    Today is my last day in Chiang Mai. I wanted to go shopping for some muay thai shorts but there is a storm outside so I am stuck in a cafe working on this book instead. I hope the storm weakens because I have a flight to Bangkok later tonight and I cannot miss it otherwise I will miss my subsequent flights to India. I know it is not in my control but it worries me. Working on this book is a good distraction.
    """,
        generating: DetailedJournalInsight.self
    ).content
    
    print(detailedInsight)
}
