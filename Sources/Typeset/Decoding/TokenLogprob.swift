import Foundation
import TypesetTokenizer

/// The log-probability of a generated token under the model, and of the most likely tokens
/// at its place (OpenAI's `logprobs`): what ``MessageResponse/logprob(_:)`` reports for each
/// token a reply chooses when ``GenerationOptions/logprobs`` asks for it.
///
/// The probabilities are the model's own (a softmax of its logits), before sampling changes
/// them: temperature, penalties and a grammar's mask do not enter, so a constrained token the
/// model found unlikely shows as unlikely (llama-server's `post_sampling_probs` asks for the
/// sampler's instead: ``entry(for:drawnBy:alternativeCount:vocabulary:)``). Forced tokens
/// (markup Typeset writes) have none.
public struct TokenLogprob: Sendable, Equatable {
    /// One token and its natural-log probability.
    public struct Candidate: Sendable, Equatable {
        public var token: Int
        /// The token's bytes (a token may hold part of a character).
        public var bytes: [UInt8]
        public var logprob: Float

        package init(token: Int, bytes: [UInt8], logprob: Float) {
            self.token = token
            self.bytes = bytes
            self.logprob = logprob
        }

        /// The bytes as text (U+FFFD for an incomplete character).
        public var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// The token generated.
    public var chosen: Candidate
    /// The most likely tokens at its place, most likely first (as many as asked).
    public var alternatives: [Candidate]

    package init(chosen: Candidate, alternatives: [Candidate]) {
        self.chosen = chosen
        self.alternatives = alternatives
    }

    /// The entry for `token` given the model's `logits` (one per vocabulary entry), with the
    /// `alternativeCount` most likely tokens (ties to the lower id).
    ///
    /// - Complexity: O(vocabulary × (1 + alternativeCount)) at worst, three passes in practice.
    static func entry(for token: Int, logits: [Float], alternativeCount: Int, vocabulary: Vocabulary) -> TokenLogprob {
        let maximum = logits.max() ?? 0
        var total = 0.0
        for logit in logits where logit > -.infinity { total += Double(expf(logit - maximum)) }
        let normalizer = maximum + Float(log(total))
        func candidate(_ id: Int, _ logit: Float) -> Candidate {
            Candidate(token: id, bytes: vocabulary.bytes(of: id), logprob: logit - normalizer)
        }
        let alternatives = likeliestTokens(alternativeCount, of: logits.indices, in: logits)
        return TokenLogprob(chosen: candidate(token, logits[token]), alternatives: alternatives.map { candidate($0, logits[$0]) })
    }

    /// The entry for `token` as `sampler`'s last draw chose it: the log of each probability in
    /// the distribution after the whole chain, with its `alternativeCount` most probable tokens
    /// (fewer when fewer had a probability above 0).
    static func entry(for token: Int, drawnBy sampler: Sampler, alternativeCount: Int, vocabulary: Vocabulary) -> TokenLogprob {
        let (probability, likeliest) = sampler.lastDistribution(chose: token, count: alternativeCount)
        func candidate(_ id: Int, _ probability: Float) -> Candidate {
            Candidate(token: id, bytes: vocabulary.bytes(of: id), logprob: log(probability))
        }
        return TokenLogprob(chosen: candidate(token, probability), alternatives: likeliest.map { candidate($0.token, $0.probability) })
    }
}
