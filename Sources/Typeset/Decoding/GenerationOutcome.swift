/// Why generation ended: a conversation's reply, or ``TextGenerator``'s continuation.
public enum FinishReason: String, Sendable, Equatable {
    /// The model produced an end-of-generation token (it ended its turn, or finished its
    /// function calls, or completed the value its grammar allows); that token is not part of
    /// the output.
    case stop
    /// The context filled up first.
    case exceededContext
    /// Cancelled: the consumer stopped listening (its task was cancelled), or the token
    /// callback asked to stop.
    case interrupted
    /// `maxTokens` cut a constrained reply (a JSON Schema or a function call) before it was
    /// complete: the text is not a valid value.
    case constraint
    /// `maxTokens` tokens were generated (an unconstrained reply).
    case maxTokens
    /// Generation failed; the stream throws the error after this.
    case error
}

/// Counts and times of one generation.
public struct GenerationStats: Sendable, Equatable {
    /// Tokens of the prompt (for a reply, the whole rendered conversation so far).
    public var promptTokens: Int
    /// Prompt tokens whose keys and values were reused from the cache (earlier turns).
    public var cachedPromptTokens: Int
    /// Tokens generated (forced markup included, the end-of-generation token excluded).
    public var completionTokens: Int
    /// Seconds from the request to the first generated token (queueing, prefill, first step).
    public var timeToFirstToken: Double
    /// Seconds computing the prompt tokens that were not reused.
    public var prefillSeconds: Double
    /// Seconds from the end of the prefill to the end of generation.
    public var decodeSeconds: Double
    /// Seconds of decoding spent in the constraint (masks, acceptance, steering); 0 for free text.
    public var constraintSeconds: Double
    /// Forward passes after the prompt's: one per step after the first token's. Tokens a step
    /// appends together (forced markup, the tokens jump-forward decoding appends for what a
    /// grammar forces) share one, so a constrained reply can take fewer passes than tokens.
    public var decodePasses: Int
    /// Passes saved by provisional tokens: tokens computed in the pass before the step that
    /// chose them (the last token of a grammar's forced text, which the model may merge with
    /// what follows), whose step then ran on the logits after them without a pass of its own.
    package var passesSavedByProvisionalTokens = 0
    /// Tokens drafted by prompt lookup or a draft model, and those of them the steps chose
    /// (each a token that took no pass of its own).
    package var draftedTokens = 0
    package var acceptedDraftTokens = 0
    /// The draft model's passes (one per token it drafted, and one for each draft it ended
    /// early on an unlikely token).
    package var draftModelPasses = 0
    /// The stop sequence (``GenerationOptions/stopSequences``) that ended the reply, if one did.
    package var stopSequence: String?

    package init(
        promptTokens: Int = 0, cachedPromptTokens: Int = 0, completionTokens: Int = 0, timeToFirstToken: Double = 0,
        prefillSeconds: Double = 0, decodeSeconds: Double = 0, constraintSeconds: Double = 0, decodePasses: Int = 0
    ) {
        self.promptTokens = promptTokens
        self.cachedPromptTokens = cachedPromptTokens
        self.completionTokens = completionTokens
        self.timeToFirstToken = timeToFirstToken
        self.prefillSeconds = prefillSeconds
        self.decodeSeconds = decodeSeconds
        self.constraintSeconds = constraintSeconds
        self.decodePasses = decodePasses
    }

    /// Completion tokens per second of decoding (0 before any).
    public var tokensPerSecond: Double { decodeSeconds > 0 ? Double(completionTokens) / decodeSeconds : 0 }

    /// Prompt tokens computed per second of prefill (0 when every token was reused).
    public var prefillTokensPerSecond: Double {
        prefillSeconds > 0 ? Double(promptTokens - cachedPromptTokens) / prefillSeconds : 0
    }
}
