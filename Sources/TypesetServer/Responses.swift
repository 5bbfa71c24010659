import Foundation
import Hummingbird
import Typeset

/// OpenAI's Responses API request (`POST /v1/responses`), read into the chat request it asks
/// for, as llama-server reads it:
///
///     input         a string (the user's message), or items: messages (user, system,
///                   developer, assistant), function_call, function_call_output, reasoning
///     instructions  a system message before them
///     tools         function tools, flat ({"type": "function", "name", "parameters", …})
///     text.format   {"type": "json_schema", "name", "schema"} holds the reply to a schema
///     reasoning     {"effort": "none"} turns the model's thinking off
///
/// What cannot be honoured is a 400 naming the field: `previous_response_id` and
/// `conversation` (nothing is stored: send the whole conversation), hosted tools
/// (`web_search`, `file_search`, …), images and files, `background`, `truncation: "auto"`.
struct ResponsesRequest {
    var chat: ChatCompletionRequest
    /// The request's settings as the response object repeats them (`instructions`, `tools`,
    /// `text`, `temperature`, …).
    var settings: [(String, JSONValue)] = []

    init(_ document: JSONValue) throws(APIError) {
        var body = try RequestObject(document)
        let model = try body.string("model")
        var messages: [ChatMessage] = []
        let instructions = try body.string("instructions")
        if let instructions { messages.append(.system(instructions)) }
        switch body.value("input") {
        case .string(let text)?: messages.append(.user(text))
        case .array(let items)?:
            for (index, item) in items.enumerated() { try Self.read(item, at: "input[\(index)]", into: &messages) }
        case nil: throw .invalid("input", "input is required")
        default: throw .invalid("input", "input must be a string or an array of items")
        }
        Self.nameToolResults(&messages)
        let prefill = try ChatCompletionRequest.takePrefill(from: &messages, at: "input")
        chat = ChatCompletionRequest(model: model, messages: messages, sampling: try SamplingFields(&body, maxTokensFields: ["max_output_tokens"]))
        chat.prefill = prefill
        try chat.sampling.requireOneChoice()
        // llama-server's telemetry: prompt_progress events while the prompt is read, and the
        // timings so far on every event.
        chat.returnsProgress = try body.bool("return_progress") ?? false
        if chat.returnsProgress && !chat.sampling.stream {
            throw .invalid("return_progress", "return_progress reports a stream's progress: it needs stream: true")
        }
        chat.timingsPerToken = try body.bool("timings_per_token") ?? false

        if let tools = try body.array("tools") {
            for (index, tool) in tools.enumerated() {
                var entry = try RequestObject(tool, path: "tools[\(index)]")
                let type = try entry.string("type")
                guard type == "function" else {
                    throw .invalid(entry.path(of: "type"), "tools[\(index)] is a \(type.map { "'\($0)'" } ?? "typeless") tool: Typeset runs function tools only (OpenAI's hosted tools run on OpenAI's servers)")
                }
                try chat.add(try ChatCompletionRequest.function(&entry, parametersField: "parameters"), at: entry.path(of: "name"))
                try entry.finish()
            }
        }
        chat.toolChoice = try ChatCompletionRequest.toolChoice(body.value("tool_choice"), functions: chat.functions, flat: true)
        chat.parallelToolCalls = try body.bool("parallel_tool_calls") ?? true

        var format = JSONValue.object([("type", .string("text"))])
        var verbosity = "medium"
        if var text = try body.object("text") {
            if var given = try text.object("format") {
                switch try given.string("type") {
                case "text"?: break
                case "json_object"?: chat.responseFormat = .jsonObject
                case "json_schema"?:
                    let name = try given.string("name") ?? "response"
                    _ = try given.string("description")
                    _ = try given.bool("strict")   // the schema is always enforced
                    guard let schema = given.value("schema") else {
                        throw .invalid(given.path(of: "schema"), "text.format.schema is required for type json_schema")
                    }
                    chat.responseFormat = .jsonSchema(try ChatCompletionRequest.schemaObject(schema, at: "text.format.schema"), name: name)
                default:
                    throw .invalid("text.format.type", "text.format.type must be \"text\", \"json_object\" or \"json_schema\"")
                }
                try given.finish()
                format = text.value("format") ?? format
            }
            if let given = try text.string("verbosity") {
                guard given == "medium" else {
                    throw .invalid("text.verbosity", "text.verbosity is not implemented by Typeset (only \"medium\", the default)")
                }
                verbosity = given
            }
            try text.finish()
        }
        if case .text = chat.responseFormat {} else if !chat.sampling.stop.isEmpty {
            throw .invalid("stop", "stop cannot be combined with a JSON text.format: the value ends where its schema ends it")
        }

        var effort: JSONValue = .null
        if var reasoning = try body.object("reasoning") {
            if let level = try reasoning.string("effort") {
                // "none" turns thinking off; any other level lets a model that thinks think
                // and reaches the template as reasoning_effort.
                try chat.setReasoningEffort(level, at: "reasoning.effort")
                effort = .string(level)
            }
            _ = try reasoning.string("summary")   // the reasoning is returned whole, as reasoning_text
            _ = try reasoning.string("generate_summary")
            try reasoning.finish()
        }
        if let count = try body.integer("top_logprobs", in: 0 ... 20) {
            chat.logprobs = true
            chat.topLogprobs = count
        }
        for (index, item) in (try body.array("include") ?? []).enumerated() {
            switch item {
            case .string("message.output_text.logprobs"): chat.logprobs = true
            // Reasoning items carry no encrypted form: their text is there to send back.
            case .string("reasoning.encrypted_content"): break
            default:
                throw .invalid("include[\(index)]", "include[\(index)] is not implemented by Typeset (only message.output_text.logprobs and reasoning.encrypted_content)")
            }
        }
        if body.nonEmptyValue("previous_response_id") != nil || body.nonEmptyValue("conversation") != nil {
            throw .invalid(body.value("previous_response_id") != nil ? "previous_response_id" : "conversation",
                           "Typeset stores no responses or conversations: send the whole conversation as input")
        }
        if try body.bool("background") == true {
            throw .invalid("background", "background responses are not implemented by Typeset: stream the reply instead")
        }
        let truncation = try body.string("truncation") ?? "disabled"
        guard truncation == "disabled" else {
            throw .invalid("truncation", "truncation \"auto\" is not implemented by Typeset: a conversation that does not fit is refused")
        }
        // Fields that change no reply: bookkeeping for the client and OpenAI's billing.
        let metadata = body.value("metadata") ?? .object([])
        _ = try body.bool("store")   // nothing is stored either way
        for field in ["user", "safety_identifier", "prompt_cache_key", "service_tier", "prompt_cache_retention"] {
            _ = try body.string(field)
        }
        try body.finish()

        func number(_ value: Float?) -> JSONValue { value.map { JSONValue(Double($0)) } ?? .null }
        settings = [
            ("instructions", instructions.map(JSONValue.string) ?? .null),
            ("max_output_tokens", chat.sampling.maxTokens.map { JSONValue($0) } ?? .null),
            ("metadata", metadata), ("parallel_tool_calls", .bool(chat.parallelToolCalls)),
            ("previous_response_id", .null), ("reasoning", .object([("effort", effort), ("summary", .null)])),
            ("store", .bool(false)), ("temperature", number(chat.sampling.temperature)),
            ("text", .object([("format", format), ("verbosity", .string(verbosity))])),
            ("tool_choice", Self.toolChoice(chat.toolChoice)),
            ("tools", .array(chat.functions.map { function in
                .object([
                    ("type", .string("function")), ("name", .string(function.name)), ("description", .string(function.description)),
                    ("parameters", function.parameters), ("strict", .bool(true)),
                ])
            })),
            ("top_p", number(chat.sampling.topP)), ("truncation", .string("disabled")),
        ]
    }

    private static func toolChoice(_ choice: ChatCompletionRequest.ToolChoice) -> JSONValue {
        switch choice {
        case .none: .string("none")
        case .automatic: .string("auto")
        case .required: .string("required")
        case .named(let name): .object([("type", .string("function")), ("name", .string(name))])
        }
    }

    // MARK: Input items

    /// Reads one input item into `messages`: an assistant's message, call or reasoning joins
    /// the assistant message before it (one turn may be written as several items).
    private static func read(_ item: JSONValue, at path: String, into messages: inout [ChatMessage]) throws(APIError) {
        var object = try RequestObject(item, path: path)
        _ = try object.string("id")
        _ = try object.string("status")
        let type = try object.string("type")
        func assistantTurn(_ update: (inout ChatMessage) -> Void) {
            if messages.last?.role == .assistant {
                update(&messages[messages.count - 1])
            } else {
                var message = ChatMessage(role: .assistant, content: "")
                update(&message)
                messages.append(message)
            }
        }
        switch type {
        case nil, "message"?:
            guard let roleText = try object.string("role") else { throw .invalid(object.path(of: "role"), "\(object.path(of: "role")) is required") }
            let role: ChatMessage.Role
            switch roleText {
            case "user": role = .user
            case "system", "developer": role = .system
            case "assistant": role = .assistant
            default: throw .invalid(object.path(of: "role"), "\(object.path(of: "role")) must be user, system, developer or assistant")
            }
            let text = try Self.text(object.value("content"), at: object.path(of: "content"), role: role)
            if role == .assistant {
                assistantTurn { $0.content += text }
            } else {
                messages.append(ChatMessage(role: role, content: text))
            }
        case "function_call"?:
            guard let callID = try object.string("call_id"), let name = try object.string("name") else {
                throw .invalid(path, "\(path): a function_call needs call_id and name")
            }
            let argumentsText = try object.string("arguments") ?? "{}"
            guard let arguments = try? JSONValue(parsing: argumentsText), arguments.members != nil else {
                throw .invalid(object.path(of: "arguments"), "\(object.path(of: "arguments")) must be a JSON object, as text")
            }
            assistantTurn { $0.functionCalls.append(FunctionCall(id: callID, name: name, arguments: arguments)) }
        case "function_call_output"?:
            guard let callID = try object.string("call_id") else { throw .invalid(object.path(of: "call_id"), "\(object.path(of: "call_id")) is required") }
            let output: String
            switch object.value("output") {
            case .string(let text)?: output = text
            case let parts?: output = try Self.text(parts, at: object.path(of: "output"), role: .tool)
            case nil: output = ""
            }
            messages.append(ChatMessage(role: .tool, content: output, toolCallID: callID))
        case "reasoning"?:
            _ = try object.array("summary")
            _ = try object.string("encrypted_content")
            var reasoning = ""
            for (index, part) in (try object.array("content") ?? []).enumerated() {
                var entry = try RequestObject(part, path: object.path(of: "content") + "[\(index)]")
                guard try entry.string("type") == "reasoning_text", let text = try entry.string("text") else {
                    throw .invalid(entry.path, "\(entry.path) must be {\"type\": \"reasoning_text\", \"text\": …}")
                }
                try entry.finish()
                reasoning += text
            }
            assistantTurn { $0.reasoning = ($0.reasoning ?? "") + reasoning }
        case let other?:
            throw .invalid(object.path(of: "type"), "\(object.path(of: "type")) '\(other)' is not an input item Typeset reads (message, function_call, function_call_output, reasoning)")
        }
        try object.finish()
    }

    /// The text of a message's content: a string, or text parts (`input_text`, and for the
    /// assistant `output_text`); images, files and audio are refused (the model reads text).
    private static func text(_ content: JSONValue?, at path: String, role: ChatMessage.Role) throws(APIError) -> String {
        switch content {
        case nil: return ""
        case .string(let text)?: return text
        case .array(let parts)?:
            var text = ""
            for (index, part) in parts.enumerated() {
                var entry = try RequestObject(part, path: path + "[\(index)]")
                switch try entry.string("type") {
                case "input_text"?, "output_text"?:
                    guard let piece = try entry.string("text") else { throw .invalid(entry.path(of: "text"), "\(entry.path(of: "text")) is required") }
                    text += piece
                    _ = entry.value("annotations")
                    _ = entry.value("logprobs")
                case "refusal"?:
                    text += try entry.string("refusal") ?? ""
                case let other:
                    throw .invalid(entry.path(of: "type"), "\(entry.path(of: "type")) is '\(other ?? "missing")': Typeset reads text only (input_text, output_text)")
                }
                try entry.finish()
            }
            return text
        default:
            throw .invalid(path, "\(path) must be a string or an array of content parts")
        }
    }

    /// Gives each function's output the name of the call it answers (chat templates write it).
    static func nameToolResults(_ messages: inout [ChatMessage]) {
        var names: [String: String] = [:]
        for index in messages.indices {
            for call in messages[index].functionCalls { names[call.id] = call.name }
            if messages[index].role == .tool, messages[index].name == nil, let id = messages[index].toolCallID {
                messages[index].name = names[id]
            }
        }
    }
}

/// Writes a reply as OpenAI's Responses API does: a `response` object whose `output` holds a
/// reasoning item, a message item and function-call items; streamed as named events
/// (`response.created`, `response.output_item.added`, `response.output_text.delta`, …,
/// `response.completed`), each numbered (`sequence_number`), the last with llama-server's
/// `timings`.
struct ResponsesDialect: ChatReplyDialect {
    let id: String
    let created: Int
    let model: String
    let settings: [(String, JSONValue)]
    let runner: ModelRunner
    private let messageID = "msg_" + TypesetServer.randomIdentifier()
    private let reasoningID = "rs_" + TypesetServer.randomIdentifier()

    // A stream's state.
    private var sequenceNumber = 0
    /// The output items complete so far.
    private var output: [JSONValue] = []
    /// The item being written: reasoning or the message, with its text so far.
    private var open: (kind: OpenItem, text: String)?
    private enum OpenItem { case reasoning, message }
    /// The call being streamed: its id, name and arguments so far.
    private var callID = ""
    private var callName = ""
    private var callArguments = ""

    init(id: String, created: Int, model: String, settings: [(String, JSONValue)], runner: ModelRunner) {
        self.id = id
        self.created = created
        self.model = model
        self.settings = settings
        self.runner = runner
    }

    var namesEvents: Bool { true }
    var endsWithDone: Bool { false }

    /// Field names as the Responses API spells them.
    func translated(_ error: APIError) -> APIError { Self.translate(error) }

    static func translate(_ error: APIError) -> APIError {
        var error = error
        switch error.parameter {
        case "response_format"?: error.parameter = "text.format"
        case "max_tokens"?: error.parameter = "max_output_tokens"
        case let name? where name.hasPrefix("messages"): error.parameter = "input"
        default: break
        }
        return error
    }

    // MARK: Whole replies

    func response(_ reply: FinishedReply) -> JSONValue {
        var items: [JSONValue] = []
        if let reasoning = reply.reasoning, !reasoning.isEmpty { items.append(reasoningItem(reasoning, status: "completed")) }
        if !reply.content.isEmpty { items.append(messageItem(text: reply.content, logprobs: reply.logprobs ?? [], status: "completed")) }
        items += reply.calls.map { callItem($0, status: "completed") }
        return responseObject(status: status(reply.reason), output: items, reply: reply)
    }

    // MARK: Streamed replies

    var opening: [JSONValue] {
        mutating get {
            let response = responseObject(status: "in_progress", output: [], reply: nil)
            return [
                event("response.created", [("response", response)]),
                event("response.in_progress", [("response", response)]),
            ]
        }
    }

    /// llama-server's progress event in a Responses stream: `response.in_progress` with
    /// `prompt_progress`.
    mutating func progressEvent(_ progress: PromptProgress) -> JSONValue? {
        event("response.in_progress", [
            ("response", responseObject(status: "in_progress", output: [], reply: nil)), ("prompt_progress", progress.json),
        ])
    }

    mutating func events(for part: ReplyPart) -> [JSONValue] {
        switch part {
        case .reasoning(let text):
            var events = open?.kind == .reasoning ? [] : closeItem() + openItem(.reasoning)
            open!.text += text
            events.append(event("response.reasoning_text.delta", [
                ("item_id", .string(reasoningID)), ("output_index", JSONValue(output.count)), ("content_index", JSONValue(0)),
                ("delta", .string(text)),
            ]))
            return events
        case .text(let text, let logprobs):
            var events = open?.kind == .message ? [] : closeItem() + openItem(.message)
            open!.text += text
            events.append(event("response.output_text.delta", [
                ("item_id", .string(messageID)), ("output_index", JSONValue(output.count)), ("content_index", JSONValue(0)),
                ("delta", .string(text)), ("logprobs", .array(logprobs.map(ChatCompletionsDialect.logprob))),
            ]))
            return events
        case .callStarted(let id, let name, _):
            // The call's item is the next output item; it is complete before any other begins.
            var events = closeItem()
            let call = FunctionCall(id: id, name: name, arguments: .object([]))
            callID = id
            callName = name
            callArguments = ""
            events.append(event("response.output_item.added", [
                ("output_index", JSONValue(output.count)), ("item", callItem(call, status: "in_progress", arguments: "")),
            ]))
            return events
        case .callArguments(let piece, _):
            callArguments += piece
            return [event("response.function_call_arguments.delta", [
                ("item_id", .string("fc_" + callID)), ("output_index", JSONValue(output.count)), ("delta", .string(piece)),
            ])]
        case .callAbandoned:
            // The call's item ends incomplete, with the arguments written before the cut.
            let index = JSONValue(output.count)
            let item = JSONValue.object([
                ("id", .string("fc_" + callID)), ("type", .string("function_call")), ("status", .string("incomplete")),
                ("call_id", .string(callID)), ("name", .string(callName)), ("arguments", .string(callArguments)),
            ])
            output.append(item)
            return [event("response.output_item.done", [("output_index", index), ("item", item)])]
        case .callFinished(let call, _):
            let index = JSONValue(output.count)
            let item = callItem(call, status: "completed")
            output.append(item)
            return [
                event("response.function_call_arguments.done", [
                    ("item_id", .string("fc_" + call.id)), ("output_index", index), ("name", .string(call.name)),
                    ("arguments", .string(call.argumentsText)),
                ]),
                event("response.output_item.done", [("output_index", index), ("item", item)]),
            ]
        case .end(let reply, _):
            var events = closeItem()
            let status = status(reply.reason)
            let name = switch status {
            case "completed": "response.completed"
            case "failed": "response.failed"
            default: "response.incomplete"
            }
            events.append(TypesetServer.adding(timings: reply.stats, to: event(name, [
                ("response", responseObject(status: status, output: output, reply: reply)),
            ])))
            return events
        }
    }

    /// The events that open an output item.
    private mutating func openItem(_ kind: OpenItem) -> [JSONValue] {
        open = (kind, "")
        let index = JSONValue(output.count)
        switch kind {
        case .reasoning:
            return [event("response.output_item.added", [("output_index", index), ("item", reasoningItem(nil, status: "in_progress"))])]
        case .message:
            return [
                event("response.output_item.added", [("output_index", index), ("item", messageItem(text: nil, status: "in_progress"))]),
                event("response.content_part.added", [
                    ("item_id", .string(messageID)), ("output_index", index), ("content_index", JSONValue(0)),
                    ("part", Self.textPart("")),
                ]),
            ]
        }
    }

    /// The events that close the output item being written, if one is.
    private mutating func closeItem() -> [JSONValue] {
        guard let (kind, text) = open else { return [] }
        open = nil
        let index = JSONValue(output.count)
        var events: [JSONValue]
        let item: JSONValue
        switch kind {
        case .reasoning:
            events = [event("response.reasoning_text.done", [
                ("item_id", .string(reasoningID)), ("output_index", index), ("content_index", JSONValue(0)), ("text", .string(text)),
            ])]
            item = reasoningItem(text, status: "completed")
        case .message:
            events = [
                event("response.output_text.done", [
                    ("item_id", .string(messageID)), ("output_index", index), ("content_index", JSONValue(0)),
                    ("text", .string(text)), ("logprobs", .array([])),
                ]),
                event("response.content_part.done", [
                    ("item_id", .string(messageID)), ("output_index", index), ("content_index", JSONValue(0)),
                    ("part", Self.textPart(text)),
                ]),
            ]
            item = messageItem(text: text, status: "completed")
        }
        events.append(event("response.output_item.done", [("output_index", index), ("item", item)]))
        output.append(item)
        return events
    }

    /// A numbered event of type `type`.
    private mutating func event(_ type: String, _ members: [(String, JSONValue)]) -> JSONValue {
        defer { sequenceNumber += 1 }
        return .object([("type", .string(type))] + members + [("sequence_number", JSONValue(sequenceNumber))])
    }

    // MARK: Pieces

    /// `completed`, or `incomplete` when a limit cut the reply, `failed` when it failed.
    private func status(_ reason: FinishReason) -> String {
        switch reason {
        case .stop: "completed"
        case .maxTokens, .constraint, .exceededContext, .interrupted: "incomplete"
        case .error: "failed"
        }
    }

    private func responseObject(status: String, output: [JSONValue], reply: FinishedReply?) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", .string(id)), ("object", .string("response")), ("created_at", JSONValue(created)), ("status", .string(status)),
        ]
        if status == "completed" { members.append(("completed_at", JSONValue(Int(Date().timeIntervalSince1970)))) }
        members.append(("error", status == "failed" ? .object([("code", .string("server_error")), ("message", .string("generation failed"))]) : .null))
        let incomplete: JSONValue = switch reply?.reason {
        case .maxTokens?, .constraint?: .object([("reason", .string("max_output_tokens"))])
        case .exceededContext?: .object([("reason", .string("max_output_tokens"))])
        case .interrupted?: .object([("reason", .string("timeout"))])
        default: .null
        }
        members.append(("incomplete_details", incomplete))
        members.append(("model", .string(model)))
        members.append(("output", .array(output)))
        members += settings
        members.append(("usage", reply.map(usage) ?? .null))
        return .object(members)
    }

    private func usage(_ reply: FinishedReply) -> JSONValue {
        let stats = reply.stats
        let reasoningTokens = reply.reasoning.map { runner.tokenizer.encode($0, addingSpecialTokens: false).count } ?? 0
        return .object([
            ("input_tokens", JSONValue(stats.promptTokens)),
            ("input_tokens_details", .object([("cached_tokens", JSONValue(stats.cachedPromptTokens))])),
            ("output_tokens", JSONValue(stats.completionTokens)),
            ("output_tokens_details", .object([("reasoning_tokens", JSONValue(min(reasoningTokens, stats.completionTokens)))])),
            ("total_tokens", JSONValue(stats.promptTokens + stats.completionTokens)),
        ])
    }

    private func reasoningItem(_ text: String?, status: String) -> JSONValue {
        .object([
            ("id", .string(reasoningID)), ("type", .string("reasoning")), ("summary", .array([])),
            ("content", .array(text.map { [.object([("type", .string("reasoning_text")), ("text", .string($0))])] } ?? [])),
            ("encrypted_content", .null), ("status", .string(status)),
        ])
    }

    private func messageItem(text: String?, logprobs: [TokenLogprob] = [], status: String) -> JSONValue {
        .object([
            ("id", .string(messageID)), ("type", .string("message")), ("role", .string("assistant")), ("status", .string(status)),
            ("content", .array(text.map { [Self.textPart($0, logprobs: logprobs)] } ?? [])),
        ])
    }

    private func callItem(_ call: FunctionCall, status: String, arguments: String? = nil) -> JSONValue {
        .object([
            ("id", .string("fc_" + call.id)), ("type", .string("function_call")), ("status", .string(status)),
            ("call_id", .string(call.id)), ("name", .string(call.name)), ("arguments", .string(arguments ?? call.argumentsText)),
        ])
    }

    private static func textPart(_ text: String, logprobs: [TokenLogprob] = []) -> JSONValue {
        .object([
            ("type", .string("output_text")), ("text", .string(text)), ("annotations", .array([])),
            ("logprobs", .array(logprobs.map(ChatCompletionsDialect.logprob))),
        ])
    }
}

extension TypesetServer {
    /// `POST /v1/responses`: OpenAI's Responses API.
    func responses(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let runner = try readyRunner()
        let read = try ResponsesRequest(try await readJSON(request))
        let dialect = ResponsesDialect(
            id: "resp_" + Self.randomIdentifier(), created: Int(Date().timeIntervalSince1970), model: modelName(runner),
            settings: read.settings, runner: runner)
        return try await chatReply(read.chat, dialect: dialect, runner: runner, context: context)
    }
}
