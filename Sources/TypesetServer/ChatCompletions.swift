import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Typeset

/// A reply's events, read by one task after another (the handler takes the first, to answer
/// errors that come before any token with a proper status; the streamed body reads the rest).
final class ReplyEvents: @unchecked Sendable {
    private var iterator: AsyncThrowingStream<MessageResponse, Error>.Iterator

    init(_ stream: AsyncThrowingStream<MessageResponse, Error>) { iterator = stream.makeAsyncIterator() }

    /// The next event; a conversation error as the ``APIError`` a client gets.
    func next() async throws(APIError) -> MessageResponse? {
        do {
            return try await iterator.next()
        } catch let error as ConversationError {
            throw APIError(error)
        } catch {
            throw APIError(.internalServerError, "generation failed: \(error)")
        }
    }
}

/// A chat request turned into a conversation and the request of its reply.
struct ChatPlan {
    let conversation: Conversation
    let message: ChatMessage
    var request: ReplyRequest
    /// Tools are allowed and the reply is held to a schema: the reply is the value or a call,
    /// told apart once it is complete (so its text is not streamed before then).
    let valueOrCall: Bool
    let toolNames: Set<String>

    init(_ chat: ChatCompletionRequest, runner: ModelRunner) async throws(APIError) {
        conversation = runner.createConversation(history: Array(chat.messages.dropLast()))
        message = chat.messages[chat.messages.count - 1]
        request = ReplyRequest(options: chat.sampling.options)
        request.options.enableThinking = chat.enableThinking
        request.allowsSeveralCalls = chat.parallelToolCalls
        if chat.logprobs { request.options.logprobs = chat.topLogprobs }
        var functions: [FunctionDefinition]
        switch chat.toolChoice {
        case .none:
            functions = []
            request.options.functionCallMode = .disabled
            // "none" asks for words: with tools in play, a reply may not open as a call would
            // (small models otherwise write one out as text).
            request.forbidsCallOpening = !chat.functions.isEmpty || chat.messages.contains { !$0.functionCalls.isEmpty }
        case .automatic:
            functions = chat.functions
            request.options.functionCallMode = .automatic
        case .required:
            functions = chat.functions
            request.options.functionCallMode = .required
        case .named(let name):
            functions = chat.functions.filter { $0.name == name }
            request.options.functionCallMode = .required
        }
        toolNames = Set(functions.map(\.name))
        do {
            if let schema = chat.schema {
                if !functions.isEmpty {
                    // A value of the schema, or a call: one grammar holds the reply to both.
                    request.schema = .valueOrCall(schema, functions: functions, valueAllowed: request.options.functionCallMode != .required)
                    request.options.functionCallMode = .disabled
                } else {
                    request.schema = .value(schema)
                }
                valueOrCall = !functions.isEmpty
                // Fail closed before anything is answered: a schema the compiler cannot
                // enforce is a 400 naming the keyword and its JSON pointer.
                _ = try await runner.compiledGrammar(schema: request.schema!.document, options: request.options.schemaOptions)
            } else {
                valueOrCall = false
                for function in functions {
                    // Compiled off the task's thread first; registering then finds it cached.
                    try await runner.compileCallGrammar(for: function)
                    try conversation.register(function: function)
                }
            }
        } catch {
            throw APIError(error)
        }
        // Values and arguments get DRY's JSON setting (the engine's default for replies held to
        // a grammar), unless the request sets its own penalty.
        if chat.sampling.repetitionPenalty != nil { request.options.dry = .off }
    }
}

extension TypesetServer {
    /// `POST /v1/chat/completions`.
    func chatCompletion(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let runner = try readyRunner()
        let chat = try ChatCompletionRequest(try await readJSON(request))
        try checkModel(chat.model, runner: runner)
        try admit()
        var releasesHere = true
        defer { if releasesHere { release() } }
        let plan = try await ChatPlan(chat, runner: runner)
        let deadline = deadline
        let events = ReplyEvents(plan.conversation.generateResponse(
            to: plan.message, request: plan.request, isAbandoned: abandonment(channel: context.channel, deadline: deadline)))
        // Errors that come before the first event (the prompt does not fit, the template
        // fails) are answered with their status, not inside a 200 stream.
        let first = try await events.next()
        let reply = ChatReplyEncoder(
            id: "chatcmpl-" + Self.randomIdentifier(), created: Int(Date().timeIntervalSince1970), model: modelName(runner),
            valueOrCall: plan.valueOrCall, toolNames: plan.toolNames)
        if chat.sampling.stream {
            releasesHere = false
            var streamed = reply
            streamed.includesUsage = chat.sampling.includeUsage
            return streamedReply(first: first, rest: events, encoder: streamed, context: context)
        }
        var encoder = reply
        var event = first
        while let current = event {
            encoder.collect(current)
            event = try await events.next()
        }
        guard let (message, reason, stats) = encoder.completion else {
            throw APIError(.internalServerError, "the reply ended without completing")
        }
        metrics.record(stats)
        if reason == .interrupted {
            throw APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)")
        }
        return .json(Self.adding(timings: stats, to: encoder.response(message, reason: reason, stats: stats)))
    }

    /// `value` (a response or its last event) with llama-server's `timings` of the reply:
    /// prompt tokens computed (`prompt_n`, those reused from the cache in `cache_n`) and
    /// generated (`predicted_n`), each with milliseconds, per token and per second.
    static func adding(timings stats: GenerationStats, to value: JSONValue) -> JSONValue {
        guard case .object(var members) = value else { return value }
        let computed = stats.promptTokens - stats.cachedPromptTokens
        func rates(_ prefix: String, count: Int, seconds: Double) -> [(String, JSONValue)] {
            let milliseconds = seconds * 1000
            return [
                (prefix + "_n", JSONValue(count)), (prefix + "_ms", JSONValue(milliseconds)),
                (prefix + "_per_token_ms", JSONValue(count > 0 ? milliseconds / Double(count) : 0)),
                (prefix + "_per_second", JSONValue(seconds > 0 ? Double(count) / seconds : 0)),
            ]
        }
        members.append(("timings", .object(
            [("cache_n", JSONValue(stats.cachedPromptTokens))]
                + rates("prompt", count: computed, seconds: stats.prefillSeconds)
                + rates("predicted", count: stats.completionTokens, seconds: stats.decodeSeconds))))
        return .object(members)
    }

    /// What `system_fingerprint` says: the engine and its version.
    static let systemFingerprint = "typeset-" + version

    /// A reply streamed as server-sent events, which gives the request's place back when it
    /// ends: `encoder` turns each of the reply's events into the stream's (the reply's stats
    /// are recorded when it completes); a reply the deadline cut short ends with a 504 error
    /// event after its last (when the client is still there to read it), an error during the
    /// reply with its error event; `data: [DONE]` closes the stream when `endsWithDone`
    /// (OpenAI's streams; llama-server's own has none).
    func streamedReply(
        first: MessageResponse?, rest events: ReplyEvents, encoder: some ReplyStreamEncoder, endsWithDone: Bool = true,
        context: ServerRequestContext
    ) -> Response {
        streamingResponse { [self] writer in
            defer { release() }
            var encoder = encoder
            for value in encoder.opening { try await writer.write(Self.event(value)) }
            var event = first
            while let current = event {
                for value in encoder.events(for: current) { try await writer.write(Self.event(value)) }
                if case .complete(_, let reason, let stats) = current {
                    metrics.record(stats)
                    if reason == .interrupted, context.channel.isActive {
                        try await writer.write(Self.event(APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)").json))
                    }
                }
                do throws(APIError) {
                    event = try await events.next()
                } catch {
                    try await writer.write(Self.event(error.json))
                    event = nil
                }
            }
            if endsWithDone { try await writer.write(ByteBuffer(string: "data: [DONE]\n\n")) }
            try await writer.finish(nil)
        }
    }

    /// A `text/event-stream` response whose body `write` produces.
    func streamingResponse(_ write: @escaping @Sendable (inout any ResponseBodyWriter) async throws -> Void) -> Response {
        var response = Response(status: .ok, body: ResponseBody(write))
        response.headers[.contentType] = "text/event-stream"
        response.headers[.cacheControl] = "no-cache"
        // nginx (and other proxies honouring it) passes the events on as they come.
        response.headers[HTTPField.Name("X-Accel-Buffering")!] = "no"
        return response
    }

    /// One server-sent event carrying `value`.
    static func event(_ value: JSONValue) -> ByteBuffer { ByteBuffer(string: "data: " + value.compactText + "\n\n") }

    static func randomIdentifier() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0 ..< 24).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement(using: &generator)!) }.joined()
    }
}

/// Turns a reply's events into the events of a stream (``TypesetServer/streamedReply(first:rest:encoder:endsWithDone:context:)``).
protocol ReplyStreamEncoder: Sendable {
    /// The events that open the stream, before the reply's first.
    var opening: [JSONValue] { get }
    /// The stream's events for one of the reply's (none, one or several); the last for
    /// `.complete` carries llama-server's `timings`.
    mutating func events(for event: MessageResponse) -> [JSONValue]
}

extension ReplyStreamEncoder {
    var opening: [JSONValue] { [] }
}

/// Writes a chat reply in OpenAI's shapes: the whole `chat.completion`, or its
/// `chat.completion.chunk` events as they come.
struct ChatReplyEncoder: ReplyStreamEncoder {
    let id: String
    let created: Int
    let model: String
    let valueOrCall: Bool
    let toolNames: Set<String>
    /// Whether a stream ends with the usage event (`stream_options.include_usage`).
    var includesUsage = false
    /// Log-probabilities not yet sent (streaming) or all of them (collected).
    private var logprobs: [TokenLogprob] = []
    private var anyLogprobs = false
    /// The value-or-call reply's text, held until it is complete.
    private var heldText = ""
    /// The collected reply.
    private(set) var completion: (ChatMessage, FinishReason, GenerationStats)?
    private var callCount = 0

    init(id: String, created: Int, model: String, valueOrCall: Bool, toolNames: Set<String>) {
        self.id = id
        self.created = created
        self.model = model
        self.valueOrCall = valueOrCall
        self.toolNames = toolNames
    }

    // MARK: Whole replies

    mutating func collect(_ event: MessageResponse) {
        switch event {
        case .logprob(let entry): logprobs.append(entry); anyLogprobs = true
        case .complete(let message, let reason, let stats): completion = (message, reason, stats)
        case .chunk, .reasoningChunk, .functionCalls: break
        }
    }

    func response(_ message: ChatMessage, reason: FinishReason, stats: GenerationStats) -> JSONValue {
        let (content, calls) = resolved(message)
        var members: [(String, JSONValue)] = [("role", .string("assistant"))]
        members.append(("content", calls.isEmpty || !content.isEmpty ? .string(content) : .null))
        if let reasoning = message.reasoning { members.append(("reasoning_content", .string(reasoning))) }
        if !calls.isEmpty { members.append(("tool_calls", .array(calls.map { Self.call($0, index: nil) }))) }
        let choice = JSONValue.object([
            ("index", JSONValue(0)), ("message", .object(members)),
            ("logprobs", anyLogprobs ? .object([("content", .array(logprobs.map(Self.logprob)))]) : .null),
            ("finish_reason", Self.finishReason(reason, hasCalls: !calls.isEmpty)),
        ])
        return .object([
            ("id", .string(id)), ("object", .string("chat.completion")), ("created", JSONValue(created)), ("model", .string(model)),
            ("system_fingerprint", .string(TypesetServer.systemFingerprint)), ("choices", .array([choice])), ("usage", Self.usage(stats)),
        ])
    }

    /// The reply's content and calls: a value-or-call reply that is a call becomes one.
    private func resolved(_ message: ChatMessage) -> (String, [FunctionCall]) {
        guard valueOrCall, let value = try? JSONValue(parsing: message.content),
              let call = Conversation.call(in: value, toolNames: toolNames, number: 1) else {
            return (message.content, message.functionCalls)
        }
        return ("", [call])
    }

    // MARK: Streamed replies

    /// The first event: the assistant's role, and no content yet (`null`, as OpenAI and
    /// llama-server send it).
    var opening: [JSONValue] {
        [chunk(delta: .object([("role", .string("assistant")), ("content", .null)]), finishReason: .null)]
    }

    /// The events for one of the reply's, the usage event after the last when asked for.
    mutating func events(for event: MessageResponse) -> [JSONValue] {
        var events = chunks(for: event)
        if case .complete(_, _, let stats) = event {
            if includesUsage { events.append(usageChunk(stats)) }
            if let last = events.popLast() { events.append(TypesetServer.adding(timings: stats, to: last)) }
        }
        return events
    }

    /// The events for one of the reply's.
    mutating func chunks(for event: MessageResponse) -> [JSONValue] {
        switch event {
        case .logprob(let entry):
            logprobs.append(entry)
            return []
        case .chunk(let text):
            if valueOrCall { heldText += text; return [] }
            return [chunk(delta: .object([("content", .string(text))]), finishReason: .null, logprobs: takeLogprobs())]
        case .reasoningChunk(let text):
            return [chunk(delta: .object([("reasoning_content", .string(text))]), finishReason: .null)]
        case .functionCalls(let calls):
            return [callsChunk(calls)]
        case .complete(let message, let reason, _):
            var events: [JSONValue] = []
            var calls = message.functionCalls
            if valueOrCall {
                let (content, resolvedCalls) = resolved(message)
                calls = resolvedCalls
                if !content.isEmpty {
                    events.append(chunk(delta: .object([("content", .string(content))]), finishReason: .null, logprobs: takeLogprobs()))
                } else if !calls.isEmpty {
                    events.append(callsChunk(calls))
                }
            }
            events.append(chunk(delta: .object([]), finishReason: Self.finishReason(reason, hasCalls: !calls.isEmpty), logprobs: takeLogprobs()))
            return events
        }
    }

    /// The usage event (`stream_options.include_usage`): no choices.
    func usageChunk(_ stats: GenerationStats) -> JSONValue {
        .object([
            ("id", .string(id)), ("object", .string("chat.completion.chunk")), ("created", JSONValue(created)),
            ("model", .string(model)), ("system_fingerprint", .string(TypesetServer.systemFingerprint)),
            ("choices", .array([])), ("usage", Self.usage(stats)),
        ])
    }

    private mutating func callsChunk(_ calls: [FunctionCall]) -> JSONValue {
        let entries = calls.enumerated().map { Self.call($0.element, index: callCount + $0.offset) }
        callCount += calls.count
        return chunk(delta: .object([("tool_calls", .array(entries))]), finishReason: .null)
    }

    private mutating func takeLogprobs() -> JSONValue {
        guard !logprobs.isEmpty else { return .null }
        defer { logprobs.removeAll() }
        return .object([("content", .array(logprobs.map(Self.logprob)))])
    }

    private func chunk(delta: JSONValue, finishReason: JSONValue, logprobs: JSONValue = .null) -> JSONValue {
        let choice = JSONValue.object([("index", JSONValue(0)), ("delta", delta), ("logprobs", logprobs), ("finish_reason", finishReason)])
        return .object([
            ("id", .string(id)), ("object", .string("chat.completion.chunk")), ("created", JSONValue(created)),
            ("model", .string(model)), ("system_fingerprint", .string(TypesetServer.systemFingerprint)),
            ("choices", .array([choice])),
        ])
    }

    // MARK: Pieces

    static func call(_ call: FunctionCall, index: Int?) -> JSONValue {
        var members: [(String, JSONValue)] = []
        if let index { members.append(("index", JSONValue(index))) }
        members += [
            ("id", .string(call.id)), ("type", .string("function")),
            ("function", .object([("name", .string(call.name)), ("arguments", .string(call.argumentsText))])),
        ]
        return .object(members)
    }

    static func usage(_ stats: GenerationStats) -> JSONValue {
        .object([
            ("prompt_tokens", JSONValue(stats.promptTokens)), ("completion_tokens", JSONValue(stats.completionTokens)),
            ("total_tokens", JSONValue(stats.promptTokens + stats.completionTokens)),
            ("prompt_tokens_details", .object([("cached_tokens", JSONValue(stats.cachedPromptTokens))])),
        ])
    }

    static func logprob(_ entry: TokenLogprob) -> JSONValue {
        func candidate(_ candidate: TokenLogprob.Candidate) -> [(String, JSONValue)] {
            [("token", .string(candidate.text)), ("logprob", JSONValue(Double(candidate.logprob))),
             ("bytes", .array(candidate.bytes.map { JSONValue(Int($0)) }))]
        }
        return .object(candidate(entry.chosen) + [("top_logprobs", .array(entry.alternatives.map { .object(candidate($0)) }))])
    }

    /// OpenAI's finish reason for Typeset's: `length` for every limit (tokens, context, a
    /// value cut short), `tool_calls` for a reply that calls.
    static func finishReason(_ reason: FinishReason, hasCalls: Bool) -> JSONValue {
        switch reason {
        case .stop: .string(hasCalls ? "tool_calls" : "stop")
        case .maxTokens, .constraint, .exceededContext: .string("length")
        case .interrupted, .error: .null
        }
    }
}
