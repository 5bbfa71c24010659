// LEAP's spellings of generation options: chainable builders, `rngSeed`, the JSON Schema
// constraint and a response format from a generable type. Each sets the field Typeset's own
// spelling sets.

extension GenerationOptions {
    /// These options with `temperature` set (LEAP's builder; `var` fields set the same).
    public func with(temperature: Float) -> GenerationOptions { changed { $0.temperature = temperature } }
    /// These options with `topP` set.
    public func with(topP: Float) -> GenerationOptions { changed { $0.topP = topP } }
    /// These options with `minP` set.
    public func with(minP: Float) -> GenerationOptions { changed { $0.minP = minP } }
    /// These options with `repetitionPenalty` set.
    public func with(repetitionPenalty: Float) -> GenerationOptions { changed { $0.repetitionPenalty = repetitionPenalty } }
    /// These options with `topK` set.
    public func with(topK: Int) -> GenerationOptions { changed { $0.topK = topK } }
    /// These options with the sampler's seed set.
    public func with(rngSeed: Int64) -> GenerationOptions { changed { $0.rngSeed = rngSeed } }
    /// These options holding the reply to the JSON Schema `jsonSchema` (JSON text).
    public func with(jsonSchema: String) -> GenerationOptions { changed { $0.jsonSchema = jsonSchema } }
    /// These options with `maxTokens` set.
    public func with(maxTokens: Int) -> GenerationOptions { changed { $0.maxTokens = maxTokens } }
    /// These options with `injectSchemaIntoPrompt` set.
    public func with(injectSchemaIntoPrompt: Bool) -> GenerationOptions { changed { $0.injectSchemaIntoPrompt = injectSchemaIntoPrompt } }
    /// These options with `inlineThinkingTags` set.
    public func with(inlineThinkingTags: Bool) -> GenerationOptions { changed { $0.inlineThinkingTags = inlineThinkingTags } }
    /// These options with `enableThinking` set.
    public func with(enableThinking: Bool) -> GenerationOptions { changed { $0.enableThinking = enableThinking } }

    /// These options with `topK` set, from LEAP's `Int32`.
    @_disfavoredOverload
    public func with(topK: Int32) -> GenerationOptions { with(topK: Int(topK)) }
    /// These options with `maxTokens` set, from LEAP's `Int32`.
    @_disfavoredOverload
    public func with(maxTokens: Int32) -> GenerationOptions { with(maxTokens: Int(maxTokens)) }

    private func changed(_ change: (inout GenerationOptions) -> Void) -> GenerationOptions {
        var copy = self
        change(&copy)
        return copy
    }

    /// The sampler's seed as LEAP types it (the same bits as ``seed``).
    public var rngSeed: Int64? {
        get { seed.map { Int64(bitPattern: $0) } }
        set { seed = newValue.map { UInt64(bitPattern: $0) } }
    }

    /// LEAP's name for ``jsonSchema``.
    public var jsonSchemaConstraint: String? {
        get { jsonSchema }
        set { jsonSchema = newValue }
    }

    /// Holds the reply to the JSON Schema `jsonSchema` (JSON text), as LEAP's
    /// `GenerationOptionsCompat` spells it.
    @available(*, deprecated, message: "set jsonSchema")
    public mutating func setResponseFormat(jsonSchema: String) { self.jsonSchema = jsonSchema }

    /// Holds the reply to `type`'s schema (LEAP's `setResponseFormat(type:)`); decode the
    /// reply's text with `JSONDecoder` (for a `Codable` type) or `T(GeneratedContent(json:))`.
    public mutating func setResponseFormat<Content: Generable>(type: Content.Type) {
        jsonSchema = Content.generationSchema.jsonText
    }
}

// MARK: - JSON Schemas of generable types, as LEAP asks for them

extension Generable {
    /// The type's JSON Schema as JSON text (LEAP's `jsonSchema()`; ``generationSchema`` is
    /// the same schema as a value).
    public static func jsonSchema() -> String { generationSchema.jsonText }
}

/// LEAP's helper for a generable type's JSON Schema text, to show it in a prompt.
public enum JSONSchemaGenerator {
    /// `type`'s JSON Schema as JSON text.
    public static func getJSONSchema<Content: Generable>(for type: Content.Type) -> String { Content.jsonSchema() }
}

/// LEAP's options type of its legacy `Leap.load(…)` flows: Typeset has one options type.
@available(*, deprecated, renamed: "GenerationOptions")
public typealias GenerationOptionsCompat = GenerationOptions
