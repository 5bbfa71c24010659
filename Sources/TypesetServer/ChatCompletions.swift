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
        request = ReplyRequest(options: try chat.sampling.options(for: runner))
        request.prefill = chat.prefill
        // A continued message follows the assistant's opening, whatever add_generation_prompt says
        // (vLLM's continue_final_message asks for it false: the turn is left open either way).
        request.addsGenerationPrompt = chat.addsGenerationPrompt || !chat.prefill.isEmpty
        request.options.enableThinking = chat.enableThinking
        request.options.reasoningEffort = chat.reasoningEffort
        if let budget = chat.reasoningBudget { request.options.reasoningBudget = budget }
        // The trace records the tokens for typeset_trace, and counts them for timings_per_token.
        if chat.tracesTokens || chat.timingsPerToken { request.options.tokenTrace = TokenTrace() }
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
        if let grammar = chat.grammar {
            guard chat.prefill.isEmpty else {
                throw .invalid("messages", "a final assistant message cannot be continued under a grammar: the grammar starts the reply")
            }
            try request.options.requireNoPositiveBias(under: "a grammar")
            request.constraint = try await TypesetServer.constraint(grammar: grammar, runner: runner)
        }
        if !chat.prefill.isEmpty, chat.schema != nil || !functions.isEmpty {
            throw .invalid("messages", "a final assistant message cannot be continued under a JSON Schema or with tools: the value or call starts the reply")
        }
        if chat.schema != nil { try request.options.requireNoPositiveBias(under: "a JSON Schema") }
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
        var dialect = ChatCompletionsDialect(
            id: "chatcmpl-" + Self.randomIdentifier(), created: Int(Date().timeIntervalSince1970), model: modelName(runner),
            includesUsage: chat.sampling.includeUsage)
        dialect.verbose = chat.verbose || configuration.verbose
        if chat.sampling.choiceCount > 1 { return try await choices(chat, dialect: dialect, runner: runner, context: context) }
        return try await chatReply(chat, dialect: dialect, runner: runner, context: context)
    }

    /// Several choices of one chat request (`n`), decoded together: choice `i` samples with the
    /// request's seed plus `i` (so sampled choices differ, and greedy ones agree). Answered
    /// whole, or streamed: each chunk names its choice's `index`, the choices' chunks
    /// interleaved as they come, and the usage (when asked) counts them all at the end.
    private func choices(
        _ chat: ChatCompletionRequest, dialect: ChatCompletionsDialect, runner: ModelRunner, context: ServerRequestContext
    ) async throws -> Response {
        try checkModel(chat.model, runner: runner)
        guard !dialect.verbose else { throw APIError.invalid("verbose", "verbose shows one choice's prompt: ask for n = 1") }
        guard !chat.tracesTokens else { throw APIError.invalid("typeset_trace", "typeset_trace follows one choice's tokens: ask for n = 1") }
        guard !chat.returnsProgress else { throw APIError.invalid("return_progress", "return_progress follows one choice's prompt: ask for n = 1") }
        guard !chat.timingsPerToken || !chat.sampling.stream else {
            throw APIError.invalid("timings_per_token", "timings_per_token follows one choice's tokens: ask for n = 1")
        }
        guard chat.addsGenerationPrompt || !chat.prefill.isEmpty else {
            throw APIError.invalid("add_generation_prompt", "add_generation_prompt may be false only to continue a final assistant message")
        }
        try admit()
        var releasesHere = true
        defer { if releasesHere { release() } }
        let deadline = deadline
        let isAbandoned = abandonment(channel: context.channel, deadline: deadline)
        // Each choice planned and started; the first event of each awaited here, so that an
        // error before any token (the prompt does not fit) is answered with its status.
        var started: [(plan: ChatPlan, first: MessageResponse?, events: ReplyEvents)] = []
        for index in 0 ..< chat.sampling.choiceCount {
            var choice = chat
            choice.sampling.seed = (chat.sampling.seed ?? 0) &+ UInt64(index)
            let plan = try await ChatPlan(choice, runner: runner)
            let events = ReplyEvents(plan.conversation.generateResponse(to: plan.message, request: plan.request, isAbandoned: isAbandoned))
            started.append((plan, nil, events))
        }
        for index in started.indices { started[index].first = try await started[index].events.next() }
        let encoders = started.enumerated().map { index, choice in
            var choiceDialect = dialect
            choiceDialect.choiceIndex = index
            choiceDialect.includesUsage = false
            return ChatReplyStreamEncoder(
                assembler: ReplyAssembler(valueOrCall: choice.plan.valueOrCall, toolNames: choice.plan.toolNames, wantsLogprobs: chat.logprobs),
                dialect: choiceDialect)
        }
        if chat.sampling.stream {
            releasesHere = false
            return streamedChoices(started.map { ($0.first, $0.events) }, encoders: encoders, dialect: dialect, context: context)
        }
        let replies = try await withThrowingTaskGroup(of: (Int, FinishedReply).self) { group in
            for (index, choice) in started.enumerated() {
                group.addTask {
                    (index, try await Self.finishedReply(first: choice.first, rest: choice.events, assembler: encoders[index].assembler))
                }
            }
            var replies: [(Int, FinishedReply)] = []
            for try await reply in group { replies.append(reply) }
            return replies.sorted { $0.0 < $1.0 }.map(\.1)
        }
        for reply in replies { metrics.record(reply.stats) }
        if replies.contains(where: { $0.reason == .interrupted }) {
            throw APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)")
        }
        return .json(dialect.response(choices: replies))
    }

    /// Several choices' replies (``choices(_:dialect:runner:context:)``) in one stream: each
    /// choice's events written as they come, by its own encoder (its chunks name its index),
    /// then one usage event counting every choice (the prompt as choice 0 read it), when
    /// asked, and `[DONE]`. An error in one choice ends the stream with its error event (the
    /// other choices stop), as OpenAI's clients end at an error event.
    private func streamedChoices(
        _ choices: [(first: MessageResponse?, events: ReplyEvents)], encoders: [ChatReplyStreamEncoder<ChatCompletionsDialect>],
        dialect: ChatCompletionsDialect, context: ServerRequestContext
    ) -> Response {
        streamingResponse { [self] writer in
            defer { release() }
            var encoders = encoders
            // The choices' events, merged: (choice, event), `nil` when a choice has ended.
            let (merged, continuation) = AsyncStream<(Int, Result<MessageResponse, APIError>?)>.makeStream()
            let readers = Task {
                await withTaskGroup(of: Void.self) { group in
                    for (index, choice) in choices.enumerated() {
                        group.addTask {
                            var event = choice.first
                            while let current = event {
                                continuation.yield((index, .success(current)))
                                do throws(APIError) { event = try await choice.events.next() } catch {
                                    continuation.yield((index, .failure(error)))
                                    event = nil
                                }
                            }
                            continuation.yield((index, nil))
                        }
                    }
                }
                continuation.finish()
            }
            defer { readers.cancel() }
            for index in encoders.indices {
                for value in encoders[index].opening { try await writer.write(Self.event(value)) }
            }
            var stats: [Int: GenerationStats] = [:]
            var interrupted = false
            events: for await (index, outcome) in merged {
                switch outcome {
                case .success(let event)?:
                    for value in encoders[index].events(for: event) { try await writer.write(Self.event(value)) }
                    if case .complete(_, let reason, let replyStats) = event {
                        metrics.record(replyStats)
                        stats[index] = replyStats
                        interrupted = interrupted || reason == .interrupted
                    }
                case .failure(let error)?:
                    try await writer.write(Self.event(encoders[index].errorEvent(error)))
                    break events
                case nil:
                    break
                }
            }
            if interrupted, context.channel.isActive {
                let timeout = APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)")
                try await writer.write(Self.event(timeout.json))
            }
            if dialect.includesUsage, stats.count == choices.count, var total = stats[0] {
                total.completionTokens = stats.values.reduce(0) { $0 + $1.completionTokens }
                try await writer.write(Self.event(dialect.usageChunk(total)))
            }
            try await writer.write(ByteBuffer(string: "data: [DONE]\n\n"))
            try await writer.finish(nil)
        }
    }

    /// A chat request's reply in `dialect`: whole, or streamed when the request asks. Every
    /// chat API the server speaks ends here, so a reply is planned, admitted, timed and
    /// counted one way; an error is answered with the request's fields as the dialect names
    /// them.
    func chatReply(
        _ chat: ChatCompletionRequest, dialect: some ChatReplyDialect, runner: ModelRunner, context: ServerRequestContext
    ) async throws -> Response {
        do throws(APIError) {
            try checkModel(chat.model, runner: runner)
            guard chat.addsGenerationPrompt || !chat.prefill.isEmpty else {
                throw APIError.invalid("add_generation_prompt", "add_generation_prompt may be false only to continue a final assistant message")
            }
            try admit()
            var releasesHere = true
            defer { if releasesHere { release() } }
            let plan = try await ChatPlan(chat, runner: runner)
            var dialect = dialect
            // The prompt, rendered once for what tells it (before the reply starts, while the
            // conversation does not hold the message yet).
            var prompt: (text: String, tokens: [Int]) = ("", [])
            if dialect.needsPrompt || chat.returnsProgress || chat.timingsPerToken {
                do { prompt = try plan.conversation.prompt(answering: plan.message, request: plan.request) } catch { throw APIError(error) }
            }
            if dialect.needsPrompt { dialect.start(prompt: prompt) }
            let progress = chat.returnsProgress ? PromptProgressFeed(promptTokens: prompt.tokens.count) : nil
            let timings = chat.timingsPerToken ? plan.request.options.tokenTrace.map { RunningTimings(promptTokens: prompt.tokens.count, trace: $0) } : nil
            if progress != nil || timings != nil {
                plan.conversation.prefillProgress = { computed, total in
                    progress?.report(computed: computed, total: total)
                    timings?.report(computed: computed, total: total)
                }
            }
            let deadline = deadline
            let events = ReplyEvents(plan.conversation.generateResponse(
                to: plan.message, request: plan.request, isAbandoned: abandonment(channel: context.channel, deadline: deadline)))
            let assembler = ReplyAssembler(valueOrCall: plan.valueOrCall, toolNames: plan.toolNames, wantsLogprobs: chat.logprobs)
            let trace = chat.tracesTokens ? plan.request.options.tokenTrace.map { TokenTraceWriter(trace: $0, vocabulary: runner.tokenizer.vocabulary) } : nil
            let encoder = ChatReplyStreamEncoder(assembler: assembler, dialect: dialect, trace: trace, timings: timings)
            if let progress {
                releasesHere = false
                return streamedReply(first: nil, rest: events, encoder: encoder, progress: progress, context: context)
            }
            // Errors that come before the first event (the prompt does not fit, the template
            // fails) are answered with their status, not inside a 200 stream.
            let first = try await events.next()
            if chat.sampling.stream {
                releasesHere = false
                return streamedReply(first: first, rest: events, encoder: encoder, context: context)
            }
            let finished = try await Self.finishedReply(first: first, rest: events, assembler: assembler)
            metrics.record(finished.stats)
            if finished.reason == .interrupted {
                throw APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)")
            }
            let response = dialect.response(finished)
            return .json(trace?.adding(to: response) ?? response)
        } catch {
            throw dialect.translated(error)
        }
    }

    /// A reply read to its end (`first`, then the `rest` of its events), as `assembler` makes
    /// it whole.
    static func finishedReply(first: MessageResponse?, rest events: ReplyEvents, assembler: ReplyAssembler) async throws(APIError) -> FinishedReply {
        var assembler = assembler
        var finished: FinishedReply?
        var event = first
        while let current = event {
            for case .end(let reply, _) in assembler.parts(for: current) { finished = reply }
            event = try await events.next()
        }
        guard let finished else { throw APIError(.internalServerError, "the reply ended without completing") }
        return finished
    }

    /// `value` (a response or its last event) with llama-server's `timings` of the reply:
    /// prompt tokens computed (`prompt_n`, those reused from the cache in `cache_n`) and
    /// generated (`predicted_n`), each with milliseconds, per token and per second. As
    /// llama-server counts them, the generation's rates leave out the first token, which comes
    /// from the prompt's pass: `predicted_ms` runs from the end of the prompt's pass to the
    /// end of the reply, in which the other `predicted_n − 1` tokens were made.
    static func adding(timings stats: GenerationStats, to value: JSONValue) -> JSONValue {
        adding(timings: timings(
            cached: stats.cachedPromptTokens, computed: stats.promptTokens - stats.cachedPromptTokens, promptSeconds: stats.prefillSeconds,
            generated: stats.completionTokens, generationSeconds: stats.decodeSeconds), to: value)
    }

    /// `value` (an object) with `timings` as its member of that name, unless it has one.
    static func adding(timings: JSONValue, to value: JSONValue) -> JSONValue {
        guard case .object(var members) = value, !members.contains(where: { $0.0 == "timings" }) else { return value }
        members.append(("timings", timings))
        return .object(members)
    }

    /// llama-server's `timings` object: `cached` prompt tokens reused, `computed` read in
    /// `promptSeconds`, `generated` tokens of which all but the first were made in
    /// `generationSeconds`.
    static func timings(cached: Int, computed: Int, promptSeconds: Double, generated: Int, generationSeconds: Double) -> JSONValue {
        func rates(_ prefix: String, count: Int, timed: Int, seconds: Double) -> [(String, JSONValue)] {
            let milliseconds = seconds * 1000
            return [
                (prefix + "_n", JSONValue(count)), (prefix + "_ms", JSONValue(milliseconds)),
                (prefix + "_per_token_ms", JSONValue(timed > 0 ? milliseconds / Double(timed) : 0)),
                (prefix + "_per_second", JSONValue(timed > 0 && seconds > 0 ? Double(timed) * 1000 / milliseconds : 0)),
            ]
        }
        return .object(
            [("cache_n", JSONValue(cached))]
                + rates("prompt", count: computed, timed: computed, seconds: promptSeconds)
                + rates("predicted", count: generated, timed: max(generated - 1, 0), seconds: generationSeconds))
    }

    /// What `system_fingerprint` says: the engine and its version.
    static let systemFingerprint = "typeset-" + version

    /// A reply streamed as server-sent events, which gives the request's place back when it
    /// ends: `encoder` turns each of the reply's events into the stream's (the reply's stats
    /// are recorded when it completes); a reply the deadline cut short ends with a 504 error
    /// event after its last (when the client is still there to read it), an error during the
    /// reply with its error event (``ReplyStreamEncoder/errorEvent(_:)``); `data: [DONE]`
    /// closes the stream when the encoder's dialect has it.
    func streamedReply(
        first: MessageResponse?, rest events: ReplyEvents, encoder: some ReplyStreamEncoder, progress: PromptProgressFeed? = nil,
        context: ServerRequestContext
    ) -> Response {
        streamingResponse { [self] writer in
            defer { release() }
            var encoder = encoder
            let names = encoder.namesEvents
            for value in encoder.opening { try await writer.write(Self.event(value, named: names)) }
            var event = first
            if let progress {
                // The stream began before the reply: the prompt's progress comes while its
                // first event is awaited, and an error before it is the stream's error event.
                let firstEvent = Task { () -> Result<MessageResponse?, APIError> in
                    defer { progress.finish() }
                    do throws(APIError) { return .success(try await events.next()) } catch { return .failure(error) }
                }
                for await update in progress.updates {
                    if let value = encoder.progressEvent(update) { try await writer.write(Self.event(value, named: names)) }
                }
                switch await firstEvent.value {
                case .success(let value): event = value
                case .failure(let error): try await writer.write(Self.event(encoder.errorEvent(error), named: names))
                }
            }
            while let current = event {
                for value in encoder.events(for: current) { try await writer.write(Self.event(value, named: names)) }
                if case .complete(_, let reason, let stats) = current {
                    metrics.record(stats)
                    if reason == .interrupted, context.channel.isActive {
                        let timeout = APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)")
                        try await writer.write(Self.event(encoder.errorEvent(timeout), named: names))
                    }
                }
                do throws(APIError) {
                    event = try await events.next()
                } catch {
                    try await writer.write(Self.event(encoder.errorEvent(error), named: names))
                    event = nil
                }
            }
            if encoder.endsWithDone { try await writer.write(ByteBuffer(string: "data: [DONE]\n\n")) }
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

    /// One server-sent event carrying `value`; `named`, with an `event:` line giving its
    /// `type` (`error` when it has none).
    static func event(_ value: JSONValue, named: Bool = false) -> ByteBuffer {
        guard named else { return ByteBuffer(string: "data: " + value.compactText + "\n\n") }
        let name = if case .string(let type)? = value["type"] { type } else { "error" }
        return ByteBuffer(string: "event: " + name + "\ndata: " + value.compactText + "\n\n")
    }

    static func randomIdentifier() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0 ..< 24).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement(using: &generator)!) }.joined()
    }
}

/// Turns a reply's events into the events of a stream (``TypesetServer/streamedReply(first:rest:encoder:context:)``).
protocol ReplyStreamEncoder: Sendable {
    /// The events that open the stream, before the reply's first.
    var opening: [JSONValue] { mutating get }
    /// The stream's events for one of the reply's (none, one or several).
    mutating func events(for event: MessageResponse) -> [JSONValue]
    /// The event that says `error` (the request's time ran out, the reply failed).
    func errorEvent(_ error: APIError) -> JSONValue
    /// Whether each event is named (`event: <its type>`).
    var namesEvents: Bool { get }
    /// Whether the stream ends with `data: [DONE]` (OpenAI's chat and completions streams).
    var endsWithDone: Bool { get }
    /// The event telling how far the prompt's reading has come (`nil`: none in this stream).
    mutating func progressEvent(_ progress: PromptProgress) -> JSONValue?
}

extension ReplyStreamEncoder {
    var opening: [JSONValue] { [] }
    func errorEvent(_ error: APIError) -> JSONValue { error.json }
    var namesEvents: Bool { false }
    var endsWithDone: Bool { true }
    func progressEvent(_ progress: PromptProgress) -> JSONValue? { nil }
}

/// Writes a chat reply in OpenAI's chat-completions shapes: the whole `chat.completion`, or
/// its `chat.completion.chunk` events as they come, each with llama-server's `timings` on the
/// last.
struct ChatCompletionsDialect: ChatReplyDialect {
    let id: String
    let created: Int
    let model: String
    /// Whether a stream ends with the usage event (`stream_options.include_usage`).
    var includesUsage: Bool
    /// The index the chunks give their choice (one of several, `n`).
    var choiceIndex = 0
    /// Whether the reply carries llama-server's `__verbose` (the prompt as rendered, the
    /// counts): its request's `verbose`, or the server's `--verbose`.
    var verbose = false
    private var prompt = ""

    var needsPrompt: Bool { verbose }
    mutating func start(prompt: (text: String, tokens: [Int])) { self.prompt = prompt.text }

    init(id: String, created: Int, model: String, includesUsage: Bool) {
        self.id = id
        self.created = created
        self.model = model
        self.includesUsage = includesUsage
    }

    /// `value` with `__verbose`, when asked for.
    private func addingVerbose(_ reply: FinishedReply, to value: JSONValue) -> JSONValue {
        guard verbose, case .object(var members) = value else { return value }
        members.append(("__verbose", .object([
            ("prompt", .string(prompt)), ("content", .string(reply.content)), ("model", .string(model)),
            ("tokens_predicted", JSONValue(reply.stats.completionTokens)), ("tokens_evaluated", JSONValue(reply.stats.promptTokens)),
            ("tokens_cached", JSONValue(reply.stats.cachedPromptTokens)),
        ])))
        return .object(members)
    }

    // MARK: Whole replies

    func response(_ reply: FinishedReply) -> JSONValue { response(choices: [reply]) }

    /// The whole reply of several choices (`n`), in order: usage counts the prompt once and
    /// every choice's tokens; the timings are the first choice's prompt and all choices' tokens.
    func response(choices replies: [FinishedReply]) -> JSONValue {
        let choices = replies.enumerated().map { index, reply in
            var members: [(String, JSONValue)] = [("role", .string("assistant"))]
            members.append(("content", reply.calls.isEmpty || !reply.content.isEmpty ? .string(reply.content) : .null))
            if let reasoning = reply.reasoning { members.append(("reasoning_content", .string(reasoning))) }
            if !reply.calls.isEmpty { members.append(("tool_calls", .array(reply.calls.map { Self.call($0, index: nil) }))) }
            return JSONValue.object([
                ("index", JSONValue(index)), ("message", .object(members)),
                ("logprobs", reply.logprobs.map { .object([("content", .array($0.map(Self.logprob)))]) } ?? .null),
                ("finish_reason", Self.finishReason(reply.reason, hasCalls: !reply.calls.isEmpty)),
            ])
        }
        var stats = replies[0].stats
        stats.completionTokens = replies.reduce(0) { $0 + $1.stats.completionTokens }
        stats.decodeSeconds = replies.map(\.stats.decodeSeconds).max() ?? 0
        return addingVerbose(replies[0], to: TypesetServer.adding(timings: stats, to: .object([
            ("id", .string(id)), ("object", .string("chat.completion")), ("created", JSONValue(created)), ("model", .string(model)),
            ("system_fingerprint", .string(TypesetServer.systemFingerprint)), ("choices", .array(choices)),
            ("usage", Self.usage(stats)),
        ])))
    }

    // MARK: Streamed replies

    /// The first event: the assistant's role, and no content yet (`null`, as OpenAI and
    /// llama-server send it).
    var opening: [JSONValue] {
        [chunk(delta: .object([("role", .string("assistant")), ("content", .null)]), finishReason: .null)]
    }

    func events(for part: ReplyPart) -> [JSONValue] {
        switch part {
        case .reasoning(let text):
            return [chunk(delta: .object([("reasoning_content", .string(text))]), finishReason: .null)]
        case .text(let text, let logprobs):
            return [chunk(delta: .object([("content", .string(text))]), finishReason: .null, logprobs: Self.logprobs(logprobs))]
        case .callStarted(let id, let name, let index):
            // The call's id, type and name, with no arguments yet; they follow piece by piece.
            let entry = JSONValue.object([
                ("index", JSONValue(index)), ("id", .string(id)), ("type", .string("function")),
                ("function", .object([("name", .string(name)), ("arguments", .string(""))])),
            ])
            return [chunk(delta: .object([("tool_calls", .array([entry]))]), finishReason: .null)]
        case .callArguments(let piece, let index):
            let entry = JSONValue.object([("index", JSONValue(index)), ("function", .object([("arguments", .string(piece))]))])
            return [chunk(delta: .object([("tool_calls", .array([entry]))]), finishReason: .null)]
        case .callFinished, .callAbandoned:
            return []   // the finish reason says it (tool_calls, or length for a call cut short)
        case .end(let reply, let trailingLogprobs):
            var events = [chunk(
                delta: .object([]), finishReason: Self.finishReason(reply.reason, hasCalls: !reply.calls.isEmpty),
                logprobs: Self.logprobs(trailingLogprobs))]
            if includesUsage { events.append(usageChunk(reply.stats)) }
            events.append(addingVerbose(reply, to: TypesetServer.adding(timings: reply.stats, to: events.removeLast())))
            return events
        }
    }

    /// llama-server's progress event: no choices, and `prompt_progress`.
    func progressEvent(_ progress: PromptProgress) -> JSONValue? {
        .object([
            ("id", .string(id)), ("object", .string("chat.completion.chunk")), ("created", JSONValue(created)),
            ("model", .string(model)), ("system_fingerprint", .string(TypesetServer.systemFingerprint)),
            ("choices", .array([])), ("prompt_progress", progress.json),
        ])
    }

    /// The usage event (`stream_options.include_usage`): no choices.
    func usageChunk(_ stats: GenerationStats) -> JSONValue {
        .object([
            ("id", .string(id)), ("object", .string("chat.completion.chunk")), ("created", JSONValue(created)),
            ("model", .string(model)), ("system_fingerprint", .string(TypesetServer.systemFingerprint)),
            ("choices", .array([])), ("usage", Self.usage(stats)),
        ])
    }

    /// A chunk's `logprobs`: `null` when there are none.
    private static func logprobs(_ entries: [TokenLogprob]) -> JSONValue {
        entries.isEmpty ? .null : .object([("content", .array(entries.map(logprob)))])
    }

    private func chunk(delta: JSONValue, finishReason: JSONValue, logprobs: JSONValue = .null) -> JSONValue {
        let choice = JSONValue.object([("index", JSONValue(choiceIndex)), ("delta", delta), ("logprobs", logprobs), ("finish_reason", finishReason)])
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
