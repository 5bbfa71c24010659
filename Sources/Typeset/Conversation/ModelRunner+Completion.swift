import Grammar
import Models

extension ModelRunner {
    /// Continues `text` as it is, without a chat template: the model writes what follows
    /// (a base model's use, and OpenAI's `/v1/completions`). Decoded with the conversations'
    /// replies, in the same batches; streams as ``Conversation/generateResponse(to:options:)-(String,_)``
    /// does (`.chunk`s, then `.complete` with the generated text as an assistant message).
    ///
    /// `options.jsonSchema` holds the continuation to a schema; `stopSequences` end it; no
    /// function calls, and no thinking (the text is the model's, not a turn of a chat).
    ///
    /// - Parameter addsBOS: begin with the beginning-of-sequence token when the model expects one.
    public func generateCompletion(of text: String, addsBOS: Bool = true, options: GenerationOptions = GenerationOptions())
        -> AsyncThrowingStream<MessageResponse, Error>
    {
        var prompt = tokenizer.encode(text, addingSpecialTokens: false)
        if addsBOS, tokenizer.vocabulary.addBOS, let bos = tokenizer.vocabulary.bosTokenID { prompt.insert(bos, at: 0) }
        return generateCompletion(of: prompt, options: options, isAbandoned: nil)
    }

    /// ``generateCompletion(of:addsBOS:options:)`` of prompt tokens, stopping also when
    /// `isAbandoned` says so (asked before each token).
    package func generateCompletion(
        of prompt: [Int], options requestedOptions: GenerationOptions, isAbandoned: (@Sendable () -> Bool)?
    ) -> AsyncThrowingStream<MessageResponse, Error> {
        let (stream, continuation) = AsyncThrowingStream<MessageResponse, Error>.makeStream()
        let requested = ContinuousClock.now
        let cancellation = CancellationFlag()
        continuation.onTermination = { termination in
            if case .cancelled = termination { cancellation.cancel() }
        }
        state.withLock { $0.activeGenerations.append(cancellation) }
        let finish: @Sendable (Result<Reply, ConversationError>, KVCache?) -> Void = { [self] result, cache in
            state.withLock { state in
                state.activeGenerations.removeAll { $0 === cancellation }
                if let cache { state.recycle(cache) }
            }
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
                guard !prompt.isEmpty else { throw .model(.emptyPrompt) }
                guard prompt.count < contextLength else { throw .contextOverflow(promptTokens: prompt.count, contextLength: contextLength) }
                var options = requestedOptions.filled(from: defaultOptions)
                options.enableThinking = false
                options.functionCallMode = .disabled
                var constraint: CompiledGrammar?
                var schema = options.schemaDocument
                if schema == nil, let text = options.jsonSchema {
                    do throws(GrammarError) { schema = try JSONValue(parsingSchema: text, budget: grammarBudget) } catch { throw .invalidSchema(error) }
                }
                if let schema { constraint = try compiledGrammar(schema: schema, options: options.schemaOptions) }
                let (model, scheduler, prepared) = try state.withLock { state throws(ConversationError) in
                    guard let model = state.model, let scheduler = state.scheduler else { throw .runnerUnloaded }
                    return (model, scheduler, state.cache(for: prompt, of: model, contextLength: contextLength))
                }
                let cache = prepared.fill(releasingUnder: state)
                let decoder = ReplyDecoder(
                    tokenizer: tokenizer, options: options, constraint: constraint, callGrammar: nil, callFormat: .hermes,
                    startsWithCall: false, firstCallNumber: 1, cancellation: cancellation, isAbandoned: isAbandoned,
                    emit: { continuation.yield($0) })
                let vocabulary = tokenizer.vocabulary
                let loop = TokenLoop(
                    source: ModelSequence(model: model, cache: cache, threadCount: threadCount), maxTokens: options.maxTokens ?? Int.max,
                    isEndOfGeneration: { vocabulary.isEndOfGeneration($0) })
                let generation = Scheduler.Generation(loop: loop, stepper: decoder, prompt: prompt, requested: requested)
                generation.completion = { result in
                    switch result {
                    case .success(let outcome): finish(.success(decoder.finish(outcome)), cache)
                    case .failure(let error): finish(.failure(.model(error)), cache)
                    }
                }
                scheduler.submit(generation)
            } catch {
                finish(.failure(error), nil)
            }
        }
        return stream
    }
}
