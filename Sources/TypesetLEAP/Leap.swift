import Foundation

/// Loads models as LEAP's code does: a GGUF file by URL (`Leap.load(url:)`), or a bundle by
/// name through a manifest (``LeapDownloader``, ``ModelDownloader``).
///
/// ```swift
/// let runner = try await Leap.load(url: ggufURL)
/// let conversation = runner.createConversation(systemPrompt: "You are a helpful assistant.")
/// ```
public final class Leap: Sendable {
    /// The shared loader (LEAP's `Leap.shared`).
    public static let shared = Leap()

    private init() {}

    /// Loads the GGUF file at `url`.
    ///
    /// - Throws: ``LeapError/modelLoadingFailure(_:)`` naming what is wrong with the file or
    ///   with an option Typeset cannot honour.
    public static func load(url: URL, options: LiquidInferenceEngineOptions? = nil) async throws -> ModelRunner {
        try await shared.load(url: url, options: options)
    }

    /// Loads the GGUF file at `url` (a `file:` URL), with `options` and the sampling defaults
    /// of `generationTimeParameters`. Typeset reads a GGUF's chat template itself:
    /// `autoDetectCompanionFiles` (multimodal projectors and audio files beside the model) finds
    /// nothing it could use, and is accepted for the call's sake.
    public func load(
        url: URL, options: LiquidInferenceEngineOptions? = nil, generationTimeParameters: GenerationTimeParameters? = nil,
        autoDetectCompanionFiles: Bool = true
    ) async throws -> ModelRunner {
        try await Self.loadModel(at: url, options: options?.manifestOptions, refusing: options?.companionFiles ?? [],
                                 generationTimeParameters: generationTimeParameters)
    }

    /// Loads the bundle `model` in `quantization` by its manifest (see ``LeapDownloader``),
    /// downloading its files into the default directory, reporting the fraction done and the
    /// speed in bytes per second.
    public func load(
        model: String, quantization: String, options: LiquidInferenceEngineManifestOptions? = nil,
        progress: (@Sendable (_ fraction: Double, _ bytesPerSecond: Int64) -> Void)? = nil
    ) async throws -> ModelRunner {
        try await ModelDownloader().loadModel(modelName: model, quantizationType: quantization, options: options, downloadProgress: progress)
    }

    /// Loads a model file with LEAP's options: Typeset's runner options from them, the
    /// generation defaults from `generationTimeParameters`.
    static func loadModel(
        at url: URL, options: LiquidInferenceEngineManifestOptions?, refusing companions: [String] = [],
        generationTimeParameters: GenerationTimeParameters?
    ) async throws -> ModelRunner {
        if let companion = companions.first {
            throw LeapError.modelLoadingFailure("\(companion) is set, but Typeset runs text models only (no vision or audio)")
        }
        if options?.extras != nil {
            throw LeapError.modelLoadingFailure("extras carries a payload for LEAP's own inference engine, which Typeset does not run")
        }
        var runnerOptions = Typeset.ModelRunner.Options()
        if let threads = options?.cpuThreads ?? generationTimeParameters?.numberOfDecodingThreads.map(UInt32.init(clamping:)) {
            runnerOptions.threadCount = max(1, Int(threads))
        }
        if let contextSize = options?.contextSize { runnerOptions.contextLength = max(1, Int(contextSize)) }
        runnerOptions.chatTemplate = options?.chatTemplate
        if let sampling = generationTimeParameters?.samplingParameters {
            // The manifest's sampling is the model's default, as LEAP applies it (in place of
            // the GGUF's `general.sampling.*`; a field it leaves out is greedy decoding's).
            var defaults = Typeset.GenerationOptions()
            sampling.apply(to: &defaults)
            runnerOptions.defaultGenerationOptions = defaults
        }
        do {
            return TypesetModelRunner(try await Typeset.ModelRunner.load(from: url, options: runnerOptions))
        } catch {
            throw LeapError.modelLoadingFailure(error.description)
        }
    }
}

/// Why LEAP's loading or downloading failed.
public enum LeapError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The model, its manifest or an option cannot be loaded; the message says which and why.
    case modelLoadingFailure(String)
    /// A bundle's file could not be downloaded.
    case downloadFailure(String)

    public var description: String {
        switch self {
        case .modelLoadingFailure(let reason): "the model could not be loaded: \(reason)"
        case .downloadFailure(let reason): "the model could not be downloaded: \(reason)"
        }
    }

    public var errorDescription: String? { description }
}

// MARK: - Options

/// How the engine runs a model loaded by URL (LEAP's options for `Leap.load(url:options:)`).
/// Typeset honours `cpuThreads`, `contextSize` and `chatTemplate`; `nGpuLayers` and
/// `cacheOptions` only change where and how fast it runs (Typeset runs on the CPU, and keeps
/// its prompt cache in memory) and are accepted; a multimodal projector or audio file is
/// refused (Typeset runs text models), and so is `extras`.
public struct LiquidInferenceEngineOptions: Sendable {
    public var bundlePath: String
    public var cacheOptions: LiquidCacheOptions?
    public var cpuThreads: UInt32?
    public var contextSize: UInt32?
    public var nGpuLayers: UInt32?
    public var mmProjPath: String?
    public var audioDecoderPath: String?
    public var audioTokenizerPath: String?
    public var chatTemplate: String?
    public var extras: String?

    public init(
        bundlePath: String, cacheOptions: LiquidCacheOptions? = nil, cpuThreads: UInt32? = nil, contextSize: UInt32? = nil,
        nGpuLayers: UInt32? = nil, mmProjPath: String? = nil, audioDecoderPath: String? = nil, audioTokenizerPath: String? = nil,
        chatTemplate: String? = nil, extras: String? = nil
    ) {
        self.bundlePath = bundlePath
        self.cacheOptions = cacheOptions
        self.cpuThreads = cpuThreads
        self.contextSize = contextSize
        self.nGpuLayers = nGpuLayers
        self.mmProjPath = mmProjPath
        self.audioDecoderPath = audioDecoderPath
        self.audioTokenizerPath = audioTokenizerPath
        self.chatTemplate = chatTemplate
        self.extras = extras
    }

    var manifestOptions: LiquidInferenceEngineManifestOptions {
        LiquidInferenceEngineManifestOptions(
            cacheOptions: cacheOptions, cpuThreads: cpuThreads, contextSize: contextSize, nGpuLayers: nGpuLayers,
            chatTemplate: chatTemplate, extras: extras)
    }

    /// The companion files set, which Typeset refuses.
    var companionFiles: [String] {
        [("mmProjPath", mmProjPath), ("audioDecoderPath", audioDecoderPath), ("audioTokenizerPath", audioTokenizerPath)]
            .compactMap { $0.1 == nil ? nil : $0.0 }
    }
}

/// How the engine runs a model loaded from a manifest (see ``LiquidInferenceEngineOptions``).
public struct LiquidInferenceEngineManifestOptions: Sendable {
    public var cacheOptions: LiquidCacheOptions?
    public var cpuThreads: UInt32?
    public var contextSize: UInt32?
    public var nGpuLayers: UInt32?
    public var chatTemplate: String?
    public var extras: String?

    public init(
        cacheOptions: LiquidCacheOptions? = nil, cpuThreads: UInt32? = nil, contextSize: UInt32? = nil, nGpuLayers: UInt32? = nil,
        chatTemplate: String? = nil, extras: String? = nil
    ) {
        self.cacheOptions = cacheOptions
        self.cpuThreads = cpuThreads
        self.contextSize = contextSize
        self.nGpuLayers = nGpuLayers
        self.chatTemplate = chatTemplate
        self.extras = extras
    }
}

/// LEAP's on-disk prompt cache. Typeset keeps its prompt cache in memory (the runner's idle
/// caches), so these options change nothing but are accepted.
public struct LiquidCacheOptions: Sendable {
    public var path: String
    public var enabled: Bool

    /// A cache at `path`.
    public static func enabled(path: String) -> LiquidCacheOptions { LiquidCacheOptions(path: path, enabled: true) }
}

/// A bundle's generation defaults, from its manifest's `generation_time_parameters`.
public struct GenerationTimeParameters: Sendable, Equatable, Codable {
    public var samplingParameters: SamplingParameters?
    public var numberOfDecodingThreads: Int?

    public init(samplingParameters: SamplingParameters? = nil, numberOfDecodingThreads: Int? = nil) {
        self.samplingParameters = samplingParameters
        self.numberOfDecodingThreads = numberOfDecodingThreads
    }

    enum CodingKeys: String, CodingKey {
        case samplingParameters = "sampling_parameters"
        case numberOfDecodingThreads = "number_of_decoding_threads"
    }

    /// LEAP's options with the manifest's sampling.
    public func toGenerationOptions() -> GenerationOptions {
        let options = GenerationOptions()
        if let sampling = samplingParameters {
            options.temperature = sampling.temperature.map(Float.init)
            options.topP = sampling.topP.map(Float.init)
            options.minP = sampling.minP.map(Float.init)
            options.repetitionPenalty = sampling.repetitionPenalty.map(Float.init)
            options.topK = sampling.topK.map(Int32.init(clamping:))
        }
        return options
    }
}

/// The sampling a bundle's manifest recommends (tuned per checkpoint).
public struct SamplingParameters: Sendable, Equatable, Codable {
    public var temperature: Double?
    public var topP: Double?
    public var minP: Double?
    public var repetitionPenalty: Double?
    public var topK: Int?

    public init(temperature: Double? = nil, topP: Double? = nil, minP: Double? = nil, repetitionPenalty: Double? = nil, topK: Int? = nil) {
        self.temperature = temperature
        self.topP = topP
        self.minP = minP
        self.repetitionPenalty = repetitionPenalty
        self.topK = topK
    }

    enum CodingKeys: String, CodingKey {
        case temperature, topP = "top_p", minP = "min_p", repetitionPenalty = "repetition_penalty", topK = "top_k"
    }

    /// Sets the fields these parameters give in Typeset's options.
    func apply(to options: inout Typeset.GenerationOptions) {
        if let temperature { options.temperature = Float(temperature) }
        if let topP { options.topP = Float(topP) }
        if let minP { options.minP = Float(minP) }
        if let repetitionPenalty { options.repetitionPenalty = Float(repetitionPenalty) }
        if let topK { options.topK = topK }
    }
}
