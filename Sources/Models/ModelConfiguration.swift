import GGUF

/// The transformer families Typeset can run.
public enum ModelArchitecture: String, Sendable, CaseIterable {
    /// Llama-style decoder: RMSNorm, RoPE, grouped-query attention, SwiGLU (SmolLM2).
    case llama
    /// Gemma 3: QK-norm, interleaved sliding-window and global attention, GeGLU (Gemma 3 270M).
    case gemma3
}

/// A model's shape, read and validated from GGUF metadata before any weight is touched.
///
/// Every field is checked to be positive and consistent (heads divide evenly into key/value
/// groups, head widths multiply out), so later code can size buffers from it without checks.
public struct ModelConfiguration: Sendable, Equatable {
    public let architecture: ModelArchitecture
    /// Width of the residual stream.
    public let embeddingLength: Int
    /// Number of transformer blocks.
    public let blockCount: Int
    /// Hidden width of the feed-forward network.
    public let feedForwardLength: Int
    /// Query heads per block.
    public let headCount: Int
    /// Key/value heads per block (`headCount` is a multiple of it).
    public let headCountKV: Int
    /// Width of one attention head (keys, queries and values).
    public let headDimension: Int
    /// The context length the model was trained for, in tokens.
    public let trainedContextLength: Int
    public let rmsNormEpsilon: Double
    /// RoPE base frequency of the global-attention layers.
    public let ropeFrequencyBase: Double
    /// Tokens in the vocabulary.
    public let vocabularySize: Int
    /// Width of the local attention window (gemma3), `nil` for full attention everywhere.
    public let slidingWindow: Int?

    /// Upper bounds that keep a hostile file from sizing absurd buffers.
    public static let maximumDimension = 1 << 20
    public static let maximumBlockCount = 4096

    public init(metadata: GGUFMetadata) throws(ModelConfigurationError) {
        func read<T>(_ body: @autoclosure () throws(GGUFError) -> T) throws(ModelConfigurationError) -> T {
            do { return try body() } catch { throw .metadata(error) }
        }
        guard let name = try read(try metadata.architecture) else { throw .missing("general.architecture") }
        guard let architecture = ModelArchitecture(rawValue: name) else { throw .unsupportedArchitecture(name) }
        let parameters = try read(try metadata.hyperparameters)

        func required(_ field: String, limit: Int = ModelConfiguration.maximumDimension) throws(ModelConfigurationError) -> Int {
            let key = parameters.key(field)
            guard let value = try read(try metadata.integer(key)) else { throw .missing(key) }
            guard value > 0, value <= limit else { throw .invalid(key: key, value: "\(value)", reason: "must be in 1...\(limit)") }
            return value
        }
        func positiveDouble(_ field: String, default fallback: Double? = nil) throws(ModelConfigurationError) -> Double {
            let key = parameters.key(field)
            guard let value = try read(try metadata.double(key)) ?? fallback else { throw .missing(key) }
            guard value.isFinite, value > 0 else { throw .invalid(key: key, value: "\(value)", reason: "must be a positive number") }
            return value
        }

        let embeddingLength = try required("embedding_length")
        let headCount = try required("attention.head_count")
        let headCountKV = try read(try metadata.integer(parameters.key("attention.head_count_kv"))) ?? headCount
        guard headCountKV > 0, headCount % headCountKV == 0 else {
            throw .invalid(key: parameters.key("attention.head_count_kv"), value: "\(headCountKV)",
                           reason: "must divide the head count \(headCount)")
        }
        let headDimension: Int
        if metadata.contains(key: parameters.key("attention.key_length")) {
            headDimension = try required("attention.key_length")
        } else {
            guard embeddingLength % headCount == 0 else {
                throw .invalid(key: parameters.key("embedding_length"), value: "\(embeddingLength)",
                               reason: "must be a multiple of the head count \(headCount)")
            }
            headDimension = embeddingLength / headCount
        }
        guard headDimension % 2 == 0 else {
            throw .invalid(key: parameters.key("attention.key_length"), value: "\(headDimension)", reason: "RoPE needs an even head width")
        }
        let tokens = try read(try metadata.array("tokenizer.ggml.tokens"))
        let vocabularySize = try read(try metadata.integer(parameters.key("vocab_size"))) ?? tokens?.count ?? 0
        guard vocabularySize > 0, vocabularySize <= 1 << 24 else {
            throw .invalid(key: parameters.key("vocab_size"), value: "\(vocabularySize)", reason: "must be in 1...\(1 << 24)")
        }

        self.architecture = architecture
        self.embeddingLength = embeddingLength
        self.blockCount = try required("block_count", limit: Self.maximumBlockCount)
        self.feedForwardLength = try required("feed_forward_length")
        self.headCount = headCount
        self.headCountKV = headCountKV
        self.headDimension = headDimension
        self.trainedContextLength = try required("context_length", limit: 1 << 24)
        self.rmsNormEpsilon = try positiveDouble("attention.layer_norm_rms_epsilon")
        self.ropeFrequencyBase = try positiveDouble("rope.freq_base", default: 10_000)
        self.vocabularySize = vocabularySize
        self.slidingWindow = architecture == .gemma3 ? try required("attention.sliding_window", limit: 1 << 24) : nil
    }
}

/// Why a model's configuration cannot be read.
public enum ModelConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    case metadata(GGUFError)
    case unsupportedArchitecture(String)
    case missing(String)
    case invalid(key: String, value: String, reason: String)

    public var description: String {
        switch self {
        case let .metadata(error): "\(error)"
        case let .unsupportedArchitecture(name):
            "unsupported architecture '\(name)' (supported: \(ModelArchitecture.allCases.map(\.rawValue).joined(separator: ", ")))"
        case let .missing(key): "the model has no '\(key)'"
        case let .invalid(key, value, reason): "'\(key)' is \(value): \(reason)"
        }
    }
}
