/// What a decoding loop asks of whatever restricts the tokens it may choose: which tokens may
/// come next, the token it chose, a step back, and the text every continuation must begin with.
///
/// ``GrammarMatcher`` is the constraint Typeset's loop uses for JSON Schemas, regular
/// expressions and function calls; a caller may bring its own (a word list, a length rule).
/// A loop step with a constraint:
///
///     constraint.fillNextTokenMask(into: &mask)
///     mask.apply(to: &logits)                     // forbidden tokens to −∞, in place
///     let token = sampler.sample(&logits, history: history)
///     constraint.accept(token: token)             // true: the mask allowed it
///
/// A constraint is a value owned by one generation.
public protocol TokenConstraint {
    /// Sets exactly the tokens that may come next. Precondition: `mask.vocabularySize` is the
    /// constraint's vocabulary size.
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

    /// The fewest bytes that complete the output from here: 0 when it may end now. A loop
    /// with a token budget keeps this within the tokens it has left.
    var shortestCompletionLength: Int { get }

    /// The bytes every continuation must start with (at most `limit`), which a loop may append
    /// without sampling.
    func forcedBytes(limit: Int) -> [UInt8]
}

extension GrammarMatcher: TokenConstraint {}
