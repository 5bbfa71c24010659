import Foundation
import Tokenizer

/// How the next token is chosen from the model's logits.
///
/// The steps run in llama.cpp's default order: repetition penalty and DRY, then top-k, top-p and min-p
/// on the resulting distribution, then temperature, then a draw from what is left. A
/// temperature of 0 (or below) picks the most likely token (greedy; ties go to the lowest id).
public struct SamplingOptions: Sendable, Equatable {
    /// Softmax temperature; 0 means greedy.
    public var temperature: Float
    /// Keep only the `topK` most likely tokens (`nil`: all).
    public var topK: Int?
    /// Keep the smallest set of most likely tokens whose probability adds up to `topP`.
    public var topP: Float?
    /// Drop tokens less likely than `minP` × the most likely token's probability.
    public var minP: Float?
    /// Divide positive logits (multiply negative ones) of recently seen tokens by this (1: off).
    public var repetitionPenalty: Float
    /// How many recent tokens the repetition penalty looks at.
    public var repetitionWindow: Int
    /// The penalty on tokens that extend a repeated sequence (`nil`: off).
    public var dry: DRYPenalty?
    /// The random seed: the same seed, options, model and prompt give the same tokens.
    public var seed: UInt64

    public init(
        temperature: Float = 0, topK: Int? = nil, topP: Float? = nil, minP: Float? = nil,
        repetitionPenalty: Float = 1, repetitionWindow: Int = 64, dry: DRYPenalty? = nil, seed: UInt64 = 0
    ) {
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
    public static let greedy = SamplingOptions()
}

/// Draws tokens from logits according to `SamplingOptions`, with its own seeded generator.
public struct Sampler: Sendable {
    public let options: SamplingOptions
    private var random: _SplitMix64
    /// Which token ids are DRY sequence breakers (empty: none is).
    private let breakers: [Bool]

    /// A sampler whose DRY penalty, if any, knows no sequence breakers.
    public init(options: SamplingOptions) {
        self.options = options
        self.random = _SplitMix64(seed: options.seed)
        self.breakers = []
    }

    /// A sampler for `vocabulary`'s tokens: its DRY penalty, if any, stops at the tokens whose
    /// text contains a sequence breaker (found once, here: one pass over the vocabulary).
    public init(options: SamplingOptions, vocabulary: Vocabulary) {
        self.options = options
        self.random = _SplitMix64(seed: options.seed)
        self.breakers = options.dry.map { $0.breakerTokens(in: vocabulary) } ?? []
    }

    /// The next token for `logits` (one per vocabulary entry) after `history` (the tokens so
    /// far, prompt included): ``applyPenalties(to:history:)`` in place, then
    /// ``draw(from:)``. Tokens whose logit is −∞ (masked by a constraint) are never chosen;
    /// returns `nil` only when every logit is −∞ or NaN.
    public mutating func sample(_ logits: inout [Float], history: [Int]) -> Int? {
        applyPenalties(to: &logits, history: history)
        return draw(from: logits)
    }

    /// The repetition penalty, then DRY's, on `logits` in place (the first stages of the chain).
    public func applyPenalties(to logits: inout [Float], history: [Int]) {
        if options.repetitionPenalty != 1 {
            for token in Set(history.suffix(options.repetitionWindow)) where token >= 0 && token < logits.count {
                logits[token] = logits[token] > 0 ? logits[token] / options.repetitionPenalty : logits[token] * options.repetitionPenalty
            }
        }
        if let dry = options.dry {
            let breakers = self.breakers
            for (token, amount) in dry.penalties(after: history, isBreaker: { $0 < breakers.count && breakers[$0] })
            where token >= 0 && token < logits.count {
                logits[token] -= amount
            }
        }
    }

    /// The next token from logits the penalties have already been applied to: the most likely
    /// one at temperature 0 (ties to the lowest id); otherwise top-k, top-p and min-p narrow the
    /// candidates, temperature reshapes what is left and a seeded draw picks one. Reads
    /// `logits` without copying them; `nil` when every logit is −∞ or NaN.
    public mutating func draw(from logits: [Float]) -> Int? {
        if options.temperature <= 0 {
            var best: Int?
            var bestLogit = -Float.infinity
            for index in logits.indices where logits[index] > bestLogit {
                best = index
                bestLogit = logits[index]
            }
            return best
        }
        // Candidates, most likely first. Tokens more than 40·max(1, T) below the best carry
        // less than e⁻⁴⁰ of its weight each after temperature, so they are left out before
        // sorting (Gemma's vocabulary has 262,144 entries).
        guard let maximum = logits.lazy.filter({ $0 > -.infinity }).max() else { return nil }
        let floor = maximum - 40 * max(1, options.temperature)
        var candidates = logits.indices.filter { logits[$0] >= floor }
        candidates.sort { logits[$0] != logits[$1] ? logits[$0] > logits[$1] : $0 < $1 }
        if let topK = options.topK, topK > 0, topK < candidates.count { candidates.removeLast(candidates.count - topK) }
        func probabilities(_ scale: Float) -> [Float] {
            let maximum = logits[candidates[0]]
            var weights = candidates.map { expf((logits[$0] - maximum) * scale) }
            let total = weights.reduce(0, +)
            for index in weights.indices { weights[index] /= total }
            return weights
        }
        if let topP = options.topP, topP < 1 {
            let weights = probabilities(1)
            var cumulative: Float = 0
            var keep = candidates.count
            for (index, weight) in weights.enumerated() {
                cumulative += weight
                if cumulative >= topP { keep = index + 1; break }
            }
            candidates.removeLast(candidates.count - keep)
        }
        if let minP = options.minP, minP > 0 {
            let weights = probabilities(1)
            let threshold = weights[0] * minP
            let keep = weights.firstIndex { $0 < threshold } ?? weights.count
            candidates.removeLast(candidates.count - max(1, keep))
        }
        let weights = probabilities(1 / options.temperature)
        let draw = Float(random.next() >> 40) / Float(1 << 24)
        var cumulative: Float = 0
        for (index, weight) in weights.enumerated() {
            cumulative += weight
            if draw < cumulative { return candidates[index] }
        }
        return candidates[candidates.count - 1]
    }
}

/// A small, fast, seedable generator (SplitMix64).
struct _SplitMix64: Sendable {
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
