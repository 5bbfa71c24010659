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
    /// and replies in a conversation of those messages. The KV cache is diffed against the
    /// transcript token by token: the conversation of the last request is released first, so
    /// its cache goes back to the runner's pool, and the new one takes it and keeps the longest
    /// prefix of tokens the two prompts share (what `Usage.Input.cachedTokenCount` reports); a
    /// transcript changed at its start, or a chat template that renders earlier turns anew,
    /// recomputes from the first token that differs, never reuses a stale one.
    ///
    /// A request with a schema and tools is held to "the value or a call" in one grammar; a
    /// call is streamed as a tool call, a value as the response's text.
    public struct Executor: LanguageModelExecutor {
        public typealias Model = SystemLanguageModel

        /// Which model's executor this is.
        public struct Configuration: Hashable, Sendable {
            let model: ObjectIdentifier
        }

        /// The conversation of the last request (its KV cache), released when the next begins.
        private let conversation = ConversationHolder()

        public init(configuration: Configuration) throws {}

        public func prewarm(model: SystemLanguageModel, transcript: Transcript) {
            Task.detached(priority: .utility) { _ = try? model.runner() }
        }

        public func respond(
            to request: LanguageModelExecutorGenerationRequest, model: SystemLanguageModel,
            streamingInto channel: LanguageModelExecutorGenerationChannel
        ) async throws {
            let runner = try model.runner()
            var messages = request.transcript.messages
            guard let last = messages.popLast() else { return }
            // The last request's conversation first goes back to the pool, with its cache.
            conversation.set(nil)
            let current = runner.createConversation(history: messages)
            conversation.set(current)

            let mode = request.generationOptions.toolCallingMode?.kind ?? .allowed
            let tools = mode == .disallowed ? [] : request.enabledToolDefinitions
            let functions = tools.map { FunctionDefinition(name: $0.name, description: $0.description, parameters: $0.parameters.jsonSchema) }
            var reply = ReplyRequest(options: request.generationOptions.typesetOptions)
            // A prompt that shows its schema has it in its text already (see `Transcript.messages`).
            reply.options.injectSchemaIntoPrompt = false
            let valueOrCall = request.schema != nil && !functions.isEmpty
            if let schema = request.schema {
                reply.options.functionCallMode = .disabled
                reply.schema = valueOrCall
                    ? .valueOrCall(schema.jsonSchema, functions: functions, valueAllowed: mode != .required, shown: schema.promptText)
                    : .value(schema.jsonSchema, shown: schema.promptText)
            } else {
                for function in functions { try current.register(function: function) }
                // With tools in the transcript but none allowed now, the answer is in words.
                reply.forbidsCallOpening = functions.isEmpty && request.transcript.contains {
                    if case .toolCalls = $0 { true } else { false }
                }
            }

            let responseID = UUID().uuidString, reasoningID = UUID().uuidString, callsID = UUID().uuidString
            var heldText = ""
            var reasoning = ""
            for try await event in current.generateResponse(to: last, request: reply, isAbandoned: nil) {
                switch event {
                case .chunk(let text):
                    // A value that may be a call is held until it is complete.
                    if valueOrCall { heldText += text } else { await channel.send(.response(entryID: responseID, action: .appendText(text, tokenCount: 0))) }
                case .reasoningChunk(let text):
                    reasoning += text
                    await channel.send(.reasoning(entryID: reasoningID, action: .appendText(text, tokenCount: 0)))
                case .functionCalls(let calls):
                    for call in calls {
                        await channel.send(.toolCalls(entryID: callsID, action: .toolCall(
                            id: call.id, name: call.name, action: .appendArguments(call.arguments.compactText, tokenCount: 0))))
                    }
                case .logprob:
                    break
                case .complete(let message, let reason, let stats):
                    if reason == .exceededContext {
                        throw LanguageModelError.contextSizeExceeded(.init(
                            contextSize: runner.contextLength, tokenCount: stats.promptTokens + stats.completionTokens,
                            debugDescription: "the reply filled the context before it was complete"))
                    }
                    if reason == .interrupted { throw CancellationError() }
                    if valueOrCall {
                        let number = Conversation.callCount(request.transcript.messages) + 1
                        let toolNames = Set(functions.map(\.name))
                        if let value = try? JSONValue(parsing: message.content),
                           let call = Conversation.call(in: value, toolNames: toolNames, number: number) {
                            await channel.send(.toolCalls(entryID: callsID, action: .toolCall(
                                id: call.id, name: call.name, action: .appendArguments(call.arguments.compactText, tokenCount: stats.completionTokens))))
                        } else {
                            await channel.send(.response(entryID: responseID, action: .appendText(heldText, tokenCount: stats.completionTokens)))
                        }
                    }
                    let reasoningTokens = reasoning.isEmpty ? 0 : runner.tokenizer.encode(reasoning, addingSpecialTokens: false).count
                    await channel.send(.response(entryID: responseID, action: .updateUsage(
                        input: .init(totalTokenCount: stats.promptTokens, cachedTokenCount: stats.cachedPromptTokens),
                        output: .init(totalTokenCount: stats.completionTokens, reasoningTokenCount: reasoningTokens))))
                }
            }
        }
    }
}

/// The conversation an executor answered its last request in.
private final class ConversationHolder: Sendable {
    private let conversation = Mutex<Conversation?>(nil)
    func set(_ value: Conversation?) { conversation.withLock { $0 = value } }
}
