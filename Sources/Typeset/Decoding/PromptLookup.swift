/// Drafts of the next tokens read from the tokens so far (prompt lookup, n-gram speculation):
/// where the history's last few tokens occurred before, what followed them then is proposed
/// to follow now. No second model: a reply that copies from its prompt (an extracted name, an
/// order number, code being edited) finds its next tokens there.
///
/// ``TokenLoop`` computes a draft in the pass of the step's own tokens, with a row of logits
/// after each drafted token, and the steps then run on those rows for as long as they choose
/// the drafted tokens: the reply is the one decoding without drafts gives, token for token,
/// greedy or sampled, since every step sees the logits it would have seen (a row's values do
/// not depend on the rows computed with it) and draws as it would have drawn. What a draft
/// changes is how many tokens a pass yields, and what it costs: a longer pass.
///
/// The draft's length adapts to how much of the drafts the steps keep: one more token after a
/// draft kept whole, the kept length and one after a draft cut short; a history that keeps
/// refusing drafts is looked up less and less often (after a draft of which nothing was kept,
/// the next 1, 2, 4, … 32 steps draft nothing).
package struct PromptLookup: Sendable, Equatable {
    /// The longest n-gram matched; shorter ones down to `shortestMatch` are tried when it
    /// does not occur.
    package var longestMatch: Int
    package var shortestMatch: Int
    /// The most tokens one draft proposes.
    package var maximumLength: Int
    /// The length of the next draft (1 ... `maximumLength`).
    private(set) var length: Int
    private var backoff = DraftBackoff()

    /// - Precondition: 1 ≤ `shortestMatch` ≤ `longestMatch`, `maximumLength` ≥ 1.
    package init(longestMatch: Int = 3, shortestMatch: Int = 2, maximumLength: Int = 8) {
        precondition(shortestMatch >= 1 && shortestMatch <= longestMatch && maximumLength >= 1, "an empty range of n-grams or drafts")
        self.longestMatch = longestMatch
        self.shortestMatch = shortestMatch
        self.maximumLength = maximumLength
        length = min(4, maximumLength)
    }

    /// The tokens that followed the latest earlier occurrence of `history`'s last n tokens
    /// (the longest n that occurs), at most `limit` and the current length; empty when none
    /// occurs, while drafting is paused, or when `limit` is 0.
    ///
    /// - Complexity: O(`history.count` × Σ n over the n-grams tried) at worst: a scan of the
    ///   history per n, backwards, stopping at the first match.
    package mutating func draft(after history: [Int], limit: Int) -> [Int] {
        if backoff.isPaused() { return [] }
        let count = min(length, limit)
        guard count > 0 else { return [] }
        for n in stride(from: min(longestMatch, history.count - 1), through: shortestMatch, by: -1) {
            let suffix = history.count - n
            // The latest start before the suffix's own whose n tokens equal the suffix.
            var start = suffix - 1
            while start >= 0 {
                var matches = true
                for offset in 0 ..< n where history[start + offset] != history[suffix + offset] {
                    matches = false
                    break
                }
                if matches { return Array(history[(start + n) ..< min(start + n + count, history.count)]) }
                start -= 1
            }
        }
        return []
    }

    /// Adapts to a draft of `drafted` tokens of which the steps kept the first `kept`.
    package mutating func record(drafted: Int, kept: Int) {
        guard drafted > 0 else { return }
        backoff.record(drafted: drafted, kept: kept)
        length = kept == drafted ? min(maximumLength, length + 1) : max(1, min(maximumLength, kept + 1))
    }
}

/// Drafting paused after drafts of which nothing was kept: after one, the next step drafts
/// nothing; after each further one in a row, twice as many steps (1, 2, 4, … 32). A sequence
/// whose drafts keep failing all but stops drafting, and starts again once one is kept.
struct DraftBackoff: Equatable {
    /// Steps to go without drafting, and how many drafts in a row kept nothing.
    private var pause = 0
    private var misses = 0

    /// Whether this step drafts nothing (counting it against the pause).
    mutating func isPaused() -> Bool {
        guard pause > 0 else { return false }
        pause -= 1
        return true
    }

    /// Learns from a draft of `drafted` tokens of which the first `kept` were kept.
    mutating func record(drafted: Int, kept: Int) {
        guard drafted > 0 else { return }
        if kept == 0 {
            misses += 1
            pause = min(32, 1 << min(misses - 1, 5))
        } else {
            misses = 0
        }
    }
}
