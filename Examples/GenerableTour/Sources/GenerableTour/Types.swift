import Typeset

@Generable(description: "Basic profile information about a cat")
struct CatProfile {
    // A guide isn't necessary for basic fields.
    var name: String

    @Guide(description: "The age of the cat", .range(0...20))
    var age: Int

    @Guide(description: "A one sentence profile about the cat's personality")
    var profile: String
}

@Generable
enum CuisineType {
    case italian, mexican, asian, mediterranean, indian
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
    let protagonist: StoryCharacter

    @Guide(description: "Story setting")
    let setting: Setting

    @Guide(description: "Major plot points", .count(3...5))
    let plotPoints: [PlotPoint]
}

@Generable
struct StoryCharacter {
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
struct JournalAnalysis {
    @Guide(description: "Emotional tone: happy, sad, excited, anxious, reflective, grateful, frustrated")
    let mood: Mood

    @Guide(description: "Key topics or themes mentioned in the entry", .maximumCount(4))
    let topics: [String]

    @Guide(description: "One-sentence summary of the main point")
    let summary: String

    @Guide(description: "A thoughtful, personalized question that helps with self-reflection")
    let nextPrompt: String?

    @Guide(description: "Life areas mentioned: work, relationships, health, hobbies, goals", .maximumCount(3))
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
