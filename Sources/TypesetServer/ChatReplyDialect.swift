import Synchronization
import Typeset

/// A chat reply as every chat dialect presents it: reasoning, text, calls, and its end.
///
/// The engine's events (``MessageResponse``) become parts once, in ``ReplyAssembler``, which
/// also decides what a reply held to "a value or a call" was; each dialect (chat completions,
/// Responses, Anthropic's Messages) only writes the parts in its own shapes.
enum ReplyPart {
    /// Text of the model's reasoning.
    case reasoning(String)
    /// Text of the reply, with the log-probabilities of the tokens it came from.
    case text(String, logprobs: [TokenLogprob])
    /// A call begins: its id and name; `index` is its position among the reply's calls.
    /// Its arguments follow, then its end, before another call begins.
    case callStarted(id: String, name: String, index: Int)
    /// The next piece of the arguments of the call at `index` (the pieces joined are its
    /// `argumentsText`).
    case callArguments(String, index: Int)
    /// The call at `index` is complete.
    case callFinished(FunctionCall, index: Int)
    /// The call at `index` ends incomplete (the reply was cut short in it): no call.
    case callAbandoned(index: Int)
    /// The end; `trailingLogprobs` are those of tokens no text part carried (a stream sends
    /// them with its last event).
    case end(FinishedReply, trailingLogprobs: [TokenLogprob])
}

/// A complete reply, as a dialect answers it whole.
struct FinishedReply {
    /// The reply's text (empty for a reply that only calls).
    var content: String
    var reasoning: String?
    var calls: [FunctionCall]
    var reason: FinishReason
    var stats: GenerationStats
    /// Every token's log-probability, or `nil` when the request did not ask for them.
    var logprobs: [TokenLogprob]?
}

/// Turns a reply's events into ``ReplyPart``s. A reply held to "a value of the schema or a
/// call" is told apart only once it is complete, so its text is held until then and becomes
/// either text or a call. Calls come as the model writes them (``MessageResponse/functionCallDelta(id:name:arguments:)``):
/// each one started, its arguments piece by piece, finished, one call after another.
struct ReplyAssembler: Sendable {
    /// The reply is held to a grammar of the value or a call of one of `toolNames`.
    let valueOrCall: Bool
    let toolNames: Set<String>
    /// Whether the request asked for log-probabilities.
    let wantsLogprobs: Bool
    private var pendingLogprobs: [TokenLogprob] = []
    private var allLogprobs: [TokenLogprob] = []
    private var callCount = 0
    /// The call being streamed: its position, name and arguments so far.
    private var openCall: (id: String, name: String, index: Int, arguments: String)?
    /// The ids of the calls finished so far.
    private var finishedCalls: Set<String> = []

    init(valueOrCall: Bool, toolNames: Set<String>, wantsLogprobs: Bool) {
        self.valueOrCall = valueOrCall
        self.toolNames = toolNames
        self.wantsLogprobs = wantsLogprobs
    }

    /// The parts one of the reply's events makes (none while text is held or for a
    /// log-probability, which travels with the next text).
    mutating func parts(for event: MessageResponse) -> [ReplyPart] {
        switch event {
        case .logprob(let entry):
            pendingLogprobs.append(entry)
            allLogprobs.append(entry)
            return []
        case .chunk(let text):
            if valueOrCall { return [] }
            // Text after a call (or the text of a call cut short) begins once the call ends.
            return finishOpenCall() + [.text(text, logprobs: takePendingLogprobs())]
        case .reasoningChunk(let text):
            return finishOpenCall() + [.reasoning(text)]
        case .functionCallDelta(let id, let name, let arguments):
            var parts: [ReplyPart] = []
            if openCall?.id != id {
                parts += finishOpenCall()
                openCall = (id, name, callCount, "")
                parts.append(.callStarted(id: id, name: name, index: callCount))
                callCount += 1
            }
            if !arguments.isEmpty {
                openCall!.arguments += arguments
                parts.append(.callArguments(arguments, index: openCall!.index))
            }
            return parts
        case .functionCalls(let calls):
            var parts: [ReplyPart] = []
            for call in calls where !finishedCalls.contains(call.id) {
                if openCall?.id == call.id {
                    parts.append(.callFinished(call, index: openCall!.index))
                    finishedCalls.insert(call.id)
                    openCall = nil
                } else {
                    parts += finishOpenCall() + whole(call)
                }
            }
            return parts
        case .complete(let message, let reason, let stats):
            var parts = finishOpenCall()
            var content = message.content
            var calls = message.functionCalls
            if valueOrCall {
                if let value = try? JSONValue(parsing: message.content),
                   let call = Conversation.call(in: value, toolNames: toolNames, number: 1) {
                    content = ""
                    calls = [call]
                    parts += whole(call)
                } else if !content.isEmpty {
                    parts.append(.text(content, logprobs: takePendingLogprobs()))
                }
            }
            let reply = FinishedReply(
                content: content, reasoning: message.reasoning, calls: calls, reason: reason, stats: stats,
                logprobs: wantsLogprobs ? allLogprobs : nil)
            parts.append(.end(reply, trailingLogprobs: takePendingLogprobs()))
            return parts
        }
    }

    /// The call being streamed, ended: a call is complete when anything else follows it (its
    /// arguments were streamed whole by then); arguments that do not read as JSON are those of
    /// a call cut short, which is abandoned.
    private mutating func finishOpenCall() -> [ReplyPart] {
        guard let call = openCall else { return [] }
        openCall = nil
        finishedCalls.insert(call.id)
        guard let arguments = try? JSONValue(parsing: call.arguments) else { return [.callAbandoned(index: call.index)] }
        return [.callFinished(FunctionCall(id: call.id, name: call.name, arguments: arguments), index: call.index)]
    }

    /// A call that was not streamed, as the parts of one that was.
    private mutating func whole(_ call: FunctionCall) -> [ReplyPart] {
        defer { callCount += 1 }
        finishedCalls.insert(call.id)
        return [
            .callStarted(id: call.id, name: call.name, index: callCount), .callArguments(call.argumentsText, index: callCount),
            .callFinished(call, index: callCount),
        ]
    }

    private mutating func takePendingLogprobs() -> [TokenLogprob] {
        defer { pendingLogprobs.removeAll() }
        return pendingLogprobs
    }
}

/// How one chat API writes replies: whole, and as a stream of events.
protocol ChatReplyDialect: Sendable {
    /// The events that open a stream, before the reply's first part.
    var opening: [JSONValue] { mutating get }
    /// A stream's events for one part of the reply.
    mutating func events(for part: ReplyPart) -> [JSONValue]
    /// The whole reply, answered when the request does not stream.
    func response(_ reply: FinishedReply) -> JSONValue
    /// How the stream says an error (the request's time ran out, the reply failed).
    func errorEvent(_ error: APIError) -> JSONValue
    /// Whether each event is named (`event: <its type>`), as the Responses and Messages
    /// streams are.
    var namesEvents: Bool { get }
    /// Whether the stream ends with `data: [DONE]`.
    var endsWithDone: Bool { get }
    /// `error` with the request field it names spelled as this dialect spells it (the chat
    /// request a dialect's request becomes names them as chat completions does).
    func translated(_ error: APIError) -> APIError
    /// The stream's event telling how far the prompt's reading has come (`nil`: the dialect
    /// has none).
    mutating func progressEvent(_ progress: PromptProgress) -> JSONValue?
    /// Whether the reply tells its prompt (its length in a stream's opening, its text for
    /// debugging), which is then rendered before the reply starts and given to
    /// ``start(prompt:)``.
    var needsPrompt: Bool { get }
    mutating func start(prompt: (text: String, tokens: [Int]))
}

extension ChatReplyDialect {
    var opening: [JSONValue] { [] }
    func errorEvent(_ error: APIError) -> JSONValue { error.json }
    var namesEvents: Bool { false }
    var endsWithDone: Bool { true }
    func translated(_ error: APIError) -> APIError { error }
    var needsPrompt: Bool { false }
    mutating func start(prompt: (text: String, tokens: [Int])) {}
    func progressEvent(_ progress: PromptProgress) -> JSONValue? { nil }
}

/// A dialect's stream of a reply: the reply's events assembled into parts, the parts written
/// as the dialect's events.
struct ChatReplyStreamEncoder<Dialect: ChatReplyDialect>: ReplyStreamEncoder {
    var assembler: ReplyAssembler
    var dialect: Dialect
    /// When the request asked for it, the tokens' trace: the steps decoded since the previous
    /// event go with the last event each reply event makes.
    var trace: TokenTraceWriter?
    /// When the request asked for them (`timings_per_token`), the timings every event carries.
    var timings: RunningTimings?

    var opening: [JSONValue] {
        mutating get { dialect.opening }
    }
    var namesEvents: Bool { dialect.namesEvents }
    var endsWithDone: Bool { dialect.endsWithDone }
    func errorEvent(_ error: APIError) -> JSONValue { dialect.errorEvent(dialect.translated(error)) }
    mutating func progressEvent(_ progress: PromptProgress) -> JSONValue? {
        guard let event = dialect.progressEvent(progress) else { return nil }
        return timings == nil ? event : TypesetServer.adding(timings: progress.timings, to: event)
    }

    mutating func events(for event: MessageResponse) -> [JSONValue] {
        var events = assembler.parts(for: event).flatMap { dialect.events(for: $0) }
        if let trace, let last = events.popLast() { events.append(trace.adding(to: last)) }
        if let timings {
            let now = timings.json
            events = events.map { TypesetServer.adding(timings: now, to: $0) }
        }
        return events
    }
}

/// The timings of a reply under way, for a stream that asked for them on every event
/// (llama-server's `timings_per_token`): the prompt's tokens computed so far and their time
/// since the request began, the tokens generated so far (counted by ``trace``) and the time
/// since the prompt was read, in the shape of the reply's final `timings`.
final class RunningTimings: Sendable {
    /// Where the reply's tokens are counted (set as the reply's ``GenerationOptions/tokenTrace``).
    let trace: TokenTrace
    private let promptTokens: Int
    private let started = ContinuousClock.now
    private let prompt = Mutex<(cached: Int, computed: Int, seconds: Double, read: ContinuousClock.Instant?)>((0, 0, 0, nil))

    /// `promptTokens`: the prompt's length, the cached tokens included; `trace`: the reply's.
    init(promptTokens: Int, trace: TokenTrace) {
        self.promptTokens = promptTokens
        self.trace = trace
    }

    /// After a prefill chunk: `computed` of the `total` tokens to compute (those not reused).
    func report(computed: Int, total: Int) {
        let now = ContinuousClock.now
        prompt.withLock { prompt in
            prompt = (max(0, promptTokens - total), computed, (now - started).seconds, computed >= total ? now : nil)
        }
    }

    /// The timings now.
    var json: JSONValue {
        let now = ContinuousClock.now
        let (cached, computed, seconds, read) = prompt.withLock { $0 }
        return TypesetServer.timings(
            cached: cached, computed: computed, promptSeconds: seconds, generated: trace.count,
            generationSeconds: read.map { (now - $0).seconds } ?? 0)
    }
}

/// How far the reading of a prompt has come, for a stream that asked (`return_progress`), in
/// llama-server's terms: the prompt's tokens, those reused from the cache, those read so far
/// (the cached ones included), and the milliseconds since the request began.
struct PromptProgress: Sendable {
    var total: Int
    var cache: Int
    var processed: Int
    var milliseconds: Double

    var json: JSONValue {
        .object([
            ("total", JSONValue(total)), ("cache", JSONValue(cache)), ("processed", JSONValue(processed)),
            ("time_ms", JSONValue(milliseconds)),
        ])
    }

    /// The timings at this point (`timings_per_token`): the prompt's tokens computed so far
    /// and their time (none before the first is read), nothing generated yet.
    var timings: JSONValue {
        TypesetServer.timings(
            cached: cache, computed: processed - cache, promptSeconds: processed > cache ? milliseconds / 1000 : 0, generated: 0,
            generationSeconds: 0)
    }
}

/// The prompt progress of one reply, as a sequence the stream reads before the reply's first
/// event: the conversation's prefill callback reports each chunk read; the first report is
/// preceded by one where nothing is read yet but the cache (as llama-server starts).
final class PromptProgressFeed: Sendable {
    let updates: AsyncStream<PromptProgress>
    private let continuation: AsyncStream<PromptProgress>.Continuation
    private let promptTokens: Int
    private let started = ContinuousClock.now
    private let reported = Mutex(false)

    /// `promptTokens`: the prompt's length, the cached tokens included.
    init(promptTokens: Int) {
        (updates, continuation) = AsyncStream<PromptProgress>.makeStream()
        self.promptTokens = promptTokens
    }

    /// After a prefill chunk: `computed` of the `total` tokens to compute (those not reused).
    func report(computed: Int, total: Int) {
        let cache = max(0, promptTokens - total)
        let milliseconds = (ContinuousClock.now - started).seconds * 1000
        let first = reported.withLock { reported in
            defer { reported = true }
            return !reported
        }
        if first {
            continuation.yield(PromptProgress(total: promptTokens, cache: cache, processed: cache, milliseconds: milliseconds))
        }
        continuation.yield(PromptProgress(total: promptTokens, cache: cache, processed: cache + computed, milliseconds: milliseconds))
    }

    /// No more progress: the reply has begun (or failed).
    func finish() { continuation.finish() }
}
