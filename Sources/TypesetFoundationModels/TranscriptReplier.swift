import Foundation
import Synchronization

/// One request of a Foundation Models session, as Typeset answers it: the transcript already
/// turned into chat messages, and what the request asks of the reply. Both executors translate
/// their request into one — this module's (``SystemLanguageModel/Executor``) and, on Apple's
/// OS 27, the one conforming to Apple's own protocol (AppleLanguageModel.swift) — and
/// ``TranscriptReplier`` answers it, so the two differ only in their types.
struct TranscriptRequest {
    /// How the request lets the model call tools.
    enum ToolMode { case allowed, disallowed, required }

    /// The whole transcript; the last message is the one replied to.
    var messages: [ChatMessage]
    /// The JSON Schema the reply is held to, and its text as the prompt shows it.
    var schema: (document: JSONValue, shown: String)?
    /// Whether the schema is added to the prompt (`false` when the prompt's text has it already).
    var showsSchema: Bool
    /// The tools the model may call now.
    var functions: [FunctionDefinition]
    var toolMode: ToolMode
    /// Whether earlier entries called tools (with none allowed now, the answer is in words).
    var transcriptHasCalls: Bool
    var options: Typeset.GenerationOptions
    /// Whether the request asks for reasoning (any `ContextOptions.ReasoningLevel`): Typeset's
    /// models think or do not, so every level turns thinking on where the chat template has it.
    var asksForReasoning: Bool
}

/// What a reply to a ``TranscriptRequest`` streams, in order.
enum TranscriptReplyEvent {
    /// Text of the response.
    case text(String, tokenCount: Int)
    /// Text of the reasoning before it.
    case reasoning(String)
    /// A call of one of the request's tools, its arguments as compact JSON.
    case toolCall(id: String, name: String, arguments: String, tokenCount: Int)
    /// The totals, last: the prompt's tokens (those restored from the cache among them) and
    /// the reply's (its reasoning's among them).
    case usage(promptTokens: Int, cachedPromptTokens: Int, completionTokens: Int, reasoningTokens: Int)
}

/// Why a reply to a ``TranscriptRequest`` ended without one.
enum TranscriptReplyFailure: Error {
    /// The reply filled the context before it was complete.
    case contextSizeExceeded(contextSize: Int, tokenCount: Int)
}

/// Answers the requests of one executor: replies in a conversation of the transcript's
/// messages, whose KV cache is diffed against the transcript token by token. The conversation
/// of the last request is released first, so its cache goes back to the runner's pool, and the
/// new one takes it and keeps the longest prefix of tokens the two prompts share (the cached
/// prompt tokens reported); a transcript changed at its start, or a chat template that renders
/// earlier turns anew, recomputes from the first token that differs, never reuses a stale one.
///
/// A request with a schema and tools is held to "the value or a call" in one grammar: a call is
/// streamed as a tool call, a value as the response's text, once the reply is complete.
final class TranscriptReplier: Sendable {
    /// The conversation the last request was answered in (its KV cache).
    private let conversation = Mutex<Conversation?>(nil)

    /// Streams the reply to `request` through `emit`.
    ///
    /// - Throws: ``TranscriptReplyFailure`` when the context fills, `CancellationError` when the
    ///   task is cancelled, ``ConversationError`` for a transcript the model cannot take.
    func respond(to request: TranscriptRequest, runner: ModelRunner, emit: (TranscriptReplyEvent) async -> Void) async throws {
        var messages = request.messages
        guard let last = messages.popLast() else { return }
        // The last request's conversation first gives its cache back to the pool, now rather
        // than whenever the last of its reply's closures lets it go.
        let previous = conversation.withLock { held in
            defer { held = nil }
            return held
        }
        previous?.releaseCache()
        let current = runner.createConversation(history: messages)
        conversation.withLock { $0 = current }

        let functions = request.toolMode == .disallowed ? [] : request.functions
        var reply = ReplyRequest(options: request.options)
        reply.options.injectSchemaIntoPrompt = request.showsSchema
        if request.asksForReasoning { reply.options.enableThinking = true }
        let valueOrCall = request.schema != nil && !functions.isEmpty
        if let schema = request.schema {
            reply.options.functionCallMode = .disabled
            reply.schema = valueOrCall
                ? .valueOrCall(schema.document, functions: functions, valueAllowed: request.toolMode != .required, shown: schema.shown)
                : .value(schema.document, shown: schema.shown)
        } else {
            for function in functions { try current.register(function: function) }
            reply.forbidsCallOpening = functions.isEmpty && request.transcriptHasCalls
        }

        let callNumber = Conversation.callCount(request.messages) + 1
        var heldText = ""
        var reasoning = ""
        for try await event in current.generateResponse(to: last, request: reply, isAbandoned: nil) {
            switch event {
            case .chunk(let text):
                // A value that may be a call is held until it is complete.
                if valueOrCall { heldText += text } else { await emit(.text(text, tokenCount: 0)) }
            case .reasoningChunk(let text):
                reasoning += text
                await emit(.reasoning(text))
            case .functionCalls(let calls):
                for call in calls {
                    await emit(.toolCall(id: call.id, name: call.name, arguments: call.arguments.compactText, tokenCount: 0))
                }
            case .logprob, .functionCallDelta:
                break   // a call is recorded in the transcript once complete
            case .complete(let message, let reason, let stats):
                if reason == .exceededContext {
                    throw TranscriptReplyFailure.contextSizeExceeded(
                        contextSize: runner.contextLength, tokenCount: stats.promptTokens + stats.completionTokens)
                }
                if reason == .interrupted { throw CancellationError() }
                if valueOrCall {
                    if let value = try? JSONValue(parsing: message.content),
                       let call = Conversation.call(in: value, toolNames: Set(functions.map(\.name)), number: callNumber) {
                        await emit(.toolCall(id: call.id, name: call.name, arguments: call.arguments.compactText, tokenCount: stats.completionTokens))
                    } else {
                        await emit(.text(heldText, tokenCount: stats.completionTokens))
                    }
                }
                let reasoningTokens = reasoning.isEmpty ? 0 : runner.tokenizer.encode(reasoning, addingSpecialTokens: false).count
                await emit(.usage(promptTokens: stats.promptTokens, cachedPromptTokens: stats.cachedPromptTokens,
                                  completionTokens: stats.completionTokens, reasoningTokens: reasoningTokens))
            }
        }
    }
}
