/// What a decoding loop asks of whatever restricts the tokens it may choose: which tokens may
/// come next, the token it chose, a step back, how far the output is from complete, and the
/// text every continuation must begin with.
///
/// ``GrammarMatcher`` is the constraint Typeset uses for JSON Schemas, regular expressions and
/// function calls; a caller may bring its own (a word list, a length rule) and hold a reply to
/// it exactly as to a grammar. A loop step with a constraint:
///
///     constraint.fillNextTokenMask(into: &mask)
///     mask.apply(to: &logits)                     // forbidden tokens to −∞, in place
///     let token = sampler.sample(&logits, history: history)
///     constraint.accept(token: token)             // true: the mask allowed it
///
/// A constraint is a value owned by one generation: a reply starts from a copy of the value it
/// was given.
public protocol TokenConstraint {
    /// The size of the vocabulary the constraint's masks cover (token ids below it).
    var vocabularySize: Int { get }

    /// Sets exactly the tokens that may come next. Precondition: `mask.vocabularySize` is
    /// ``vocabularySize``.
    func fillNextTokenMask(into mask: inout TokenBitmask)

    /// Accepts `token` and returns true when it may come next; otherwise leaves the state
    /// unchanged and returns false. An end-of-generation token is accepted only when
    /// `canTerminate`.
    mutating func accept(token: Int) -> Bool

    /// Undoes the last `count` accepted tokens. Precondition: `count <= acceptedTokenCount`.
    mutating func rollback(_ count: Int)

    /// Tokens accepted so far that `rollback` can undo.
    var acceptedTokenCount: Int { get }

    /// Whether the output so far is complete (an end-of-generation token may come next).
    var canTerminate: Bool { get }

    /// Whether some byte may still follow: false when the output is complete and only the end
    /// may come next (a loop then ends without another step).
    var acceptsMoreBytes: Bool { get }

    /// The fewest bytes that complete the output from here: 0 when it may end now. A loop
    /// with a token budget keeps this within the tokens it has left.
    var shortestCompletionLength: Int { get }

    /// Bytes that complete the output from here, as few as there are, or `nil` when they are
    /// longer than `maximumBytes` or unknown: what a loop counts in tokens when its budget is
    /// short. The default is `nil` (the loop then counts ``shortestCompletionLength`` bytes as
    /// tokens, which never undercounts).
    func shortestCompletion(maximumBytes: Int) -> [UInt8]?

    /// The bytes every continuation must start with (at most `limit`), which a loop may append
    /// without sampling.
    func forcedBytes(limit: Int) -> [UInt8]
}

extension TokenConstraint {
    public func shortestCompletion(maximumBytes: Int) -> [UInt8]? { nil }

    /// Whether the output is complete and nothing but the end may follow it.
    public var isComplete: Bool { canTerminate && !acceptsMoreBytes }
}

extension GrammarMatcher: TokenConstraint {
    public var vocabularySize: Int { grammar.vocabulary.size }
}
