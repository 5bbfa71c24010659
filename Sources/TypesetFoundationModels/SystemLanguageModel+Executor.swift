import Foundation
import Synchronization

extension SystemLanguageModel: LanguageModel {
    /// Guided generation (grammars over the vocabulary), tool calling (in the model's own call
    /// format) and reasoning (a `<think>` block streamed apart); no images.
    public var capabilities: LanguageModelCapabilities { LanguageModelCapabilities([.guidedGeneration, .toolCalling, .reasoning]) }

    /// One executor per model.
    public var executorConfiguration: Executor.Configuration { Executor.Configuration(model: ObjectIdentifier(self)) }

    /// Answers a session's requests with Typeset's engine.
    ///
    /// Every request brings the session's whole transcript. The executor renders it into chat
    /// messages (a prompt that showed its schema, with the schema, as the model read it then),
    /// and replies in a conversation of those messages whose KV cache is diffed against the
    /// transcript token by token (``TranscriptReplier``): the conversation of the last request
    /// hands its cache back to the runner's pool, and the new one keeps the longest prefix of
    /// tokens the two prompts share (what `Usage.Input.cachedTokenCount` reports).
    ///
    /// A request with a schema and tools is held to "the value or a call" in one grammar; a
    /// call is streamed as a tool call, a value as the response's text. Any reasoning level
    /// turns thinking on (Typeset's models think or do not).
    public struct Executor: LanguageModelExecutor {
        public typealias Model = SystemLanguageModel

        /// Which model's executor this is.
        public struct Configuration: Hashable, Sendable {
            let model: ObjectIdentifier
        }

        private let replier = TranscriptReplier()

        public init(configuration: Configuration) throws {}

        public func prewarm(model: SystemLanguageModel, transcript: Transcript) {
            Task.detached(priority: .utility) { _ = try? model.runner() }
        }

        public func respond(
            to request: LanguageModelExecutorGenerationRequest, model: SystemLanguageModel,
            streamingInto channel: LanguageModelExecutorGenerationChannel
        ) async throws {
            let runner = try model.runner()
            let toolMode: TranscriptRequest.ToolMode = switch request.generationOptions.toolCallingMode?.kind ?? .allowed {
            case .allowed: .allowed
            case .disallowed: .disallowed
            case .required: .required
            }
            let reply = TranscriptRequest(
                messages: request.transcript.messages,
                schema: request.schema.map { ($0.jsonSchema, $0.promptText) },
                // A prompt that shows its schema has it in its text already (see `Transcript.messages`).
                showsSchema: false,
                functions: request.enabledToolDefinitions.map {
                    FunctionDefinition(name: $0.name, description: $0.description, parameters: $0.parameters.jsonSchema)
                },
                toolMode: toolMode,
                transcriptHasCalls: request.transcript.contains { if case .toolCalls = $0 { true } else { false } },
                options: request.generationOptions.typesetOptions,
                asksForReasoning: request.contextOptions.reasoningLevel != nil)
            let responseID = UUID().uuidString, reasoningID = UUID().uuidString, callsID = UUID().uuidString
            do {
                try await replier.respond(to: reply, runner: runner) { event in
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
                throw LanguageModelError.contextSizeExceeded(.init(
                    contextSize: contextSize, tokenCount: tokenCount,
                    debugDescription: "the reply filled the context before it was complete"))
            }
        }
    }
}
