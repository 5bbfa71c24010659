/// How to generate one reply, as LEAP spells it: a class whose fields are `nil` (or their
/// default) unless set, with chainable builders.
///
/// ```swift
/// let options = GenerationOptions()
///     .with(temperature: 0.3)
///     .with(minP: 0.15)
///     .with(maxTokens: 512)
///     .with(jsonSchema: CityFact.jsonSchema())
/// ```
///
/// A `nil` sampling field is the model's default (its GGUF's `general.sampling.*`, else greedy
/// decoding), as a LEAP bundle's manifest sets them.
public final class GenerationOptions: @unchecked Sendable {
    public var temperature: Float?
    public var topP: Float?
    public var minP: Float?
    public var repetitionPenalty: Float?
    public var topK: Int32?
    /// The sampler's seed: the same seed, options, model and prompt give the same reply.
    public var rngSeed: Int64?
    /// A JSON Schema (as JSON text) the reply is held to while it is decoded.
    public var jsonSchemaConstraint: String?
    /// The format the model writes function calls in; `nil` leaves its calls as text in the
    /// chunks. By default the model's own: LFM's for a vocabulary with LFM's call tokens (the
    /// models LEAP runs), Hermes's otherwise.
    public var functionCallParser: LeapFunctionCallParser?
    /// Whether the schema is also shown to the model, before the request (default true).
    public var injectSchemaIntoPrompt: Bool
    /// The most tokens the reply may have.
    public var maxTokens: Int32?
    /// Whether a `<think>` block streams as text, tags included, instead of as reasoning.
    public var inlineThinkingTags: Bool
    /// Whether the model should think before answering (the chat template's `enable_thinking`).
    public var enableThinking: Bool
    /// LEAP's payload for its own engine. Typeset runs no such engine: a reply whose options
    /// set it fails (``GenerationFinishReason/error``) rather than ignore it.
    public var extras: String?

    /// Options with every field at its default (the builders' entry point); any field may be
    /// given, in LEAP's order.
    public init(
        temperature: Float? = nil, topP: Float? = nil, minP: Float? = nil, repetitionPenalty: Float? = nil, topK: Int32? = nil,
        rngSeed: Int64? = nil, jsonSchemaConstraint: String? = nil, functionCallParser: LeapFunctionCallParser? = ModelFunctionCallParser(),
        injectSchemaIntoPrompt: Bool = true, maxTokens: Int32? = nil, inlineThinkingTags: Bool = false, enableThinking: Bool = false,
        extras: String? = nil
    ) {
        self.temperature = temperature
        self.topP = topP
        self.minP = minP
        self.repetitionPenalty = repetitionPenalty
        self.topK = topK
        self.rngSeed = rngSeed
        self.jsonSchemaConstraint = jsonSchemaConstraint
        self.functionCallParser = functionCallParser
        self.injectSchemaIntoPrompt = injectSchemaIntoPrompt
        self.maxTokens = maxTokens
        self.inlineThinkingTags = inlineThinkingTags
        self.enableThinking = enableThinking
        self.extras = extras
    }

    // MARK: Builders (each sets its field and returns these options)

    @discardableResult public func with(temperature: Float) -> GenerationOptions { self.temperature = temperature; return self }
    @discardableResult public func with(topP: Float) -> GenerationOptions { self.topP = topP; return self }
    @discardableResult public func with(minP: Float) -> GenerationOptions { self.minP = minP; return self }
    @discardableResult public func with(repetitionPenalty: Float) -> GenerationOptions { self.repetitionPenalty = repetitionPenalty; return self }
    @discardableResult public func with(topK: Int32) -> GenerationOptions { self.topK = topK; return self }
    @discardableResult public func with(rngSeed: Int64) -> GenerationOptions { self.rngSeed = rngSeed; return self }
    @discardableResult public func with(jsonSchema: String) -> GenerationOptions { jsonSchemaConstraint = jsonSchema; return self }
    @discardableResult public func with(maxTokens: Int32) -> GenerationOptions { self.maxTokens = maxTokens; return self }
    @discardableResult public func with(injectSchemaIntoPrompt: Bool) -> GenerationOptions {
        self.injectSchemaIntoPrompt = injectSchemaIntoPrompt
        return self
    }
    @discardableResult public func with(inlineThinkingTags: Bool) -> GenerationOptions {
        self.inlineThinkingTags = inlineThinkingTags
        return self
    }
    @discardableResult public func with(enableThinking: Bool) -> GenerationOptions { self.enableThinking = enableThinking; return self }

    /// Holds the reply to `type`'s JSON Schema; decode the reply's text with `JSONDecoder`.
    public func setResponseFormat<Content: GeneratableType>(type: Content.Type) {
        jsonSchemaConstraint = Content.jsonSchema()
    }

    /// Typeset's options for the same reply: the sampling fields as they are, the call
    /// parser as a call format (or calls left as text), `maxTokens` at least 0.
    var typesetOptions: Typeset.GenerationOptions {
        var options = Typeset.GenerationOptions(
            temperature: temperature, topP: topP, minP: minP, topK: topK.map(Int.init), repetitionPenalty: repetitionPenalty,
            seed: rngSeed.map { UInt64(bitPattern: $0) }, maxTokens: maxTokens.map { max(0, Int($0)) }, jsonSchema: jsonSchemaConstraint,
            injectSchemaIntoPrompt: injectSchemaIntoPrompt, enableThinking: enableThinking)
        options.inlineThinkingTags = inlineThinkingTags
        if let functionCallParser {
            options.functionCallFormat = functionCallParser.format
        } else {
            options.functionCallMode = .unparsed
        }
        return options
    }
}

// MARK: - Function-call parsers

/// How LEAP chooses the format a model writes its function calls in
/// (``GenerationOptions/functionCallParser``): each parser stands for one of Typeset's
/// call formats.
public class LeapFunctionCallParser: @unchecked Sendable {
    /// The format this parser reads; `nil`: the model's own.
    let format: FunctionCallFormat?

    init(format: FunctionCallFormat?) { self.format = format }
}

/// Calls as Liquid's LFM models write them: `<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>`.
public final class LFMFunctionCallParser: LeapFunctionCallParser, @unchecked Sendable {
    public init() { super.init(format: .lfm) }
}

/// Calls in the Hermes format of Qwen and many fine-tunes: `<tool_call>{"name": …, "arguments": …}</tool_call>`.
public final class HermesFunctionCallParser: LeapFunctionCallParser, @unchecked Sendable {
    public init() { super.init(format: .hermes) }
}

/// The default parser: the model's own format (LFM's for a vocabulary with LFM's call tokens,
/// Hermes's otherwise).
public final class ModelFunctionCallParser: LeapFunctionCallParser, @unchecked Sendable {
    public init() { super.init(format: nil) }
}

// MARK: - JSON Schemas of generatable types

/// A type LEAP's constrained generation can produce: `@Generatable` makes a `Codable`
/// structure one. Typeset's ``Generable`` types with `Codable` are.
public typealias GeneratableType = Generable & Codable

extension Generable {
    /// The type's JSON Schema as JSON text (what `with(jsonSchema:)` takes).
    public static func jsonSchema() -> String { generationSchema.jsonText }

    /// What the type is, as `@Generatable("…")` describes it (empty when it has no description).
    public static var typeDescription: String {
        if case .string(let description)? = generationSchema.jsonSchema["description"] { return description }
        return ""
    }
}

/// LEAP's helper for a generatable type's JSON Schema text.
public enum JSONSchemaGenerator {
    /// `type`'s JSON Schema as JSON text.
    public static func getJSONSchema<Content: GeneratableType>(for type: Content.Type) -> String { Content.jsonSchema() }
}
