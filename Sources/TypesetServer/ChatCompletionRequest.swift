import Typeset

/// What the generation endpoints share: sampling, limits, stop sequences, log-probabilities and
/// streaming, read from the fields both `/v1/chat/completions` and `/v1/completions` take.
struct SamplingFields {
    var temperature: Float?
    var topP: Float?
    var topK: Int?
    var minP: Float?
    var repetitionPenalty: Float?
    var seed: UInt64?
    var maxTokens: Int?
    /// Whether the request set a limit (`n_predict: -1` sets none: the reply may fill the context).
    var limitsTokens = false
    var stop: [String] = []
    var stream = false
    var includeUsage = false
    /// How many choices to generate (`n`); only chat completions makes more than one.
    var choiceCount = 1
    /// OpenAI's penalties, over the last 64 tokens as llama.cpp applies them.
    var frequencyPenalty: Float = 0
    var presencePenalty: Float = 0
    /// `logit_bias` as given: token ids, or texts whose tokens each get the bias (llama-server's
    /// extension), with the bias (−∞ for llama-server's `false`, which bans the token).
    var logitBias: [(token: LogitBiasKey, bias: Float)] = []

    enum LogitBiasKey {
        case id(Int)
        case text(String)
    }

    /// Reads the shared fields of `body`, OpenAI's and llama-server's spellings of them
    /// (`n_predict` for the token limit, `repeat_penalty`), and its fields that change nothing
    /// (`cache_prompt`: the prompt cache is always used, and never changes a reply).
    init(_ body: inout RequestObject, maxTokensFields: [String], stopField: String = "stop") throws(APIError) {
        temperature = try body.number("temperature", in: 0 ... 2).map(Float.init)
        topP = try body.number("top_p", in: 0 ... 1).map(Float.init)
        topK = try body.integer("top_k", in: 0 ... 1_000_000)
        minP = try body.number("min_p", in: 0 ... 1).map(Float.init)
        for field in ["repetition_penalty", "repeat_penalty"] {
            if let penalty = try body.number(field, in: 0.01 ... 100) { repetitionPenalty = Float(penalty) }
        }
        if let typical = try body.number("typical_p", in: 0 ... 1), typical != 1 {
            throw .invalid("typical_p", "typical_p is not implemented by Typeset (only 1, which keeps every token)")
        }
        _ = try body.bool("cache_prompt")
        if let seed = try body.integer("seed", in: Int.min ... Int.max) { self.seed = UInt64(bitPattern: Int64(seed)) }
        for field in maxTokensFields {
            if let limit = try body.integer(field, in: 1 ... 1 << 30) { maxTokens = limit; limitsTokens = true }
        }
        if let limit = try body.integer("n_predict", in: -1 ... 1 << 30) {
            guard limit != 0 else { throw .invalid("n_predict", "n_predict must be positive, or -1 for no limit") }
            maxTokens = limit < 0 ? nil : limit
            limitsTokens = true
        }
        choiceCount = try body.integer("n", in: 1 ... 16) ?? 1
        frequencyPenalty = try body.number("frequency_penalty", in: -2 ... 2).map(Float.init) ?? 0
        presencePenalty = try body.number("presence_penalty", in: -2 ... 2).map(Float.init) ?? 0
        logitBias = try Self.logitBias(body.value("logit_bias"))
        _ = try body.string("user")   // an end-user identifier, for the client's own records
        switch body.value(stopField) {
        case nil: break
        case .string(let text)?: stop = [text]
        case .array(let items)?:
            for (index, item) in items.enumerated() {
                guard case .string(let text) = item else { throw .invalid("\(stopField)[\(index)]", "\(stopField)[\(index)] must be a string") }
                stop.append(text)
            }
            guard stop.count <= 16 else { throw .invalid(stopField, "\(stopField) may hold at most 16 sequences") }
        default: throw .invalid(stopField, "\(stopField) must be a string or an array of strings")
        }
        stream = try body.bool("stream") ?? false
        if var options = try body.object("stream_options") {
            guard stream else { throw .invalid("stream_options", "stream_options is only allowed with stream: true") }
            includeUsage = try options.bool("include_usage") ?? false
            // Random padding OpenAI adds to events against side channels: no effect on the reply.
            _ = try options.bool("include_obfuscation")
            try options.finish()
        }
    }

    /// Refuses `n` > 1 where one choice is all an endpoint makes.
    func requireOneChoice() throws(APIError) {
        guard choiceCount == 1 else {
            throw .invalid("n", "n must be 1 here: this endpoint generates one choice per request (send several requests, which are decoded together)")
        }
    }

    /// The generation options these fields ask for (unset ones fall back to the model's), the
    /// logit biases' texts tokenized by `runner`'s tokenizer.
    func options(for runner: ModelRunner) throws(APIError) -> GenerationOptions {
        var options = GenerationOptions(
            temperature: temperature, topP: topP, minP: minP, topK: topK, repetitionPenalty: repetitionPenalty,
            seed: seed, maxTokens: maxTokens)
        options.stopSequences = stop
        options.frequencyPenalty = frequencyPenalty
        options.presencePenalty = presencePenalty
        let size = runner.tokenizer.vocabulary.count
        for (key, bias) in logitBias {
            switch key {
            case .id(let token):
                guard (0 ..< size).contains(token) else {
                    throw .invalid("logit_bias", "logit_bias names token \(token), which is not in the vocabulary (0 to \(size - 1))")
                }
                options.logitBias[token, default: 0] += bias
            case .text(let text):
                for token in runner.tokenizer.encode(text, addingSpecialTokens: false) { options.logitBias[token, default: 0] += bias }
            }
        }
        return options
    }

    /// `logit_bias` read: OpenAI's object of token ids (as strings) to biases from −100 to 100,
    /// or llama-server's array of `[token id or text, bias or false]` pairs; a key that is not
    /// a number is a text, whose tokens each get the bias.
    private static func logitBias(_ value: JSONValue?) throws(APIError) -> [(token: LogitBiasKey, bias: Float)] {
        func key(_ text: String) -> LogitBiasKey { Int(text).map(LogitBiasKey.id) ?? .text(text) }
        func bias(_ value: JSONValue, at path: String) throws(APIError) -> Float {
            switch value {
            case .bool(false): return -.infinity
            case .number(let text):
                guard let number = Double(text), (-100 ... 100).contains(number) else {
                    throw .invalid(path, "\(path) must be a number from -100 to 100, or false to ban the token")
                }
                return Float(number)
            default: throw .invalid(path, "\(path) must be a number from -100 to 100, or false to ban the token")
            }
        }
        switch value {
        case nil: return []
        case .object(let members)?:
            var entries: [(token: LogitBiasKey, bias: Float)] = []
            for (name, value) in members { entries.append((key(name), try bias(value, at: "logit_bias.\(name)"))) }
            return entries
        case .array(let items)?:
            var entries: [(token: LogitBiasKey, bias: Float)] = []
            for (index, item) in items.enumerated() {
                let path = "logit_bias[\(index)]"
                guard case .array(let pair) = item, pair.count == 2 else { throw .invalid(path, "\(path) must be [token, bias]") }
                switch pair[0] {
                case .number(let text):
                    guard let token = Int(text) else { throw .invalid(path, "\(path)'s token must be a token id or a text") }
                    entries.append((.id(token), try bias(pair[1], at: path)))
                case .string(let text): entries.append((.text(text), try bias(pair[1], at: path)))
                default: throw .invalid(path, "\(path)'s token must be a token id or a text")
                }
            }
            return entries
        default:
            throw .invalid("logit_bias", "logit_bias must be an object of token ids to biases, or an array of [token, bias] pairs")
        }
    }
}

/// `POST /v1/chat/completions`, read and checked: every field OpenAI defines is either
/// implemented or refused with a 400 naming it.
struct ChatCompletionRequest {
    enum ToolChoice: Equatable {
        case none, automatic, required
        case named(String)
    }

    /// `tool_choice` read: `"none"`, `"auto"` (absent: the default), `"required"`, or the
    /// object naming one of `functions`: chat completions' `{"type": "function", "function":
    /// {"name": …}}`, or with `flat` the Responses API's `{"type": "function", "name": …}`.
    static func toolChoice(_ value: JSONValue?, functions: [FunctionDefinition], flat: Bool) throws(APIError) -> ToolChoice {
        let shape = flat ? #"{"type": "function", "name": …}"# : #"{"type": "function", "function": {"name": …}}"#
        let refusal = APIError.invalid("tool_choice", #"tool_choice must be "none", "auto", "required" or "# + shape)
        let choice: ToolChoice
        switch value {
        case nil, .string("auto")?: choice = .automatic
        case .string("none")?: choice = .none
        case .string("required")?: choice = .required
        case let object? where object.members != nil:
            var object = try RequestObject(object, path: "tool_choice")
            guard try object.string("type") == "function" else { throw refusal }
            var name: String?
            if flat {
                name = try object.string("name")
            } else if var function = try object.object("function") {
                name = try function.string("name")
                try function.finish()
            }
            guard let name else { throw refusal }
            try object.finish()
            guard functions.contains(where: { $0.name == name }) else {
                throw .invalid("tool_choice", "tool_choice names '\(name)', which is not among the tools")
            }
            choice = .named(name)
        default:
            throw refusal
        }
        if choice != .none && choice != .automatic && functions.isEmpty { throw .invalid("tool_choice", "tool_choice requires tools") }
        return choice
    }

    enum ResponseFormat {
        case text
        /// Any JSON object.
        case jsonObject
        /// A value of this schema (`name` for the prompt).
        case jsonSchema(JSONValue, name: String)
    }

    var model: String?
    var messages: [ChatMessage]
    var functions: [FunctionDefinition] = []
    var toolChoice = ToolChoice.automatic
    var parallelToolCalls = true
    var responseFormat = ResponseFormat.text
    var sampling: SamplingFields
    /// Log-probabilities of the chosen tokens, and how many alternatives per token.
    var logprobs = false
    var topLogprobs = 0
    /// `chat_template_kwargs.enable_thinking` (llama-server's spelling).
    var enableThinking: Bool?
    /// The beginning of the reply, from a final assistant message (``takePrefill(from:at:)``).
    var prefill = ""
    /// `add_generation_prompt`: false only to show a prompt (`/apply-template`) or continue a
    /// final assistant message.
    var addsGenerationPrompt = true
    /// llama-server's `verbose`: the reply carries `__verbose` (the prompt as rendered, the counts).
    var verbose = false
    /// A GBNF grammar the reply is held to (llama-server's `grammar`).
    var grammar: String?
    /// Whether a stream reports the prompt's reading as it goes (`return_progress`).
    var returnsProgress = false
    /// The template's `reasoning_effort` (``setReasoningEffort(_:at:)``).
    var reasoningEffort: String?
    /// The most tokens the model may reason (llama-server's `reasoning_budget_tokens` or
    /// `thinking_budget_tokens`, Anthropic's `thinking.budget_tokens`); `nil`: the server's.
    var reasoningBudget: Int?
    /// Whether every streamed event carries the reply's timings so far (llama-server's
    /// `timings_per_token`; a whole reply has its timings anyway).
    var timingsPerToken = false
    /// Whether the reply carries each token's trace (`typeset_trace`, Typeset's extension):
    /// what the grammar allowed, whether it forced the token, how long its mask took.
    var tracesTokens = false

    init(_ document: JSONValue) throws(APIError) {
        var body = try RequestObject(document)
        model = try body.string("model")
        guard let messageItems = try body.array("messages") else { throw .invalid("messages", "messages is required") }
        guard !messageItems.isEmpty else { throw .invalid("messages", "messages must not be empty") }
        do { messages = try OpenAIChatFormat.decode(messages: messageItems) } catch { throw APIError(error) }
        prefill = try Self.takePrefill(from: &messages, at: "messages")
        sampling = try SamplingFields(&body, maxTokensFields: ["max_tokens", "max_completion_tokens"])
        // vLLM's and transformers' spelling of prefill: continue_final_message, which needs the
        // assistant's turn left open (add_generation_prompt false).
        let continuesFinalMessage = try body.bool("continue_final_message") ?? false
        let generationPrompt = try body.bool("add_generation_prompt")
        if continuesFinalMessage {
            guard generationPrompt != true else {
                throw .invalid("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true")
            }
            guard !prefill.isEmpty else {
                throw .invalid("continue_final_message", "continue_final_message needs the messages to end with the assistant's message to continue")
            }
        }
        addsGenerationPrompt = generationPrompt ?? true
        verbose = try body.bool("verbose") ?? false
        // llama-server's prompt_progress events while the prompt is read (streams only).
        returnsProgress = try body.bool("return_progress") ?? false
        if returnsProgress && !sampling.stream {
            throw .invalid("return_progress", "return_progress reports a stream's progress: it needs stream: true")
        }
        tracesTokens = try body.bool("typeset_trace") ?? false
        timingsPerToken = try body.bool("timings_per_token") ?? false

        if let tools = try body.array("tools") {
            for (index, tool) in tools.enumerated() {
                var entry = try RequestObject(tool, path: "tools[\(index)]")
                guard try entry.string("type") == "function" else {
                    throw .invalid(entry.path(of: "type"), "tools[\(index)].type must be \"function\"")
                }
                guard var function = try entry.object("function") else {
                    throw .invalid(entry.path(of: "function"), "tools[\(index)].function is required")
                }
                try add(try Self.function(&function, parametersField: "parameters"), at: function.path(of: "name"))
                try function.finish()
                try entry.finish()
            }
        }
        toolChoice = try Self.toolChoice(body.value("tool_choice"), functions: functions, flat: false)
        parallelToolCalls = try body.bool("parallel_tool_calls") ?? true

        if var format = try body.object("response_format") {
            switch try format.string("type") {
            case "text"?: responseFormat = .text
            case "json_object"?:
                // llama-server's extension: a json_object reply held to a schema.
                if let schema = format.nonEmptyValue("schema") {
                    responseFormat = .jsonSchema(try Self.schemaObject(schema, at: "response_format.schema"), name: "response")
                } else {
                    responseFormat = .jsonObject
                }
            case "json_schema"?:
                guard var schema = try format.object("json_schema") else {
                    throw .invalid("response_format.json_schema", "response_format.json_schema is required for type json_schema")
                }
                let name = try schema.string("name") ?? "response"
                _ = try schema.string("description")
                // The schema is always enforced: strict or not.
                _ = try schema.bool("strict")
                let value = try Self.schemaObject(schema.value("schema") ?? .object([]), at: "response_format.json_schema.schema")
                try schema.finish()
                responseFormat = .jsonSchema(value, name: name)
            default:
                throw .invalid("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\"")
            }
            try format.finish()
        }
        // llama-server's top-level spelling of a schema.
        if let schema = body.nonEmptyValue("json_schema") {
            if case .text = responseFormat {} else {
                throw .invalid("json_schema", "json_schema and a JSON response_format cannot both be given: send the schema once")
            }
            responseFormat = .jsonSchema(try Self.schemaObject(schema, at: "json_schema"), name: "response")
        }
        // llama-server's GBNF grammar, in place of a schema.
        grammar = try body.string("grammar").flatMap { $0.isEmpty ? nil : $0 }
        if grammar != nil {
            if case .text = responseFormat {} else {
                throw .invalid("grammar", "grammar and a JSON response_format cannot both be given: the reply is held to one")
            }
            guard functions.isEmpty else { throw .invalid("grammar", "grammar cannot be combined with tools: calls have their own grammar") }
        }
        if case .text = responseFormat {} else if !sampling.stop.isEmpty {
            throw .invalid("stop", "stop cannot be combined with a JSON response_format: the value ends where its schema ends it")
        }

        logprobs = try body.bool("logprobs") ?? false
        if let count = try body.integer("top_logprobs", in: 0 ... 20) {
            guard logprobs else { throw .invalid("top_logprobs", "top_logprobs requires logprobs: true") }
            topLogprobs = count
        }
        if var arguments = try body.object("chat_template_kwargs") {
            enableThinking = try arguments.bool("enable_thinking")
            try arguments.finish()
        }
        // OpenAI's reasoning_effort, as llama-server reads it: "none" turns thinking off; any
        // other level reaches the chat template as reasoning_effort.
        if let effort = try body.string("reasoning_effort") {
            try setReasoningEffort(effort, at: "reasoning_effort")
        }
        // llama-server's per-request budget: -1 is its "the server's default"; 0 is no thinking.
        for name in ["reasoning_budget_tokens", "thinking_budget_tokens"] {
            if let budget = try body.integer(name, in: -1 ... Int(Int32.max)), budget >= 0 { setReasoningBudget(budget) }
        }
        // Which of llama-server's slots decodes the request: Typeset reuses any cached prefix.
        _ = try body.integer("id_slot", in: -1 ... Int(Int32.max))
        // Fields with no effect on the reply, accepted as OpenAI accepts them.
        _ = try body.object("metadata").map { _ in () }
        if try body.bool("store") == true { throw .invalid("store", "Typeset does not store completions (store must be false)") }
        try body.finish()
    }

    /// A reasoning budget of `budget` tokens; 0 turns thinking off (the template renders
    /// without it), as `reasoning_effort: "none"` does.
    mutating func setReasoningBudget(_ budget: Int) {
        reasoningBudget = budget
        if budget == 0 { enableThinking = false }
    }

    /// `reasoning_effort`: "none" turns thinking off; another level lets a model that thinks
    /// think and reaches the template as `reasoning_effort`.
    mutating func setReasoningEffort(_ effort: String, at path: String) throws(APIError) {
        guard ["none", "minimal", "low", "medium", "high", "xhigh"].contains(effort) else {
            throw .invalid(path, "\(path) must be none, minimal, low, medium, high or xhigh")
        }
        if effort == "none" {
            enableThinking = false
        } else {
            enableThinking = enableThinking ?? true
            reasoningEffort = effort
        }
    }

    /// A request of `messages` with `sampling`, and no tools, schema or log-probabilities yet:
    /// how the other chat dialects' requests start (they fill in the rest).
    init(model: String?, messages: [ChatMessage], sampling: SamplingFields) {
        self.model = model
        self.messages = messages
        self.sampling = sampling
    }

    /// The beginning of the reply when the conversation ends with an assistant's message,
    /// which is then taken off `messages` (the model continues it, as llama-server, vLLM and
    /// Anthropic's API read a final assistant message: "prefill"); `""` otherwise. Refuses a
    /// conversation that does not then end with what the model answers.
    static func takePrefill(from messages: inout [ChatMessage], at path: String) throws(APIError) -> String {
        var prefill = ""
        if let last = messages.last, last.role == .assistant {
            guard last.functionCalls.isEmpty, last.reasoning == nil else {
                throw .invalid(path, "a final assistant message with tool calls or reasoning cannot be continued: end with the user's message or a tool's result")
            }
            prefill = last.content
            messages.removeLast()
        }
        guard let last = messages.last else { throw .invalid(path, "\(path) must not be empty") }
        guard last.role == .user || last.role == .tool else {
            throw .invalid(path, "the last message must be from the user or a tool (or an assistant's message to continue, after one): it is what the model answers")
        }
        return prefill
    }

    /// A function's definition, read from a tool object: its `name`, `description`, the
    /// schema of its arguments (in `parametersField`; an object with no properties when
    /// absent) and `strict`, which changes nothing (arguments are always held to the schema).
    static func function(_ object: inout RequestObject, parametersField: String) throws(APIError) -> FunctionDefinition {
        guard let name = try object.string("name"), !name.isEmpty else {
            throw .invalid(object.path(of: "name"), "\(object.path(of: "name")) is required")
        }
        let description = try object.string("description") ?? ""
        let parameters = object.value(parametersField) ?? .object([("type", .string("object")), ("properties", .object([]))])
        guard parameters.members != nil else {
            throw .invalid(object.path(of: parametersField), "\(object.path(of: parametersField)) must be a JSON Schema object")
        }
        _ = try object.bool("strict")
        return FunctionDefinition(name: name, description: description, parameters: parameters)
    }

    /// Adds a tool the reply may call (`path`: where its name is, for the error when two
    /// tools share it).
    mutating func add(_ function: FunctionDefinition, at path: String) throws(APIError) {
        guard !functions.contains(where: { $0.name == function.name }) else {
            throw .invalid(path, "two tools are named '\(function.name)'")
        }
        functions.append(function)
    }

    /// `value` as a JSON Schema: an object, or `true`.
    static func schemaObject(_ value: JSONValue, at path: String) throws(APIError) -> JSONValue {
        guard value.members != nil || value == .bool(true) else { throw .invalid(path, "\(path) must be a JSON Schema object") }
        return value
    }

    /// The schema the reply is held to, if any.
    var schema: JSONValue? {
        switch responseFormat {
        case .text: nil
        case .jsonObject: .object([("type", .string("object"))])
        case .jsonSchema(let schema, _): schema
        }
    }
}

extension GenerationOptions {
    /// Refuses a positive `logit_bias` under `holder` (a grammar the reply is held to): the
    /// grammar decides what may come next, and a token it forbids cannot be favoured.
    func requireNoPositiveBias(under holder: String) throws(APIError) {
        guard logitBias.values.contains(where: { $0 > 0 }) else { return }
        throw .invalid("logit_bias", "a positive logit_bias cannot be honoured under \(holder), which forbids tokens it does not allow; use negative biases")
    }
}
