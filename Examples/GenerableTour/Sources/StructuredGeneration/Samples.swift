// The Swift samples of seed 002 (Rudrank Riyam, "Structured Generation with Schemas"), as the seed writes them but for the import; what a sample
// leaves out (a session, a Playground, a function around top-level statements) is marked
// "context".
import TypesetFoundationModels

// context: 002_01
public func bookInWords(session: LanguageModelSession) async throws -> String {
    // Traditional approach: Parse unstructured text
    let response = try await session.respond(to: "Recommend a book about MusicKit")
    // Response: "I recommend 'Exploring MusicKit' by Rudrank Riyam. It is the best guide available on the internet..."
    // Now manually extract title, author, description...
    return response.content
}

// 002_02
@Generable struct RecipeRecommendation {
    @Guide(description: "The name of the dish")
    let name: String
    
    @Guide(description: "Brief cooking instructions")
    let instructions: String
    
    @Guide(description: "The cuisine type this recipe belongs to")
    let cuisine: CuisineType
}

@Generable
enum CuisineType {
    case italian
    case mexican
    case asian
    case mediterranean
    case indian
}

// 002_03
@Generable
struct RecipeDetails {
    @Guide(description: "A clear recipe name, maximum 60 characters")
    let name: String
    
    @Guide(description: "Cooking time in minutes, between 5 and 240")
    let cookingTime: Int
    
    @Guide(description: "Step-by-step cooking instructions")
    let instructions: String
    
    @Guide(description: "The cuisine type this recipe belongs to")
    let cuisine: CuisineType
}

// 002_04 (context: the Playground is a function)
public func butterChickenBiryani() async throws {
    let session = LanguageModelSession()
    let recipe = try await session.respond(
        to: "Butter chicken biryani",
        generating: RecipeDetails.self
    )
}

// 002_05
@Generable
struct BookRecommendation {
    @Guide(description: "The book title")
    let title: String

    @Guide(description: "Author name")
    let author: String

    @Guide(description: "Brief description")
    let description: String
}

// context: 002_05
public func bookRecommendation(session: LanguageModelSession) async throws {
    // Get structured result
    let book = try await session.respond(
        to: "Recommend a book about MusicKit",
        generating: BookRecommendation.self
    )

    // Use immediately in Swift code (the seed's page lost the backslashes of its
    // interpolations: restored)
    print("Book: \(book.title) by \(book.author)")
    // Book: "Exploring MusicKit" by Rudrank Riyam
}

// 002_06 (the seed's page lost the regex's backslashes, printing /^d{2}:d{2}$/, which
// matches "dd:dd" literally: restored as the description means)
@Generable
struct RecipeMetadata {
    @Guide(description: "Recipe difficulty level", /^(Easy|Medium|Hard)$/)
    let difficulty: String
    
    @Guide(description: "Prep time in HH:MM format", /^\d{2}:\d{2}$/)
    let prepTime: String
}

// 002_07
@Generable
struct StoryOutline {
    @Guide(description: "Compelling story title")
    let title: String

    @Guide(description: "Main character details")
    let protagonist: Character

    @Guide(description: "Story setting")
    let setting: Setting

    @Guide(description: "Major plot points")
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

// 002_08
public func timeTravelingDetective() async throws {
    let session = LanguageModelSession(instructions: "You are a creative writing assistant.")
    let outline = try await session.respond(
    to: "Create a story outline about a time-traveling detective",
        generating: StoryOutline.self
    ).content

    print(outline)
}

// 002_09
@Generable
struct Event {
    @Guide(description: "Event name")
    let title: String

    @Guide(description: "Event date in YYYY-MM-DD format")
    let date: String

    @Guide(description: "Location (if specified)")
    let location: String?

    @Guide(description: "Attendee count (if known)")
    let attendeeCount: Int?
}

// 002_10
public func teamMeeting() async throws {
    let session = LanguageModelSession(instructions: "You are a event assistant.")

    let event = try await session.respond(
    to: "Schedule a team meeting for tomorrow at 2 PM",
        generating: Event.self
    )

    print(event.content)
}

// 002_11
@Generable
struct ProductReview {
    @Guide(description: "Product name")
    let name: String

    @Guide(description: "Exactly 3 key features", .count(3))
    let keyFeatures: [String]

    @Guide(description: "2-5 pros of the product")
    let pros: [String]

    @Guide(description: "Brief summary, 50-100 words")
    let summary: String
    
    @Guide(description: "Rating from 1 to 5 stars", .range(1...5))
    let rating: Int
}

// 002_12
public func productReview() async throws {
    let session = LanguageModelSession(
        instructions: "You are a helpful product review analyzer."
    )
    
    let review = try await session.respond(
        to: "Analyze this iPhone 16 Pro: Amazing camera system with 5x optical zoom, excellent build quality, and great performance. Battery life could be better for heavy users and it is quite expensive.",
        generating: ProductReview.self
    )
    
    print(review.content)
}

// 002_13
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

// 002_14
public func journalAnalysis() async throws {
    let session = LanguageModelSession(
        instructions: "You are a thoughtful journaling assistant. Help users reflect on their experiences."
    )
    
    let journalAnalysis = try await session.respond(
        to: """
    Today is my last day in Chiang Mai. I wanted to go shopping for some muay thai shorts but there is a storm outside so I am stuck in a cafe working on this book instead. I hope the storm weakens because I have a flight to Bangkok later tonight and I cannot miss it otherwise I will miss my subsequent flights to India. I know it is not in my control but it worries me. Working on this book is a good distraction.
    """,
        generating: JournalAnalysis.self
    ).content
    
    print(journalAnalysis)
}

// 002_17
@available(iOS 26, *)
@Generable
struct NutritionParseResult: Codable {
    @Guide(description: "Clear name of the food item(s), e.g. 'Oatmeal with banana and almonds'")
    let foodName: String

    @Guide(description: "Total calories for the portion, rounded to whole numbers")
    let calories: Double

    @Guide(description: "Total protein in grams, rounded to one decimal place")
    let proteinGrams: Double

    @Guide(description: "Total carbohydrates in grams, rounded to one decimal place")
    let carbsGrams: Double

    @Guide(description: "Total fat in grams, rounded to one decimal place")
    let fatGrams: Double
}

