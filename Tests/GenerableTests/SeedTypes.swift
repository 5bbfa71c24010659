import Foundation
import Typeset

// The seed documents' types (Apple's guided-generation article, the structured-generation
// chapter, the @Generable blog post), declared as there, with guides where Fixtures/schemas
// states a constraint the prose only describes.

// MARK: Apple's article

@Generable(description: "Basic profile information about a cat")
struct CatProfile: Equatable {
    // A guide isn't necessary for basic fields.
    var name: String

    @Guide(description: "The age of the cat", .range(0...20))
    var age: Int

    @Guide(description: "A one sentence profile about the cat's personality")
    var profile: String
}

// MARK: The blog post

@Generable
struct BrewSummary: Equatable {
    @Guide(description: "One short, plain sentence describing how the coffee tasted. No marketing words.")
    let flavor: String

    @Guide(description: "One concrete thing to try next time, like 'grind finer' or 'lower the water temperature'.")
    let advice: String

    @Guide(description: "Honest overall quality, from 1 (undrinkable) to 5 (excellent).", .range(1...5))
    let rating: Int

    let note: DominantNote
}

@Generable
enum DominantNote: Equatable {
    case fruity, nutty, chocolatey, floral, sour, bitter, balanced
}

// MARK: The chapter

@Generable
enum CuisineType {
    case italian
    case mexican
    case asian
    case mediterranean
    case indian
}

@Generable struct RecipeRecommendation {
    @Guide(description: "The name of the dish")
    let name: String

    @Guide(description: "Brief cooking instructions")
    let instructions: String

    @Guide(description: "The cuisine type this recipe belongs to")
    let cuisine: CuisineType
}

@Generable
struct BookRecommendation {
    @Guide(description: "The book title")
    let title: String

    @Guide(description: "Author name")
    let author: String

    @Guide(description: "Brief description")
    let description: String
}

/// The chapter's regex example. Its second pattern is printed as `/^d{2}:d{2}$/` (the
/// backslashes lost in typesetting); the intent, two digits, a colon, two digits, is written
/// here.
@Generable
struct RecipeMetadata {
    @Guide(description: "Recipe difficulty level", /^(Easy|Medium|Hard)$/)
    let difficulty: String

    @Guide(description: "Prep time in HH:MM format", /^\d{2}:\d{2}$/)
    let prepTime: String
}

@Generable
struct RecipeDetails {
    @Guide(description: "A clear recipe name, maximum 60 characters")
    let name: String

    @Guide(description: "Cooking time in minutes, between 5 and 240", .range(5...240))
    let cookingTime: Int

    @Guide(description: "Step-by-step cooking instructions")
    let instructions: String

    @Guide(description: "The cuisine type this recipe belongs to")
    let cuisine: CuisineType
}

@Generable
struct StoryOutline {
    @Guide(description: "Compelling story title")
    let title: String

    @Guide(description: "Main character details")
    let protagonist: Character

    @Guide(description: "Story setting")
    let setting: Setting

    @Guide(description: "Major plot points", .minimumCount(3))
    let plotPoints: [PlotPoint]
}

@Generable
struct Character {
    @Guide(description: "Character name")
    let name: String

    @Guide(description: "Character motivation")
    let motivation: String
}

@Generable
struct Setting {
    @Guide(description: "Time period")
    let timePeriod: String

    @Guide(description: "Primary location")
    let location: String
}

@Generable
struct PlotPoint {
    @Guide(description: "Brief description of the plot event")
    let description: String

    @Guide(description: "Order in the story: beginning, middle, end")
    let position: StoryPosition
}

@Generable
enum StoryPosition: String, CaseIterable {
    case beginning, middle, end
}

@Generable
struct Event {
    @Guide(description: "Event name")
    let title: String

    @Guide(description: "Event date in YYYY-MM-DD format", /^[0-9]{4}-[0-9]{2}-[0-9]{2}$/)
    let date: String

    @Guide(description: "Location (if specified)")
    let location: String?

    @Guide(description: "Attendee count (if known)")
    let attendeeCount: Int?
}

@Generable
struct ProductReview {
    @Guide(description: "Product name")
    let name: String

    @Guide(description: "Exactly 3 key features", .count(3))
    let keyFeatures: [String]

    @Guide(description: "2-5 pros of the product", .count(2...5))
    let pros: [String]

    @Guide(description: "Brief summary, 50-100 words")
    let summary: String

    @Guide(description: "Rating from 1 to 5 stars", .range(1...5))
    let rating: Int
}

@Generable
struct JournalAnalysis {
    @Guide(description: "Emotional tone: happy, sad, excited, anxious, reflective, grateful, frustrated")
    let mood: Mood

    @Guide(description: "Key topics or themes mentioned in the entry")
    let topics: [String]

    @Guide(description: "One-sentence summary of the main point")
    let summary: String

    @Guide(description: "A thoughtful, personalized question that helps with self-reflection based on the specific journal entry content")
    let nextPrompt: String?

    @Guide(description: "Life areas mentioned: work, relationships, health, hobbies, goals")
    let lifeAreas: [LifeArea]
}

@Generable
enum Mood: String, CaseIterable {
    case happy, sad, excited, anxious, reflective, grateful, frustrated, neutral
}

@Generable
enum LifeArea: String, CaseIterable {
    case work, relationships, health, hobbies, goals, family, travel, learning
}

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

// MARK: Beyond the seeds: every guide, every width, payloads, recursion

@Generable(description: "Every guide on every type it applies to")
public struct GuideShowcase: Equatable {
    @Guide(.range(-5...5)) public var small: Int8
    @Guide(.minimum(10)) public var unsigned: UInt32
    @Guide(.maximum(1_000_000_000_000)) public var wide: Int64
    @Guide(.range(0.5...2.5)) public var ratio: Double
    @Guide(.minimum(-1.5), .maximum(1.5)) public var float: Float
    @Guide(.range(Decimal(string: "0.01")!...Decimal(99))) public var price: Decimal
    @Guide(.anyOf(["red", "green"])) public var color: String
    @Guide(.constant("v1")) public var version: String
    @Guide(.pattern("^[A-Z]{3}$")) public var code: String
    @Guide(description: "ISO date", /^\d{4}-\d{2}-\d{2}$/) public var day: String
    @Guide(.count(2), .element(.range(1...3))) public var pair: [Int]
    @Guide(.minimumCount(1), .maximumCount(2), .element(.anyOf(["x", "y"]))) public var tags: [String]
    public var flag: Bool
    public var maybe: Double?
    public var computed: Int { small.bitWidth }
    public static let ignored = 0
}

@Generable(description: "A shape to draw")
enum Shape: Equatable {
    case circle(radius: Double)
    case rectangle(width: Double, height: Double)
    case label(String)
    case point
}

@Generable
struct Folder: Equatable {
    var name: String
    var children: [Folder]
}

// MARK: Nested types (the Foundation Models tool pattern)

/// A file-scope type with the same name as a nested one below: the nested type's schema must
/// be the one used inside `GetWeather`, not this one.
@Generable
enum Unit {
    case kelvin
}

struct GetWeather {
    @Generable
    enum Unit {
        case celsius
        case fahrenheit
    }

    @Generable
    struct Location: Equatable {
        var city: String
    }

    @Generable
    struct Arguments {
        @Guide(description: "The city to get weather information for")
        var location: Location
        var unit: Unit
        var fallback: Unit?
        @Guide(description: "A ticket code", .pattern(/[A-Z]{2}[0-9]{6}/))
        var ticket: String
    }

    @Generable
    enum Reading: Equatable {
        case temperature(Double, unit: Unit)
        case missing(reason: Location?)
    }
}
