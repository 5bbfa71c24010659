import TypesetGrammar
import TypesetTokenizer
import Models
import Synchronization

/// A chat with a model: its history, its registered functions, and the KV cache that lets each
/// turn reuse the computation of the turns before.
///
/// `Sendable`; every property is a snapshot taken under a lock. One reply at a time per
/// conversation: a second `generateResponse` while one is streaming (or queued) throws
/// ``ConversationError/generationInProgress``. Replies of different conversations of one
/// runner are decoded together, in one batch (see ``ModelRunner``).
///
/// **History.** `generateResponse(to:)` appends the new message at once; the reply is appended
/// when it completes (finish reasons `stop`, `maxTokens`, `exceededContext`, `constraint`).
/// An interrupted or failed reply is not appended, which leaves the request as the last message:
/// `removeLastMessage()` takes it back, or a new `generateResponse` answers it again.
public final class Conversation: Sendable {
    public let runner: ModelRunner
    let state: Mutex<ConversationState>
    /// This conversation's key for its KV cache, which the runner holds (so `unload()` can
    /// release every cache).
    let identifier: Int

    init(runner: ModelRunner, history: [ChatMessage]) {
        self.runner = runner
        state = Mutex(ConversationState(history: history))
        identifier = runner.state.withLock { state in
            state.nextConversation += 1
            return state.nextConversation
        }
    }

    deinit {
        // The cache goes back to the runner's pool, so a new conversation that starts the same
        // way (a server's next request with the same system prompt) reuses what it computed.
        runner.state.withLock { $0.caches.release(owner: identifier) }
    }

    /// Gives the conversation's KV cache back to the runner's pool now, as its end would, for
    /// a caller that is done with it: a reply's closures may keep the conversation itself
    /// alive a moment after its `.complete` is read, and a new conversation started meanwhile
    /// would not find the cache. A later reply of this conversation starts from the pool, as a
    /// new conversation's does. Does nothing while a reply is under way.
    package func releaseCache() {
        guard !isGenerating else { return }
        runner.state.withLock { $0.caches.release(owner: identifier) }
    }

    // MARK: State

    /// The messages so far (a copy).
    public var history: [ChatMessage] { state.withLock { $0.history } }

    /// Whether a reply is being generated or waits its turn.
    public var isGenerating: Bool { state.withLock { $0.isGenerating } }

    /// The functions the model may call, in registration order.
    public var functions: [FunctionDefinition] { state.withLock { $0.functions } }

    /// How the last reply ended and what it cost (`nil` before the first); also set when the
    /// consumer cancelled and so never saw the `.complete` response.
    public var lastCompletion: (finishReason: FinishReason, stats: GenerationStats)? {
        state.withLock { $0.lastCompletion }
    }

    /// Called while a reply's prompt is computed, before its first token: with the prompt
    /// tokens computed so far and those to compute in all (tokens reused from the cache are
    /// not counted), after each chunk of 512. On the runner's thread; keep it short. For a
    /// progress bar on long prompts.
    public var prefillProgress: (@Sendable (_ computed: Int, _ total: Int) -> Void)? {
        get { state.withLock { $0.prefillProgress } }
        set { state.withLock { $0.prefillProgress = newValue } }
    }

    /// Tokens held in this conversation's KV cache (0 before the first reply).
    public var cachedTokenCount: Int { runner.state.withLock { $0.caches.tokenCount(of: identifier) } }

    /// Appends `message` without generating (for example a tool result to send later, or
    /// context to set up).
    public func append(_ message: ChatMessage) throws(ConversationError) {
        try mutate { $0.history.append(message) }
    }

    /// Removes the last message and returns it.
    @discardableResult
    public func removeLastMessage() throws(ConversationError) -> ChatMessage {
        var removed: ChatMessage?
        try mutate { removed = $0.history.popLast() }
        guard let removed else { throw .emptyHistory }
        return removed
    }

    /// Makes `function` callable by the model from the next reply on.
    ///
    /// - Throws: ``ConversationError/invalidFunction(name:reason:)`` for an empty or duplicate
    ///   name, or a parameter schema that does not compile.
    public func register(function: FunctionDefinition) throws(ConversationError) {
        guard !function.name.isEmpty else { throw .invalidFunction(name: function.name, reason: "the name is empty") }
        _ = try runner.compiledGrammar(schema: ChatPromptRenderer.callSchema([function]), options: runner.defaultOptions.callFormat.callGrammarOptions())
        var duplicate = false
        try mutate { state in
            if state.functions.contains(where: { $0.name == function.name }) { duplicate = true } else { state.functions.append(function) }
        }
        if duplicate { throw .invalidFunction(name: function.name, reason: "a function with this name is already registered") }
    }

    /// The history as OpenAI chat-completions JSON (`{"messages": […]}`).
    public func exportOpenAIJSON() -> String { OpenAIChatFormat.encode(history) }

    /// Replaces the history with the messages of OpenAI chat-completions JSON.
    public func importOpenAIJSON(_ text: String) throws(ConversationError) {
        let messages = try OpenAIChatFormat.decode(text)
        try mutate { $0.history = messages }
    }

    private func mutate(_ body: (inout ConversationState) -> Void) throws(ConversationError) {
        guard runner.isLoaded else { throw .runnerUnloaded }
        let busy: Bool = state.withLock { state in
            guard !state.isGenerating else { return true }
            body(&state)
            return false
        }
        if busy { throw .generationInProgress }
    }

    // MARK: Generating

    /// Sends `text` as the user's message and streams the reply.
    public func generateResponse(to text: String, options: GenerationOptions = GenerationOptions())
        -> AsyncThrowingStream<MessageResponse, Error>
    {
        generateResponse(to: .user(text), options: options)
    }

    /// Appends `message` (a user message, or a tool result answering a function call) and
    /// streams the model's reply.
    ///
    /// The stream yields `.chunk` and `.reasoningChunk` as text arrives, `.functionCalls` when
    /// the reply calls functions, then `.complete` with the finished message; it throws
    /// ``ConversationError`` when the reply cannot start (another one is under way, the runner
    /// was unloaded, the schema does not compile, the prompt overflows the context) or fails.
    /// Cancelling the consuming task, or dropping the stream (leaving a `for try await` loop
    /// over it), stops generation within one token; the reply then finishes `interrupted`
    /// (see ``lastCompletion``) and is not added to the history.
    public func generateResponse(to message: ChatMessage, options: GenerationOptions = GenerationOptions())
        -> AsyncThrowingStream<MessageResponse, Error>
    {
        generateResponse(to: message, request: ReplyRequest(options: options), isAbandoned: nil)
    }

    /// Appends `message` and streams a reply held, token by token, to `constraint`: a caller's
    /// own rule (a word list, a length rule, a grammar compiled over the model's vocabulary) in
    /// place of a JSON Schema. The reply is masked, sampled, closed within `maxTokens` and
    /// jumped forward over forced text exactly as a schema's is; it finishes `stop` when the
    /// constraint is complete and nothing may follow, `constraint` when no allowed token is
    /// left. `options.jsonSchema` must be `nil`.
    ///
    /// - Throws (in the stream): ``ConversationError/unsupportedOption(name:reason:)`` when
    ///   the constraint's vocabulary is not the model's, or a schema is set too.
    public func generateResponse(
        to message: ChatMessage, options: GenerationOptions = GenerationOptions(), constraint: some TokenConstraint & Sendable
    ) -> AsyncThrowingStream<MessageResponse, Error> {
        var request = ReplyRequest(options: options)
        request.constraint = constraint
        return generateResponse(to: message, request: request, isAbandoned: nil)
    }

    /// ``generateResponse(to:options:)-(ChatMessage,_)`` of `request` (the typed API's and the
    /// server's), stopping also when `isAbandoned` says so (asked before each token): the
    /// server's check that its client is still there.
    package func generateResponse(
        to message: ChatMessage, request: ReplyRequest, isAbandoned: (@Sendable () -> Bool)?
    ) -> AsyncThrowingStream<MessageResponse, Error> {
        let accepted: Bool? = runner.isLoaded ? state.withLock { state in
            guard !state.isGenerating else { return false }
            state.isGenerating = true
            state.history.append(message)
            return true
        } : nil
        guard accepted == true else {
            let error: ConversationError = accepted == nil ? .runnerUnloaded : .generationInProgress
            return AsyncThrowingStream { $0.finish(throwing: error) }
        }
        return runner.startReply(isAbandoned: isAbandoned, plan: { [self] () throws(ConversationError) in try plan(for: request) }) {
            [self] outcome in
            state.withLock { state in
                switch outcome {
                case .success(let reply):
                    var message = reply.message
                    // The history keeps the whole message: the caller's beginning and the reply.
                    message.content = request.prefill + message.content
                    if reply.appendsToHistory { state.history.append(message) }
                    state.lastCompletion = (reply.finishReason, reply.stats)
                case .failure:
                    state.lastCompletion = (.error, GenerationStats())
                }
                state.isGenerating = false
            }
        }
    }

    /// The prompt a reply to `message` under `request` would read, as text (the chat template's
    /// rendering) and tokens, without replying: the history as it stands, the registered
    /// functions, the schema's instruction. The server's `/apply-template` and token counts.
    package func prompt(answering message: ChatMessage, request: ReplyRequest) throws(ConversationError) -> (text: String, tokens: [Int]) {
        let (history, functions) = state.withLock { ($0.history, $0.functions) }
        let planned = try plan(for: request, history: history + [message], functions: functions).plan
        return (planned.promptText, planned.prompt)
    }

    /// The plan of a reply to the history as it stands: the options filled from the model's
    /// defaults, the grammars compiled (the schema, the calls), the schema's instruction added
    /// to the request (and kept in the history), the prompt rendered.
    private func plan(for request: ReplyRequest) throws(ConversationError) -> ReplyPlan {
        let (history, functions, onPrefill) = state.withLock { ($0.history, $0.functions, $0.prefillProgress) }
        let planned = try plan(for: request, history: history, functions: functions)
        var plan = planned.plan
        if let instructed = planned.instructed {
            // The instruction is part of what the model was asked: keep it in the history,
            // so later turns render the same prompt (and reuse the cache).
            state.withLock { state in
                if let index = state.history.indices.last { state.history[index] = instructed }
            }
        }
        plan.onPrefill = onPrefill
        return plan
    }

    /// The plan of a reply to `history`, and the last message with the schema's instruction
    /// when one was added to it.
    private func plan(
        for request: ReplyRequest, history: [ChatMessage], functions: [FunctionDefinition]
    ) throws(ConversationError) -> (plan: ReplyPlan, instructed: ChatMessage?) {
        var options = request.options.filled(from: runner.defaultOptions)
        var promptHistory = history
        var instructed: ChatMessage?
        let constraint = try runner.constraint(for: request)
        if let schema = constraint?.schema {
            if options.injectSchemaIntoPrompt, let last = promptHistory.indices.last {
                promptHistory[last].content = Self.instructedRequest(promptHistory[last].content, schema: schema.shown)
                instructed = promptHistory[last]
            }
        }
        // A reply held to a schema is that value only; function calls are for free replies.
        let callFunctions = constraint == nil && options.functionCallMode != .disabled ? functions : []
        let callGrammar = callFunctions.isEmpty || options.functionCallMode == .unparsed ? nil
            : try runner.compiledGrammar(
                schema: ChatPromptRenderer.callSchema(callFunctions),
                options: options.callFormat.callGrammarOptions(several: request.allowsSeveralCalls))
        if constraint?.schema != nil || callGrammar != nil { options = options.writingJSON() }
        if !request.prefill.isEmpty, constraint != nil || !callFunctions.isEmpty {
            throw .unsupportedOption(
                name: "prefill", reason: "a reply that continues an assistant message cannot be held to a schema or call functions")
        }
        let prompt = try runner.prompts.rendered(
            promptHistory, functions: callFunctions, format: options.callFormat, enableThinking: options.enableThinking,
            addGenerationPrompt: request.addsGenerationPrompt, prefill: request.prefill, reasoningEffort: options.reasoningEffort)
        if !request.prefill.isEmpty { options.inlineThinkingTags = true }   // the reply is past its start: no thinking to detect
        let thinking = ReplyThinking(promptText: prompt.text, options: options, syntax: runner.thinkingMarkers?.syntax ?? .tags)
        // gpt-oss's template leaves the reply to Harmony messages: their channels, not tags.
        let harmony = prompt.text.hasSuffix(Harmony.generationPrompt) ? runner.harmonyMarkers : nil
        if !callFunctions.isEmpty, options.functionCallMode != .unparsed, runner.writesGemmaCalls {
            // Its calls would stream as text, never run: refused rather than ignored (unparsed
            // calls are text by request).
            throw .unsupportedOption(
                name: "tools", reason: "Gemma 4 writes calls as <|tool_call>call:name{…}<tool_call|>, which Typeset does not parse yet")
        }
        if harmony != nil, !callFunctions.isEmpty, options.functionCallMode == .required {
            throw .unsupportedOption(
                name: "tool_choice", reason: "a required call is not yet forced in gpt-oss's Harmony format: use auto")
        }
        if harmony != nil, options.enableThinking == false, options.reasoningBudget == nil {
            // gpt-oss always writes its analysis channel: thinking off is a budget of nothing.
            options.reasoningBudget = 0
        }
        if options.closesWithinMaxTokens, let maxTokens = options.maxTokens, let compiled = constraint?.grammar, constraint?.schema != nil {
            // Before the value: `</think>` of reasoning the template opened, or Harmony's final header.
            let closing = harmony != nil
                ? runner.tokenizer.encode(Harmony.channel + "final" + Harmony.message, addingSpecialTokens: false, parsingSpecialTokens: true).count
                : thinking == .opened && runner.thinkingMarkers != nil ? 1 : 0
            // A token holds a byte at least: only a shortest value whose bytes and closing exceed
            // the budget can need more tokens than it, and only then is it written out and counted.
            if compiled.shortestSentenceLength + closing > maxTokens {
                let needed = Self.tokensOfShortestValue(compiled, tokenizer: runner.tokenizer)
                guard needed + closing <= maxTokens else {
                    throw .maxTokensTooSmall(shortestValueTokens: needed + closing, maxTokens: maxTokens)
                }
            }
        }
        var calls = callGrammar.map {
            ReplyPlan.Calls(
                grammar: $0, startsWithCall: options.functionCallMode == .required, firstNumber: Self.callCount(history) + 1,
                allowsSeveral: request.allowsSeveralCalls)
        }
        if harmony != nil, calls != nil {
            // A Harmony call's body is its arguments alone.
            for function in callFunctions {
                calls?.argumentGrammars[function.name] = try runner.compiledGrammar(
                    schema: function.parameters, options: options.callFormat.callGrammarOptions())
            }
        }
        var routing = ReplyPlan.Routing(
            options: options, constrained: constraint != nil, calls: calls,
            forbidsCallOpening: request.forbidsCallOpening, thinking: harmony == nil ? thinking : .off)
        routing.thinkingMarkers = runner.thinkingMarkers
        routing.harmony = harmony
        // A value of a model that thinks comes after its reasoning: the grammar holds the answer only.
        let start = constraint.map { constraint -> any TokenConstraint & Sendable in
            let tokens = min(options.maxTokens ?? .max, runner.contextLength - prompt.tokens.count)
            if let harmony {
                return HarmonyThenValue(
                    value: constraint.start, markers: harmony, vocabulary: runner.tokenizer.vocabulary, budget: options.reasoningBudget,
                    reserve: options.closesWithinMaxTokens ? ReasoningThenValue.valueReserve(tokens: tokens) : 0)
            }
            guard thinking != .off, let markers = runner.thinkingMarkers else { return constraint.start }
            return ReasoningThenValue(
                value: constraint.start, markers: markers, vocabulary: runner.tokenizer.vocabulary,
                startsInReasoning: thinking == .opened, budget: options.reasoningBudget,
                reserve: options.closesWithinMaxTokens ? ReasoningThenValue.valueReserve(tokens: tokens) : 0)
        }
        let plan = ReplyPlan(
            prompt: prompt.tokens, options: options, constraint: start, routing: routing, cacheOwner: identifier,
            promptText: prompt.text)
        return (plan, instructed)
    }

    /// The tokens `constraint`'s shortest value takes as `tokenizer` writes it; for a value
    /// longer than 64 KiB, the fewest it could take (its bytes over the longest token's).
    static func tokensOfShortestValue(_ constraint: CompiledGrammar, tokenizer: Tokenizer) -> Int {
        let length = constraint.shortestSentenceLength
        guard length != Int.max else { return Int.max }
        guard let sentence = constraint.shortestSentence() else {
            let longest = max(1, constraint.vocabulary.longestTokenLength)
            return (length + longest - 1) / longest
        }
        return sentence.withUnsafeBufferPointer {
            tokenizer.encode(bytes: $0, addingSpecialTokens: false, parsingSpecialTokens: false).count
        }
    }

    /// The request as `injectSchemaIntoPrompt` writes it: a paragraph asking for a value of
    /// `schema` and the schema itself, then a blank line and `request`.
    ///
    /// The schema comes first. Read last, right before the answer, it is what small models
    /// copy: its title into a `title` or `name` field, its descriptions into strings. On the
    /// extraction cases of `Benchmarks/value_quality.py` (16 prompts whose answers they state,
    /// 47 fields), greedy, the fields right with the schema after the request and before it:
    /// SmolLM2 15 and 20, Gemma 3 21 and 25, Qwen2.5-Coder 0.5B 36 and 44 (docs/conversation.md).
    package static func instructedRequest(_ request: String, schema: String) -> String {
        "Answer with a JSON value that conforms to this JSON Schema:\n" + schema.trimmingWhitespace + "\n\n" + request
    }
}

struct ConversationState: Sendable {
    var history: [ChatMessage]
    var functions: [FunctionDefinition] = []
    /// The tools among the functions, by name.
    var tools: [String: any Tool] = [:]
    var isGenerating = false
    var lastCompletion: (finishReason: FinishReason, stats: GenerationStats)?
    var prefillProgress: (@Sendable (Int, Int) -> Void)?
}
