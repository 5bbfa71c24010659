// The Swift samples of seed 001 (Apple, "Generating Swift data structures with guided generation"), as the seed writes them but for the import; what a sample
// leaves out (a session, a Playground, a function around top-level statements) is marked
// "context".
import TypesetFoundationModels

// context: 001_01
public func tablespoonsInACup() async throws -> Float {
    let prompt = "How many tablespoons are in a cup?"
    let session = LanguageModelSession(model: .default)

    // Generate a response with the type `Float`, instead of `String`.
    let response = try await session.respond(to: prompt, generating: Float.self)
    return response.content
}

// 001_02
@Generable(description: "Basic profile information about a cat")
struct CatProfile {
    // A guide isn't necessary for basic fields.
    var name: String

    @Guide(description: "The age of the cat", .range(0...20))
    var age: Int

    @Guide(description: "A one sentence profile about the cat's personality")
    var profile: String
}

// context: 001_03
public func rescueCat(session: LanguageModelSession) async throws -> String {
    // Generate a response using a custom type.
    let response = try await session.respond(
        to: "Generate a cute rescue cat",
        generating: CatProfile.self
    )
    precondition((0...20).contains(response.content.age))
    return "\(response.content)"
}

// context: 001_04, 001_05, 001_06
public func dailySoup(session: LanguageModelSession) async throws -> String {
    // Create the dynamic schema at runtime.
    let menuSchema = DynamicGenerationSchema(
        name: "Menu",
        properties: [
            DynamicGenerationSchema.Property(
                name: "dailySoup",
                schema: DynamicGenerationSchema(
                    name: "dailySoup",
                    anyOf: ["Tomato", "Chicken Noodle", "Clam Chowder"]
                )
            )

            // Add additional properties.
        ]
    )
    // Create the schema.
    let schema = try GenerationSchema(root: menuSchema, dependencies: [])
    // Pass the schema to the model to guide the output.
    let response = try await session.respond(
        to: "The prompt you want to make.",
        schema: schema
    )
    return try response.content.value(String.self, forProperty: "dailySoup")
}
