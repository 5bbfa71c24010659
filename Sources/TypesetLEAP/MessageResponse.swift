/// What a LEAP conversation streams, one case per kind of output, each wrapping a small value
/// (as LEAP's sealed class is bridged to Swift). `onEnum(of:)` returns it as it is, so LEAP's
/// `switch onEnum(of: response)` reads it.
public enum MessageResponse: Sendable {
    /// Text of the reply.
    case chunk(Chunk)
    /// Text of the model's reasoning (between `<think>` and `</think>`, with `enableThinking`).
    case reasoningChunk(ReasoningChunk)
    /// The function calls of the reply, once they are complete.
    case functionCalls(FunctionCalls)
    /// Audio the model produced. Never sent: Typeset runs no audio model.
    case audioSample(AudioSample)
    /// The end of the reply.
    case complete(Complete)

    /// Partial assistant text.
    public struct Chunk: Sendable {
        public let text: String
    }

    /// Thinking tokens.
    public struct ReasoningChunk: Sendable {
        public let reasoning: String
    }

    /// The calls the model wants run; answer them with `.tool` messages.
    public struct FunctionCalls: Sendable {
        public let functionCalls: [LeapFunctionCall]
    }

    /// Float32 mono PCM frames.
    public struct AudioSample: Sendable {
        public let samples: [Float]
        public let sampleRate: Int32
    }

    /// The final marker: the assembled reply (also in the conversation's history, unless the
    /// reply failed), why it ended and what it cost.
    public struct Complete: Sendable {
        public let fullMessage: ChatMessage
        public let finishReason: GenerationFinishReason
        public let stats: GenerationStats?
        /// Why the reply failed, when ``finishReason`` is ``GenerationFinishReason/error``
        /// (Typeset's addition: LEAP's stream carries no error).
        public let error: (any Error)?
    }
}

/// LEAP's flattened names for the payloads.
public typealias MessageResponseChunk = MessageResponse.Chunk
public typealias MessageResponseReasoningChunk = MessageResponse.ReasoningChunk
public typealias MessageResponseFunctionCalls = MessageResponse.FunctionCalls
public typealias MessageResponseAudioSample = MessageResponse.AudioSample
public typealias MessageResponseComplete = MessageResponse.Complete

/// `response` as an enumeration to switch over (the function SKIE writes for LEAP's sealed
/// classes; LEAP's responses already are one).
public func onEnum(of response: MessageResponse) -> MessageResponse { response }

/// Why a reply ended.
public enum GenerationFinishReason: Sendable, Hashable, CaseIterable {
    /// The model ended its reply (or its value was complete).
    case stop
    /// The context window is full; the reply may stop mid-sentence.
    case exceedContext
    /// The caller cancelled the generation.
    case interrupted
    /// A constraint (a JSON Schema, `maxTokens` for a value) ended the reply early.
    case constraint
    /// The reply failed (see ``MessageResponse/Complete/error``); it is not added to the history.
    case error

    init(_ reason: FinishReason) {
        self = switch reason {
        case .stop: .stop
        case .maxTokens: .stop
        case .exceededContext: .exceedContext
        case .interrupted: .interrupted
        case .constraint: .constraint
        case .error: .error
        }
    }
}

/// What a reply cost, as LEAP counts it.
public struct GenerationStats: Sendable, Hashable {
    /// Prompt tokens computed (not those restored from the KV cache).
    public let promptTokens: Int64
    /// Tokens generated.
    public let completionTokens: Int64
    /// `promptTokens + completionTokens`.
    public let totalTokens: Int64
    /// Generation throughput.
    public let tokenPerSecond: Float
    /// Prompt tokens restored from the KV cache (0 when none).
    public let cachedPromptTokens: Int64

    public init(promptTokens: Int64, completionTokens: Int64, totalTokens: Int64, tokenPerSecond: Float, cachedPromptTokens: Int64) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.totalTokens = totalTokens
        self.tokenPerSecond = tokenPerSecond
        self.cachedPromptTokens = cachedPromptTokens
    }

    init(_ stats: Typeset.GenerationStats) {
        let computed = Int64(stats.promptTokens - stats.cachedPromptTokens)
        self.init(
            promptTokens: computed, completionTokens: Int64(stats.completionTokens), totalTokens: computed + Int64(stats.completionTokens),
            tokenPerSecond: Float(stats.tokensPerSecond), cachedPromptTokens: Int64(stats.cachedPromptTokens))
    }
}

/// The stream a LEAP conversation returns: an `AsyncSequence` that never throws (a failed
/// reply ends with ``GenerationFinishReason/error``), so both `for await` and `for try await`
/// read it. Dropping it, or cancelling the task that reads it, stops the reply within a token.
public struct SkieSwiftFlow<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = Never
    let stream: AsyncStream<Element>

    public func makeAsyncIterator() -> AsyncStream<Element>.Iterator { stream.makeAsyncIterator() }
}
