import Foundation
import Kernels
import TypesetTokenizer

/// How the next token is chosen from the model's logits: the settings of ``Sampler``'s chain.
///
/// The stages run in llama.cpp's default order: repetition penalty and DRY, then top-k, top-p
/// and min-p on the resulting distribution, then temperature, then a draw from what is left. A
/// temperature of 0 (or below) picks the most likely token (greedy; ties go to the lowest id).
package struct SamplingOptions: Sendable, Equatable {
    /// Softmax temperature; 0 means greedy.
    package var temperature: Float
    /// Keep only the `topK` most likely tokens (`nil`: all).
    package var topK: Int?
    /// Keep the smallest set of most likely tokens whose probability adds up to `topP`.
    package var topP: Float?
    /// Drop tokens less likely than `minP` × the most likely token's probability.
    package var minP: Float?
    /// Divide positive logits (multiply negative ones) of recently seen tokens by this (1: off).
    package var repetitionPenalty: Float
    /// How many recent tokens the repetition, frequency and presence penalties look at.
    package var repetitionWindow: Int
    /// Subtracted from a recent token's logit once per time it occurs in the window
    /// (OpenAI's and llama.cpp's `frequency_penalty`; 0: off).
    package var frequencyPenalty: Float = 0
    /// Subtracted from a recent token's logit once if it occurs in the window at all
    /// (`presence_penalty`; 0: off).
    package var presencePenalty: Float = 0
    /// Added to tokens' logits before anything else (`logit_bias`; −∞ bans a token).
    package var logitBias: [Int: Float] = [:]
    /// The penalty on tokens that extend a repeated sequence (`nil`: off).
    package var dry: DRYPenalty?
    /// The random seed: the same seed, options, model and prompt give the same tokens.
    package var seed: UInt64

    package init(
        temperature: Float = 0, topK: Int? = nil, topP: Float? = nil, minP: Float? = nil,
        repetitionPenalty: Float = 1, repetitionWindow: Int = 64, dry: DRYPenalty? = nil, seed: UInt64 = 0,
        frequencyPenalty: Float = 0, presencePenalty: Float = 0, logitBias: [Int: Float] = [:]
    ) {
        self.frequencyPenalty = frequencyPenalty
        self.presencePenalty = presencePenalty
        self.logitBias = logitBias
        self.temperature = temperature
        self.topK = topK
        self.topP = topP
        self.minP = minP
        self.repetitionPenalty = repetitionPenalty
        self.repetitionWindow = repetitionWindow
        self.dry = dry
        self.seed = seed
    }

    /// Always the most likely token.
    package static let greedy = SamplingOptions()
}

/// Draws tokens from logits according to `SamplingOptions`, with its own seeded generator.
///
/// Sampling is a chain of small stages, built once from the options (``stages``) and run in
/// llama.cpp's default order. The penalties rewrite the logits in place; the stages after them
/// work on the candidates, which the sampler keeps from token to token, so a token costs no
/// copy of the vocabulary:
///
///     logits ─► logit bias ─► repetition penalty ─► frequency and presence ─► DRY ─┐
///              (in place)                                                        │
///         ┌─────────────────────────────────────────────────────────────────────┘
///         ├─ temperature 0 ─► the most likely token
///         └─ candidates: tokens within 40·max(1, T) of the best, most likely first
///            ─► top-k ─► top-p ─► min-p ─► temperature ─► seeded draw
package struct Sampler: Sendable {
    /// One stage of the chain.
    package enum Stage: Sendable, Equatable {
        /// Adds a bias to tokens' logits (sorted by token).
        case logitBias([TokenBias])
        /// Divides positive logits (multiplies negative ones) of the tokens among the last
        /// `window` of the history, each once.
        case repetitionPenalty(Float, window: Int)
        /// Subtracts `frequency` × its count and `presence` once from the logit of each token
        /// among the last `window` of the history (after the repetition penalty, as llama.cpp's
        /// penalties sampler does).
        case frequencyAndPresence(frequency: Float, presence: Float, window: Int)
        /// Subtracts the DRY penalty from the tokens that would extend a repeat.
        case dry(DRYPenalty)
        /// Keeps the `k` most likely candidates.
        case topK(Int)
        /// Keeps the fewest most likely candidates whose probabilities add up to `p`.
        case topP(Float)
        /// Drops candidates less likely than `p` × the most likely one's probability.
        case minP(Float)
        /// Divides the candidates' logits by `t` before the draw.
        case temperature(Float)
    }

    /// A token and the bias added to its logit.
    package struct TokenBias: Sendable, Equatable {
        package var token: Int
        package var bias: Float

        package init(token: Int, bias: Float) {
            self.token = token
            self.bias = bias
        }
    }

    package let options: SamplingOptions
    /// The chain, in the order it runs; greedy when it has no ``Stage/temperature(_:)``.
    package let stages: [Stage]
    private var random: SeededGenerator
    /// Which token ids are DRY sequence breakers (empty: none is).
    private let breakers: [Bool]
    /// The candidates of the current draw, storage kept from token to token.
    private var candidates = Candidates()
    /// The distinct tokens of the repetition window, storage kept from token to token.
    private var recentTokens = Set<Int>()
    /// How often each token occurs in the window, storage kept from token to token.
    private var recentCounts: [Int: Int] = [:]
    /// Whether `candidates` holds the last draw's distribution (false after a greedy pick).
    private var hasCandidates = false

    /// A sampler whose DRY penalty, if any, knows no sequence breakers.
    package init(options: SamplingOptions) {
        self.init(options: options, breakers: [])
    }

    /// A sampler for `vocabulary`'s tokens: its DRY penalty, if any, stops at the tokens whose
    /// text contains a sequence breaker (found once, here: one pass over the vocabulary).
    package init(options: SamplingOptions, vocabulary: Vocabulary) {
        self.init(options: options, breakers: options.dry.map { $0.breakerTokens(in: vocabulary) } ?? [])
    }

    private init(options: SamplingOptions, breakers: [Bool]) {
        self.options = options
        self.random = SeededGenerator(seed: options.seed)
        self.breakers = breakers
        var stages: [Stage] = []
        if !options.logitBias.isEmpty {
            stages.append(.logitBias(options.logitBias.sorted { $0.key < $1.key }.map { TokenBias(token: $0.key, bias: $0.value) }))
        }
        if options.repetitionPenalty != 1 { stages.append(.repetitionPenalty(options.repetitionPenalty, window: options.repetitionWindow)) }
        if options.frequencyPenalty != 0 || options.presencePenalty != 0 {
            stages.append(.frequencyAndPresence(frequency: options.frequencyPenalty, presence: options.presencePenalty, window: options.repetitionWindow))
        }
        if let dry = options.dry { stages.append(.dry(dry)) }
        if options.temperature > 0 {
            if let k = options.topK, k > 0 { stages.append(.topK(k)) }
            if let p = options.topP, p < 1 { stages.append(.topP(p)) }
            if let p = options.minP, p > 0 { stages.append(.minP(p)) }
            stages.append(.temperature(options.temperature))
        }
        self.stages = stages
    }

    /// The next token for `logits` (one per vocabulary entry) after `history` (the tokens so
    /// far, prompt included, the reply from `replyStart` on):
    /// ``applyPenalties(to:history:replyStart:)`` in place, then ``draw(from:)``. Tokens whose
    /// logit is −∞ (masked by a constraint) are never chosen; returns `nil` only when every
    /// logit is −∞ or NaN.
    package mutating func sample(_ logits: inout [Float], history: [Int], replyStart: Int = 0) -> Int? {
        applyPenalties(to: &logits, history: history, replyStart: replyStart)
        return draw(from: logits)
    }

    /// The chain's penalties (repetition, then DRY) on `logits`, in place; `replyStart` is
    /// where the reply begins in `history` (a DRY penalty that does not search the prompt
    /// starts there).
    ///
    /// - Complexity: O(window) for the repetition penalty; DRY's as ``DRYPenalty`` states.
    package mutating func applyPenalties(to logits: inout [Float], history: [Int], replyStart: Int = 0) {
        for stage in stages {
            switch stage {
            case let .logitBias(biases):
                for entry in biases where entry.token >= 0 && entry.token < logits.count { logits[entry.token] += entry.bias }
            case let .frequencyAndPresence(frequency, presence, window):
                recentCounts.removeAll(keepingCapacity: true)
                for token in history.suffix(window) where token >= 0 && token < logits.count { recentCounts[token, default: 0] += 1 }
                for (token, count) in recentCounts { logits[token] -= Float(count) * frequency + presence }
            case let .repetitionPenalty(penalty, window):
                recentTokens.removeAll(keepingCapacity: true)
                for token in history.suffix(window) where token >= 0 && token < logits.count && recentTokens.insert(token).inserted {
                    logits[token] = logits[token] > 0 ? logits[token] / penalty : logits[token] * penalty
                }
            case let .dry(dry):
                let breakers = self.breakers
                for (token, amount) in dry.penalties(after: history, replyStart: replyStart, isBreaker: { $0 < breakers.count && breakers[$0] })
                where token >= 0 && token < logits.count {
                    logits[token] -= amount
                }
            case .topK, .topP, .minP, .temperature:
                continue
            }
        }
    }

    /// The next token from logits the penalties have already been applied to: the most likely
    /// one when the chain has no temperature (ties to the lowest id); otherwise the candidate
    /// stages narrow the likely tokens and a seeded draw picks one. Reads `logits` without
    /// copying them; `nil` when every logit is −∞ or NaN.
    package mutating func draw(from logits: [Float]) -> Int? {
        hasCandidates = false
        guard case let .temperature(temperature)? = stages.last else {
            return logits.withUnsafeBufferPointer(indexOfLargest)
        }
        // Tokens more than 40·max(1, T) below the best carry less than e⁻⁴⁰ of its weight each
        // after temperature, so they are left out before sorting (Gemma's vocabulary has
        // 262,144 entries).
        guard candidates.gather(from: logits, within: 40 * max(1, temperature)) else { return nil }
        for stage in stages {
            switch stage {
            case let .topK(k):
                candidates.count = min(candidates.count, k)
            case let .topP(p):
                candidates.normalize(scale: 1)
                var cumulative: Float = 0
                for index in 0 ..< candidates.count {
                    cumulative += candidates.weights[index]
                    if cumulative >= p { candidates.count = index + 1; break }
                }
            case let .minP(p):
                candidates.normalize(scale: 1)
                let threshold = candidates.weights[0] * p
                candidates.count = max(1, (0 ..< candidates.count).first { candidates.weights[$0] < threshold } ?? candidates.count)
            case let .temperature(temperature):
                candidates.normalize(scale: 1 / temperature)
            case .logitBias, .repetitionPenalty, .frequencyAndPresence, .dry:
                continue
            }
        }
        hasCandidates = true
        let draw = Float(random.next() >> 40) / Float(1 << 24)
        var cumulative: Float = 0
        for index in 0 ..< candidates.count {
            cumulative += candidates.weights[index]
            if draw < cumulative { return candidates.tokens[index] }
        }
        return candidates.tokens[candidates.count - 1]
    }
}

extension Sampler {
    /// The distribution the last ``draw(from:)`` chose `token` from, after the whole chain
    /// (llama-server's `post_sampling_probs`): `token`'s probability and the `count` most
    /// probable tokens, most probable first, leaving out those of probability 0. After a
    /// greedy pick that distribution is all on the token chosen, as llama.cpp's greedy
    /// temperature leaves it.
    ///
    /// - Complexity: O(candidates of the last draw).
    package func lastDistribution(chose token: Int, count: Int) -> (probability: Float, likeliest: [(token: Int, probability: Float)]) {
        guard hasCandidates else {
            var all: [(token: Int, probability: Float)] = []
            if count > 0 { all.append((token: token, probability: Float(1))) }
            return (1, all)
        }
        var probability: Float = 0
        for index in 0 ..< candidates.count where candidates.tokens[index] == token { probability = candidates.weights[index] }
        let likeliest = (0 ..< min(count, candidates.count)).lazy
            .filter { candidates.weights[$0] > 0 }
            .map { (token: candidates.tokens[$0], probability: candidates.weights[$0]) }
        return (probability, Array(likeliest))
    }
}

/// The tokens a draw chooses among, most likely first, with their logits and, once
/// normalized, their probabilities. The first `count` are live; the stages shorten it.
private struct Candidates: Sendable {
    var tokens: [Int] = []
    var logits: [Float] = []
    var weights: [Float] = []
    var count = 0

    /// Gathers the tokens whose logit is within `margin` of the best, most likely first (ties
    /// to the lowest id); false when every logit is −∞ or NaN.
    mutating func gather(from source: [Float], within margin: Float) -> Bool {
        guard let maximum = source.lazy.filter({ $0 > -.infinity }).max() else { return false }
        let floor = maximum - margin
        tokens.removeAll(keepingCapacity: true)
        for index in source.indices where source[index] >= floor { tokens.append(index) }
        tokens.sort { source[$0] != source[$1] ? source[$0] > source[$1] : $0 < $1 }
        logits.removeAll(keepingCapacity: true)
        for token in tokens { logits.append(source[token]) }
        weights.removeAll(keepingCapacity: true)
        weights.append(contentsOf: repeatElement(0, count: tokens.count))
        count = tokens.count
        return true
    }

    /// `weights[i] = softmax(logits × scale)` over the live candidates.
    mutating func normalize(scale: Float) {
        let maximum = logits[0]
        var total: Float = 0
        for index in 0 ..< count {
            weights[index] = expf((logits[index] - maximum) * scale)
            total += weights[index]
        }
        for index in 0 ..< count { weights[index] /= total }
    }
}

/// A small, fast, seedable generator (SplitMix64).
struct SeededGenerator: Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
