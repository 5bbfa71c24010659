import Dispatch
import TypesetGrammar
import Models

/// What a reply is asked to be: the caller's options, and what the typed API and the server
/// add to them (a value held to a schema that is not the options' text, a value-or-call
/// grammar, how calls may follow one another). Every way of asking for a reply — a
/// conversation's turn, `respond`, a completion, the server's requests — says it with this,
/// and ``ModelRunner`` turns it into a ``ReplyPlan``.
package struct ReplyRequest: Sendable {
    /// The options as the caller gave them (`nil` fields are the model's defaults).
    package var options: GenerationOptions
    /// What the reply is held to, when it is not `options.jsonSchema` (which is used when this
    /// is `nil`).
    package var schema: ReplySchema?
    /// A caller's own constraint the whole reply is held to, in place of a schema (a reply
    /// starts from a copy of this value).
    package var constraint: (any TokenConstraint & Sendable)?
    /// The beginning of the reply, written by the caller, which the model continues (an
    /// assistant message to finish: OpenAI-style "prefill"). The reply's text is what follows
    /// it; the history keeps the whole message. Not with a schema, a constraint or functions.
    package var prefill = ""
    /// Whether the prompt ends with the template's opening of the assistant's turn; only a
    /// prompt shown without a reply (``Conversation/prompt(answering:request:)``) may leave it out.
    package var addsGenerationPrompt = true
    /// The reply may not open with what would be a call (`{` or a code fence): the last round
    /// of `respond` after the model repeated a call, or the server's `tool_choice: none` with
    /// tools in play, when an answer in words is what is asked for.
    package var forbidsCallOpening = false
    /// Whether the reply may make several function calls (OpenAI's `parallel_tool_calls`):
    /// when false, the end of generation is all that may follow the first call.
    package var allowsSeveralCalls = true
    /// Told the prompt tokens computed so far and those to compute in all, after each prefill
    /// chunk (a completion's; a conversation's reply uses ``Conversation/prefillProgress``).
    package var onPrefill: (@Sendable (_ computed: Int, _ total: Int) -> Void)?

    package init(options: GenerationOptions, schema: ReplySchema? = nil) {
        self.options = options
        self.schema = schema
    }
}

/// A reply held to a JSON value: the schema as a value (compiled as it is, not written out
/// and parsed back), and what the prompt shows of it.
package struct ReplySchema: Sendable {
    /// The schema the reply's grammar is compiled from.
    package let document: JSONValue
    /// The schema `injectSchemaIntoPrompt` shows the model: the value's own when the reply
    /// may also be a call (it is asked for the value, and held to either).
    package let shown: String

    /// A value of `schema`.
    package static func value(_ schema: JSONValue, shown: String? = nil) -> ReplySchema {
        ReplySchema(document: schema, shown: shown ?? schema.compactText)
    }

    /// A value of `schema`, or a call of one of `functions` (only a call when `valueAllowed`
    /// is false, or there is no value schema): one grammar holds the reply to either, told
    /// apart once it is complete. The value's definitions stay at the root.
    package static func valueOrCall(
        _ schema: JSONValue?, functions: [FunctionDefinition], valueAllowed: Bool, shown: String? = nil
    ) -> ReplySchema {
        let alternatives = ChatPromptRenderer.callAlternatives(functions)
        guard valueAllowed, case .object(var members)? = schema else {
            let calls = ChatPromptRenderer.callSchema(functions)
            return ReplySchema(document: calls, shown: shown ?? schema?.compactText ?? calls.compactText)
        }
        let definitions = members.first { $0.0 == "$defs" }
        members.removeAll { $0.0 == "$defs" || $0.0 == "title" }
        var root: [(String, JSONValue)] = [("anyOf", .array([.object(members)] + alternatives))]
        if let definitions { root.append(definitions) }
        return ReplySchema(document: .object(root), shown: shown ?? schema!.compactText)
    }
}

/// Everything the runner needs to decode one reply, made from a ``ReplyRequest`` on the
/// runner's preparation queue (rendering a prompt and compiling a grammar take time) and
/// started by ``ModelRunner/startReply(isAbandoned:plan:onEnd:)``.
struct ReplyPlan {
    /// The tokens to prefill: a rendered conversation, or a completion's text.
    var prompt: [Int]
    /// The reply's options, every `nil` sampling field filled from the model's defaults.
    var options: GenerationOptions
    /// What the whole reply is held to, at its start: a JSON Schema's grammar (a value, or a
    /// value or a call), or a caller's own constraint.
    var constraint: (any TokenConstraint & Sendable)?
    /// How free text is routed: thinking, and function calls.
    var routing: Routing
    /// The conversation whose cache the reply uses and keeps (`nil`: a cache from the pool,
    /// returned to it when the reply ends).
    var cacheOwner: Int?
    /// Told the prompt tokens computed so far and in all, after each prefill chunk.
    var onPrefill: (@Sendable (Int, Int) -> Void)?
    /// The prompt as text, where it was rendered from a conversation (a chat template's
    /// output); empty for a completion's tokens.
    var promptText = ""

    /// How a reply's free text is routed into reasoning, content and function calls.
    struct Routing {
        /// Whether a `<think>` block at the start streams as reasoning.
        var detectsThinking: Bool
        /// Whether the prompt ends inside a `<think>` block the template opened: the reply
        /// starts with reasoning (with `detectsThinking`).
        var startsInReasoning = false
        /// The model's `<think>` and `</think>` tokens, when it has them: a reasoning budget
        /// forces the closing one.
        var thinkingMarkers: ThinkingMarkers?
        /// Harmony's markers, when the reply is Harmony messages (gpt-oss: the prompt ends with
        /// `<|start|>assistant`): channels route the text, a budget forces `<|end|>`.
        var harmony: HarmonyMarkers?
        /// How the model writes calls (a call marker that is one control token is shown as
        /// text even when calls are not parsed).
        var callFormat: FunctionCallFormat
        /// How calls are detected and held to their grammar (`nil`: they are not).
        var calls: Calls?
        /// The reply may not open with what would be a call (``ReplyRequest/forbidsCallOpening``).
        var forbidsCallOpening = false

        /// No thinking, no calls: a completion's text.
        static let plain = Routing(detectsThinking: false, callFormat: .hermes, calls: nil)

        /// A chat reply's routing under `options` (filled): thinking is detected in a reply not
        /// held to a grammar unless it is off (`thinking`, from the prompt; without one, from the
        /// options alone); calls are written in the options' format.
        init(options: GenerationOptions, constrained: Bool, calls: Calls?, forbidsCallOpening: Bool, thinking: ReplyThinking? = nil) {
            let thinking = thinking ?? ReplyThinking(promptText: "", options: options)
            detectsThinking = !constrained && thinking != .off
            startsInReasoning = thinking == .opened
            callFormat = options.callFormat
            self.calls = calls
            self.forbidsCallOpening = forbidsCallOpening
        }

        init(detectsThinking: Bool, callFormat: FunctionCallFormat, calls: Calls?, forbidsCallOpening: Bool = false) {
            self.detectsThinking = detectsThinking
            self.callFormat = callFormat
            self.calls = calls
            self.forbidsCallOpening = forbidsCallOpening
        }
    }

    /// Function calls in a reply's free text.
    struct Calls {
        /// The grammar of a call to one of the functions.
        var grammar: CompiledGrammar
        /// The reply starts with a call (its marker is written for the model).
        var startsWithCall: Bool
        /// The number of the reply's first call (its id is `call_<number>`).
        var firstNumber: Int
        /// Whether another call may follow the first (``ReplyRequest/allowsSeveralCalls``).
        var allowsSeveral: Bool
        /// Each function's arguments grammar, by name: a Harmony call's body is its arguments,
        /// its function named in the header (`to=functions.NAME`).
        var argumentGrammars: [String: CompiledGrammar] = [:]
    }
}

/// What a reply is held to: the constraint at the reply's start, and, for a schema, its
/// compiled grammar and the schema itself.
struct ReplyConstraint {
    let start: any TokenConstraint & Sendable
    let grammar: CompiledGrammar?
    let schema: ReplySchema?
}

extension ModelRunner {
    /// What `request` holds its reply to: the caller's constraint, or its schema's grammar
    /// (compiled, from the runner's cache) with the schema; `nil` for a free reply.
    func constraint(for request: ReplyRequest) throws(ConversationError) -> ReplyConstraint? {
        if let constraint = request.constraint {
            guard request.schema == nil, request.options.jsonSchema == nil else {
                throw .unsupportedOption(name: "jsonSchema", reason: "a reply is held to one constraint: a schema, or a TokenConstraint, not both")
            }
            guard constraint.vocabularySize == tokenizer.vocabulary.count else {
                throw .unsupportedOption(
                    name: "constraint",
                    reason: "its vocabulary has \(constraint.vocabularySize) tokens, the model's \(tokenizer.vocabulary.count)")
            }
            return ReplyConstraint(start: constraint, grammar: nil, schema: nil)
        }
        var schema = request.schema
        if schema == nil, let text = request.options.jsonSchema {
            do throws(GrammarError) { schema = .value(try JSONValue(parsingSchema: text, budget: grammarBudget), shown: text) } catch {
                throw .invalidSchema(error)
            }
        }
        guard let schema else { return nil }
        let grammar = try compiledGrammar(schema: schema.document, options: request.options.schemaOptions)
        return ReplyConstraint(start: GrammarMatcher(grammar), grammar: grammar, schema: schema)
    }

    /// Starts a reply: the one way every reply begins, whoever asked for it.
    ///
    /// On the runner's preparation queue, in the order replies were asked for, `plan` makes
    /// the plan (renders the prompt, compiles the grammar: a compilation must not stall the
    /// replies being decoded); the reply then takes its cache (the owner's, or one from the
    /// pool) and joins the scheduler. When it ends, its pooled cache goes back to the pool,
    /// `onEnd` is told how it ended, and the stream yields `.complete` (or throws).
    ///
    /// The stream yields what ``Conversation/generateResponse(to:options:)-(ChatMessage,_)``
    /// documents. Dropping it, or cancelling its consumer, stops the reply within one token;
    /// so does `isAbandoned` returning true (asked before each token).
    func startReply(
        isAbandoned: (@Sendable () -> Bool)?,
        plan makePlan: @escaping @Sendable () throws(ConversationError) -> ReplyPlan,
        onEnd: @escaping @Sendable (Result<Reply, ConversationError>) -> Void = { _ in }
    ) -> AsyncThrowingStream<MessageResponse, Error> {
        let (stream, continuation) = AsyncThrowingStream<MessageResponse, Error>.makeStream()
        let requested = ContinuousClock.now
        let cancellation = CancellationFlag()
        continuation.onTermination = { termination in
            if case .cancelled = termination { cancellation.cancel() }
        }
        state.withLock { $0.activeGenerations.append(cancellation) }
        let end: @Sendable (Result<Reply, ConversationError>, _ pooledCache: KVCache?) -> Void = { [self] result, cache in
            state.withLock { state in
                state.activeGenerations.removeAll { $0 === cancellation }
                if let cache, state.model != nil { state.caches.recycle(cache) }
            }
            onEnd(result)
            switch result {
            case .success(let reply):
                continuation.yield(.complete(message: reply.message, finishReason: reply.finishReason, stats: reply.stats))
                continuation.finish()
            case .failure(let error):
                continuation.finish(throwing: error)
            }
        }
        preparation.async { [self] in
            do throws(ConversationError) {
                let plan = try makePlan()
                guard !plan.prompt.isEmpty else { throw .model(.emptyPrompt) }
                guard plan.prompt.count < contextLength else {
                    throw .contextOverflow(promptTokens: plan.prompt.count, contextLength: contextLength)
                }
                let (model, scheduler, prepared, draftModel) = try state.withLock { state throws(ConversationError) in
                    guard let model = state.model, let scheduler = state.scheduler else { throw .runnerUnloaded }
                    let prepared = state.caches.cache(for: plan.prompt, owner: plan.cacheOwner, of: model, contextLength: contextLength)
                    return (model, scheduler, prepared, state.draftModel)
                }
                let cache = prepared.fill(releasingUnder: state)
                let pooledCache = plan.cacheOwner == nil ? cache : nil
                let decoder = ReplyDecoder(
                    plan: plan, tokenizer: tokenizer, cancellation: cancellation, isAbandoned: isAbandoned,
                    emit: { continuation.yield($0) })
                let vocabulary = tokenizer.vocabulary
                var loop = TokenLoop(
                    source: ModelSequence(model: model, cache: cache, threadCount: threadCount),
                    maxTokens: plan.options.maxTokens ?? Int.max, isEndOfGeneration: { vocabulary.isEndOfGeneration($0) })
                loop.lookup = plan.options.promptLookup
                loop.drafter = draftModel.map(ModelDrafter.init)
                let generation = Scheduler.Generation(
                    loop: loop, stepper: decoder, prompt: plan.prompt, opening: decoder.opening, requested: requested)
                generation.completion = { result in
                    switch result {
                    case .success(let outcome): end(.success(decoder.finish(outcome)), pooledCache)
                    case .failure(let error): end(.failure(.model(error)), pooledCache)
                    }
                }
                scheduler.submit(generation)
            } catch {
                end(.failure(error), nil)
            }
        }
        return stream
    }
}
