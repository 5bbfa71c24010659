import Foundation
import Synchronization

/// A loaded model, as LEAP's code holds it (`any ModelRunner`): it makes conversations and
/// counts prompt tokens. Obtain one from ``Leap``, ``LeapDownloader`` or ``ModelDownloader``;
/// hold it as long as you generate, then `unload()` it (its conversations become read-only).
public protocol ModelRunner: AnyObject, Sendable {
    /// A new conversation, starting with a system message when `systemPrompt` is given.
    func createConversation(systemPrompt: String?) -> Conversation
    /// A conversation continuing `history`.
    func createConversationFromHistory(history: [ChatMessage]) -> Conversation
    /// Releases the model; generations under way are interrupted.
    func unload() async
    /// Tokens the prompt for `messages` takes, rendered with the chat template for the
    /// assistant's reply (with the model's beginning-of-sequence token when `addBosToken`).
    /// A history the chat template cannot render counts as 0.
    func getPromptTokensSize(messages: [ChatMessage], addBosToken: Bool) async -> Int
    /// The model's name (its GGUF's `general.name`, else the file's name).
    var modelId: String { get }
}

/// A chat with a model, as LEAP's code holds it: its history, its functions, and the streamed
/// generation of the next reply. One reply at a time: a second one, or a change to the history,
/// while a reply is under way is refused, and the reply after it ends with
/// ``GenerationFinishReason/error`` saying why.
public protocol Conversation: AnyObject, Sendable {
    /// The runner whose model this conversation talks to.
    var modelRunner: ModelRunner { get }
    /// The messages so far (a copy); after `.complete`, with the reply.
    var history: [ChatMessage] { get }
    /// The functions the model may call.
    var functions: [LeapFunction] { get }
    /// Whether a reply is being generated.
    var isGenerating: Bool { get }

    /// Makes `function` callable by the model from the next reply on.
    func registerFunction(function: LeapFunction)
    /// Registers each of `functions`.
    func registerFunctions(functions: [LeapFunction])
    /// Appends `message` without generating (a tool's result, restored history).
    func appendToHistory(message: ChatMessage)
    /// Removes the last message; nothing on an empty history.
    func removeLastMessage()
    /// The history as a JSON array of OpenAI chat-completions messages.
    func exportToJSON() -> String

    /// Sends `userTextMessage` as the user's message and streams the reply.
    func generateResponse(userTextMessage: String, generationOptions: GenerationOptions?) -> SkieSwiftFlow<MessageResponse>
    /// Appends `message` (a user message, or a tool's result) and streams the reply.
    func generateResponse(message: ChatMessage, generationOptions: GenerationOptions?) -> SkieSwiftFlow<MessageResponse>
}

extension Conversation {
    /// ``generateResponse(message:generationOptions:)`` with the default options.
    public func generateResponse(message: ChatMessage) -> SkieSwiftFlow<MessageResponse> {
        generateResponse(message: message, generationOptions: nil)
    }

    /// ``generateResponse(userTextMessage:generationOptions:)`` with the default options.
    public func generateResponse(userTextMessage: String) -> SkieSwiftFlow<MessageResponse> {
        generateResponse(userTextMessage: userTextMessage, generationOptions: nil)
    }
}

// MARK: - Typeset's model as LEAP's runner

/// A Typeset ``Typeset/ModelRunner`` behind LEAP's protocol.
final class TypesetModelRunner: ModelRunner {
    let runner: Typeset.ModelRunner

    init(_ runner: Typeset.ModelRunner) { self.runner = runner }

    func createConversation(systemPrompt: String?) -> Conversation {
        TypesetConversation(runner: self, conversation: runner.createConversation(systemPrompt: systemPrompt))
    }

    func createConversationFromHistory(history: [ChatMessage]) -> Conversation {
        var messages: [Typeset.ChatMessage] = []
        var refused: ChatMessage.ContentError?
        for message in history {
            do { messages.append(try message.typesetMessage()) } catch { refused = error }
        }
        let conversation = TypesetConversation(runner: self, conversation: runner.createConversation(history: messages))
        if let refused { conversation.refuse(because: refused) }
        return conversation
    }

    func unload() async { runner.unload() }

    func getPromptTokensSize(messages: [ChatMessage], addBosToken: Bool) async -> Int {
        guard let messages = try? messages.map({ try $0.typesetMessage() }) else { return 0 }
        return (try? runner.promptTokenCount(for: messages, addBOS: addBosToken)) ?? 0
    }

    var modelId: String { runner.modelID }
}

/// A Typeset ``Typeset/Conversation`` behind LEAP's protocol.
///
/// LEAP's calls do not throw. What Typeset would refuse — a function whose schema does not
/// compile, a message with an image, a change while the runner is unloaded — is kept and
/// ends the next reply with ``GenerationFinishReason/error`` and its description
/// (``MessageResponse/Complete/error``), never ignored.
final class TypesetConversation: Conversation {
    let runner: TypesetModelRunner
    let conversation: Typeset.Conversation
    private let refusal = Mutex<(any Error)?>(nil)

    init(runner: TypesetModelRunner, conversation: Typeset.Conversation) {
        self.runner = runner
        self.conversation = conversation
    }

    var modelRunner: ModelRunner { runner }
    var history: [ChatMessage] { conversation.history.map(ChatMessage.init) }
    var functions: [LeapFunction] { conversation.functions }
    var isGenerating: Bool { conversation.isGenerating }

    /// Keeps `error` for the next reply to end with (the first one kept wins).
    func refuse(because error: any Error) {
        refusal.withLock { if $0 == nil { $0 = error } }
    }

    func registerFunction(function: LeapFunction) {
        do { try conversation.register(function: function) } catch { refuse(because: error) }
    }

    func registerFunctions(functions: [LeapFunction]) {
        for function in functions { registerFunction(function: function) }
    }

    func appendToHistory(message: ChatMessage) {
        do { try conversation.append(try message.typesetMessage()) } catch { refuse(because: error) }
    }

    func removeLastMessage() {
        guard !conversation.history.isEmpty else { return }
        do { try conversation.removeLastMessage() } catch { refuse(because: error) }
    }

    func exportToJSON() -> String {
        let document = try? JSONValue(parsing: conversation.exportOpenAIJSON())
        return document?["messages"]?.compactText ?? "[]"
    }

    func generateResponse(userTextMessage: String, generationOptions: GenerationOptions?) -> SkieSwiftFlow<MessageResponse> {
        generateResponse(message: ChatMessage(role: .user, textContent: userTextMessage), generationOptions: generationOptions)
    }

    func generateResponse(message: ChatMessage, generationOptions: GenerationOptions?) -> SkieSwiftFlow<MessageResponse> {
        let (stream, continuation) = AsyncStream<MessageResponse>.makeStream()
        let options = generationOptions ?? GenerationOptions()
        func fail(_ error: any Error) {
            continuation.yield(.complete(.init(
                fullMessage: ChatMessage(role: .assistant, content: []), finishReason: .error, stats: nil, error: error)))
            continuation.finish()
        }
        if let error = refusal.withLock({ state -> (any Error)? in defer { state = nil }; return state }) {
            fail(error)
            return SkieSwiftFlow(stream: stream)
        }
        if options.extras != nil {
            fail(ConversationError.unsupportedOption(
                name: "extras", reason: "it carries a payload for LEAP's own inference engine, which Typeset does not run"))
            return SkieSwiftFlow(stream: stream)
        }
        let request: Typeset.ChatMessage
        do { request = try message.typesetMessage() } catch {
            fail(error)
            return SkieSwiftFlow(stream: stream)
        }
        let replies = conversation.generateResponse(to: request, options: options.typesetOptions)
        let task = Task {
            do {
                for try await response in replies {
                    switch response {
                    case .chunk(let text): continuation.yield(.chunk(.init(text: text)))
                    case .reasoningChunk(let text): continuation.yield(.reasoningChunk(.init(reasoning: text)))
                    case .functionCalls(let calls): continuation.yield(.functionCalls(.init(functionCalls: calls.map(LeapFunctionCall.init))))
                    case .logprob, .functionCallDelta: break   // LEAP's calls come complete
                    case .complete(let message, let reason, let stats):
                        continuation.yield(.complete(.init(
                            fullMessage: ChatMessage(message), finishReason: GenerationFinishReason(reason), stats: GenerationStats(stats),
                            error: nil)))
                    }
                }
                continuation.finish()
            } catch {
                fail(error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return SkieSwiftFlow(stream: stream)
    }
}
