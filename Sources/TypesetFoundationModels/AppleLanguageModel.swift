// Typeset's model behind Apple's own Foundation Models framework (OS 27), where it exists:
//
//     import FoundationModels
//     import TypesetFoundationModels
//
//     let session = FoundationModels.LanguageModelSession(model: TypesetLanguageModel())
//     let summary = try await session.respond(to: notes, generating: BrewSummary.self)
//
// Apple's session drives `TypesetLanguageModel.Executor` through Apple's protocol; the executor
// turns Apple's request into the same `TranscriptRequest` this module's own executor makes and
// answers it with the same `TranscriptReplier` (the KV cache diffed against the transcript,
// "value or call" in one grammar, usage with cached and reasoning tokens).
//
// This file compiles only against an SDK whose FoundationModels has the model protocol
// (framework version 2, the OS 27 SDKs): Linux, where Typeset is built and tested, has none,
// so it is written against Apple's published declarations (docs/foundation-models.md) and has
// not been compiled here. Everything it does is tested through this module's own executor,
// which shares all of it but the type conversions below.
#if canImport(FoundationModels, _version: 2)
import Foundation
import FoundationModels

/// Typeset's model (``SystemLanguageModel``) as Apple's Foundation Models sees a model: a
/// conformer of Apple's `LanguageModel`, for `FoundationModels.LanguageModelSession(model:)`.
///
/// It declares guided generation, tool calling and reasoning. Images and data attachments in
/// the transcript are refused (`unsupportedTranscriptContent`): Typeset's models read text.
@available(macOS 27.0, iOS 27.0, visionOS 27.0, *)
public struct TypesetLanguageModel: FoundationModels.LanguageModel {
    /// The model that answers.
    public let model: SystemLanguageModel

    /// Typeset's model of `model` (by default the one `SystemLanguageModel.default` loads).
    public init(_ model: SystemLanguageModel = .default) {
        self.model = model
    }

    public var capabilities: FoundationModels.LanguageModelCapabilities {
        FoundationModels.LanguageModelCapabilities([.guidedGeneration, .toolCalling, .reasoning])
    }

    public var executorConfiguration: Executor.Configuration {
        Executor.Configuration(model: ObjectIdentifier(model))
    }

    /// Answers Apple's session's requests with Typeset's engine (see ``TranscriptReplier``).
    public struct Executor: FoundationModels.LanguageModelExecutor {
        public typealias Model = TypesetLanguageModel

        /// Which model's executor this is.
        public struct Configuration: Hashable, Sendable {
            let model: ObjectIdentifier
        }

        private let replier = TranscriptReplier()

        public init(configuration: Configuration) throws {}

        public func prewarm(model: TypesetLanguageModel, transcript: FoundationModels.Transcript) {
            let system = model.model
            Task.detached(priority: .utility) { _ = try? system.runner() }
        }

        public nonisolated(nonsending) func respond(
            to request: FoundationModels.LanguageModelExecutorGenerationRequest, model: TypesetLanguageModel,
            streamingInto channel: FoundationModels.LanguageModelExecutorGenerationChannel
        ) async throws {
            let runner = try model.model.runner()
            let transcript = try Self.typesetRequest(request)
            let responseID = UUID().uuidString, reasoningID = UUID().uuidString, callsID = UUID().uuidString
            do {
                try await replier.respond(to: transcript, runner: runner) { event in
                    switch event {
                    case .text(let text, let tokenCount):
                        await channel.send(.response(entryID: responseID, action: .appendText(text, tokenCount: tokenCount)))
                    case .reasoning(let text):
                        await channel.send(.reasoning(entryID: reasoningID, action: .appendText(text, tokenCount: 0)))
                    case .toolCall(let id, let name, let arguments, let tokenCount):
                        await channel.send(.toolCalls(entryID: callsID, action: .toolCall(
                            id: id, name: name, action: .appendArguments(arguments, tokenCount: tokenCount))))
                    case .usage(let promptTokens, let cachedPromptTokens, let completionTokens, let reasoningTokens):
                        await channel.send(.response(entryID: responseID, action: .updateUsage(
                            input: .init(totalTokenCount: promptTokens, cachedTokenCount: cachedPromptTokens),
                            output: .init(totalTokenCount: completionTokens, reasoningTokenCount: reasoningTokens))))
                    }
                }
            } catch TranscriptReplyFailure.contextSizeExceeded(let contextSize, let tokenCount) {
                throw FoundationModels.LanguageModelError.contextSizeExceeded(.init(
                    contextSize: contextSize, tokenCount: tokenCount,
                    debugDescription: "the reply filled the context before it was complete"))
            }
        }

        /// Apple's request as Typeset's: the transcript as chat messages, the schema and tool
        /// parameters as JSON Schemas (Apple's `GenerationSchema` encodes as one), the options.
        static func typesetRequest(_ request: FoundationModels.LanguageModelExecutorGenerationRequest) throws -> TranscriptRequest {
            let toolMode: TranscriptRequest.ToolMode
            switch request.generationOptions.toolCallingMode?.kind {
            case nil, .allowed?: toolMode = .allowed
            case .disallowed?: toolMode = .disallowed
            case .required?: toolMode = .required
            @unknown default:
                throw ConversationError.unsupportedOption(name: "toolCallingMode", reason: "a mode other than allowed, disallowed and required")
            }
            let schema = try request.schema.map { schema in
                let document = try jsonSchema(of: schema)
                return (document: document, shown: document.compactText)
            }
            let functions = try request.enabledToolDefinitions.map {
                Typeset.FunctionDefinition(name: $0.name, description: $0.description, parameters: try jsonSchema(of: $0.parameters))
            }
            var hasCalls = false
            for entry in request.transcript { if case .toolCalls = entry { hasCalls = true } }
            return TranscriptRequest(
                messages: try messages(of: request.transcript),
                schema: schema,
                // Apple's session leaves showing the schema to the model's executor.
                showsSchema: request.contextOptions.includeSchemaInPrompt ?? true,
                functions: functions,
                toolMode: toolMode,
                transcriptHasCalls: hasCalls,
                options: try options(of: request.generationOptions),
                asksForReasoning: request.contextOptions.reasoningLevel != nil)
        }

        static func jsonSchema(of schema: FoundationModels.GenerationSchema) throws -> Typeset.JSONValue {
            try Typeset.JSONValue(parsing: String(decoding: try JSONEncoder().encode(schema), as: UTF8.self))
        }

        static func options(of options: FoundationModels.GenerationOptions) throws -> Typeset.GenerationOptions {
            var result = Typeset.GenerationOptions(
                temperature: options.temperature.map(Float.init), maxTokens: options.maximumResponseTokens)
            if let mode = options.samplingMode {
                switch mode.kind {
                case .greedy:
                    result.temperature = 0
                case .randomTopK(let k, let seed):
                    if (result.temperature ?? 0) == 0 { result.temperature = 1 }
                    result.topK = k
                    result.seed = seed
                case .randomProbabilityThreshold(let threshold, let seed):
                    if (result.temperature ?? 0) == 0 { result.temperature = 1 }
                    result.topP = Float(threshold)
                    result.seed = seed
                @unknown default:
                    throw ConversationError.unsupportedOption(name: "samplingMode", reason: "a mode other than greedy, top-k and probability threshold")
                }
            }
            return result
        }

        /// The transcript as chat messages: instructions as the system message, prompts as the
        /// user's, reasoning as the next response's, tool calls and their outputs as the chat
        /// format has them.
        static func messages(of transcript: FoundationModels.Transcript) throws -> [Typeset.ChatMessage] {
            var messages: [Typeset.ChatMessage] = []
            var reasoning: String?
            for entry in transcript {
                switch entry {
                case .instructions(let instructions):
                    messages.append(.system(try text(of: instructions.segments, in: entry)))
                case .prompt(let prompt):
                    messages.append(.user(try text(of: prompt.segments, in: entry)))
                case .reasoning(let thought):
                    reasoning = try text(of: thought.segments, in: entry)
                case .response(let response):
                    messages.append(Typeset.ChatMessage(role: .assistant, content: try text(of: response.segments, in: entry), reasoning: reasoning))
                    reasoning = nil
                case .toolCalls(let calls):
                    messages.append(.assistant("", functionCalls: try calls.map {
                        Typeset.FunctionCall(id: $0.id, name: $0.toolName, arguments: try Typeset.JSONValue(parsing: $0.arguments.jsonString))
                    }))
                case .toolOutput(let output):
                    messages.append(Typeset.ChatMessage(
                        role: .tool, content: try text(of: output.segments, in: entry), toolCallID: output.id, name: output.toolName))
                default:
                    throw unsupported(entry, "an entry other than instructions, prompts, responses, reasoning and tool calls")
                }
            }
            return messages
        }

        static func text(of segments: [FoundationModels.Transcript.Segment], in entry: FoundationModels.Transcript.Entry) throws -> String {
            try segments.map { segment in
                switch segment {
                case .text(let text): return text.content
                case .structure(let structure): return structure.content.jsonString
                default: throw unsupported(entry, "an attachment: Typeset's models read text")
                }
            }.joined()
        }

        static func unsupported(_ entry: FoundationModels.Transcript.Entry, _ reason: String) -> FoundationModels.LanguageModelError {
            .unsupportedTranscriptContent(.init(unsupportedContent: [entry], debugDescription: reason, metadata: [:]))
        }
    }
}
#endif
