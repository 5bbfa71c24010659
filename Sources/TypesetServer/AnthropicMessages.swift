import Foundation
import Hummingbird
import Typeset

/// Anthropic's Messages API request (`POST /v1/messages`), read into the chat request it asks
/// for, as llama-server reads it:
///
///     system          a string, or text blocks: the system message
///     messages        user and assistant turns; content a string or blocks: text, tool_use
///                     (an assistant's call), tool_result (the user's answer to one),
///                     thinking (an assistant's earlier reasoning)
///     tools           custom tools ({"name", "description", "input_schema"})
///     tool_choice     {"type": "auto" | "any" | "tool" | "none"}, disable_parallel_tool_use
///     output_config   {"format": {"type": "json_schema", "schema"}} holds the reply to a schema
///     thinking        {"type": "enabled" | "disabled"} lets a model that thinks think, or not
///
/// `max_tokens`, which Anthropic requires, may be left out (no limit but the context).
/// Refused with a 400 naming the field: images and documents (the model reads text),
/// Anthropic's hosted tools (web search, code execution, …), encrypted (redacted) thinking.
struct MessagesRequest {
    var chat: ChatCompletionRequest

    /// `countsOnly`: the request of `/v1/messages/count_tokens`, which has no `max_tokens`.
    init(_ document: JSONValue, countsOnly: Bool = false) throws(APIError) {
        var body = try RequestObject(document)
        let model = try body.string("model")
        var messages: [ChatMessage] = []
        switch body.value("system") {
        case nil: break
        case .string(let text)?: messages.append(.system(text))
        case .array(let blocks)?: messages.append(.system(try Self.text(of: blocks, at: "system")))
        default: throw .invalid("system", "system must be a string or an array of text blocks")
        }
        guard let items = try body.array("messages") else { throw .invalid("messages", "messages is required") }
        guard !items.isEmpty else { throw .invalid("messages", "messages must hold at least one message") }
        for (index, item) in items.enumerated() { try Self.read(item, at: "messages[\(index)]", into: &messages) }
        ResponsesRequest.nameToolResults(&messages)
        let prefill = try ChatCompletionRequest.takePrefill(from: &messages, at: "messages")
        // The limit, with the other sampling fields every endpoint reads; Anthropic's temperature
        // stops at 1.
        if let temperature = try? body.number("temperature", in: 0 ... 2), temperature > 1 {
            throw .invalid("temperature", "temperature must be between 0 and 1; got \(temperature)")
        }
        chat = ChatCompletionRequest(
            model: model, messages: messages,
            sampling: try SamplingFields(&body, maxTokensFields: countsOnly ? [] : ["max_tokens"], stopField: "stop_sequences"))
        chat.prefill = prefill
        try chat.sampling.requireOneChoice()

        if let tools = try body.array("tools") {
            for (index, tool) in tools.enumerated() {
                var entry = try RequestObject(tool, path: "tools[\(index)]")
                if let type = try entry.string("type"), type != "custom" {
                    throw .invalid(entry.path(of: "type"), "tools[\(index)] is Anthropic's hosted tool '\(type)': Typeset runs custom tools only (name, description, input_schema)")
                }
                _ = entry.value("cache_control")   // the prompt's cache is always used
                try chat.add(try ChatCompletionRequest.function(&entry, parametersField: "input_schema"), at: entry.path(of: "name"))
                try entry.finish()
            }
        }
        if var choice = try body.object("tool_choice") {
            switch try choice.string("type") {
            case "auto"?: chat.toolChoice = .automatic
            case "any"?: chat.toolChoice = .required
            case "none"?: chat.toolChoice = .none
            case "tool"?:
                guard let name = try choice.string("name"), chat.functions.contains(where: { $0.name == name }) else {
                    throw .invalid("tool_choice.name", "tool_choice.name must name one of the tools")
                }
                chat.toolChoice = .named(name)
            default: throw .invalid("tool_choice.type", "tool_choice.type must be auto, any, tool or none")
            }
            if try choice.bool("disable_parallel_tool_use") == true { chat.parallelToolCalls = false }
            try choice.finish()
        }
        if chat.toolChoice != .none && chat.toolChoice != .automatic && chat.functions.isEmpty {
            throw .invalid("tool_choice", "tool_choice requires tools")
        }
        if var output = try body.object("output_config") {
            if var format = try output.object("format") {
                guard try format.string("type") == "json_schema", let schema = format.value("schema") else {
                    throw .invalid("output_config.format", "output_config.format must be {\"type\": \"json_schema\", \"schema\": …}")
                }
                chat.responseFormat = .jsonSchema(try ChatCompletionRequest.schemaObject(schema, at: "output_config.format.schema"), name: "response")
                try format.finish()
            }
            // How hard Claude works; a local model's reply is what it is.
            if let effort = try output.string("effort"), effort != "high" {
                throw .invalid("output_config.effort", "output_config.effort is not implemented by Typeset (only \"high\", the default)")
            }
            try output.finish()
        }
        if case .text = chat.responseFormat {} else if !chat.sampling.stop.isEmpty {
            throw .invalid("stop_sequences", "stop_sequences cannot be combined with output_config.format: the value ends where its schema ends it")
        }
        if var thinking = try body.object("thinking") {
            switch try thinking.string("type") {
            case "enabled"?, "adaptive"?:
                chat.enableThinking = true
                // Without a budget, the reasoning ends where the model ends it, within max_tokens.
                if let budget = try thinking.integer("budget_tokens", in: 0 ... 1 << 30) { chat.setReasoningBudget(budget) }
            case "disabled"?: chat.enableThinking = false
            default: throw .invalid("thinking.type", "thinking.type must be enabled, adaptive or disabled")
            }
            _ = try thinking.string("display")
            try thinking.finish()
        }
        if var metadata = try body.object("metadata") {
            _ = try metadata.string("user_id")
            try metadata.finish()
        }
        // Where and how fast Anthropic would serve the request: nothing here.
        for field in ["service_tier", "inference_geo", "speed", "container"] { _ = body.value(field) }
        _ = body.value("cache_control")
        try body.finish()
    }

    /// Reads one message: its text, calls and reasoning into one message; a user's tool
    /// results into tool messages, before the user's own text.
    private static func read(_ item: JSONValue, at path: String, into messages: inout [ChatMessage]) throws(APIError) {
        var object = try RequestObject(item, path: path)
        let role: ChatMessage.Role
        switch try object.string("role") {
        case "user"?: role = .user
        case "assistant"?: role = .assistant
        default: throw .invalid(object.path(of: "role"), "\(object.path(of: "role")) must be user or assistant")
        }
        var message = ChatMessage(role: role, content: "")
        var results: [ChatMessage] = []
        switch object.value("content") {
        case .string(let text)?: message.content = text
        case .array(let blocks)?:
            for (index, block) in blocks.enumerated() {
                var entry = try RequestObject(block, path: object.path(of: "content") + "[\(index)]")
                _ = entry.value("cache_control")
                _ = entry.value("citations")
                let type = try entry.string("type")
                switch (type, role) {
                case ("text"?, _):
                    message.content += try entry.string("text") ?? ""
                case ("tool_use"?, .assistant):
                    guard let id = try entry.string("id"), let name = try entry.string("name") else {
                        throw .invalid(entry.path, "\(entry.path): a tool_use block needs id and name")
                    }
                    let input = entry.value("input") ?? .object([])
                    guard input.members != nil else { throw .invalid(entry.path(of: "input"), "\(entry.path(of: "input")) must be an object") }
                    message.functionCalls.append(FunctionCall(id: id, name: name, arguments: input))
                case ("thinking"?, .assistant):
                    message.reasoning = (message.reasoning ?? "") + (try entry.string("thinking") ?? "")
                    _ = try entry.string("signature")
                case ("tool_result"?, .user):
                    guard let id = try entry.string("tool_use_id") else {
                        throw .invalid(entry.path(of: "tool_use_id"), "\(entry.path(of: "tool_use_id")) is required")
                    }
                    var content: String
                    switch entry.value("content") {
                    case nil: content = ""
                    case .string(let text)?: content = text
                    case .array(let parts)?: content = try Self.text(of: parts, at: entry.path(of: "content"))
                    default: throw .invalid(entry.path(of: "content"), "\(entry.path(of: "content")) must be a string or text blocks")
                    }
                    if try entry.bool("is_error") == true { content = "Error: " + content }
                    results.append(ChatMessage(role: .tool, content: content, toolCallID: id))
                case (let other, _):
                    throw .invalid(entry.path(of: "type"), "\(entry.path(of: "type")) '\(other ?? "missing")' is not a block Typeset reads in a\(role == .user ? " user" : "n assistant") message (text\(role == .user ? ", tool_result" : ", tool_use, thinking"); the model reads text only)")
                }
                try entry.finish()
            }
        case nil: break
        default: throw .invalid(object.path(of: "content"), "\(object.path(of: "content")) must be a string or an array of blocks")
        }
        try object.finish()
        // Tool results answer the assistant's calls before anything the user adds.
        messages += results
        if role == .assistant || !message.content.isEmpty || results.isEmpty { messages.append(message) }
    }

    /// The text of text blocks (`system`, a tool result's content).
    private static func text(of blocks: [JSONValue], at path: String) throws(APIError) -> String {
        var text = ""
        for (index, block) in blocks.enumerated() {
            var entry = try RequestObject(block, path: path + "[\(index)]")
            guard try entry.string("type") == "text", let piece = try entry.string("text") else {
                throw .invalid(entry.path, "\(entry.path) must be a text block ({\"type\": \"text\", \"text\": …}): the model reads text only")
            }
            _ = entry.value("cache_control")
            _ = entry.value("citations")
            try entry.finish()
            text += piece
        }
        return text
    }
}

/// Writes a reply as Anthropic's Messages API does: a `message` whose `content` holds a
/// thinking block, a text block and tool_use blocks; streamed as named events
/// (`message_start`, `content_block_start`, `content_block_delta`, `content_block_stop`,
/// `message_delta`, `message_stop`). No `timings`: Anthropic's clients do not expect them.
struct MessagesDialect: ChatReplyDialect {
    let id: String
    let model: String
    /// The prompt's length in tokens, for `message_start` (known before the reply).
    var promptTokens = 0

    // A stream's state: the open block and how many blocks were opened.
    private var open: (kind: OpenBlock, index: Int)?
    private var blockCount = 0
    /// The index of the tool_use block being streamed.
    private var callBlock = 0
    private enum OpenBlock { case thinking, text }

    init(id: String, model: String, streams: Bool) {
        self.id = id
        self.model = model
        self.streams = streams
    }

    var namesEvents: Bool { true }
    var endsWithDone: Bool { false }
    /// Whether the request streams (its `message_start` tells the prompt's length).
    let streams: Bool
    var needsPrompt: Bool { streams }
    mutating func start(prompt: (text: String, tokens: [Int])) { promptTokens = prompt.tokens.count }

    func errorEvent(_ error: APIError) -> JSONValue { error.anthropicJSON }

    /// Field names as the Messages API spells them.
    func translated(_ error: APIError) -> APIError { Self.translate(error) }

    static func translate(_ error: APIError) -> APIError {
        var error = error
        switch error.parameter {
        case "response_format"?: error.parameter = "output_config.format"
        case "stop"?: error.parameter = "stop_sequences"
        default: break
        }
        return error
    }

    // MARK: Whole replies

    func response(_ reply: FinishedReply) -> JSONValue {
        var blocks: [JSONValue] = []
        if let reasoning = reply.reasoning, !reasoning.isEmpty {
            // Anthropic signs its thinking; a local model's reasoning has no signature.
            blocks.append(.object([("type", .string("thinking")), ("thinking", .string(reasoning)), ("signature", .string(""))]))
        }
        if !reply.content.isEmpty { blocks.append(.object([("type", .string("text")), ("text", .string(reply.content))])) }
        blocks += reply.calls.map { Self.toolUse($0, input: $0.arguments) }
        let (reason, sequence) = Self.stopReason(reply)
        return .object([
            ("id", .string(id)), ("type", .string("message")), ("role", .string("assistant")), ("model", .string(model)),
            ("content", .array(blocks)), ("stop_reason", reason), ("stop_sequence", sequence),
            ("usage", Self.usage(reply.stats)),
        ])
    }

    // MARK: Streamed replies

    var opening: [JSONValue] {
        [.object([
            ("type", .string("message_start")),
            ("message", .object([
                ("id", .string(id)), ("type", .string("message")), ("role", .string("assistant")), ("model", .string(model)),
                ("content", .array([])), ("stop_reason", .null), ("stop_sequence", .null),
                ("usage", .object([
                    ("input_tokens", JSONValue(promptTokens)), ("output_tokens", JSONValue(0)),
                    ("cache_creation_input_tokens", JSONValue(0)), ("cache_read_input_tokens", JSONValue(0)),
                ])),
            ])),
        ])]
    }

    mutating func events(for part: ReplyPart) -> [JSONValue] {
        switch part {
        case .reasoning(let text):
            var events = open?.kind == .thinking ? [] : closeBlock() + openBlock(.thinking)
            events.append(delta(.object([("type", .string("thinking_delta")), ("thinking", .string(text))])))
            return events
        case .text(let text, _):
            var events = open?.kind == .text ? [] : closeBlock() + openBlock(.text)
            events.append(delta(.object([("type", .string("text_delta")), ("text", .string(text))])))
            return events
        case .callStarted(let id, let name, _):
            // A tool_use block, complete before any other begins.
            var events = closeBlock()
            callBlock = blockCount
            blockCount += 1
            events.append(.object([
                ("type", .string("content_block_start")), ("index", JSONValue(callBlock)),
                ("content_block", Self.toolUse(FunctionCall(id: id, name: name, arguments: .object([])), input: .object([]))),
            ]))
            return events
        case .callArguments(let piece, _):
            return [.object([
                ("type", .string("content_block_delta")), ("index", JSONValue(callBlock)),
                ("delta", .object([("type", .string("input_json_delta")), ("partial_json", .string(piece))])),
            ])]
        case .callFinished, .callAbandoned:
            return [.object([("type", .string("content_block_stop")), ("index", JSONValue(callBlock))])]
        case .end(let reply, _):
            let (reason, sequence) = Self.stopReason(reply)
            return closeBlock() + [
                .object([
                    ("type", .string("message_delta")),
                    ("delta", .object([("stop_reason", reason), ("stop_sequence", sequence)])),
                    ("usage", Self.usage(reply.stats)),
                ]),
                .object([("type", .string("message_stop"))]),
            ]
        }
    }

    private mutating func openBlock(_ kind: OpenBlock) -> [JSONValue] {
        open = (kind, blockCount)
        blockCount += 1
        let block: JSONValue = switch kind {
        case .thinking: .object([("type", .string("thinking")), ("thinking", .string("")), ("signature", .string(""))])
        case .text: .object([("type", .string("text")), ("text", .string(""))])
        }
        return [.object([("type", .string("content_block_start")), ("index", JSONValue(blockCount - 1)), ("content_block", block)])]
    }

    private mutating func closeBlock() -> [JSONValue] {
        guard let (kind, index) = open else { return [] }
        open = nil
        var events: [JSONValue] = []
        if kind == .thinking {
            // Anthropic's clients expect the thinking block's signature before it closes.
            events.append(delta(.object([("type", .string("signature_delta")), ("signature", .string(""))]), index: index))
        }
        events.append(.object([("type", .string("content_block_stop")), ("index", JSONValue(index))]))
        return events
    }

    private func delta(_ value: JSONValue, index: Int? = nil) -> JSONValue {
        .object([("type", .string("content_block_delta")), ("index", JSONValue(index ?? open!.index)), ("delta", value)])
    }

    // MARK: Pieces

    static func toolUse(_ call: FunctionCall, input: JSONValue) -> JSONValue {
        .object([("type", .string("tool_use")), ("id", .string(call.id)), ("name", .string(call.name)), ("input", input)])
    }

    /// Anthropic's stop reason and the stop sequence that ended the reply, if one did.
    static func stopReason(_ reply: FinishedReply) -> (JSONValue, JSONValue) {
        switch reply.reason {
        case .stop:
            if let sequence = reply.stats.stopSequence { return (.string("stop_sequence"), .string(sequence)) }
            return (.string(reply.calls.isEmpty ? "end_turn" : "tool_use"), .null)
        case .maxTokens, .constraint: return (.string("max_tokens"), .null)
        case .exceededContext: return (.string("model_context_window_exceeded"), .null)
        case .interrupted, .error: return (.null, .null)
        }
    }

    /// Anthropic counts the prompt's tokens read from the cache apart from the others.
    static func usage(_ stats: GenerationStats) -> JSONValue {
        .object([
            ("input_tokens", JSONValue(stats.promptTokens - stats.cachedPromptTokens)),
            ("cache_creation_input_tokens", JSONValue(0)), ("cache_read_input_tokens", JSONValue(stats.cachedPromptTokens)),
            ("output_tokens", JSONValue(stats.completionTokens)),
        ])
    }
}

extension APIError {
    /// The error in Anthropic's shape: `{"type": "error", "error": {"type", "message"}}`,
    /// with Anthropic's names for the kinds of error.
    var anthropicJSON: JSONValue {
        let kind = switch status.code {
        case 400: "invalid_request_error"
        case 401: "authentication_error"
        case 403: "permission_error"
        case 404: "not_found_error"
        case 413: "request_too_large"
        case 429: "rate_limit_error"
        case 503: "overloaded_error"
        case 504: "timeout_error"
        default: "api_error"
        }
        return .object([("type", .string("error")), ("error", .object([("type", .string(kind)), ("message", .string(message))]))])
    }
}

extension TypesetServer {
    /// `POST /v1/messages`: Anthropic's Messages API.
    func messages(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let runner = try readyRunner()
        let read = try MessagesRequest(try await readJSON(request))
        let dialect = MessagesDialect(id: "msg_" + Self.randomIdentifier(), model: modelName(runner), streams: read.chat.sampling.stream)
        return try await chatReply(read.chat, dialect: dialect, runner: runner, context: context)
    }

    /// `POST /v1/messages/count_tokens`: the prompt's length in tokens, as the reply would
    /// read it.
    func countMessageTokens(_ request: Request) async throws -> Response {
        let runner = try readyRunner()
        let chat = try MessagesRequest(try await readJSON(request), countsOnly: true).chat
        do throws(APIError) {
            return .json(.object([("input_tokens", JSONValue(try await renderedPrompt(of: chat, runner: runner).tokens.count))]))
        } catch {
            throw MessagesDialect.translate(error)
        }
    }
}
