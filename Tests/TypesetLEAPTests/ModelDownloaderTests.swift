import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import TypesetLEAP
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

/// `ModelDownloader` against nginx on loopback: whole downloads verified by SHA-256, a download
/// interrupted halfway and resumed with a range request, a changed file started over, and each
/// failure a typed error that leaves no file behind.
@Suite(.serialized, .enabled(if: LoopbackFileServer.nginxPath != nil))
final class ModelDownloaderTests {
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
        let downloader = ModelDownloader(directory: temporaryDirectory())
        #expect(downloader.status(of: server.url("model.gguf")) == .notOnLocal)
        let reports = Mutex<[ModelDownloader.Progress]>([])
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
        let downloader = ModelDownloader(directory: temporaryDirectory())
        let url = server.url("slow/model.gguf")
        let first = Task { try await downloader.download(from: url, sha256: model.sha256) }
        while !FileManager.default.fileExists(atPath: downloader.destination(of: url).path + ".part") { try await Task.sleep(for: .milliseconds(20)) }
        while ((try? FileManager.default.attributesOfItem(atPath: downloader.destination(of: url).path + ".part")[.size] as? Int) ?? 0) < 3 << 20 {
            try await Task.sleep(for: .milliseconds(20))
        }
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(!FileManager.default.fileExists(atPath: downloader.destination(of: url).path))

        let reports = Mutex<[ModelDownloader.Progress]>([])
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
        let downloader = ModelDownloader(directory: temporaryDirectory())
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
        let downloader = ModelDownloader(directory: temporaryDirectory())
        let wrong = String(repeating: "0", count: 64)
        await #expect(throws: ModelDownloader.DownloadError.checksumMismatch(expected: wrong, actual: model.sha256)) {
            try await downloader.download(from: server.url("model.gguf"), sha256: wrong)
        }
        #expect(downloader.status(of: server.url("model.gguf")) == .notOnLocal)
        await #expect(throws: ModelDownloader.DownloadError.notGGUF(url: server.url("page.gguf").absoluteString)) {
            try await downloader.download(from: server.url("page.gguf"))
        }
        await #expect(throws: ModelDownloader.DownloadError.httpStatus(404, url: server.url("missing.gguf").absoluteString)) {
            try await downloader.download(from: server.url("missing.gguf"))
        }
        await #expect(throws: ModelDownloader.DownloadError.unsupportedURL("ftp://127.0.0.1/model.gguf")) {
            try await downloader.download(from: URL(string: "ftp://127.0.0.1/model.gguf")!)
        }
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: downloader.directory.path)) ?? []
        #expect(leftovers.isEmpty, "left behind: \(leftovers)")
    }

    /// A real model, served and loaded: its SHA-256 is the one `Fixtures/fetch.sh` checks.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func aRealModelDownloadsAndLoads() async throws {
        let server = try await LoopbackFileServer()
        try FileManager.default.createSymbolicLink(
            at: server.files.appendingPathComponent(KnownModel.smolLM2.fileName), withDestinationURL: URL(fileURLWithPath: TestModels.smolLM2Path))
        let downloader = ModelDownloader(directory: temporaryDirectory())
        let runner = try await downloader.loadModel(from: server.url(KnownModel.smolLM2.fileName), sha256: KnownModel.smolLM2.sha256)
        #expect(runner.modelID.lowercased().contains("smollm2"))
        try downloader.removeModel(at: server.url(KnownModel.smolLM2.fileName))
    }
}
