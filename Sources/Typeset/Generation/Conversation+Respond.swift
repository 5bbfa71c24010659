import TypesetGrammar
import Synchronization

/// A finished typed reply. Its value's members read through it too (`response.title` is
/// `response.content.title`).
@dynamicMemberLookup
public struct Response<Content> {
    /// The value.
    public let content: Content
    /// The value as generated (what `content` was decoded from).
    public let rawContent: GeneratedContent
    /// The messages this request added to the history, in order: the request, tool calls and
    /// their outputs, and the final reply.
    public let messages: [ChatMessage]
    /// How the final reply ended (`stop` for every value Typeset returns).
    public let finishReason: FinishReason
    /// What the final reply cost.
    public let stats: GenerationStats
    /// A member of the value.
    public subscript<Member>(dynamicMember member: KeyPath<Content, Member>) -> Member { content[keyPath: member] }

    package init(content: Content, rawContent: GeneratedContent, messages: [ChatMessage], finishReason: FinishReason, stats: GenerationStats) {
        self.content = content
        self.rawContent = rawContent
        self.messages = messages
        self.finishReason = finishReason
        self.stats = stats
    }
}

extension Response: Sendable where Content: Sendable {}

/// Why a typed reply could not be produced.
public enum GenerationError: Error, Sendable, CustomStringConvertible {
    /// The generated value does not decode as the type asked for; `rawContent` is the JSON.
    case decodingFailure(GeneratedContentError, rawContent: String)
    /// The reply stopped before its value was complete (`maxTokens` too small for any value,
    /// the context full, or generation interrupted); `rawContent` is what was generated.
    case incompleteValue(finishReason: FinishReason, rawContent: String)
    /// A tool threw.
    case toolCallFailed(tool: String, arguments: String, error: any Error)
    /// The model called a function that is registered without a tool to run it.
    case unknownTool(String)

    public var description: String {
        switch self {
        case .decodingFailure(let error, let raw): return "the generated value does not decode: \(error) (generated: \(raw))"
        case .incompleteValue(let reason, let raw): return "the reply ended (\(reason.rawValue)) before its value was complete: \(raw)"
        case .toolCallFailed(let tool, let arguments, let error): return "tool '\(tool)' failed on \(arguments): \(error)"
        case .unknownTool(let name): return "the model called '\(name)', which has no tool to run"
        }
    }
}

extension Conversation {
    /// The most rounds of tool calls one request runs before the model must answer.
    public static let maximumToolRounds = 6

    // MARK: Typed replies

    /// Asks for a value of `type`: the reply is held to `type`'s schema while it is decoded,
    /// so it always parses, and is returned decoded.
    ///
    /// When tools are registered, the model may call them first (each call's arguments held to
    /// the tool's schema); Typeset runs them, sends their output back and lets the model go on
    /// until it gives the value. `options.functionCallMode` decides: `.automatic`, the model
    /// calls tools or answers as it sees fit (after ``maximumToolRounds`` rounds, or when a
    /// call repeats an earlier one, it must answer); `.required`, the first reply calls a tool
    /// and the next one answers; `.disabled`, no tool is called.
    ///
    /// - Parameters:
    ///   - includeSchemaInPrompt: put the schema before the request (small models need it).
    ///   - options: sampling and limits; `jsonSchema` is set from `type`.
    /// - Throws: ``ConversationError`` when the reply cannot start or fails,
    ///   ``GenerationError`` when it ends early, does not decode, or a tool fails.
    public func respond<Content: Generable>(
        to prompt: String, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<Content> {
        let (reply, raw, added) = try await exchange(
            .user(prompt), schema: Content.generationSchema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
        return Response(content: try Self.decode(Content.self, from: raw), rawContent: raw, messages: added,
                        finishReason: reply.finishReason, stats: reply.stats)
    }

    /// Asks for a value of the run-time `schema` (see ``DynamicGenerationSchema``).
    public func respond(
        to prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<GeneratedContent> {
        let (reply, raw, added) = try await exchange(.user(prompt), schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
        return Response(content: raw, rawContent: raw, messages: added, finishReason: reply.finishReason, stats: reply.stats)
    }

    /// Asks for free text (running tool calls on the way, as above).
    public func respond(to prompt: String, options: GenerationOptions = GenerationOptions()) async throws -> Response<String> {
        let (reply, _, added) = try await exchange(.user(prompt), schema: nil, includeSchemaInPrompt: false, options: options)
        return Response(content: reply.message.content, rawContent: GeneratedContent(complete: .string(reply.message.content)),
                        messages: added, finishReason: reply.finishReason, stats: reply.stats)
    }

    // MARK: Streaming typed replies

    /// Streams snapshots of a value of `type` as it is generated: each holds
    /// `Content.PartiallyGenerated`, whose properties fill in as the JSON arrives (strings
    /// grow, numbers appear once complete). The last snapshot holds the whole value;
    /// ``ResponseStream/collect()`` returns it decoded. Tools run as for
    /// ``respond(to:generating:includeSchemaInPrompt:options:)``; only the final reply streams.
    public func streamResponse<Content: Generable>(
        to prompt: String, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<Content> {
        streamValue(prompt, schema: Content.generationSchema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    /// Streams snapshots of a value of the run-time `schema` as it is generated.
    public func streamResponse(
        to prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<GeneratedContent> {
        streamValue(prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    private func streamValue<Content: Generable>(
        _ prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool,
        options: GenerationOptions
    ) -> ResponseStream<Content> {
        let toolNames = Set(tools.keys)
        return ResponseStream(producing: { yield in
            var parser = IncrementalJSONParser()
            var last: GeneratedContent?
            let (reply, raw, added) = try await self.exchange(
                .user(prompt), schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options,
                onRoundStart: { parser = IncrementalJSONParser() },
                onText: { text in
                    guard (try? parser.append(text.utf8)) != nil, let partial = parser.snapshot else { return }
                    let content = GeneratedContent(partial)
                    guard content != last, !Self.mayBeToolCall(content, toolNames: toolNames),
                          let snapshot = try? Content.PartiallyGenerated(content) else { return }
                    last = content
                    yield(.init(content: snapshot, rawContent: content))
                })
            let value = try Self.decode(Content.self, from: raw)
            if raw != last, let snapshot = try? Content.PartiallyGenerated(raw) {
                yield(.init(content: snapshot, rawContent: raw))
            }
            return Response(content: value, rawContent: raw, messages: added, finishReason: reply.finishReason, stats: reply.stats)
        })
    }

    /// Streams a free-text reply: each snapshot holds the whole text so far (running tool
    /// calls on the way, as ``respond(to:options:)`` does; only the final reply streams).
    public func streamResponse(to prompt: String, options: GenerationOptions = GenerationOptions()) -> ResponseStream<String> {
        ResponseStream(producing: { yield in
            var text = ""
            let (reply, _, added) = try await self.exchange(
                .user(prompt), schema: nil, includeSchemaInPrompt: false, options: options,
                onRoundStart: { text = "" },
                onText: { chunk in
                    text += chunk
                    yield(.init(content: text, rawContent: GeneratedContent(complete: .string(text))))
                })
            let final = reply.message.content
            if final != text { yield(.init(content: final, rawContent: GeneratedContent(complete: .string(final)))) }
            return Response(content: final, rawContent: GeneratedContent(complete: .string(final)), messages: added,
                            finishReason: reply.finishReason, stats: reply.stats)
        })
    }

    // MARK: The exchange

    /// Sends `request`, runs tool calls until the model answers, and returns the final reply,
    /// its value (for a schema) and the messages added.
    private func exchange(
        _ request: ChatMessage, schema: GenerationSchema?, includeSchemaInPrompt: Bool, options: GenerationOptions,
        onRoundStart: () -> Void = {}, onText: (String) -> Void = { _ in }
    ) async throws -> (reply: Reply, value: GeneratedContent, added: [ChatMessage]) {
        let startCount = history.count
        let tools = self.tools
        let functions = self.functions
        let valueSchema = schema?.jsonSchema
        let shownSchema = schema?.promptText
        var message = request
        var previousCalls = Set<String>()
        var round = 0
        while true {
            // `.required`: the first reply calls, the next one answers; `.automatic`: the model
            // decides, within the round limit.
            let callsAllowed = !tools.isEmpty && round < Self.maximumToolRounds
                && (options.functionCallMode == .automatic || (options.functionCallMode == .required && round == 0))
            var roundRequest = ReplyRequest(options: options)
            roundRequest.options.jsonSchema = nil
            if let valueSchema {
                roundRequest.options.injectSchemaIntoPrompt = includeSchemaInPrompt
                roundRequest.options.functionCallMode = .disabled
                if callsAllowed {
                    let required = round == 0 && options.functionCallMode == .required
                    roundRequest.schema = .valueOrCall(
                        valueSchema, functions: functions.filter { tools[$0.name] != nil }, valueAllowed: !required, shown: shownSchema)
                } else {
                    roundRequest.schema = .value(valueSchema, shown: shownSchema)
                }
                // The schema is injected into the request only (a tool's output is no request).
                if message.role != .user { roundRequest.options.injectSchemaIntoPrompt = false }
            } else {
                roundRequest.options.functionCallMode = callsAllowed ? (round == 0 ? options.functionCallMode : .automatic) : .disabled
                // After a repeated call, the model answers in words: a call it could not make
                // would otherwise come out as the answer's text.
                roundRequest.forbidsCallOpening = !tools.isEmpty && !callsAllowed
            }
            onRoundStart()
            var final: Reply?
            for try await response in generateResponse(to: message, request: roundRequest, isAbandoned: nil) {
                switch response {
                case .chunk(let text): onText(text)
                case .complete(let reply, let finishReason, let stats): final = Reply(message: reply, finishReason: finishReason, stats: stats)
                case .reasoningChunk, .functionCallDelta, .functionCalls, .logprob: break
                }
            }
            try Task.checkCancellation()
            guard let reply = final else { throw CancellationError() }

            // The calls to run: native ones (free text), or a value that is a call (typed).
            var calls = reply.message.functionCalls
            var value = GeneratedContent(complete: .null)
            if valueSchema != nil {
                guard reply.finishReason == .stop, let parsed = try? JSONValue(parsing: reply.message.content) else {
                    throw GenerationError.incompleteValue(finishReason: reply.finishReason, rawContent: reply.message.content)
                }
                if callsAllowed, let call = Self.call(in: parsed, toolNames: Set(tools.keys), number: Self.callCount(history) + 1) {
                    // Record it as a call, the way templates show calls to the model.
                    try removeLastMessage()
                    try append(.assistant("", functionCalls: [call]))
                    calls = [call]
                } else {
                    value = GeneratedContent(parsed)
                }
            }
            if calls.isEmpty {
                return (reply, value, Array(history.dropFirst(startCount)))
            }
            var outputs: [ChatMessage] = []
            for call in calls {
                guard let tool = tools[call.name] else { throw GenerationError.unknownTool(call.name) }
                let output = try await tool.invoke(arguments: call.arguments)
                outputs.append(.tool(output, answering: call))
                if !previousCalls.insert(call.name + call.argumentsText).inserted { round = Self.maximumToolRounds }
            }
            for output in outputs.dropLast() { try append(output) }
            message = outputs[outputs.count - 1]
            round += 1
        }
    }

    /// `value`, decoded as `Content`.
    static func decode<Content: Generable>(_ type: Content.Type, from value: GeneratedContent) throws -> Content {
        do { return try Content(value) } catch let error as GeneratedContentError {
            throw GenerationError.decodingFailure(error, rawContent: value.jsonString)
        }
    }

    /// The call `value` is, when it is `{"name": <a tool>, "arguments": {…}}`.
    package static func call(in value: JSONValue, toolNames: Set<String>, number: Int) -> FunctionCall? {
        guard let members = value.members, members.count == 2, case .string(let name)? = value["name"], toolNames.contains(name),
              let arguments = value["arguments"], arguments.members != nil
        else { return nil }
        return FunctionCall(id: "call_\(number)", name: name, arguments: arguments)
    }

    /// Whether a partial value may still turn out to be a tool call (snapshots wait for it).
    static func mayBeToolCall(_ content: GeneratedContent, toolNames: Set<String>) -> Bool {
        guard !toolNames.isEmpty, let members = try? content.properties() else { return false }
        for member in members {
            switch member.name {
            case "arguments": continue
            case "name":
                guard case .string(let name) = member.value.jsonValue else { return false }
                if member.value.isComplete ? !toolNames.contains(name) : !toolNames.contains(where: { $0.hasPrefix(name) }) { return false }
            default: return false
            }
        }
        return true
    }

    package static func callCount(_ history: [ChatMessage]) -> Int {
        history.reduce(0) { $0 + $1.functionCalls.count }
    }
}

/// The snapshots of a typed reply as it streams (an `AsyncSequence`), and its result.
public struct ResponseStream<Content: Generable>: AsyncSequence, Sendable {
    /// A value as far as it has been generated.
    public struct Snapshot: Sendable {
        /// The value so far.
        public let content: Content.PartiallyGenerated
        /// The JSON so far (`isComplete` tells whether it is done).
        public let rawContent: GeneratedContent
    }

    let stream: ProducingStream<Snapshot, Response<Content>>

    /// A stream whose snapshots `produce` yields, run in a task of its own (cancelled when the
    /// consumer stops listening); the response it returns is what ``collect()`` returns.
    package init(producing produce: @escaping @Sendable (_ yield: @escaping @Sendable (Snapshot) -> Void) async throws -> Response<Content>) {
        stream = ProducingStream(producing: produce)
    }

    public func makeAsyncIterator() -> AsyncThrowingStream<Snapshot, Error>.Iterator { stream.makeAsyncIterator() }

    /// Waits for the end of the reply (consuming the snapshots not yet read) and returns it.
    public func collect() async throws -> Response<Content> { try await stream.result() }
}

/// Elements a task of its own produces (an `AsyncSequence`), and what it returns at the end:
/// what a streamed typed reply is made of (its snapshots, then its response).
package struct ProducingStream<Element: Sendable, Result>: Sendable {
    private let stream: AsyncThrowingStream<Element, Error>
    private let box: ResultBox

    /// The result, set once by the producing task and read by the consumer after the stream
    /// ends (the lock orders the two).
    private final class ResultBox: @unchecked Sendable {
        private let lock = Mutex(())
        private var stored: Result?
        func set(_ result: Result) { lock.withLock { _ in stored = result } }
        var result: Result? { lock.withLock { _ in stored } }
    }

    /// Runs `produce` in a task of its own (cancelled when the consumer stops listening); what
    /// it yields are the elements, what it returns the result.
    package init(producing produce: @escaping @Sendable (_ yield: @escaping @Sendable (Element) -> Void) async throws -> Result) {
        let (stream, continuation) = AsyncThrowingStream<Element, Error>.makeStream()
        let box = ResultBox()
        let task = Task {
            do {
                box.set(try await produce { continuation.yield($0) })
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        self.stream = stream
        self.box = box
    }

    package func makeAsyncIterator() -> AsyncThrowingStream<Element, Error>.Iterator { stream.makeAsyncIterator() }

    /// Waits for the end (consuming the elements not yet read) and returns the result.
    package func result() async throws -> Result {
        for try await _ in stream {}
        try Task.checkCancellation()
        guard let result = box.result else { throw CancellationError() }
        return result
    }
}
