import TypesetGrammar
import TypesetTokenizer

/// The one place a reply's logits become a token.
///
/// The logit stages before it have set what may not come next to −∞ (a constraint's mask, the
/// rules after a call); the selector applies the sampler's penalties (repetition, DRY) and
/// draws. Under a constraint the token must also be one the constraint accepts and, when the
/// reply closes within its budget, one that leaves the output finishable in the tokens left
/// after it (its shortest completion as the tokenizer writes it, never more than its bytes):
///
///     logits (masked) ─► penalties ─► draw ─► accepted, and finishable in budget − 1? ─► token
///                                       ▲          │ no: that token to −∞
///                                       └──────────┘ up to four draws
///                        then: the likeliest tokens (of the 256 likeliest) that shorten the
///                        way to a complete output, up to 8, drawn among ─► token
///
/// The constraint is any ``TokenConstraint``: a JSON Schema's or a call's grammar, or a
/// caller's own.
struct TokenSelector {
    private(set) var sampler: Sampler
    private let tokenizer: Tokenizer

    init(sampling: SamplingOptions, tokenizer: Tokenizer) {
        sampler = Sampler(options: sampling, vocabulary: tokenizer.vocabulary)
        self.tokenizer = tokenizer
    }

    /// The next token of free text: penalties, then a draw; `nil` when every logit is −∞.
    mutating func select(_ logits: inout [Float], _ context: TokenStepContext) -> Int? {
        sampler.sample(&logits, history: context.history, replyStart: context.replyStart)
    }

    /// The next token under `constraint` (its mask already applied to `logits`), accepted into
    /// it; `nil` when no token keeps the output finishable (or none is allowed at all).
    ///
    /// - Parameter budget: the tokens the output may still take, this one included, when it
    ///   must close within them; `nil` when it need not.
    mutating func select<Constraint: TokenConstraint>(
        _ logits: inout [Float], _ context: TokenStepContext, constraint: inout Constraint, budget: Int?
    ) -> Int? {
        let vocabulary = tokenizer.vocabulary
        func acceptable(_ token: Int, progressFrom distance: Int?) -> Bool {
            if vocabulary.isEndOfGeneration(token) { return constraint.accept(token: token) }
            guard constraint.accept(token: token) else { return false }
            guard let budget else { return true }
            let after = constraint.shortestCompletionLength
            // Progress first: one comparison, where the tokenizer's count is an encoding.
            if distance.map({ after < $0 }) ?? true, after <= budget - 1 || tokensToFinish(constraint, bytes: after) <= budget - 1 {
                return true
            }
            constraint.rollback(1)
            return false
        }
        // The penalties once, then up to four draws, each without the token rejected before it.
        sampler.applyPenalties(to: &logits, history: context.history, replyStart: context.replyStart)
        for _ in 0 ..< 4 {
            guard let token = sampler.draw(from: logits) else { return nil }
            if acceptable(token, progressFrom: nil) { return token }
            logits[token] = -.infinity
        }
        // Closing: the likeliest tokens that shorten the way to a complete output, up to 8 of
        // the 256 likeliest, or the first further down when none of those does. (Sorting and
        // trying every allowed token, 262,144 inside a string with Gemma's vocabulary, cost
        // 30 ms a step.)
        let distance = constraint.shortestCompletionLength
        let allowed = logits.indices.filter { logits[$0] > -.infinity }
        let likeliest = likeliestTokens(256, of: allowed, in: logits)
        var candidates: [Int] = []
        func collect(_ tokens: [Int], upTo count: Int) {
            for token in tokens where acceptable(token, progressFrom: distance) {
                constraint.rollback(1)
                candidates.append(token)
                if candidates.count == count { return }
            }
        }
        collect(likeliest, upTo: 8)
        if candidates.isEmpty, allowed.count > likeliest.count {
            let tried = Set(likeliest)
            collect(allowed.filter { !tried.contains($0) }.sorted { logits[$0] > logits[$1] }, upTo: 1)
        }
        guard !candidates.isEmpty else { return nil }
        // Only the candidates stay (in place: the logits are not needed after this step).
        let kept = Set(candidates)
        for token in allowed where !kept.contains(token) { logits[token] = -.infinity }
        guard let token = sampler.draw(from: logits), constraint.accept(token: token) else { return nil }
        return token
    }

    /// About how many tokens the shortest completion of `constraint` (`bytes` long) takes: the
    /// tokenizer's encoding of it, two more for the boundaries (it is encoded alone, not after
    /// the output), and never more than its bytes.
    func tokensToFinish(_ constraint: some TokenConstraint, bytes: Int) -> Int {
        guard let completion = constraint.shortestCompletion(maximumBytes: 4096) else { return bytes }
        let tokens = completion.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false).count }
        return min(bytes, tokens + 2)
    }
}
