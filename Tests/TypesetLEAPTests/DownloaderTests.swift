import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
@testable import TypesetLEAP
import TypesetTestSupport

/// nginx (Debian's package) serving a directory on loopback: a real HTTP server with ranges,
/// `ETag`s and `If-Range`, and a `/slow/` location limited to 4 MB/s so that a download can be
/// interrupted halfway.
final class LoopbackFileServer {
    let root: URL
    let files: URL
    let port: Int
    private let process: Process

    static var nginxPath: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init() async throws {
        let nginx = try #require(Self.nginxPath, "nginx is not installed")
        root = FileManager.default.temporaryDirectory.appendingPathComponent("typeset-nginx-\(UUID().uuidString)")
        files = root.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: files.appendingPathComponent("slow"), withIntermediateDirectories: true)
        for directory in ["temp", "logs"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        var lastError: ServerError?
        for _ in 0 ..< 8 {
            let port = Int.random(in: 20_000 ..< 60_000)
            let configuration = """
                daemon off; master_process off; worker_processes 1;
                pid \(root.path)/nginx.pid; error_log \(root.path)/logs/error.log;
                events { worker_connections 64; }
                http {
                    access_log \(root.path)/logs/access.log;
                    client_body_temp_path \(root.path)/temp/body; proxy_temp_path \(root.path)/temp/proxy;
                    fastcgi_temp_path \(root.path)/temp/fastcgi; uwsgi_temp_path \(root.path)/temp/uwsgi; scgi_temp_path \(root.path)/temp/scgi;
                    server {
                        listen 127.0.0.1:\(port);
                        root \(files.path);
                        location /slow/ { limit_rate 4m; }
                    }
                }
                """
            try configuration.write(to: root.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = ["-p", root.path, "-c", root.appendingPathComponent("nginx.conf").path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            _ = FileManager.default.createFile(atPath: files.appendingPathComponent("ping").path, contents: Data("ok".utf8))
            for _ in 0 ..< 50 {
                if let (_, response) = try? await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/ping")!),
                   (response as? HTTPURLResponse)?.statusCode == 200
                {
                    self.port = port
                    self.process = process
                    return
                }
                if !process.isRunning { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            lastError = ServerError.didNotStart(log: (try? String(contentsOf: root.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? "")
        }
        throw lastError ?? ServerError.didNotStart(log: "")
    }

    enum ServerError: Error { case didNotStart(log: String) }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(path)")! }

    /// The status codes of the requests for `path`, in order.
    func statuses(of path: String) throws -> [Int] {
        let log = (try? String(contentsOf: root.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.contains("GET /\(path) ") }.compactMap { line in
            line.split(separator: "\"").dropFirst(2).first?.split(separator: " ").first.flatMap { Int($0) }
        }
    }

    deinit {
        // nginx without a master process ignores SIGTERM here: it holds nothing worth a clean stop.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: root)
    }
}

/// The downloads behind LEAP's loaders, against nginx on loopback: whole downloads verified by
/// SHA-256, a download interrupted halfway and resumed with a range request, a changed file
/// started over, each failure a typed error that leaves no file behind; then LEAP's
/// `LeapDownloader` and `ModelDownloader` loading bundles by their manifests.
@Suite(.serialized, .enabled(if: LoopbackFileServer.nginxPath != nil))
final class DownloaderTests {
    /// The download directories this test made, removed when it ends (a suite instance lives
    /// for one test).
    private var directories: [URL] = []

    deinit {
        for directory in directories { try? FileManager.default.removeItem(at: directory) }
    }

    /// A file that begins like a GGUF file: 12 MB of seeded random bytes after the magic.
    static func fakeModel(seed: UInt64, megabytes: Int = 12) -> (data: Data, sha256: String) {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8]("GGUF".utf8)
        bytes.reserveCapacity(megabytes << 20)
        while bytes.count < megabytes << 20 { bytes.append(UInt8(truncatingIfNeeded: generator.next())) }
        var digest = SHA256Digest()
        digest.update(bytes)
        return (Data(bytes), digest.finalize())
    }

    private func temporaryDirectory() -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typeset-downloads-\(UUID().uuidString)")
        directories.append(directory)
        return directory
    }

    @Test func aDownloadIsVerifiedAndReportsProgress() async throws {
        let server = try await LoopbackFileServer()
        let model = Self.fakeModel(seed: 1)
        try model.data.write(to: server.files.appendingPathComponent("model.gguf"))
        let downloader = FileDownloader(directory: temporaryDirectory())
        #expect(downloader.status(of: server.url("model.gguf")) == .notOnLocal)
        let reports = Mutex<[FileDownloader.Progress]>([])
        let file = try await downloader.download(from: server.url("model.gguf"), sha256: model.sha256) { progress in
            reports.withLock { $0.append(progress) }
        }
        #expect(try Data(contentsOf: file) == model.data)
        #expect(downloader.status(of: server.url("model.gguf")) == .downloaded)
        let seen = reports.withLock { $0 }
        #expect(seen.first?.receivedBytes == 0 && seen.last?.receivedBytes == Int64(model.data.count))
        #expect(seen.last?.fractionCompleted == 1)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.receivedBytes <= $1.receivedBytes })
        // Already here: verified again, not fetched again.
        _ = try await downloader.download(from: server.url("model.gguf"), sha256: model.sha256)
        #expect(try server.statuses(of: "model.gguf") == [200])
        try downloader.removeModel(at: server.url("model.gguf"))
        #expect(downloader.status(of: server.url("model.gguf")) == .notOnLocal)
    }

    @Test func anInterruptedDownloadResumesWithARange() async throws {
        let server = try await LoopbackFileServer()
        let model = Self.fakeModel(seed: 2)
        try model.data.write(to: server.files.appendingPathComponent("slow/model.gguf"))
        let downloader = FileDownloader(directory: temporaryDirectory())
        let url = server.url("slow/model.gguf")
        let first = Task { try await downloader.download(from: url, sha256: model.sha256) }
        while !FileManager.default.fileExists(atPath: downloader.destination(of: url).path + ".part") { try await Task.sleep(for: .milliseconds(20)) }
        while ((try? FileManager.default.attributesOfItem(atPath: downloader.destination(of: url).path + ".part")[.size] as? Int) ?? 0) < 3 << 20 {
            try await Task.sleep(for: .milliseconds(20))
        }
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(!FileManager.default.fileExists(atPath: downloader.destination(of: url).path))

        let reports = Mutex<[FileDownloader.Progress]>([])
        let file = try await downloader.download(from: url, sha256: model.sha256) { progress in reports.withLock { $0.append(progress) } }
        #expect(try Data(contentsOf: file) == model.data)
        #expect(try server.statuses(of: "slow/model.gguf").last == 206)
        #expect((reports.withLock { $0.first?.receivedBytes } ?? 0) >= 3 << 20)
    }

    @Test func aChangedFileStartsOver() async throws {
        let server = try await LoopbackFileServer()
        // Of another size: nginx's ETag is the modification second and the size, so a file
        // replaced within the same second by one of the same size would keep its ETag.
        let old = Self.fakeModel(seed: 3), new = Self.fakeModel(seed: 4, megabytes: 13)
        try old.data.write(to: server.files.appendingPathComponent("slow/model.gguf"))
        let downloader = FileDownloader(directory: temporaryDirectory())
        let url = server.url("slow/model.gguf")
        let first = Task { try await downloader.download(from: url) }
        while ((try? FileManager.default.attributesOfItem(atPath: downloader.destination(of: url).path + ".part")[.size] as? Int) ?? 0) < 2 << 20 {
            try await Task.sleep(for: .milliseconds(20))
        }
        first.cancel()
        _ = try? await first.value
        try new.data.write(to: server.files.appendingPathComponent("slow/model.gguf"))
        let file = try await downloader.download(from: url, sha256: new.sha256)
        #expect(try Data(contentsOf: file) == new.data)
        #expect(try server.statuses(of: "slow/model.gguf").last == 200)
    }

    @Test func failuresAreTypedAndLeaveNoFile() async throws {
        let server = try await LoopbackFileServer()
        let model = Self.fakeModel(seed: 5, megabytes: 1)
        try model.data.write(to: server.files.appendingPathComponent("model.gguf"))
        try Data("<html>not a model</html>".utf8).write(to: server.files.appendingPathComponent("page.gguf"))
        let downloader = FileDownloader(directory: temporaryDirectory())
        let wrong = String(repeating: "0", count: 64)
        await #expect(throws: FileDownloader.DownloadError.checksumMismatch(expected: wrong, actual: model.sha256)) {
            try await downloader.download(from: server.url("model.gguf"), sha256: wrong)
        }
        #expect(downloader.status(of: server.url("model.gguf")) == .notOnLocal)
        await #expect(throws: FileDownloader.DownloadError.notGGUF(url: server.url("page.gguf").absoluteString)) {
            try await downloader.download(from: server.url("page.gguf"))
        }
        await #expect(throws: FileDownloader.DownloadError.httpStatus(404, url: server.url("missing.gguf").absoluteString)) {
            try await downloader.download(from: server.url("missing.gguf"))
        }
        await #expect(throws: FileDownloader.DownloadError.unsupportedURL("ftp://127.0.0.1/model.gguf")) {
            try await downloader.download(from: URL(string: "ftp://127.0.0.1/model.gguf")!)
        }
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: downloader.directory.path)) ?? []
        #expect(leftovers.isEmpty, "left behind: \(leftovers)")
    }

    /// A server's ETag is a SHA-256 when it is 64 hexadecimal digits (Hugging Face's are).
    @Test func serverDigestsAreReadFromETags() {
        let digest = String(repeating: "ab", count: 32)
        #expect(FileDownloader.digest(inValidator: "\"\(digest.uppercased())\"") == digest)
        #expect(FileDownloader.digest(inValidator: "W/\"\(digest)\"") == digest)
        #expect(FileDownloader.digest(inValidator: "\"65f1a2b3-c00000\"") == nil)
        #expect(FileDownloader.digest(inValidator: nil) == nil)
    }

    /// A bundle served as LEAP publishes them: a manifest naming the model file relative to
    /// itself, with sampling defaults. Both loaders download it, load it with the manifest's
    /// sampling, report its status, and remove it.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func aBundleLoadsByItsManifest() async throws {
        let server = try await LoopbackFileServer()
        let bundles = server.files.appendingPathComponent("bundles/SmolLM2-135M")
        try FileManager.default.createDirectory(at: bundles, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: server.files.appendingPathComponent("bundles/smollm2-q4_1.gguf"), withDestinationURL: URL(fileURLWithPath: TestModels.smolLM2Path))
        try #"""
            {"schema_version": "1.0.0", "inference_type": "llama.cpp/text-to-text",
             "load_time_parameters": {"model": "../smollm2-q4_1.gguf"},
             "generation_time_parameters": {"sampling_parameters": {"temperature": 0.3, "min_p": 0.15, "repetition_penalty": 1.05}}}
            """#.write(to: bundles.appendingPathComponent("Q4_1.json"), atomically: true, encoding: .utf8)
        let config = LeapDownloaderConfig(saveDir: temporaryDirectory().path, baseUrl: server.url("bundles").absoluteString)

        let downloader = ModelDownloader(config: config)
        #expect(await downloader.queryStatus(modelName: "SmolLM2-135M", quantizationType: "Q4_1") == .notOnLocal)
        let fractions = Mutex<[Double]>([])
        let runner = try await downloader.loadModel(modelName: "SmolLM2-135M", quantizationType: "Q4_1") { fraction, _ in
            fractions.withLock { $0.append(fraction) }
        }
        #expect(fractions.withLock { $0.last } == 1)
        #expect(runner.modelId.lowercased().contains("smollm2"))
        let defaults = try #require(runner as? TypesetModelRunner).runner.defaultOptions
        #expect(defaults.temperature == 0.3 && defaults.minP == 0.15 && defaults.repetitionPenalty == 1.05)
        #expect(await downloader.queryStatus(modelName: "SmolLM2-135M", quantizationType: "Q4_1") == .downloaded)
        let folder = downloader.getModelResourceFolder(modelName: "SmolLM2-135M", quantizationType: "Q4_1")
        var digest = SHA256Digest()
        digest.update([UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + "/smollm2-q4_1.gguf"))))
        #expect(digest.finalize() == KnownModel.smolLM2.sha256)
        await runner.unload()

        // LEAP's cross-platform loader finds it on disk: the model is not fetched again.
        let leap = try await LeapDownloader(config: config).loadModel(modelName: "SmolLM2-135M", quantizationType: "Q4_1")
        #expect(leap.modelId == runner.modelId)
        #expect(try server.statuses(of: "bundles/smollm2-q4_1.gguf") == [200])
        await downloader.removeModel(modelName: "SmolLM2-135M", quantizationType: "Q4_1")
        #expect(await downloader.queryStatus(modelName: "SmolLM2-135M", quantizationType: "Q4_1") == .notOnLocal)
    }

    /// What Typeset cannot run is refused when loading, naming why: a vision bundle, a companion
    /// file, TLS validation turned off, a manifest that is not one, a name that is a path.
    @Test func bundlesTypesetCannotRunAreRefused() async throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let vision = directory.appendingPathComponent("vision.json")
        try #"""
            {"schema_version": "1.0.0", "inference_type": "llama.cpp/image-to-text",
             "load_time_parameters": {"model": "model.gguf", "multimodal_projector": "mmproj.gguf"}}
            """#.write(to: vision, atomically: true, encoding: .utf8)
        let notAManifest = directory.appendingPathComponent("page.json")
        try "<html></html>".write(to: notAManifest, atomically: true, encoding: .utf8)
        let downloader = LeapDownloader(config: LeapDownloaderConfig(saveDir: directory.path))
        func reason(_ load: () async throws -> ModelRunner) async -> String {
            do { _ = try await load(); return "loaded" } catch { return "\(error)" }
        }
        #expect(await reason { try await downloader.loadModel(manifestUrl: vision) }.contains("llama.cpp/image-to-text"))
        #expect(await reason { try await downloader.loadModel(manifestUrl: notAManifest) }.contains("is not a bundle manifest"))
        #expect(await reason { try await downloader.loadModel(modelName: "../etc", quantizationType: "Q4") }.contains("does not name a bundle"))
        let source = ModelSource(modelPath: "/nonexistent.gguf", mmprojPath: "/mmproj.gguf", modelName: "m", quantizationId: "q")
        #expect(await reason { try await downloader.loadSimpleModel(model: source) }.contains("mmprojPath"))
        let insecure = LeapDownloader(config: LeapDownloaderConfig(saveDir: directory.path, disableSslValidation: true))
        #expect(await reason { try await insecure.loadModel(manifestUrl: vision) }.contains("validates TLS"))
        #expect(await reason { try await Leap.load(url: URL(fileURLWithPath: "/nonexistent.gguf")) }.contains("could not be loaded"))
    }
}
