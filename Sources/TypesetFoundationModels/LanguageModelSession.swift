import Foundation
import Observation
import Synchronization
import TypesetGrammar

/// A conversation with a model, as Apple's Foundation Models spells it: code written for
/// `FoundationModels.LanguageModelSession` runs on a Typeset model by changing its import.
///
/// ```swift
/// let session = LanguageModelSession(instructions: "You are a helpful barista.")
/// let summary = try await session.respond(to: notes, generating: BrewSummary.self).content
/// ```
///
/// A session talks to any ``LanguageModel`` (``SystemLanguageModel``, Typeset's, by default)
/// through the model's executor, as Foundation Models' OS 27 sessions do: each request sends
/// the whole ``transcript`` with the new prompt, the executor streams the next entry back
/// (a response, reasoning, tool calls), the session runs the tools the model called, sends
/// their outputs, and asks again until the model answers. A typed request is held to its
/// type's schema while it is decoded. One request at a time: a second one while
/// ``isResponding`` throws ``GenerationError/concurrentRequests(_:)``. Sessions of one Typeset
/// model generate together (the runner batches their tokens).
///
/// Errors are Foundation Models' ``GenerationError`` where one fits (the context is full, the
/// model is missing, a schema cannot be enforced, a value does not decode, a request is
/// concurrent), ``LanguageModelError`` for what a model cannot do, and ``ToolCallError`` when a
/// tool throws; a cancelled task throws `CancellationError`.
///
/// `Observable`, as Foundation Models' session is: a SwiftUI view (or `withObservationTracking`)
/// that reads ``isResponding``, ``transcript`` or ``usage`` is told when a request starts, ends
/// and adds its entries.
public final class LanguageModelSession: Sendable, Observable {
    private let model: any LanguageModel
    private let tools: [any Tool]
    private let executor: ExecutorHandle
    private let state: Mutex<State>
    private let observers = ObservationRegistrar()

    private struct State {
        var transcript: Transcript
        var isResponding = false
        var usage = Usage()
    }

    /// The most rounds of tool calls one request runs before the model must answer.
    static let maximumToolRounds = 6

    // MARK: Creating a session

    /// A session of Typeset's model (by default, the default one) with `tools` and
    /// `instructions` (a system prompt).
    @_disfavoredOverload
    public convenience init(model: SystemLanguageModel = .default, tools: [any Tool] = [], instructions: String? = nil) {
        self.init(model: model, tools: tools, instructions: instructions.map(Instructions.init(text:)))
    }

    /// A session of Typeset's model with `tools` and instructions built from components.
    public convenience init(
        model: SystemLanguageModel = .default, tools: [any Tool] = [], @InstructionsBuilder instructions: () throws -> Instructions
    ) rethrows {
        self.init(model: model, tools: tools, instructions: try instructions())
    }

    /// A session of Typeset's model with `tools` and `instructions`.
    public convenience init(model: SystemLanguageModel = .default, tools: [any Tool] = [], instructions: Instructions? = nil) {
        self.init(model: model, tools: tools, transcript: Self.transcript(tools: tools, instructions: instructions))
    }

    /// A session of Typeset's model that continues `transcript` (its instructions included).
    public convenience init(model: SystemLanguageModel = .default, tools: [any Tool] = [], transcript: Transcript) {
        self.init(any: model, tools: tools, transcript: transcript)
    }

    /// A session of any `model` (OS 27) with `tools` and `instructions`.
    @_disfavoredOverload
    public convenience init(model: some LanguageModel, tools: [any Tool] = [], instructions: String? = nil) {
        self.init(model: model, tools: tools, instructions: instructions.map(Instructions.init(text:)))
    }

    /// A session of any `model` with `tools` and instructions built from components.
    public convenience init(
        model: some LanguageModel, tools: [any Tool] = [], @InstructionsBuilder instructions: () throws -> Instructions
    ) rethrows {
        self.init(model: model, tools: tools, instructions: try instructions())
    }

    /// A session of any `model` with `tools` and `instructions`.
    public convenience init(model: some LanguageModel, tools: [any Tool] = [], instructions: Instructions? = nil) {
        self.init(any: model, tools: tools, transcript: Self.transcript(tools: tools, instructions: instructions))
    }

    /// A session of any `model` that continues `transcript`.
    public convenience init(model: some LanguageModel, tools: [any Tool] = [], transcript: Transcript) {
        self.init(any: model, tools: tools, transcript: transcript)
    }

    private init(any model: some LanguageModel, tools: [any Tool], transcript: Transcript) {
        self.model = model
        self.tools = tools
        executor = ExecutorHandle(model: model)
        state = Mutex(State(transcript: transcript))
    }

    /// A transcript holding `instructions` and the tools' definitions.
    private static func transcript(tools: [any Tool], instructions: Instructions?) -> Transcript {
        let definitions = tools.map { Transcript.ToolDefinition(tool: $0) }
        return Transcript(entries: instructions.map {
            [.instructions(.init(segments: [.text(.init(content: $0.text))], toolDefinitions: definitions))]
        } ?? [])
    }

    /// A session of the model `runner` runs (Typeset's spelling of `init(model:…)`).
    public convenience init(runner: ModelRunner, tools: [any Tool] = [], instructions: String? = nil) {
        self.init(model: SystemLanguageModel(runner: runner), tools: tools, instructions: instructions.map(Instructions.init(text:)))
    }

    // MARK: State

    /// Everything the session has said and been told, in order.
    public var transcript: Transcript {
        observers.access(self, keyPath: \.transcript)
        return state.withLock { $0.transcript }
    }

    /// Whether a request is being answered.
    public var isResponding: Bool {
        observers.access(self, keyPath: \.isResponding)
        return state.withLock { $0.isResponding }
    }

    /// The tokens the session's requests have used, in all (OS 27).
    public var usage: Usage {
        observers.access(self, keyPath: \.usage)
        return state.withLock { $0.usage }
    }

    /// Prepares the model for the first request (loads it), in the background.
    /// `promptPrefix` is accepted for compatibility; the prompt cache fills on the first request.
    public func prewarm(promptPrefix: Prompt? = nil) {
        executor.prewarm(transcript: transcript)
    }

    // MARK: Text

    /// Asks for free text.
    @discardableResult @_disfavoredOverload
    public func respond(to prompt: String, options: GenerationOptions = GenerationOptions()) async throws -> Response<String> {
        try await exchange(prompt, schema: nil, includeSchemaInPrompt: false, options: options, onRoundStart: {}, onText: { _ in }) { content in
            if case .string(let text) = content.jsonValue { return text }
            return content.jsonString
        }
    }

    @discardableResult
    public func respond(to prompt: Prompt, options: GenerationOptions = GenerationOptions()) async throws -> Response<String> {
        try await respond(to: prompt.text, options: options)
    }

    @discardableResult
    public func respond(
        options: GenerationOptions = GenerationOptions(), @PromptBuilder prompt: () throws -> Prompt
    ) async throws -> Response<String> {
        try await respond(to: try prompt().text, options: options)
    }

    // MARK: Values of a run-time schema

    /// Asks for a value of `schema` (see ``DynamicGenerationSchema``).
    @discardableResult @_disfavoredOverload
    public func respond(
        to prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<GeneratedContent> {
        try await exchange(prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options,
                           onRoundStart: {}, onText: { _ in }) { $0 }
    }

    @discardableResult
    public func respond(
        to prompt: Prompt, schema: GenerationSchema, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<GeneratedContent> {
        try await respond(to: prompt.text, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    @discardableResult
    public func respond(
        schema: GenerationSchema, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions(),
        @PromptBuilder prompt: () throws -> Prompt
    ) async throws -> Response<GeneratedContent> {
        try await respond(to: try prompt().text, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    // MARK: Values of a generable type

    /// Asks for a value of `type`: the reply is held to its schema while it is decoded.
    @discardableResult @_disfavoredOverload
    public func respond<Content: Generable>(
        to prompt: String, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<Content> {
        try await exchange(prompt, schema: Content.generationSchema, includeSchemaInPrompt: includeSchemaInPrompt, options: options,
                           onRoundStart: {}, onText: { _ in }) { try Content($0) }
    }

    @discardableResult
    public func respond<Content: Generable>(
        to prompt: Prompt, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) async throws -> Response<Content> {
        try await respond(to: prompt.text, generating: type, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    @discardableResult
    public func respond<Content: Generable>(
        generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions(),
        @PromptBuilder prompt: () throws -> Prompt
    ) async throws -> Response<Content> {
        try await respond(to: try prompt().text, generating: type, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    // MARK: Streaming

    /// Streams free text: each snapshot holds the whole text so far.
    @_disfavoredOverload
    public func streamResponse(to prompt: String, options: GenerationOptions = GenerationOptions()) -> ResponseStream<String> {
        ResponseStream { yield in
            let text = Mutex("")
            return try await self.exchange(
                prompt, schema: nil, includeSchemaInPrompt: false, options: options,
                onRoundStart: { text.withLock { $0 = "" } },
                onText: { chunk in
                    let whole = text.withLock { $0 += chunk; return $0 }
                    yield(.init(content: whole, rawContent: GeneratedContent(complete: .string(whole))))
                }
            ) { content in
                if case .string(let whole) = content.jsonValue { return whole }
                return content.jsonString
            }
        }
    }

    public func streamResponse(to prompt: Prompt, options: GenerationOptions = GenerationOptions()) -> ResponseStream<String> {
        streamResponse(to: prompt.text, options: options)
    }

    public func streamResponse(
        options: GenerationOptions = GenerationOptions(), @PromptBuilder prompt: () throws -> Prompt
    ) rethrows -> ResponseStream<String> {
        streamResponse(to: try prompt().text, options: options)
    }

    /// Streams a value of `schema` as it is generated.
    @_disfavoredOverload
    public func streamResponse(
        to prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<GeneratedContent> {
        streamValue(prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options) { $0 }
    }

    public func streamResponse(
        to prompt: Prompt, schema: GenerationSchema, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<GeneratedContent> {
        streamResponse(to: prompt.text, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    public func streamResponse(
        schema: GenerationSchema, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions(),
        @PromptBuilder prompt: () throws -> Prompt
    ) rethrows -> ResponseStream<GeneratedContent> {
        streamResponse(to: try prompt().text, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    /// Streams snapshots of a value of `type` (`Content.PartiallyGenerated`) as it is
    /// generated; ``ResponseStream/collect()`` returns the whole value.
    @_disfavoredOverload
    public func streamResponse<Content: Generable>(
        to prompt: String, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<Content> {
        streamValue(prompt, schema: Content.generationSchema, includeSchemaInPrompt: includeSchemaInPrompt, options: options) { try Content($0) }
    }

    public func streamResponse<Content: Generable>(
        to prompt: Prompt, generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true,
        options: GenerationOptions = GenerationOptions()
    ) -> ResponseStream<Content> {
        streamResponse(to: prompt.text, generating: type, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    public func streamResponse<Content: Generable>(
        generating type: Content.Type = Content.self, includeSchemaInPrompt: Bool = true, options: GenerationOptions = GenerationOptions(),
        @PromptBuilder prompt: () throws -> Prompt
    ) rethrows -> ResponseStream<Content> {
        streamResponse(to: try prompt().text, generating: type, includeSchemaInPrompt: includeSchemaInPrompt, options: options)
    }

    /// A stream of snapshots of a value of `schema`: the response's JSON read as it arrives.
    private func streamValue<Content: Generable>(
        _ prompt: String, schema: GenerationSchema, includeSchemaInPrompt: Bool, options: GenerationOptions,
        decode: @escaping @Sendable (GeneratedContent) throws -> Content
    ) -> ResponseStream<Content> {
        ResponseStream { yield in
            let parser = Mutex((IncrementalJSONParser(), GeneratedContent?.none))
            let response = try await self.exchange(
                prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options,
                onRoundStart: { parser.withLock { $0 = (IncrementalJSONParser(), nil) } },
                onText: { text in
                    let content: GeneratedContent? = parser.withLock { state in
                        guard (try? state.0.append(text.utf8)) != nil, let partial = state.0.snapshot else { return nil }
                        let content = GeneratedContent(partial)
                        guard content != state.1 else { return nil }
                        state.1 = content
                        return content
                    }
                    if let content, let snapshot = try? Content.PartiallyGenerated(content) {
                        yield(.init(content: snapshot, rawContent: content))
                    }
                },
                decode: decode)
            if response.rawContent != parser.withLock({ $0.1 }), let snapshot = try? Content.PartiallyGenerated(response.rawContent) {
                yield(.init(content: snapshot, rawContent: response.rawContent))
            }
            return response
        }
    }

    // MARK: The exchange

    /// Sends `prompt` (with the schema's instruction when `includeSchemaInPrompt`), runs the
    /// tools the model calls until it answers, and returns the answer decoded. Marks the
    /// session responding meanwhile; appends the request's entries to the transcript when it
    /// succeeds; speaks Foundation Models' errors.
    ///
    /// Tool rounds: with ``GenerationOptions/ToolCallingMode/required`` the first reply calls a
    /// tool and the next answers; otherwise the model decides, for at most
    /// ``maximumToolRounds`` rounds, and a call it repeats (the same tool and arguments) makes
    /// the next round an answer.
    private func exchange<Content>(
        _ prompt: String, schema: GenerationSchema?, includeSchemaInPrompt: Bool, options: GenerationOptions,
        onRoundStart: @Sendable () -> Void, onText: @Sendable (String) -> Void, decode: (GeneratedContent) throws -> Content
    ) async throws -> Response<Content> {
        let start = try begin()
        var entries: [Transcript.Entry] = []
        var usage = Usage()
        defer { end(appending: entries, usage: usage) }
        do {
            if schema != nil, !model.capabilities.contains(.guidedGeneration) {
                throw LanguageModelError.unsupportedCapability(.init(capability: .guidedGeneration, debugDescription: "the model has no guided generation"))
            }
            if !tools.isEmpty, !model.capabilities.contains(.toolCalling) {
                throw LanguageModelError.unsupportedCapability(.init(capability: .toolCalling, debugDescription: "the model calls no tools"))
            }
            let format = schema.map(Transcript.ResponseFormat.init(schema:))
            let shown = schema.flatMap { includeSchemaInPrompt ? $0 : nil }
            let text = shown.map { Conversation.instructedRequest(prompt, schema: $0.promptText) } ?? prompt
            entries.append(.prompt(Transcript.Prompt(segments: [.text(.init(content: text))], options: options, responseFormat: format)))
            let definitions = tools.map { Transcript.ToolDefinition(tool: $0) }
            let requestedMode = options.toolCallingMode?.kind ?? .allowed
            var previousCalls = Set<String>()
            var round = 0
            while true {
                let callsAllowed = !tools.isEmpty && round < Self.maximumToolRounds
                    && (requestedMode == .allowed || (requestedMode == .required && round == 0))
                var roundOptions = options
                roundOptions.toolCallingMode = callsAllowed ? (round == 0 ? options.toolCallingMode : .allowed) : .disallowed
                let request = LanguageModelExecutorGenerationRequest(
                    id: UUID(), transcript: Transcript(entries: Array(start) + entries), enabledTools: callsAllowed ? definitions : [],
                    schema: schema, generationOptions: roundOptions, contextOptions: ContextOptions(includeSchemaInPrompt: includeSchemaInPrompt))
                onRoundStart()
                let turn = try await executor.respond(to: request, onText: onText)
                usage = usage.adding(turn.usage)
                if let reasoning = turn.reasoning { entries.append(.reasoning(reasoning)) }
                guard !turn.calls.isEmpty else {
                    let raw: GeneratedContent
                    if schema != nil {
                        do { raw = try GeneratedContent(json: turn.text) } catch {
                            throw GenerationError.decodingFailure(.init(debugDescription: "the reply is not a complete value: \(turn.text)"))
                        }
                        entries.append(.response(.init(assetIDs: [], segments: [.structure(.init(source: format!.name, content: raw))])))
                    } else {
                        raw = GeneratedContent(complete: .string(turn.text))
                        entries.append(.response(.init(assetIDs: [], segments: [.text(.init(content: turn.text))])))
                    }
                    let content: Content
                    do { content = try decode(raw) } catch {
                        throw GenerationError.decodingFailure(.init(debugDescription: "\(error) (generated: \(raw.jsonString))"))
                    }
                    return Response(content: content, rawContent: raw, transcriptEntries: ArraySlice(entries), usage: usage)
                }
                entries.append(.toolCalls(Transcript.ToolCalls(turn.calls)))
                for call in turn.calls {
                    guard let tool = tools.first(where: { $0.name == call.toolName }) else {
                        throw GenerationError.decodingFailure(.init(debugDescription: "the model called '\(call.toolName)', which is not one of the session's tools"))
                    }
                    let output = try await tool.invoke(arguments: call.arguments.jsonValue)
                    entries.append(.toolOutput(.init(id: call.id, toolName: call.toolName, segments: [.text(.init(content: output))])))
                    if !previousCalls.insert(call.toolName + call.arguments.jsonString).inserted { round = Self.maximumToolRounds }
                }
                round += 1
            }
        } catch {
            entries = []
            throw translated(error)
        }
    }

    /// Marks the session responding and returns its transcript.
    private func begin() throws -> Transcript {
        try observers.withMutation(of: self, keyPath: \.isResponding) {
            try state.withLock { state throws -> Transcript in
                if state.isResponding {
                    throw GenerationError.concurrentRequests(.init(debugDescription: "the session is still answering an earlier request"))
                }
                state.isResponding = true
                return state.transcript
            }
        }
    }

    /// Ends a request: its entries join the transcript (when it succeeded) and its tokens the
    /// usage, and the session stops responding; observers are told of each.
    private func end(appending entries: [Transcript.Entry], usage: Usage) {
        if !entries.isEmpty {
            observers.withMutation(of: self, keyPath: \.transcript) { state.withLock { $0.transcript.append(contentsOf: entries) } }
            observers.withMutation(of: self, keyPath: \.usage) { state.withLock { $0.usage = $0.usage.adding(usage) } }
        }
        observers.withMutation(of: self, keyPath: \.isResponding) { state.withLock { $0.isResponding = false } }
    }

    /// `error` as Foundation Models would throw it, where it has a counterpart.
    private func translated(_ error: any Error) -> any Error {
        func context(_ error: any Error) -> GenerationError.Context { .init(debugDescription: "\(error)") }
        switch error {
        case let error as ConversationError:
            switch error {
            case .contextOverflow: return GenerationError.exceededContextWindowSize(context(error))
            case .loadFailed, .runnerUnloaded: return GenerationError.assetsUnavailable(context(error))
            case .invalidSchema, .invalidFunction: return GenerationError.unsupportedGuide(context(error))
            case .generationInProgress: return GenerationError.concurrentRequests(context(error))
            case .maxTokensTooSmall: return GenerationError.decodingFailure(context(error))
            default: return error
            }
        case let error as LanguageModelError:
            if case .contextSizeExceeded = error { return GenerationError.exceededContextWindowSize(context(error)) }
            return error
        case is ModelLocationError:
            return GenerationError.assetsUnavailable(context(error))
        case let error as Typeset.GenerationError:
            switch error {
            case .decodingFailure, .unknownTool: return GenerationError.decodingFailure(context(error))
            case .incompleteValue(.exceededContext, _): return GenerationError.exceededContextWindowSize(context(error))
            case .incompleteValue: return GenerationError.decodingFailure(context(error))
            case .toolCallFailed(let name, _, let underlying):
                guard let tool = tools.first(where: { $0.name == name }) else { return error }
                return ToolCallError(tool: tool, underlyingError: underlying)
            }
        default:
            return error
        }
    }
}

// MARK: - The executor, and one turn of it

/// A session's executor, made from its model's configuration on first use, with the model's
/// type erased so the session holds any model.
private final class ExecutorHandle: Sendable {
    private let make: @Sendable () throws -> @Sendable (LanguageModelExecutorGenerationRequest, LanguageModelExecutorGenerationChannel) async throws -> Void
    private let warm: @Sendable (Transcript) -> Void
    private let made = Mutex<(@Sendable (LanguageModelExecutorGenerationRequest, LanguageModelExecutorGenerationChannel) async throws -> Void)?>(nil)

    init<Model: LanguageModel>(model: Model) {
        let executor = Mutex<Model.Executor?>(nil)
        let instance: @Sendable () throws -> Model.Executor = {
            try executor.withLock { held in
                if let held { return held }
                let created = try Model.Executor(configuration: model.executorConfiguration)
                held = created
                return created
            }
        }
        make = {
            let created = try instance()
            return { request, channel in try await created.respond(to: request, model: model, streamingInto: channel) }
        }
        warm = { transcript in (try? instance())?.prewarm(model: model, transcript: transcript) }
    }

    func prewarm(transcript: Transcript) { warm(transcript) }

    /// What one `respond` of the executor produced.
    struct Turn {
        var text = ""
        var reasoning: Transcript.Reasoning?
        var calls: [Transcript.ToolCall] = []
        var usage = LanguageModelSession.Usage()
    }

    /// Runs one `respond` of the executor and reads its channel: the response's text (told to
    /// `onText` as it comes), the reasoning, the tool calls with their arguments, the usage.
    func respond(to request: LanguageModelExecutorGenerationRequest, onText: @Sendable (String) -> Void) async throws -> Turn {
        let respond = try made.withLock { held in
            if let held { return held }
            let created = try make()
            held = created
            return created
        }
        let channel = LanguageModelExecutorGenerationChannel()
        let task = Task {
            defer { channel.finish() }
            try await respond(request, channel)
        }
        var turn = Turn()
        var reasoning = ""
        var calls: [(id: String, name: String, arguments: String)] = []
        for await event in channel {
            switch event.kind {
            case .response(let action):
                switch action.kind {
                case .appendText(let text, _, _):
                    turn.text += text
                    onText(text)
                case .replaceTextSegment(let text, _, _):
                    turn.text = text
                case .updateMetadata:
                    break
                case .updateUsage(let usage):
                    turn.usage = LanguageModelSession.Usage(usage)
                }
            case .reasoning(let action):
                switch action.kind {
                case .appendText(let text, _, _): reasoning += text
                case .updateUsage(let usage): turn.usage = LanguageModelSession.Usage(usage)
                }
            case .toolCalls(let action):
                switch action.kind {
                case .toolCall(let id, let name, let call):
                    if let index = calls.firstIndex(where: { $0.id == id }) { calls[index].arguments += call.arguments } else { calls.append((id, name, call.arguments)) }
                case .removeToolCall(let id):
                    calls.removeAll { $0.id == id }
                case .updateUsage(let usage):
                    turn.usage = LanguageModelSession.Usage(usage)
                }
            }
        }
        try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        if !reasoning.isEmpty { turn.reasoning = Transcript.Reasoning(segments: [.text(.init(content: reasoning))]) }
        turn.calls = try calls.map { call in
            guard let arguments = try? GeneratedContent(json: call.arguments) else {
                throw LanguageModelSession.GenerationError.decodingFailure(.init(debugDescription: "the arguments of '\(call.name)' are not JSON: \(call.arguments)"))
            }
            return Transcript.ToolCall(id: call.id, toolName: call.name, arguments: arguments)
        }
        return turn
    }
}

extension LanguageModelSession.Response: Sendable where Content: Sendable {}

// MARK: - Names nested as Foundation Models nests them

extension LanguageModelSession {
    /// A finished reply: the value, the content it was decoded from, the entries the request
    /// added to the transcript and the tokens it used. The value's members read through it too
    /// (`response.title` is `response.content.title`, as sample code writes it).
    @dynamicMemberLookup
    public struct Response<Content> {
        /// The value.
        public let content: Content
        /// The value as generated (what `content` was decoded from).
        public let rawContent: GeneratedContent
        /// The entries the request added to the transcript: the prompt, any tool calls and
        /// their outputs, and the response.
        public let transcriptEntries: ArraySlice<Transcript.Entry>
        /// The tokens the request used (OS 27).
        public let usage: Usage

        /// A member of the value.
        public subscript<Member>(dynamicMember member: KeyPath<Content, Member>) -> Member { content[keyPath: member] }
    }

    /// The snapshots of a streamed reply (an `AsyncSequence`), and its result.
    public struct ResponseStream<Content: Generable>: AsyncSequence, Sendable {
        /// A value as far as it has been generated: `content` fills in as the JSON arrives.
        public struct Snapshot: Sendable {
            /// The value so far.
            public let content: Content.PartiallyGenerated
            /// The JSON so far (`isComplete` tells whether it is done).
            public let rawContent: GeneratedContent
        }

        private let stream: ProducingStream<Snapshot, Response<Content>>

        /// A stream whose snapshots `produce` yields, in a task of its own (cancelled when the
        /// consumer stops listening); the response it returns is what ``collect()`` returns.
        init(producing produce: @escaping @Sendable (_ yield: @escaping @Sendable (Snapshot) -> Void) async throws -> Response<Content>) {
            stream = ProducingStream(producing: produce)
        }

        public func makeAsyncIterator() -> AsyncThrowingStream<Snapshot, Error>.Iterator { stream.makeAsyncIterator() }

        /// Waits for the end of the reply (consuming the snapshots not yet read) and returns it.
        public func collect() async throws -> Response<Content> { try await stream.result() }
    }

    /// Tokens used: the transcript's (and of those, the ones a cache held) and the output's (and
    /// of those, the reasoning's) (OS 27).
    public struct Usage: Sendable, Equatable {
        /// The transcript's tokens, and of those the ones a cache held.
        public typealias Input = LanguageModelExecutorGenerationChannel.Usage.Input
        /// The output's tokens, and of those the reasoning's.
        public typealias Output = LanguageModelExecutorGenerationChannel.Usage.Output

        public var input: Input
        public var output: Output
        /// Input and output together.
        public var totalTokenCount: Int { input.totalTokenCount + output.totalTokenCount }

        public init(input: Input, output: Output) {
            self.input = input
            self.output = output
        }

        init() { self.init(input: .init(totalTokenCount: 0, cachedTokenCount: 0), output: .init(totalTokenCount: 0, reasoningTokenCount: 0)) }

        init(_ usage: LanguageModelExecutorGenerationChannel.Usage) {
            self.init(
                input: .init(totalTokenCount: usage.input.totalTokenCount, cachedTokenCount: usage.input.cachedTokenCount),
                output: .init(totalTokenCount: usage.output.totalTokenCount, reasoningTokenCount: usage.output.reasoningTokenCount))
        }

        /// These counts and `other`'s together.
        func adding(_ other: Usage) -> Usage {
            Usage(
                input: .init(totalTokenCount: input.totalTokenCount + other.input.totalTokenCount,
                             cachedTokenCount: input.cachedTokenCount + other.input.cachedTokenCount),
                output: .init(totalTokenCount: output.totalTokenCount + other.output.totalTokenCount,
                              reasoningTokenCount: output.reasoningTokenCount + other.output.reasoningTokenCount))
        }
    }

    /// Why a session could not answer, as Foundation Models names it.
    public enum GenerationError: Error, LocalizedError, Sendable {
        /// What went wrong, for a developer.
        public struct Context: Sendable {
            public let debugDescription: String

            public init(debugDescription: String) { self.debugDescription = debugDescription }
        }

        /// The transcript and the request do not fit the model's context (``SystemLanguageModel/contextSize``),
        /// or the reply filled it before its value was complete.
        case exceededContextWindowSize(Context)
        /// The model is not in the cache, or does not load.
        case assetsUnavailable(Context)
        /// Never thrown by Typeset, which applies no content filter.
        case guardrailViolation(Context)
        /// A schema (a type's, a run-time one, or a tool's arguments) cannot be enforced.
        case unsupportedGuide(Context)
        /// Never thrown by Typeset.
        case unsupportedLanguageOrLocale(Context)
        /// The reply's value does not decode as the type asked for, or it could not be completed
        /// (`maximumResponseTokens` too small for any value).
        case decodingFailure(Context)
        /// Never thrown by Typeset.
        case rateLimited(Context)
        /// A request was made while the session was still answering another.
        case concurrentRequests(Context)
        /// Never thrown by Typeset, whose models are not tuned to refuse by the framework.
        case refusal(Refusal, Context)

        /// A refusal to answer, with the model's explanation.
        public struct Refusal: Sendable {
            /// The entries of the refused exchange.
            public let transcriptEntries: [Transcript.Entry]
            /// What the model said instead of an answer.
            let reason: String

            /// The model's explanation of the refusal.
            public var explanation: Response<String> {
                get async throws {
                    Response(content: reason, rawContent: GeneratedContent(reason), transcriptEntries: [], usage: Usage())
                }
            }
        }

        public var errorDescription: String? {
            switch self {
            case .exceededContextWindowSize(let context): return "The context window is full: \(context.debugDescription)"
            case .assetsUnavailable(let context): return "The model is unavailable: \(context.debugDescription)"
            case .guardrailViolation(let context): return "A guardrail was violated: \(context.debugDescription)"
            case .unsupportedGuide(let context): return "The schema cannot be enforced: \(context.debugDescription)"
            case .unsupportedLanguageOrLocale(let context): return "Unsupported language: \(context.debugDescription)"
            case .decodingFailure(let context): return "The reply could not be decoded: \(context.debugDescription)"
            case .rateLimited(let context): return "Rate limited: \(context.debugDescription)"
            case .concurrentRequests(let context): return "Concurrent requests: \(context.debugDescription)"
            case .refusal(let refusal, let context): return "The model refused (\(refusal.reason)): \(context.debugDescription)"
            }
        }
    }

    /// A tool threw while the session ran it.
    public struct ToolCallError: Error, LocalizedError, @unchecked Sendable {
        /// The tool that threw.
        public var tool: any Tool
        /// What it threw.
        public var underlyingError: any Error

        public init(tool: any Tool, underlyingError: any Error) {
            self.tool = tool
            self.underlyingError = underlyingError
        }

        public var errorDescription: String? { "The tool '\(tool.name)' failed: \(underlyingError)" }
    }
}
