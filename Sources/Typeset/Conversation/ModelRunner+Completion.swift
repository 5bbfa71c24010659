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
        return generateCompletion(of: prompt, request: ReplyRequest(options: options), isAbandoned: nil)
    }

    /// ``generateCompletion(of:addsBOS:options:)`` of prompt tokens, stopping also when
    /// `isAbandoned` says so (asked before each token).
    package func generateCompletion(
        of prompt: [Int], request: ReplyRequest, isAbandoned: (@Sendable () -> Bool)?
    ) -> AsyncThrowingStream<MessageResponse, Error> {
        startReply(isAbandoned: isAbandoned) { [self] () throws(ConversationError) in
            var options = request.options.filled(from: defaultOptions)
            options.enableThinking = false
            options.functionCallMode = .disabled
            let constraint = try constraint(for: request)
            if constraint?.schema != nil { options = options.writingJSON() }
            var plan = ReplyPlan(prompt: prompt, options: options, constraint: constraint?.start, routing: .plain, cacheOwner: nil)
            plan.onPrefill = request.onPrefill
            return plan
        }
    }
}
