#if TYPESET_MACROS
/// LEAP's spelling of `@Generable(description:)`: the description without its label.
///
/// ```swift
/// @Generatable("A joke with metadata")
/// struct Joke: Codable {
///     @Guide("The joke text")
///     let text: String
/// }
/// let options = GenerationOptions().with(jsonSchema: Joke.jsonSchema())
/// ```
@attached(member, names: named(generationSchema), named(PartiallyGenerated), named(init(_:)), named(generatedContent))
@attached(extension, conformances: Generable, names: named(init(_:)), named(generatedContent))
public macro Generatable(_ description: String) = #externalMacro(module: "TypesetMacroPlugin", type: "GenerableMacro")

/// LEAP's spelling of `@Guide(description:…)`: the description without its label.
///
/// ```swift
/// @Guide("The city, as its residents spell it")
/// var city: String
/// ```
@attached(peer)
public macro Guide(_ description: String, _ guides: GenerationGuide<Any>...) =
    #externalMacro(module: "TypesetMacroPlugin", type: "GuideMacro")
#endif
