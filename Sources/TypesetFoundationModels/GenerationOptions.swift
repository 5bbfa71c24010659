/// How a session generates a reply, as Foundation Models spells it: a sampling mode, a
/// temperature and a response-token limit. Every `nil` leaves the model's default (greedy
/// decoding unless its GGUF says otherwise).
public struct GenerationOptions: Sendable, Equatable {
    /// How the next token is chosen.
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

    /// Whether the model may, must or must not call the session's tools (OS 27).
    public struct ToolCallingMode: Sendable, Equatable, Hashable {
        /// The modes, to switch over.
        public enum Kind: Sendable, Equatable, Hashable {
            case allowed, disallowed, required
        }

        /// Which mode this is.
        public let kind: Kind

        /// The model calls tools or answers, as it sees fit (the default).
        public static let allowed = ToolCallingMode(kind: .allowed)
        /// No tool is called.
        public static let disallowed = ToolCallingMode(kind: .disallowed)
        /// The reply starts with a tool call; the answer comes after the tools' outputs.
        public static let required = ToolCallingMode(kind: .required)
    }

    /// Greedy, or random among the top `k` or the top probability mass; `nil` leaves the
    /// model's default.
    public var sampling: SamplingMode?
    /// OS 27's name for ``sampling``.
    public var samplingMode: SamplingMode? {
        get { sampling }
        set { sampling = newValue }
    }
    /// Whether the reply may call tools; `nil` is ``ToolCallingMode/allowed``.
    public var toolCallingMode: ToolCallingMode?
    /// How flat the distribution random sampling draws from (greedy ignores it); `nil` leaves
    /// the model's default, or 1 for a random `sampling`.
    public var temperature: Double?
    /// The most tokens the reply may have.
    public var maximumResponseTokens: Int?

    @_disfavoredOverload
    public init(sampling: SamplingMode? = nil, temperature: Double? = nil, maximumResponseTokens: Int? = nil) {
        self.sampling = sampling
        self.temperature = temperature
        self.maximumResponseTokens = maximumResponseTokens
    }

    /// Options as OS 27 spells them.
    public init(samplingMode: SamplingMode? = nil, temperature: Double? = nil, maximumResponseTokens: Int? = nil) {
        self.init(sampling: samplingMode, temperature: temperature, maximumResponseTokens: maximumResponseTokens)
    }

    /// Options as OS 27 spells them, with a tool-calling mode.
    public init(
        samplingMode: SamplingMode? = nil, temperature: Double? = nil, maximumResponseTokens: Int? = nil, toolCallingMode: ToolCallingMode?
    ) {
        self.init(sampling: samplingMode, temperature: temperature, maximumResponseTokens: maximumResponseTokens)
        self.toolCallingMode = toolCallingMode
    }

    /// Typeset's options for the same reply.
    var typesetOptions: Typeset.GenerationOptions {
        var options = Typeset.GenerationOptions(temperature: temperature.map(Float.init), maxTokens: maximumResponseTokens)
        switch sampling?.kind {
        case nil:
            break
        case .greedy?:
            options.temperature = 0
        case .topK(let k)?:
            if options.temperature == nil || options.temperature == 0 { options.temperature = 1 }
            options.topK = k
        case .topP(let threshold)?:
            if options.temperature == nil || options.temperature == 0 { options.temperature = 1 }
            options.topP = Float(threshold)
        }
        options.seed = sampling?.seed
        switch toolCallingMode?.kind {
        case .allowed?, nil: options.functionCallMode = .automatic
        case .disallowed?: options.functionCallMode = .disabled
        case .required?: options.functionCallMode = .required
        }
        return options
    }
}
