import Foundation
import Observation
import Synchronization

/// A conversation with a model, as Apple's Foundation Models spells it: code written for
/// `FoundationModels.LanguageModelSession` runs on a Typeset model by changing its import.
///
/// ```swift
/// let session = LanguageModelSession(instructions: "You are a helpful barista.")
/// let summary = try await session.respond(to: notes, generating: BrewSummary.self).content
/// ```
///
/// A session wraps a ``Conversation`` of the model's ``ModelRunner``: its instructions are the
/// system message, its tools are registered with it, and each request is one exchange of it
/// (tool calls included). The session keeps the ``transcript``. One request at a time: a
/// second one while ``isResponding`` throws ``GenerationError/concurrentRequests(_:)``. Sessions
/// of one model generate together (the runner batches their tokens).
///
/// Errors are Foundation Models' ``GenerationError`` where one fits (the context is full, the
/// model is missing, a schema cannot be enforced, a value does not decode, a request is
/// concurrent) and ``ToolCallError`` when a tool throws; a cancelled task throws
/// `CancellationError`; anything else is Typeset's own typed error.
///
/// `Observable`, as Foundation Models' session is: a SwiftUI view (or `withObservationTracking`)
/// that reads ``isResponding`` or ``transcript`` is told when a request starts, ends and adds
/// its entries.
public final class LanguageModelSession: Sendable, Observable {
    /// The model the session talks to.
    public let model: SystemLanguageModel
    private let tools: [any Tool]
    private let state: Mutex<State>
    private let observers = ObservationRegistrar()

    private struct State {
        var conversation: Conversation?
        var transcript: Transcript
        var isResponding = false
    }

    // MARK: Creating a session

    /// A session with `tools` and `instructions` (a system prompt).
    @_disfavoredOverload
    public convenience init(model: SystemLanguageModel = .default, tools: [any Tool] = [], instructions: String? = nil) {
        self.init(model: model, tools: tools, instructions: instructions.map(Instructions.init(text:)))
    }

    /// A session with `tools` and instructions built from components.
    public convenience init(
        model: SystemLanguageModel = .default, tools: [any Tool] = [], @InstructionsBuilder instructions: () throws -> Instructions
    ) rethrows {
        self.init(model: model, tools: tools, instructions: try instructions())
    }

    /// A session with `tools` and `instructions`.
    public convenience init(model: SystemLanguageModel = .default, tools: [any Tool] = [], instructions: Instructions? = nil) {
        let definitions = tools.map { Transcript.ToolDefinition(tool: $0) }
        let entries: [Transcript.Entry] = instructions.map {
            [.instructions(.init(segments: [.text(.init(content: $0.text))], toolDefinitions: definitions))]
        } ?? []
        self.init(model: model, tools: tools, transcript: Transcript(entries: entries))
    }

    /// A session that continues `transcript` (its instructions included), with `tools`.
    public init(model: SystemLanguageModel = .default, tools: [any Tool] = [], transcript: Transcript) {
        self.model = model
        self.tools = tools
        state = Mutex(State(transcript: transcript))
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

    /// Ends a request: its entries join the transcript (when it succeeded), and the session
    /// stops responding; observers are told of both.
    private func end(appending entries: some Collection<Transcript.Entry>) {
        if !entries.isEmpty {
            observers.withMutation(of: self, keyPath: \.transcript) { state.withLock { $0.transcript.append(contentsOf: entries) } }
        }
        observers.withMutation(of: self, keyPath: \.isResponding) { state.withLock { $0.isResponding = false } }
    }

    /// Loads the model in the background, so the first request does not wait for it.
    /// `promptPrefix` is accepted for compatibility; the prompt cache fills on the first
    /// request.
    public func prewarm(promptPrefix: Prompt? = nil) {
        let model = self.model
        Task.detached(priority: .utility) { _ = try? model.runner() }
    }

    // MARK: Text

    /// Asks for free text.
    @discardableResult @_disfavoredOverload
    public func respond(to prompt: String, options: GenerationOptions = GenerationOptions()) async throws -> Response<String> {
        try await perform(options: options, format: nil) { try await $0.respond(to: prompt, options: options.typesetOptions) }
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
        try await perform(options: options, format: .init(schema: schema)) {
            try await $0.respond(to: prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options.typesetOptions)
        }
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
        try await perform(options: options, format: .init(type: type)) {
            try await $0.respond(to: prompt, generating: type, includeSchemaInPrompt: includeSchemaInPrompt, options: options.typesetOptions)
        }
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
        stream(options: options, format: nil) { $0.streamResponse(to: prompt, options: options.typesetOptions) }
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
        stream(options: options, format: .init(schema: schema)) {
            $0.streamResponse(to: prompt, schema: schema, includeSchemaInPrompt: includeSchemaInPrompt, options: options.typesetOptions)
        }
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
        stream(options: options, format: .init(type: type)) {
            $0.streamResponse(to: prompt, generating: type, includeSchemaInPrompt: includeSchemaInPrompt, options: options.typesetOptions)
        }
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

    // MARK: Running requests

    /// Runs one request on the session's conversation: marks the session responding, appends
    /// the request's entries to the transcript when it succeeds, and speaks Foundation
    /// Models' errors.
    ///
    /// - Parameter format: what the reply is held to (`nil`: free text); its value is
    ///   recorded as a structured segment of it.
    private func perform<Content>(
        options: GenerationOptions, format: Transcript.ResponseFormat?, _ request: (Conversation) async throws -> Typeset.Response<Content>
    ) async throws -> Response<Content> {
        let conversation = try begin()
        var entries: ArraySlice<Transcript.Entry> = []
        defer { end(appending: entries) }
        do {
            let response = Response(try await request(conversation), options: options, format: format)
            entries = response.transcriptEntries
            return response
        } catch {
            throw translated(error)
        }
    }

    /// A stream of the session's conversation, which marks the session responding until it
    /// ends and appends its entries when it completes.
    private func stream<Content>(
        options: GenerationOptions, format: Transcript.ResponseFormat?,
        _ start: @escaping @Sendable (Conversation) -> Typeset.ResponseStream<Content>
    ) -> ResponseStream<Content> {
        ResponseStream(Typeset.ResponseStream(producing: { yield in
            let conversation = try self.begin()
            var entries: ArraySlice<Transcript.Entry> = []
            defer { self.end(appending: entries) }
            do {
                let inner = start(conversation)
                for try await snapshot in inner { yield(snapshot) }
                let response = try await inner.collect()
                entries = Response(response, options: options, format: format).transcriptEntries
                return response
            } catch {
                throw self.translated(error)
            }
        }), options: options, format: format)
    }

    /// Marks the session responding and returns its conversation, creating it (and loading
    /// the model) the first time.
    private func begin() throws -> Conversation {
        let conversation: Conversation
        do {
            conversation = try observers.withMutation(of: self, keyPath: \.isResponding) { try state.withLock { state throws -> Conversation in
                if state.isResponding {
                    throw GenerationError.concurrentRequests(.init(debugDescription: "the session is still answering an earlier request"))
                }
                if let existing = state.conversation {
                    state.isResponding = true
                    return existing
                }
                let runner: ModelRunner
                do { runner = try model.runner() } catch {
                    throw GenerationError.assetsUnavailable(.init(debugDescription: "\(error)"))
                }
                let created = runner.createConversation(history: state.transcript.messages)
                for tool in tools { try created.register(tool: tool) }
                state.conversation = created
                state.isResponding = true
                return created
            } }
        } catch {
            throw translated(error)   // its own GenerationErrors pass through unchanged
        }
        return conversation
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

extension LanguageModelSession.Response: Sendable where Content: Sendable {}

// MARK: - Names nested as Foundation Models nests them

extension LanguageModelSession {
    /// A finished reply: the value, the content it was decoded from, and the entries the
    /// request added to the transcript. The value's members read through it too
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

        /// A member of the value.
        public subscript<Member>(dynamicMember member: KeyPath<Content, Member>) -> Member { content[keyPath: member] }

        /// The session's response for Typeset's: its messages as transcript entries (the
        /// prompt with `options`), the last one a structured segment of the value when the
        /// reply was held to `format`.
        init(_ response: Typeset.Response<Content>, options: GenerationOptions, format: Transcript.ResponseFormat?) {
            content = response.content
            rawContent = response.rawContent
            transcriptEntries = ArraySlice(
                Transcript.entries(for: response.messages, options: options, format: format, value: response.rawContent))
        }
    }

    /// The snapshots of a streamed reply (an `AsyncSequence`), and its result.
    public struct ResponseStream<Content: Generable>: AsyncSequence, Sendable {
        /// A value as far as it has been generated: `content` fills in as the JSON arrives.
        public typealias Snapshot = Typeset.ResponseStream<Content>.Snapshot

        private let stream: Typeset.ResponseStream<Content>
        private let options: GenerationOptions
        private let format: Transcript.ResponseFormat?

        init(_ stream: Typeset.ResponseStream<Content>, options: GenerationOptions, format: Transcript.ResponseFormat?) {
            self.stream = stream
            self.options = options
            self.format = format
        }

        public func makeAsyncIterator() -> Typeset.ResponseStream<Content>.AsyncIterator { stream.makeAsyncIterator() }

        /// Waits for the end of the reply (consuming the snapshots not yet read) and returns it.
        public func collect() async throws -> Response<Content> {
            Response(try await stream.collect(), options: options, format: format)
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
                    Response(
                        Typeset.Response(content: reason, rawContent: GeneratedContent(reason), messages: [.assistant(reason)], finishReason: .stop,
                                         stats: GenerationStats()),
                        options: GenerationOptions(), format: nil)
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
