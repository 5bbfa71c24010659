// LEAP's names for Typeset's conversations, runners, messages and streamed responses. A
// spelling that differs from Typeset's own is a deprecated alias whose fix-it names Typeset's;
// `onEnum(of:)` gives the exhaustive switch LEAP's Swift code writes over its responses.

// MARK: Messages

/// One part of a message's content, as LEAP spells it. Typeset's messages are text.
public enum ChatMessageContent: Sendable, Hashable {
    case text(String)

    /// A part's payload for an exhaustive switch (`onEnum(of:)`).
    public enum Payload: Sendable, Hashable {
        case text(Text)
    }

    /// A text part.
    public struct Text: Sendable, Hashable {
        public let text: String
    }
}

extension ChatMessage {
    /// A message of `role` with the text `textContent`.
    public init(role: Role, textContent: String) {
        self.init(role: role, content: textContent)
    }

    /// A message of `role` whose text is the text parts of `content`, one after another.
    public init(role: Role, content: [ChatMessageContent], reasoningContent: String? = nil, functionCalls: [FunctionCall]? = nil) {
        let text = content.map { part in
            switch part {
            case .text(let text): return text
            }
        }.joined()
        self.init(role: role, content: text, reasoning: reasoningContent, functionCalls: functionCalls ?? [])
    }

    /// LEAP's name for ``reasoning``.
    public var reasoningContent: String? {
        get { reasoning }
        set { reasoning = newValue }
    }
}

/// `part` as an enumeration to switch over (LEAP's `onEnum(of:)`).
public func onEnum(of part: ChatMessageContent) -> ChatMessageContent.Payload {
    switch part {
    case .text(let text): return .text(ChatMessageContent.Text(text: text))
    }
}

// MARK: Streamed responses

extension MessageResponse {
    /// A response's payload for an exhaustive switch, as LEAP's Swift code writes it:
    /// `switch onEnum(of: response) { case .chunk(let c): print(c.text) … }`.
    public enum Payload: Sendable {
        case chunk(Chunk)
        case reasoningChunk(ReasoningChunk)
        case functionCalls(FunctionCalls)
        case audioSample(AudioSample)
        case complete(Complete)
    }

    /// Text of the reply. A ``MessageResponse/logprob(_:)`` arrives as a chunk with no text
    /// and its `logprob`.
    public struct Chunk: Sendable {
        public let text: String
        public let logprob: TokenLogprob?
    }

    /// Text of the model's reasoning.
    public struct ReasoningChunk: Sendable {
        public let reasoning: String
    }

    /// The function calls of the reply.
    public struct FunctionCalls: Sendable {
        public let functionCalls: [FunctionCall]
    }

    /// Audio the model produced. Never sent: Typeset runs no audio model.
    public struct AudioSample: Sendable {
        /// 32-bit float mono samples.
        public let samples: [Float]
        /// Samples per second.
        public let sampleRate: Int
    }

    /// The end of the reply.
    public struct Complete: Sendable {
        /// The reply as it was added to the history, its content as parts.
        public let fullMessage: CompletedMessage
        public let finishReason: FinishReason
        public let stats: GenerationStats?
    }

    /// A reply as LEAP's `Complete.fullMessage` shows it: its text as content parts.
    public struct CompletedMessage: Sendable {
        /// The message as Typeset holds it.
        public let message: ChatMessage

        public var role: ChatMessage.Role { message.role }
        /// The reply's text, as one text part.
        public var content: [ChatMessageContent] { [.text(message.content)] }
        public var reasoningContent: String? { message.reasoning }
        public var functionCalls: [FunctionCall]? { message.functionCalls.isEmpty ? nil : message.functionCalls }
    }
}

/// `response` as an enumeration to switch over (LEAP's `onEnum(of:)`).
public func onEnum(of response: MessageResponse) -> MessageResponse.Payload {
    switch response {
    case .chunk(let text): return .chunk(.init(text: text, logprob: nil))
    case .logprob(let logprob): return .chunk(.init(text: "", logprob: logprob))
    case .reasoningChunk(let text): return .reasoningChunk(.init(reasoning: text))
    case .functionCalls(let calls): return .functionCalls(.init(functionCalls: calls))
    case .complete(let message, let finishReason, let stats):
        return .complete(.init(fullMessage: .init(message: message), finishReason: finishReason, stats: stats))
    }
}

/// LEAP's name for ``FinishReason``.
public typealias GenerationFinishReason = FinishReason

extension FinishReason {
    /// LEAP's name for ``exceededContext``.
    public static var exceedContext: FinishReason { .exceededContext }
}

extension GenerationStats {
    /// Prompt and completion tokens together.
    public var totalTokens: Int { promptTokens + completionTokens }
    /// LEAP's name for ``tokensPerSecond``, as LEAP types it.
    public var tokenPerSecond: Float { Float(tokensPerSecond) }
}

// MARK: Conversations and runners

extension Conversation {
    /// The runner whose model this conversation talks to.
    @available(*, deprecated, renamed: "runner")
    public var modelRunner: ModelRunner { runner }

    @available(*, deprecated, renamed: "generateResponse(to:options:)")
    public func generateResponse(message: ChatMessage, generationOptions: GenerationOptions? = nil)
        -> AsyncThrowingStream<MessageResponse, Error>
    {
        generateResponse(to: message, options: generationOptions ?? GenerationOptions())
    }

    @available(*, deprecated, renamed: "generateResponse(to:options:)")
    public func generateResponse(userTextMessage: String, generationOptions: GenerationOptions? = nil)
        -> AsyncThrowingStream<MessageResponse, Error>
    {
        generateResponse(to: userTextMessage, options: generationOptions ?? GenerationOptions())
    }

    @available(*, deprecated, renamed: "append(_:)")
    public func appendToHistory(message: ChatMessage) throws(ConversationError) { try append(message) }

    @available(*, deprecated, renamed: "append(_:)")
    public func appendToHistory(message: MessageResponse.CompletedMessage) throws(ConversationError) { try append(message.message) }

    @available(*, deprecated, renamed: "register(function:)")
    public func registerFunction(function: FunctionDefinition) throws(ConversationError) { try register(function: function) }

    @available(*, deprecated, message: "register each function with register(function:)")
    public func registerFunctions(functions: [FunctionDefinition]) throws(ConversationError) {
        for function in functions { try register(function: function) }
    }

    /// The history as a JSON array of OpenAI chat-completions messages, as LEAP exports it.
    @available(*, deprecated, message: "exportOpenAIJSON() writes the same messages as {\"messages\": [...]}, which importOpenAIJSON(_:) reads back")
    public func exportToJSON() -> String {
        let document = try? JSONValue(parsing: exportOpenAIJSON())
        return document?["messages"]?.compactText ?? "[]"
    }
}

extension ModelRunner {
    @available(*, deprecated, renamed: "modelID")
    public var modelId: String { modelID }

    @available(*, deprecated, renamed: "createConversation(history:)")
    public func createConversationFromHistory(history: [ChatMessage]) -> Conversation { createConversation(history: history) }

    @available(*, deprecated, renamed: "promptTokenCount(for:addBOS:)")
    public func getPromptTokensSize(messages: [ChatMessage], addBosToken: Bool) async throws(ConversationError) -> Int {
        try promptTokenCount(for: messages, addBOS: addBosToken)
    }
}
