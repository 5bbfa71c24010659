import TypesetGrammar

/// How to generate one reply. Every `nil` field falls back to the model's default
/// (`ModelRunner.defaultOptions`, read from the GGUF's `general.sampling.*` keys when it has
/// them, otherwise greedy decoding).
public struct GenerationOptions: Sendable, Equatable {
    /// Sampling temperature; 0 is greedy decoding.
    public var temperature: Float?
    /// Nucleus sampling: keep the most likely tokens up to this probability mass.
    public var topP: Float?
    /// Drop tokens less likely than this fraction of the most likely one.
    public var minP: Float?
    /// Keep only the `topK` most likely tokens.
    public var topK: Int?
    /// Divides positive (multiplies negative) logits of recently seen tokens; 1 is none.
    public var repetitionPenalty: Float?
    /// Lowers a recent token's logit by this much per time it occurs in the last 64 tokens
    /// (OpenAI's `frequency_penalty`, as llama.cpp counts it; 0: off).
    package var frequencyPenalty: Float = 0
    /// Lowers a recent token's logit by this much if it occurs in the last 64 tokens at all
    /// (`presence_penalty`; 0: off).
    package var presencePenalty: Float = 0
    /// Added to the logits of these tokens before the penalties and any constraint's choice
    /// (`logit_bias`; −∞ bans the token). Under a grammar, a token it forbids stays forbidden.
    package var logitBias: [Int: Float] = [:]
    /// Lowers tokens that would extend a sequence already in the context, the more the longer
    /// the repeat; see ``DRYPenalty``. `nil`: off for free text, and ``DRYPenalty/json``
    /// (repeats within the reply) for replies held to a JSON Schema or able to call functions
    /// (typed values, tool calls, `jsonSchema`), where small models otherwise loop on a
    /// phrase; ``DRYPenalty/off``: off everywhere.
    public var dry: DRYPenalty?
    /// Seed of the sampler's random generator: same seed, options, model and prompt, same reply.
    public var seed: UInt64?
    /// The most tokens the reply may have. `nil`: until the model stops or the context is full.
    public var maxTokens: Int?
    /// Texts that end a free-text reply where they first appear (they are not part of it, and
    /// no part of them is streamed): OpenAI's `stop`. Not applied inside a JSON Schema value
    /// or a function call, which end where their grammar ends them.
    public var stopSequences: [String] = []
    /// Report each chosen token's log-probability under the model, with this many of the most
    /// likely alternatives (0–20), as ``MessageResponse/logprob(_:)`` before the token's text.
    /// `nil`: none (the default; computing them costs a pass over the vocabulary per token).
    public var logprobs: Int?
    /// With `logprobs`, report the probabilities of the distribution each token was drawn
    /// from, after the whole sampling chain (penalties, top-k, top-p, min-p, temperature, a
    /// grammar's mask), instead of the model's own: llama-server's `post_sampling_probs`.
    /// Tokens the chain left out are not listed; a greedy pick has probability 1.
    package var logprobsAfterSampling = false
    /// Drafts of the next tokens read from the conversation so far, verified in the passes
    /// (``PromptLookup``): the same reply, in fewer passes where it copies from its prompt.
    /// `nil`: none.
    package var promptLookup: PromptLookup?

    /// A JSON Schema (as JSON text) the reply must satisfy. The reply then always parses and
    /// validates, or finishes with ``FinishReason/constraint`` when `maxTokens` cuts it.
    public var jsonSchema: String?
    /// Whether to put the schema and an instruction to follow it before the user's message
    /// (``Conversation/instructedRequest(_:schema:)``; the model writes better values when it
    /// knows the shape it is held to and what each field means).
    public var injectSchemaIntoPrompt: Bool
    /// Whether a reply held to a grammar (a JSON Schema or a function call) is steered to
    /// finish within `maxTokens` (and the context): each token must leave a completion short
    /// enough for the tokens that remain, so near the limit the model closes its strings,
    /// arrays and objects instead of being cut off. The value is then complete and valid
    /// whenever `maxTokens` allows any value at all (otherwise the finish is `constraint`),
    /// though it may be shorter than the model would have made it.
    public var closesWithinMaxTokens: Bool
    /// Jump-forward decoding for replies held to a JSON Schema: where the grammar forces the
    /// next bytes (a key, its quotes and colon, the rest of an enum word), their tokens are
    /// appended without sampling and computed in one forward pass, as the tokenizer itself
    /// writes them after the sampled token (the last of them is left to the model, which may
    /// merge it with what follows). Off when `logprobs` are asked for (forced tokens have
    /// none).
    public var jumpsForward = true
    /// With `jumpsForward`, the last token of a forced text that the model may merge with what
    /// follows (and so chooses itself) is computed in the forced tokens' pass, provisionally:
    /// kept, and its pass saved, when the model chooses it; the reply is the same token for
    /// token either way. Off only to measure what it saves (`typeset bench constrained
    /// --no-provisional`).
    package var computesBoundaryTokensAhead = true
    /// How the schema becomes a grammar. The default, `JSONSchemaOptions.generation`, closes
    /// objects that declare their properties and keeps unbounded integers within ±(2⁵³−1), so
    /// a small model cannot wander into invented keys or endless digits.
    public var schemaOptions: JSONSchemaOptions

    /// Whether the model should think before answering (passed to the chat template as
    /// `enable_thinking`; `nil` leaves the template's default). Text between `<think>` and
    /// `</think>` at the start of a reply streams as ``MessageResponse/reasoningChunk(_:)``; under
    /// a JSON Schema the value's grammar begins after `</think>`.
    public var enableThinking: Bool?
    /// The most tokens a model that thinks may reason: when they are spent, its `</think>` is
    /// the only token allowed, and the reply goes on after it (with the value, under a JSON
    /// Schema). `0` renders the template without thinking (`enable_thinking` false); `nil`
    /// leaves the reasoning to end where the model ends it (within `maxTokens`: a reply held to
    /// a schema ends its reasoning in time for the value).
    public var reasoningBudget: Int?
    /// How hard a model that reasons should think (OpenAI's `reasoning_effort`: "low",
    /// "medium", "high", …), passed to the chat template as `reasoning_effort` for the
    /// templates that read it (gpt-oss's); `nil` leaves the template's default.
    package var reasoningEffort: String?
    /// Where the reply records, token by token, what its constraint allowed and how long each
    /// mask took (`nil`: nothing is recorded).
    package var tokenTrace: TokenTrace?
    /// Whether a `<think>` block streams as the reply's text, tags included, instead of as
    /// ``MessageResponse/reasoningChunk(_:)``.
    public var inlineThinkingTags = false

    /// How the model writes function calls, when functions are registered. `nil`: the
    /// model's own (``ModelRunner/defaultOptions``): ``FunctionCallFormat/lfm`` when its
    /// vocabulary has LFM's `<|tool_call_start|>` token, ``FunctionCallFormat/hermes`` otherwise.
    public var functionCallFormat: FunctionCallFormat?
    /// Whether the reply may, must or must not call the registered functions.
    public var functionCallMode: FunctionCallMode
    public init(
        temperature: Float? = nil, topP: Float? = nil, minP: Float? = nil, topK: Int? = nil,
        repetitionPenalty: Float? = nil, dry: DRYPenalty? = nil, seed: UInt64? = nil, maxTokens: Int? = nil,
        jsonSchema: String? = nil, injectSchemaIntoPrompt: Bool = true,
        schemaOptions: JSONSchemaOptions = .generation, closesWithinMaxTokens: Bool = true,
        enableThinking: Bool? = nil, functionCallFormat: FunctionCallFormat? = nil,
        functionCallMode: FunctionCallMode = .automatic
    ) {
        self.temperature = temperature
        self.topP = topP
        self.minP = minP
        self.topK = topK
        self.repetitionPenalty = repetitionPenalty
        self.dry = dry
        self.seed = seed
        self.maxTokens = maxTokens
        self.jsonSchema = jsonSchema
        self.injectSchemaIntoPrompt = injectSchemaIntoPrompt
        self.schemaOptions = schemaOptions
        self.closesWithinMaxTokens = closesWithinMaxTokens
        self.enableThinking = enableThinking
        self.functionCallFormat = functionCallFormat
        self.functionCallMode = functionCallMode
    }

    /// These options with every `nil` sampling field taken from `defaults`.
    package func filled(from defaults: GenerationOptions) -> GenerationOptions {
        var result = self
        result.temperature = temperature ?? defaults.temperature
        result.topP = topP ?? defaults.topP
        result.minP = minP ?? defaults.minP
        result.topK = topK ?? defaults.topK
        result.repetitionPenalty = repetitionPenalty ?? defaults.repetitionPenalty
        result.dry = dry ?? defaults.dry
        result.seed = seed ?? defaults.seed
        result.maxTokens = maxTokens ?? defaults.maxTokens
        result.enableThinking = enableThinking ?? defaults.enableThinking
        result.reasoningBudget = reasoningBudget ?? defaults.reasoningBudget
        if result.reasoningBudget == 0 { result.enableThinking = false }
        result.functionCallFormat = functionCallFormat ?? defaults.functionCallFormat
        result.promptLookup = promptLookup ?? defaults.promptLookup
        return result
    }

    /// These options for a reply that writes JSON (a schema's value, a function call): values
    /// and calls are where small models loop ("1.1.1.1…", one plot point again and again), so
    /// DRY's JSON setting is on unless the caller set a penalty (`DRYPenalty.off` keeps it off).
    func writingJSON() -> GenerationOptions {
        var result = self
        if result.dry == nil { result.dry = .json }
        return result
    }

    /// The format calls are written in (after `filled(from:)`, the model's when not set).
    var callFormat: FunctionCallFormat { functionCallFormat ?? .hermes }

    /// The sampler's options (after `filled(from:)`).
    var samplingOptions: SamplingOptions {
        SamplingOptions(
            temperature: temperature ?? 0, topK: topK, topP: topP, minP: minP,
            repetitionPenalty: repetitionPenalty ?? 1, dry: dry.flatMap { $0.multiplier > 0 ? $0 : nil }, seed: seed ?? 0,
            frequencyPenalty: frequencyPenalty, presencePenalty: presencePenalty, logitBias: logitBias)
    }
}

/// How function calls appear in a reply.
public enum FunctionCallFormat: String, Sendable, Equatable, CaseIterable {
    /// Hermes style, as Qwen 2.5 and many fine-tunes write it:
    /// `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, possibly several.
    case hermes
    /// A reply that is a bare JSON object `{"name": …, "arguments": {…}}`.
    case json
    /// As Liquid's LFM models write them: a Python list of calls with keyword arguments
    /// between control tokens, `<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>`;
    /// values are Python literals (`True`, `False`, `None`). Every call of a reply is in the
    /// one list.
    case lfm
}

/// Whether a reply calls functions (OpenAI's `tool_choice`).
public enum FunctionCallMode: String, Sendable, Equatable, CaseIterable {
    /// The model decides: a call marker starts a constrained call, anything else is text.
    case automatic
    /// The reply starts with a call (its marker is written for the model) and may make more.
    case required
    /// Functions are neither described nor detected in this reply.
    case disabled
    /// Functions are described to the model, but its calls are neither detected nor held to
    /// a grammar: whatever it writes streams as text (LEAP's `functionCallParser = nil`).
    case unparsed
}

/// What `Conversation.generateResponse` streams.
public enum MessageResponse: Sendable {
    /// Text of the reply, as it is generated.
    case chunk(String)
    /// The log-probability of the token whose text follows (only when
    /// ``GenerationOptions/logprobs`` asks for them).
    case logprob(TokenLogprob)
    /// Text of the model's reasoning (between `<think>` and `</think>`).
    case reasoningChunk(String)
    /// A function call as it is written, before it is complete: first its name (with
    /// `arguments` empty), then its arguments' JSON, piece by piece. The pieces of one call
    /// (its `id`) joined are its ``FunctionCall/argumentsText``. The complete calls follow as
    /// ``functionCalls(_:)``; a reply cut short in a call streams part of one, and no
    /// ``functionCalls(_:)``.
    case functionCallDelta(id: String, name: String, arguments: String)
    /// The function calls the reply makes, once they are complete. The caller runs them and
    /// answers each with `ChatMessage.tool(_:answering:)` in a new `generateResponse`.
    case functionCalls([FunctionCall])
    /// The end of the reply: the message as it was added to the history (for `stop`,
    /// `maxTokens`, `exceededContext` and `constraint`), why it ended and its statistics.
    case complete(message: ChatMessage, finishReason: FinishReason, stats: GenerationStats)
}
