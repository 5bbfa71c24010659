import Foundation

// Foundation Models' protocol for the models a `LanguageModelSession` talks to (OS 27): a light
// `LanguageModel` value saying what the model can do and how to make its executor, and a
// `LanguageModelExecutor` that receives the session's whole transcript on every request and
// streams the next entry back through a `LanguageModelExecutorGenerationChannel`.
//
//     LanguageModelSession ── request (transcript, tools, schema, options) ──► executor.respond
//            ▲                                                                      │
//            └──── channel: .response / .reasoning / .toolCalls events, usage ◄─────┘
//
// `SystemLanguageModel` (Typeset's model) conforms; so may any other model.

/// A model a ``LanguageModelSession`` can talk to: what it can do, and the configuration its
/// ``Executor`` is made from. Keep a conformer light: the executor does the work.
public protocol LanguageModel: Sendable {
    /// The executor that answers this model's requests.
    associatedtype Executor: LanguageModelExecutor where Executor.Model == Self
    /// What the model can do; a session refuses a request that needs more
    /// (``LanguageModelError/unsupportedCapability(_:)``).
    var capabilities: LanguageModelCapabilities { get }
    /// The configuration the executor is made from: a session keeps one executor per distinct
    /// configuration for its lifetime.
    var executorConfiguration: Executor.Configuration { get }
}

/// What a model can do beyond free text.
public struct LanguageModelCapabilities: Sendable, Equatable {
    /// One capability.
    public struct Capability: Sendable, Hashable {
        let name: String
        /// Output held to a ``GenerationSchema``.
        public static var guidedGeneration: Capability { Capability(name: "guidedGeneration") }
        /// Reasoning, streamed apart from the response.
        public static var reasoning: Capability { Capability(name: "reasoning") }
        /// Calls of the session's tools.
        public static var toolCalling: Capability { Capability(name: "toolCalling") }
        /// Images in prompts.
        public static var vision: Capability { Capability(name: "vision") }
    }

    let capabilities: Set<Capability>

    public init(_ capabilities: [Capability]) { self.capabilities = Set(capabilities) }

    /// Whether the model has `capability`.
    public func contains(_ capability: Capability) -> Bool { capabilities.contains(capability) }
}

/// What answers a model's requests: made once per distinct configuration by each session, it
/// receives the whole transcript with every request (and may keep state between them: a KV
/// cache to which only the new entries are added).
public protocol LanguageModelExecutor: Sendable {
    /// What the executor is made from; the key a session keeps executors by.
    associatedtype Configuration: Hashable, Sendable
    /// The model whose requests it answers.
    associatedtype Model: LanguageModel

    init(configuration: Configuration) throws

    /// Prepares for a session's first request (loads the model, fills a cache); best effort.
    func prewarm(model: Model, transcript: Transcript)

    /// Generates the transcript's next entry (a response, reasoning, tool calls), streaming it
    /// into `channel`; the stream ends when this returns or throws.
    func respond(
        to request: LanguageModelExecutorGenerationRequest, model: Model, streamingInto channel: LanguageModelExecutorGenerationChannel
    ) async throws
}

extension LanguageModelExecutor {
    public func prewarm(model: Model, transcript: Transcript) {}
}

/// One request of a session to an executor.
public struct LanguageModelExecutorGenerationRequest: Sendable {
    /// An identifier, for logs.
    public var id: UUID
    /// The session's whole transcript, the new prompt (or tool outputs) last.
    public var transcript: Transcript
    /// The tools the model may call in this request.
    public var enabledToolDefinitions: [Transcript.ToolDefinition]
    /// What the response must be, if anything.
    public var schema: GenerationSchema?
    public var generationOptions: GenerationOptions
    public var contextOptions: ContextOptions
    /// What the app attached to the request.
    public var metadata: [String: GeneratedContent]

    public init(
        id: UUID, transcript: Transcript, enabledTools: [Transcript.ToolDefinition], schema: GenerationSchema? = nil,
        generationOptions: GenerationOptions, contextOptions: ContextOptions, metadata: [String: GeneratedContent] = [:]
    ) {
        self.id = id
        self.transcript = transcript
        enabledToolDefinitions = enabledTools
        self.schema = schema
        self.generationOptions = generationOptions
        self.contextOptions = contextOptions
        self.metadata = metadata
    }
}

/// How a request uses the context: whether the schema is shown to the model, and how much it
/// should reason.
public struct ContextOptions: Sendable, Equatable {
    /// How much a reasoning model should think.
    public enum ReasoningLevel: Sendable, Equatable, Hashable {
        case light, moderate, deep
        case custom(String)
    }

    /// Whether the schema is shown to the model before the request (no effect without one);
    /// `nil`: yes.
    public var includeSchemaInPrompt: Bool?
    public var reasoningLevel: ReasoningLevel?

    public init(includeSchemaInPrompt: Bool? = nil, reasoningLevel: ReasoningLevel? = nil) {
        self.includeSchemaInPrompt = includeSchemaInPrompt
        self.reasoningLevel = reasoningLevel
    }
}

/// Where an executor streams the entry it generates, event by event: text of the response,
/// reasoning, tool calls and their arguments, and the token counts. A session reads it as an
/// `AsyncSequence` of events.
public struct LanguageModelExecutorGenerationChannel: AsyncSequence, Sendable {
    public typealias Element = Event
    public typealias Failure = Never

    private let stream: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    /// A channel whose events its reader receives in order.
    public init() {
        (stream, continuation) = AsyncStream<Event>.makeStream()
    }

    /// Sends `event` to the channel's reader.
    public func send(_ event: Event) async { continuation.yield(event) }

    /// Ends the stream of events (the session does this when `respond` returns or throws).
    func finish() { continuation.finish() }

    public func makeAsyncIterator() -> AsyncStream<Event>.Iterator { stream.makeAsyncIterator() }

    // MARK: Events

    /// One event: an action on the response, the reasoning or the tool calls entry. With a
    /// `nil` entry ID, consecutive events of a kind go to one entry.
    public struct Event: Sendable {
        enum Kind: Sendable {
            case response(Response.Action)
            case reasoning(Reasoning.Action)
            case toolCalls(ToolCalls.Action)
        }

        let kind: Kind
        let entryID: String?

        public static func response(entryID: String? = nil, action: Response.Action) -> Event { Event(kind: .response(action), entryID: entryID) }
        public static func reasoning(entryID: String? = nil, action: Reasoning.Action) -> Event { Event(kind: .reasoning(action), entryID: entryID) }
        public static func toolCalls(entryID: String? = nil, action: ToolCalls.Action) -> Event { Event(kind: .toolCalls(action), entryID: entryID) }
    }

    /// The response entry's actions.
    public enum Response {
        public struct Action: Sendable {
            enum Kind: Sendable {
                case appendText(String, segmentID: String?, tokenCount: Int)
                case replaceTextSegment(String, segmentID: String?, tokenCount: Int)
                case updateMetadata([String: GeneratedContent])
                case updateUsage(Usage)
            }

            let kind: Kind

            /// Text appended to the response (to the segment `segmentID`, else the current one).
            public static func appendText(_ text: String, segmentID: String? = nil, tokenCount: Int) -> Action {
                Action(kind: .appendText(text, segmentID: segmentID, tokenCount: tokenCount))
            }

            /// The text of a segment, replaced.
            public static func replaceTextSegment(_ text: String, segmentID: String? = nil, tokenCount: Int) -> Action {
                Action(kind: .replaceTextSegment(text, segmentID: segmentID, tokenCount: tokenCount))
            }

            /// The entry's metadata, replaced whole.
            public static func updateMetadata(_ values: [String: any ConvertibleToGeneratedContent]) -> Action {
                Action(kind: .updateMetadata(values.mapValues(\.generatedContent)))
            }

            /// The entry's token counts so far (totals, replacing the earlier ones).
            public static func updateUsage(input: Usage.Input, output: Usage.Output, metadata: [String: any ConvertibleToGeneratedContent] = [:]) -> Action {
                Action(kind: .updateUsage(Usage(input: input, output: output, metadata: metadata)))
            }
        }
    }

    /// The reasoning entry's actions.
    public enum Reasoning {
        public struct Action: Sendable {
            enum Kind: Sendable {
                case appendText(String, segmentID: String?, tokenCount: Int)
                case updateUsage(Usage)
            }

            let kind: Kind

            /// Reasoning text appended.
            public static func appendText(_ text: String, segmentID: String? = nil, tokenCount: Int) -> Action {
                Action(kind: .appendText(text, segmentID: segmentID, tokenCount: tokenCount))
            }

            /// The entry's token counts so far.
            public static func updateUsage(input: Usage.Input, output: Usage.Output, metadata: [String: any ConvertibleToGeneratedContent] = [:]) -> Action {
                Action(kind: .updateUsage(Usage(input: input, output: output, metadata: metadata)))
            }
        }
    }

    /// The tool-calls entry's actions.
    public enum ToolCalls {
        public struct Action: Sendable {
            enum Kind: Sendable {
                case toolCall(id: String, name: String, action: ToolCall.Action)
                case removeToolCall(id: String)
                case updateUsage(Usage)
            }

            let kind: Kind

            /// An action on the call `id` of the tool `name` (the first opens the call).
            public static func toolCall(id: String, name: String, action: ToolCall.Action) -> Action {
                Action(kind: .toolCall(id: id, name: name, action: action))
            }

            /// The call `id`, retracted.
            public static func removeToolCall(id: String) -> Action { Action(kind: .removeToolCall(id: id)) }

            /// The entry's token counts so far.
            public static func updateUsage(input: Usage.Input, output: Usage.Output, metadata: [String: any ConvertibleToGeneratedContent] = [:]) -> Action {
                Action(kind: .updateUsage(Usage(input: input, output: output, metadata: metadata)))
            }
        }

        /// One call's actions.
        public enum ToolCall {
            public struct Action: Sendable {
                let arguments: String
                let tokenCount: Int

                /// Text of the call's arguments (JSON), appended.
                public static func appendArguments(_ content: String, tokenCount: Int) -> Action {
                    Action(arguments: content, tokenCount: tokenCount)
                }
            }
        }
    }

    /// An entry's token counts: the transcript's (and how many of them came from a cache) and
    /// the output's (and how many of them were reasoning). Totals, not increments.
    public struct Usage: Sendable {
        public struct Input: Sendable, Equatable {
            public var totalTokenCount: Int
            public var cachedTokenCount: Int
            public init(totalTokenCount: Int, cachedTokenCount: Int) {
                self.totalTokenCount = totalTokenCount
                self.cachedTokenCount = cachedTokenCount
            }
        }

        public struct Output: Sendable, Equatable {
            public var totalTokenCount: Int
            public var reasoningTokenCount: Int
            public init(totalTokenCount: Int, reasoningTokenCount: Int) {
                self.totalTokenCount = totalTokenCount
                self.reasoningTokenCount = reasoningTokenCount
            }
        }

        public var input: Input
        public var output: Output
        public var metadata: [String: GeneratedContent]

        public init(input: Input, output: Output, metadata: [String: any ConvertibleToGeneratedContent] = [:]) {
            self.input = input
            self.output = output
            self.metadata = metadata.mapValues(\.generatedContent)
        }
    }
}

/// A failure of any model a session talks to.
public enum LanguageModelError: Error, Sendable, LocalizedError {
    /// The transcript and the request do not fit the model's context.
    case contextSizeExceeded(ContextSizeExceeded)
    /// The request needs a capability the model does not declare.
    case unsupportedCapability(UnsupportedCapability)

    public struct ContextSizeExceeded: Sendable {
        public var contextSize: Int
        public var tokenCount: Int
        public var debugDescription: String
        public init(contextSize: Int, tokenCount: Int, debugDescription: String) {
            self.contextSize = contextSize
            self.tokenCount = tokenCount
            self.debugDescription = debugDescription
        }
    }

    public struct UnsupportedCapability: Sendable {
        public var capability: LanguageModelCapabilities.Capability
        public var debugDescription: String
        public init(capability: LanguageModelCapabilities.Capability, debugDescription: String) {
            self.capability = capability
            self.debugDescription = debugDescription
        }
    }

    public var errorDescription: String? {
        switch self {
        case .contextSizeExceeded(let error): "The context is full (\(error.tokenCount) of \(error.contextSize) tokens): \(error.debugDescription)"
        case .unsupportedCapability(let error): "The model cannot do this (\(error.capability.name)): \(error.debugDescription)"
        }
    }
}
