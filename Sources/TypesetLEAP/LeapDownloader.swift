import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where ``LeapDownloader`` and ``ModelDownloader`` keep bundles and how they fetch them.
public struct LeapDownloaderConfig: Sendable, Equatable {
    /// The directory bundles are saved in, one folder per model and quantization. Default:
    /// `leap_models` in Typeset's cache (`$TYPESET_CACHE`, else `~/.cache/typeset`).
    public var saveDir: String
    /// Whether a downloaded file is checked against the SHA-256 its server states (Hugging
    /// Face's file servers give it as the `ETag`); a mismatch deletes the file and fails.
    public var validateSha256: Bool
    /// Typeset always validates TLS certificates: `true` is refused when loading.
    public var disableSslValidation: Bool
    /// Where bundles' manifests are looked up by name: `<baseUrl>/<model>/<quantization>.json`.
    /// Default: LEAP's bundles on Hugging Face, `https://huggingface.co/LiquidAI/LeapBundles/resolve/main`.
    public var baseUrl: String?
    /// How long a connection may take to open, and stay silent, before a download fails.
    public var connectTimeoutMillis: Int64
    public var socketTimeoutMillis: Int64
    /// How long a manifest's request may take in all (files take as long as they need).
    public var requestTimeoutMillis: Int64

    public init(
        saveDir: String = ModelStore.cacheDirectory + "/leap_models", validateSha256: Bool = true, disableSslValidation: Bool = false,
        baseUrl: String? = nil, connectTimeoutMillis: Int64 = 30_000, socketTimeoutMillis: Int64 = 60_000,
        requestTimeoutMillis: Int64 = 600_000
    ) {
        self.saveDir = saveDir
        self.validateSha256 = validateSha256
        self.disableSslValidation = disableSslValidation
        self.baseUrl = baseUrl
        self.connectTimeoutMillis = connectTimeoutMillis
        self.socketTimeoutMillis = socketTimeoutMillis
        self.requestTimeoutMillis = requestTimeoutMillis
    }

    /// The default configuration, saving into `saveDir`.
    public static func with(saveDir: String) -> LeapDownloaderConfig { LeapDownloaderConfig(saveDir: saveDir) }

    /// Where LEAP publishes its bundles' manifests.
    static let defaultBaseURL = "https://huggingface.co/LiquidAI/LeapBundles/resolve/main"
}

/// A bundle's manifest: which engine runs it, its files, and its generation defaults.
///
/// ```json
/// {"schema_version": "1.0.0", "inference_type": "llama.cpp/text-to-text",
///  "load_time_parameters": {"model": "../LFM2-350M-Q5_K_M.gguf"},
///  "generation_time_parameters": {"sampling_parameters": {"temperature": 0.3, "min_p": 0.15}}}
/// ```
///
/// File paths are URLs, or paths relative to the manifest's URL.
public struct Manifest: Sendable, Equatable, Codable {
    public var schemaVersion: String
    /// The engine and modality: Typeset runs `llama.cpp/text-to-text` bundles.
    public var inferenceType: String
    public var loadTimeParameters: LoadTimeParameters
    public var generationTimeParameters: GenerationTimeParameters?

    /// The files of a bundle.
    public struct LoadTimeParameters: Sendable, Equatable, Codable {
        /// The GGUF model.
        public var model: String
        /// A chat template replacing the model's own.
        public var chatTemplate: String?
        /// A vision model's projector (Typeset refuses bundles that need one).
        public var multimodalProjector: String?
        public var audioDecoder: String?
        public var audioTokenizer: String?

        enum CodingKeys: String, CodingKey {
            case model, chatTemplate = "chat_template", multimodalProjector = "multimodal_projector"
            case audioDecoder = "audio_decoder", audioTokenizer = "audio_tokenizer"
        }
    }

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version", inferenceType = "inference_type"
        case loadTimeParameters = "load_time_parameters", generationTimeParameters = "generation_time_parameters"
    }

    /// The only engine Typeset runs bundles for.
    static let textToText = "llama.cpp/text-to-text"
}

/// A model given by its file's location rather than by a manifest (`loadSimpleModel`).
public struct ModelSource: Sendable, Equatable {
    /// The GGUF file: an `http(s)` URL, a `file:` URL or a path.
    public var modelPath: String
    public var mmprojPath: String?
    public var audioDecoderPath: String?
    public var audioTokenizerPath: String?
    /// The folder names it is saved under (`<saveDir>/<modelName>/<quantizationId>/`).
    public var modelName: String
    public var quantizationId: String

    public init(
        modelPath: String, mmprojPath: String? = nil, audioDecoderPath: String? = nil, audioTokenizerPath: String? = nil,
        modelName: String, quantizationId: String
    ) {
        self.modelPath = modelPath
        self.mmprojPath = mmprojPath
        self.audioDecoderPath = audioDecoderPath
        self.audioTokenizerPath = audioTokenizerPath
        self.modelName = modelName
        self.quantizationId = quantizationId
    }
}

/// How far a download has come (``LeapDownloader``'s progress).
public struct ProgressData: Sendable, Equatable {
    /// Bytes on disk so far.
    public var bytes: Int64
    /// The file's size, 0 while the server has not said.
    public var total: Int64
    /// `bytes / total`, 0 while the size is unknown.
    public var progress: Float
}

/// Whether a bundle's model file is on disk.
public enum ModelDownloadStatus: Sendable, Equatable {
    case notOnLocal
    /// Being downloaded; `progress` from 0 to 1.
    case downloadInProgress(progress: Double)
    case downloaded
}

/// A downloaded bundle: its manifest and where its files are.
public struct DownloadedModelManifest: Sendable, Equatable {
    public let manifest: Manifest
    public let localModelPath: String
    public let localMultimodalProjectorPath: String?
    public let localAudioDecoderPath: String?
    public let localAudioTokenizerPath: String?
    public let chatTemplate: String?
}

// MARK: - Downloaders

/// LEAP's cross-platform loader: resolves a bundle's manifest by name (or takes its URL),
/// downloads the model file it names into ``LeapDownloaderConfig/saveDir`` (resuming an
/// interrupted download, checking its SHA-256 when the server states one), and loads it with
/// the manifest's sampling as the model's defaults.
///
/// ```swift
/// let downloader = LeapDownloader(config: LeapDownloaderConfig(saveDir: modelsDir))
/// let runner = try await downloader.loadModel(modelName: "LFM2-1.2B", quantizationType: "Q4_K_M")
/// ```
public final class LeapDownloader: Sendable {
    public let config: LeapDownloaderConfig
    let bundles: BundleStore

    public init(config: LeapDownloaderConfig = LeapDownloaderConfig()) {
        self.config = config
        bundles = BundleStore(config: config)
    }

    /// Downloads (unless it is on disk, or `forceDownload`) and loads the bundle `modelName`
    /// in `quantizationType`.
    public func loadModel(
        modelName: String, quantizationType: String, options: LiquidInferenceEngineManifestOptions? = nil,
        generationTimeParameters: GenerationTimeParameters? = nil, forceDownload: Bool = false,
        progress: (@Sendable (ProgressData) -> Void)? = nil
    ) async throws -> ModelRunner {
        let bundle = try await bundles.download(
            manifestURL: try bundles.manifestURL(modelName: modelName, quantizationType: quantizationType),
            folder: [modelName, quantizationType], force: forceDownload, progress: progress.map(BundleStore.reporting))
        return try await bundles.load(bundle, options: options, generationTimeParameters: generationTimeParameters)
    }

    /// Downloads and loads the bundle whose manifest is at `manifestUrl`.
    public func loadModel(
        manifestUrl: URL, options: LiquidInferenceEngineManifestOptions? = nil, generationTimeParameters: GenerationTimeParameters? = nil,
        forceDownload: Bool = false, progress: (@Sendable (ProgressData) -> Void)? = nil
    ) async throws -> ModelRunner {
        let bundle = try await bundles.download(
            manifestURL: manifestUrl, folder: BundleStore.folder(of: manifestUrl), force: forceDownload,
            progress: progress.map(BundleStore.reporting))
        return try await bundles.load(bundle, options: options, generationTimeParameters: generationTimeParameters)
    }

    /// Downloads and loads the model file `model` names, without a manifest.
    public func loadSimpleModel(
        model: ModelSource, options: LiquidInferenceEngineManifestOptions? = nil, generationTimeParameters: GenerationTimeParameters? = nil,
        progress: (@Sendable (ProgressData) -> Void)? = nil
    ) async throws -> ModelRunner {
        let bundle = try await bundles.download(model, progress: progress.map(BundleStore.reporting))
        return try await bundles.load(bundle, options: options, generationTimeParameters: generationTimeParameters)
    }

    /// Downloads the bundle `modelName` in `quantizationType` and returns its manifest.
    public func downloadModel(
        modelName: String, quantizationType: String, progress: (@Sendable (ProgressData) -> Void)? = nil
    ) async throws -> Manifest {
        try await bundles.download(
            manifestURL: try bundles.manifestURL(modelName: modelName, quantizationType: quantizationType),
            folder: [modelName, quantizationType], force: false, progress: progress.map(BundleStore.reporting)
        ).manifest
    }
}

/// LEAP's Apple-platform loader, as ``LeapDownloader`` with progress as a fraction and a speed
/// in bytes per second, and the status and removal of bundles.
///
/// ```swift
/// let runner = try await ModelDownloader().loadModel(modelName: "LFM2-1.2B", quantizationType: "Q4_K_M") { fraction, speed in
///     print(fraction, speed)
/// }
/// ```
public final class ModelDownloader: Sendable {
    public let config: LeapDownloaderConfig
    let bundles: BundleStore

    /// A downloader with `config`. A `sessionConfiguration` (for a background session on
    /// Apple platforms) lends its request timeout; downloads run in the foreground.
    public init(config: LeapDownloaderConfig = LeapDownloaderConfig(), sessionConfiguration: URLSessionConfiguration? = nil) {
        var config = config
        if let timeout = sessionConfiguration?.timeoutIntervalForRequest, timeout > 0 {
            config.socketTimeoutMillis = Int64(timeout * 1000)
        }
        self.config = config
        bundles = BundleStore(config: config)
    }

    public convenience init(sessionConfiguration: URLSessionConfiguration?) {
        self.init(config: LeapDownloaderConfig(), sessionConfiguration: sessionConfiguration)
    }

    /// Downloads (unless it is on disk, or `forceDownload`) and loads the bundle `modelName` in
    /// `quantizationType`, reporting the fraction done and the speed in bytes per second.
    public func loadModel(
        modelName: String, quantizationType: String, options: LiquidInferenceEngineManifestOptions? = nil,
        generationTimeParameters: GenerationTimeParameters? = nil, forceDownload: Bool = false,
        downloadProgress: (@Sendable (_ fraction: Double, _ bytesPerSecond: Int64) -> Void)? = nil
    ) async throws -> ModelRunner {
        let bundle = try await bundles.download(
            manifestURL: try bundles.manifestURL(modelName: modelName, quantizationType: quantizationType),
            folder: [modelName, quantizationType], force: forceDownload, progress: downloadProgress.map(BundleStore.reporting))
        return try await bundles.load(bundle, options: options, generationTimeParameters: generationTimeParameters)
    }

    /// Downloads and loads the bundle whose manifest is at `manifestUrl`.
    public func loadModel(
        manifestUrl: URL, options: LiquidInferenceEngineManifestOptions? = nil, generationTimeParameters: GenerationTimeParameters? = nil,
        forceDownload: Bool = false, downloadProgress: (@Sendable (_ fraction: Double, _ bytesPerSecond: Int64) -> Void)? = nil
    ) async throws -> ModelRunner {
        let bundle = try await bundles.download(
            manifestURL: manifestUrl, folder: BundleStore.folder(of: manifestUrl), force: forceDownload,
            progress: downloadProgress.map(BundleStore.reporting))
        return try await bundles.load(bundle, options: options, generationTimeParameters: generationTimeParameters)
    }

    /// Downloads and loads the model file `model` names, without a manifest.
    public func loadSimpleModel(
        model: ModelSource, options: LiquidInferenceEngineManifestOptions? = nil, generationTimeParameters: GenerationTimeParameters? = nil,
        downloadProgress: (@Sendable (_ fraction: Double, _ bytesPerSecond: Int64) -> Void)? = nil
    ) async throws -> ModelRunner {
        let bundle = try await bundles.download(model, progress: downloadProgress.map(BundleStore.reporting))
        return try await bundles.load(bundle, options: options, generationTimeParameters: generationTimeParameters)
    }

    /// Downloads the bundle `modelName` in `quantizationType` without loading it.
    public func downloadModel(
        modelName: String, quantizationType: String,
        downloadProgress: (@Sendable (_ fraction: Double, _ bytesPerSecond: Int64) -> Void)? = nil
    ) async throws -> DownloadedModelManifest {
        try await bundles.download(
            manifestURL: try bundles.manifestURL(modelName: modelName, quantizationType: quantizationType),
            folder: [modelName, quantizationType], force: false, progress: downloadProgress.map(BundleStore.reporting))
    }

    /// Whether the bundle's model file is on disk, being downloaded, or neither.
    public func queryStatus(modelName: String, quantizationType: String) async -> ModelDownloadStatus {
        bundles.status(folder: [modelName, quantizationType])
    }

    /// Deletes the bundle's files (and any partial download).
    public func removeModel(modelName: String, quantizationType: String) async {
        bundles.remove(folder: [modelName, quantizationType])
    }

    /// The folder the bundle's files are saved in.
    public func getModelResourceFolder(modelName: String, quantizationType: String) -> String {
        bundles.directory(of: [modelName, quantizationType]).path
    }
}

// MARK: - Bundles on disk

/// What both downloaders do: manifests fetched and checked, model files downloaded into one
/// folder per bundle, bundles loaded.
struct BundleStore: Sendable {
    let config: LeapDownloaderConfig

    /// The largest manifest read (a manifest is a few hundred bytes).
    static let manifestByteLimit = 1 << 20

    func manifestURL(modelName: String, quantizationType: String) throws -> URL {
        let base = (config.baseUrl ?? LeapDownloaderConfig.defaultBaseURL).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let safe = { (name: String) in !name.isEmpty && name != "." && name != ".." && !name.contains("/") }
        guard safe(modelName), safe(quantizationType),
              let url = URL(string: base + "/" + modelName + "/" + quantizationType + ".json")
        else { throw LeapError.modelLoadingFailure("'\(modelName)' in '\(quantizationType)' does not name a bundle") }
        return url
    }

    /// A folder for a bundle known only by its manifest's URL: its host and path.
    static func folder(of manifest: URL) -> [String] {
        [manifest.host ?? "local", manifest.deletingPathExtension().path.split(separator: "/").joined(separator: "_")]
    }

    func directory(of folder: [String]) -> URL {
        folder.reduce(URL(fileURLWithPath: config.saveDir)) { $0.appendingPathComponent($1) }
    }

    /// A file downloader into `folder`, with the configuration's timeouts.
    private func downloader(into folder: [String]) -> FileDownloader {
        FileDownloader(directory: directory(of: folder), idleTimeout: TimeInterval(config.socketTimeoutMillis) / 1000)
    }

    /// Fetches and checks the manifest at `manifestURL`, then its model file into `folder`.
    func download(
        manifestURL: URL, folder: [String], force: Bool, progress: (@Sendable (FileDownloader.Progress) -> Void)?
    ) async throws -> DownloadedModelManifest {
        guard !config.disableSslValidation else {
            throw LeapError.modelLoadingFailure("disableSslValidation is set; Typeset always validates TLS certificates")
        }
        let data = try await fetch(manifestURL)
        let manifest: Manifest
        do { manifest = try JSONDecoder().decode(Manifest.self, from: data) } catch {
            throw LeapError.modelLoadingFailure("the manifest at \(manifestURL.absoluteString) is not a bundle manifest: \(error)")
        }
        guard manifest.inferenceType == Manifest.textToText else {
            throw LeapError.modelLoadingFailure(
                "the bundle is \(manifest.inferenceType); Typeset runs \(Manifest.textToText) bundles (text models)")
        }
        let parameters = manifest.loadTimeParameters
        if let companion = [("multimodal_projector", parameters.multimodalProjector), ("audio_decoder", parameters.audioDecoder),
                            ("audio_tokenizer", parameters.audioTokenizer)].first(where: { $0.1 != nil }) {
            throw LeapError.modelLoadingFailure("the bundle needs a \(companion.0); Typeset runs text models only")
        }
        guard let modelURL = URL(string: parameters.model, relativeTo: manifestURL)?.absoluteURL else {
            throw LeapError.modelLoadingFailure("the manifest's model '\(parameters.model)' is not a URL or a path")
        }
        let local = try await file(at: modelURL, into: folder, force: force, progress: progress)
        return DownloadedModelManifest(
            manifest: manifest, localModelPath: local.path, localMultimodalProjectorPath: nil, localAudioDecoderPath: nil,
            localAudioTokenizerPath: nil, chatTemplate: parameters.chatTemplate)
    }

    /// Fetches the model file `source` names, refusing companion files.
    func download(_ source: ModelSource, progress: (@Sendable (FileDownloader.Progress) -> Void)?) async throws -> DownloadedModelManifest {
        if let companion = [("mmprojPath", source.mmprojPath), ("audioDecoderPath", source.audioDecoderPath),
                            ("audioTokenizerPath", source.audioTokenizerPath)].first(where: { $0.1 != nil }) {
            throw LeapError.modelLoadingFailure("\(companion.0) is set, but Typeset runs text models only (no vision or audio)")
        }
        let url = source.modelPath.contains("://") ? URL(string: source.modelPath) : URL(fileURLWithPath: source.modelPath)
        guard let url else { throw LeapError.modelLoadingFailure("'\(source.modelPath)' is not a URL or a path") }
        let local = try await file(at: url, into: [source.modelName, source.quantizationId], force: false, progress: progress)
        let manifest = Manifest(
            schemaVersion: "1.0.0", inferenceType: Manifest.textToText,
            loadTimeParameters: .init(model: local.path), generationTimeParameters: nil)
        return DownloadedModelManifest(
            manifest: manifest, localModelPath: local.path, localMultimodalProjectorPath: nil, localAudioDecoderPath: nil,
            localAudioTokenizerPath: nil, chatTemplate: nil)
    }

    /// Loads a downloaded bundle: its chat template and sampling as the manifest gives them,
    /// `options` and `generationTimeParameters` taking precedence.
    func load(
        _ bundle: DownloadedModelManifest, options: LiquidInferenceEngineManifestOptions?, generationTimeParameters: GenerationTimeParameters?
    ) async throws -> ModelRunner {
        var options = options ?? LiquidInferenceEngineManifestOptions()
        if options.chatTemplate == nil { options.chatTemplate = bundle.chatTemplate }
        return try await Leap.loadModel(
            at: URL(fileURLWithPath: bundle.localModelPath), options: options,
            generationTimeParameters: generationTimeParameters ?? bundle.manifest.generationTimeParameters)
    }

    func status(folder: [String]) -> ModelDownloadStatus {
        let directory = directory(of: folder)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        if files.contains(where: { $0.hasSuffix(".part") }) {
            let downloader = downloader(into: folder)
            for file in files where file.hasSuffix(".part") {
                let name = String(file.dropLast(5))
                if case .downloadInProgress(let progress) = downloader.status(of: directory.appendingPathComponent(name), fileName: name) {
                    return .downloadInProgress(progress: progress)
                }
            }
        }
        return files.contains { $0.hasSuffix(".gguf") } ? .downloaded : .notOnLocal
    }

    func remove(folder: [String]) {
        try? FileManager.default.removeItem(at: directory(of: folder))
    }

    /// The bytes of a manifest: a local file, or an `http(s)` response of at most
    /// ``manifestByteLimit`` bytes.
    private func fetch(_ url: URL) async throws -> Data {
        if url.isFileURL {
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw LeapError.modelLoadingFailure("there is no manifest at \(url.path)")
            }
            return data
        }
        guard ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw LeapError.modelLoadingFailure("\(url.absoluteString) is not an http, https or file URL")
        }
        var request = URLRequest(url: url, timeoutInterval: TimeInterval(config.connectTimeoutMillis) / 1000)
        request.timeoutInterval = TimeInterval(config.requestTimeoutMillis) / 1000
        let (data, response): (Data, URLResponse)
        do { (data, response) = try await URLSession.shared.data(for: request) } catch {
            throw LeapError.downloadFailure("the manifest at \(url.absoluteString) could not be fetched: \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else { throw LeapError.downloadFailure("the server answered \(status) for \(url.absoluteString)") }
        guard data.count <= Self.manifestByteLimit else {
            throw LeapError.modelLoadingFailure("the manifest at \(url.absoluteString) is larger than 1 MiB")
        }
        return data
    }

    /// The model file at `url`: a local file as it is, a remote one downloaded into `folder`.
    private func file(
        at url: URL, into folder: [String], force: Bool, progress: (@Sendable (FileDownloader.Progress) -> Void)?
    ) async throws -> URL {
        if url.isFileURL {
            guard FileManager.default.fileExists(atPath: url.path) else {
                throw LeapError.modelLoadingFailure("there is no model file at \(url.path)")
            }
            return url
        }
        let downloader = downloader(into: folder)
        if force { try? downloader.removeModel(at: url) }
        do {
            return try await downloader.download(from: url, checksServerDigest: config.validateSha256, progress: progress)
        } catch let error as FileDownloader.DownloadError {
            throw LeapError.downloadFailure(error.description)
        }
    }

    /// LEAP's `ProgressData` reports from a file download's progress.
    static func reporting(_ report: @escaping @Sendable (ProgressData) -> Void) -> @Sendable (FileDownloader.Progress) -> Void {
        { progress in
            let total = progress.totalBytes ?? 0
            report(ProgressData(bytes: progress.receivedBytes, total: total, progress: Float(progress.fractionCompleted ?? 0)))
        }
    }

    /// LEAP's (fraction, bytes per second) reports from a file download's progress.
    static func reporting(
        _ report: @escaping @Sendable (_ fraction: Double, _ bytesPerSecond: Int64) -> Void
    ) -> @Sendable (FileDownloader.Progress) -> Void {
        let start = ContinuousClock.now
        let first = Mutex<Int64?>(nil)
        return { progress in
            let initial = first.withLock { value -> Int64 in
                if value == nil { value = progress.receivedBytes }
                return value!
            }
            let seconds = (ContinuousClock.now - start).seconds
            let speed = seconds > 0 ? Int64(Double(progress.receivedBytes - initial) / seconds) : 0
            report(progress.fractionCompleted ?? 0, speed)
        }
    }
}
