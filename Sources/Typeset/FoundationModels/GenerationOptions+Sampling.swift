// Foundation Models' spelling of generation options: a sampling mode, a temperature and a
// response-token limit, over the same fields Typeset's own spelling sets.

extension GenerationOptions {
    /// How the next token is chosen (Foundation Models' `GenerationOptions.SamplingMode`).
    public struct SamplingMode: Sendable, Equatable {
        enum Kind: Sendable, Equatable {
            case greedy
            case topK(Int)
            case topP(Double)
        }

        let kind: Kind
        let seed: UInt64?

        /// Always the most likely token: the same prompt gives the same reply.
        public static var greedy: SamplingMode { SamplingMode(kind: .greedy, seed: nil) }

        /// A random token among the `k` most likely (at the options' temperature, 1 when unset).
        public static func random(top k: Int, seed: UInt64? = nil) -> SamplingMode {
            SamplingMode(kind: .topK(k), seed: seed)
        }

        /// A random token among the most likely ones whose probabilities add up to
        /// `probabilityThreshold` (nucleus sampling, at the options' temperature, 1 when unset).
        public static func random(probabilityThreshold: Double, seed: UInt64? = nil) -> SamplingMode {
            SamplingMode(kind: .topP(probabilityThreshold), seed: seed)
        }
    }

    /// Options as Foundation Models spells them.
    ///
    /// - Parameters:
    ///   - sampling: greedy, or random among the top `k` or the top probability mass; `nil`
    ///     leaves the model's default.
    ///   - temperature: how flat the distribution random sampling draws from (greedy ignores
    ///     it); `nil` leaves the model's default, or 1 for a random `sampling`.
    ///   - maximumResponseTokens: the most tokens the reply may have (``maxTokens``).
    @_disfavoredOverload
    public init(sampling: SamplingMode? = nil, temperature: Double? = nil, maximumResponseTokens: Int? = nil) {
        self.init(temperature: temperature.map(Float.init), maxTokens: maximumResponseTokens)
        if let sampling { self.sampling = sampling }
    }

    /// The sampling mode these options describe (`nil` when they leave it to the model).
    /// Setting it sets ``temperature`` (0 for greedy; 1 for a random mode when unset),
    /// ``topK``, ``topP`` and ``seed``.
    public var sampling: SamplingMode? {
        get {
            if temperature == 0 { return .greedy }
            if let topK { return .random(top: topK, seed: seed) }
            if let topP { return .random(probabilityThreshold: Double(topP), seed: seed) }
            return nil
        }
        set {
            guard let newValue else {
                topK = nil
                topP = nil
                return
            }
            switch newValue.kind {
            case .greedy:
                temperature = 0
                topK = nil
                topP = nil
            case .topK(let k):
                if temperature == nil || temperature == 0 { temperature = 1 }
                topK = k
                topP = nil
            case .topP(let threshold):
                if temperature == nil || temperature == 0 { temperature = 1 }
                topP = Float(threshold)
                topK = nil
            }
            if let seed = newValue.seed { self.seed = seed }
        }
    }

    /// The most tokens the reply may have: Foundation Models' name for ``maxTokens``.
    public var maximumResponseTokens: Int? {
        get { maxTokens }
        set { maxTokens = newValue }
    }
}
