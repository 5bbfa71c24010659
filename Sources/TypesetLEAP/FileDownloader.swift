import Foundation
import GGUF
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Fetches model files over HTTP into a directory, with progress, resumption after an
/// interruption and SHA-256 verification: what LEAP's ``ModelDownloader`` and
/// ``LeapDownloader`` download a bundle's files with.
///
/// **Layout.** A download writes `<file>.part` beside its destination and `<file>.part.validator`
/// (the server's `ETag` or `Last-Modified`); a later download of the same file asks for the
/// rest (`Range`, `If-Range`), so an interrupted download resumes where it stopped unless the
/// file changed on the server, in which case it starts over. The bytes are hashed as they
/// arrive (the part already on disk is hashed first); a file is moved into place only when it
/// is complete, begins like a GGUF file and, when a checksum is given, matches it. A file
/// already in place is verified again (not downloaded) when a checksum is given.
final class FileDownloader: Sendable {
    /// The directory models are downloaded into.
    let directory: URL
    private let progressByFile = Mutex<[String: Double]>([:])

    /// How long a connection may stay silent before the download fails, in seconds.
    let idleTimeout: TimeInterval

    /// A downloader into `directory`.
    init(directory: URL, idleTimeout: TimeInterval = 60) {
        self.directory = directory
        self.idleTimeout = idleTimeout
    }

    /// How far a download has come.
    struct Progress: Sendable, Equatable {
        /// Bytes of the file on disk so far (a resumed download starts from its part).
        var receivedBytes: Int64
        /// The file's size, when the server says.
        var totalBytes: Int64?

        /// `receivedBytes / totalBytes`, when the size is known.
        var fractionCompleted: Double? {
            totalBytes.flatMap { $0 > 0 ? Double(receivedBytes) / Double($0) : nil }
        }
    }

    /// Whether a model file is here.
    enum Status: Sendable, Equatable {
        case notOnLocal
        /// Being downloaded by this downloader; `progress` from 0 to 1 (0 while the size is unknown).
        case downloadInProgress(progress: Double)
        case downloaded
    }

    /// Why a download failed.
    enum DownloadError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The URL is not `http` or `https`, or names no file.
        case unsupportedURL(String)
        /// The server answered with this status.
        case httpStatus(Int, url: String)
        /// The connection failed.
        case network(String)
        /// The file does not begin with the GGUF magic bytes.
        case notGGUF(url: String)
        /// The file's SHA-256 is not the one expected (the file is deleted).
        case checksumMismatch(expected: String, actual: String)
        /// The file could not be written or moved.
        case fileSystem(String)

        var description: String {
            switch self {
            case .unsupportedURL(let url): return "cannot download \(url): only http and https URLs naming a file are supported"
            case .httpStatus(let status, let url): return "the server answered \(status) for \(url)"
            case .network(let message): return "the download failed: \(message)"
            case .notGGUF(let url): return "\(url) is not a GGUF file (it does not begin with \"GGUF\")"
            case .checksumMismatch(let expected, let actual):
                return "the downloaded file's SHA-256 is \(actual), not \(expected); it was deleted"
            case .fileSystem(let message): return "cannot write the model: \(message)"
            }
        }
    }

    /// Where `url`'s file goes (its last path component, or `fileName`).
    func destination(of url: URL, fileName: String? = nil) -> URL {
        directory.appendingPathComponent(fileName ?? url.lastPathComponent)
    }

    /// Whether `url`'s file is here, being downloaded, or neither.
    func status(of url: URL, fileName: String? = nil) -> Status {
        let destination = destination(of: url, fileName: fileName)
        if let progress = progressByFile.withLock({ $0[destination.path] }) { return .downloadInProgress(progress: progress) }
        return FileManager.default.fileExists(atPath: destination.path) ? .downloaded : .notOnLocal
    }

    /// Deletes `url`'s file and any partial download of it.
    func removeModel(at url: URL, fileName: String? = nil) throws(DownloadError) {
        let destination = destination(of: url, fileName: fileName)
        for path in [destination.path, destination.path + ".part", destination.path + ".part.validator"]
        where FileManager.default.fileExists(atPath: path) {
            do { try FileManager.default.removeItem(atPath: path) } catch { throw .fileSystem("\(path): \(error.localizedDescription)") }
        }
    }

    /// Downloads `url` into ``directory`` (resuming a partial download) and returns the file.
    ///
    /// - Parameters:
    ///   - sha256: the file's expected SHA-256 (hexadecimal); `nil` skips the check.
    ///   - checksServerDigest: when no `sha256` is given, check the file against the server's
    ///     `ETag` when that is a SHA-256 (as Hugging Face's file servers give it).
    ///   - progress: called as bytes arrive (on a background thread).
    /// - Throws: ``DownloadError``; `CancellationError` when the task is cancelled (the part
    ///   stays, and the next download resumes it).
    func download(
        from url: URL, fileName: String? = nil, sha256: String? = nil, checksServerDigest: Bool = false,
        progress: (@Sendable (Progress) -> Void)? = nil
    ) async throws -> URL {
        guard ["http", "https"].contains(url.scheme?.lowercased() ?? ""), !(fileName ?? url.lastPathComponent).isEmpty,
              (fileName ?? url.lastPathComponent) != "/"
        else { throw DownloadError.unsupportedURL(url.absoluteString) }
        let destination = destination(of: url, fileName: fileName)
        let expected = sha256?.lowercased()
        if FileManager.default.fileExists(atPath: destination.path) {
            if let expected {
                let actual = try Self.hash(of: destination).digest
                guard actual == expected else {
                    try? FileManager.default.removeItem(at: destination)
                    throw DownloadError.checksumMismatch(expected: expected, actual: actual)
                }
            }
            return destination
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw DownloadError.fileSystem("\(directory.path): \(error.localizedDescription)")
        }
        progressByFile.withLock { $0[destination.path] = 0 }
        defer { _ = progressByFile.withLock { $0.removeValue(forKey: destination.path) } }

        let part = URL(fileURLWithPath: destination.path + ".part")
        let validatorFile = URL(fileURLWithPath: destination.path + ".part.validator")
        let report: @Sendable (Progress) -> Void = { [self] value in
            progressByFile.withLock { $0[destination.path] = value.fractionCompleted ?? 0 }
            progress?(value)
        }
        let transfer = try Transfer(url: url, part: part, validatorFile: validatorFile, idleTimeout: idleTimeout, progress: report)
        let digest = try await transfer.run()
        let serverDigest = checksServerDigest ? Self.digest(inValidator: try? String(contentsOf: validatorFile, encoding: .utf8)) : nil

        guard try Self.beginsLikeGGUF(part) else {
            try? FileManager.default.removeItem(at: part)
            try? FileManager.default.removeItem(at: validatorFile)
            throw DownloadError.notGGUF(url: url.absoluteString)
        }
        if let expected = expected ?? serverDigest, digest != expected {
            try? FileManager.default.removeItem(at: part)
            try? FileManager.default.removeItem(at: validatorFile)
            throw DownloadError.checksumMismatch(expected: expected, actual: digest)
        }
        do {
            try FileManager.default.moveItem(at: part, to: destination)
            try? FileManager.default.removeItem(at: validatorFile)
        } catch {
            throw DownloadError.fileSystem("\(destination.path): \(error.localizedDescription)")
        }
        return destination
    }

    // MARK: Files

    /// The SHA-256 an `ETag` holds, when it is one (64 hexadecimal digits, quoted or not, weak
    /// or not).
    static func digest(inValidator validator: String?) -> String? {
        guard var text = validator?.trimmingCharacters(in: .whitespaces) else { return nil }
        if text.hasPrefix("W/") { text.removeFirst(2) }
        text = text.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        guard text.count == 64, text.allSatisfy(\.isHexDigit) else { return nil }
        return text.lowercased()
    }

    /// The SHA-256 of `file`, and the hasher holding its bytes, to go on with.
    static func hash(of file: URL) throws(DownloadError) -> (digest: String, hasher: SHA256Digest, count: Int64) {
        guard let handle = FileHandle(forReadingAtPath: file.path) else { throw .fileSystem("cannot read \(file.path)") }
        defer { try? handle.close() }
        var hasher = SHA256Digest()
        var count: Int64 = 0
        while true {
            let data: Data
            do { data = try handle.read(upToCount: 1 << 22) ?? Data() } catch { throw .fileSystem("\(file.path): \(error.localizedDescription)") }
            if data.isEmpty { break }
            data.withUnsafeBytes { hasher.update($0) }
            count += Int64(data.count)
        }
        var copy = hasher
        return (copy.finalize(), hasher, count)
    }

    private static func beginsLikeGGUF(_ file: URL) throws(DownloadError) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: file.path) else { throw .fileSystem("cannot read \(file.path)") }
        defer { try? handle.close() }
        let magic = (try? handle.read(upToCount: 4)) ?? nil
        return magic == Data("GGUF".utf8)
    }
}

// MARK: - One transfer

/// One HTTP request that appends to a part file, hashing as it goes.
private final class Transfer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Only the URLSession's serial delegate queue touches the mutable state below after `run`
    // starts; `run` reads the result after the continuation resumes.
    private let url: URL
    private let part: URL
    private let validatorFile: URL
    private let progress: @Sendable (FileDownloader.Progress) -> Void
    private var hasher: SHA256Digest
    private var received: Int64
    private var total: Int64?
    private var handle: FileHandle?
    private var failure: (any Error)?
    private var continuation: CheckedContinuation<String, any Error>?
    private let validator: String?
    private let idleTimeout: TimeInterval

    init(
        url: URL, part: URL, validatorFile: URL, idleTimeout: TimeInterval, progress: @escaping @Sendable (FileDownloader.Progress) -> Void
    ) throws {
        self.url = url
        self.idleTimeout = idleTimeout
        self.part = part
        self.validatorFile = validatorFile
        self.progress = progress
        let existing = FileManager.default.fileExists(atPath: part.path)
        validator = existing ? (try? String(contentsOf: validatorFile, encoding: .utf8)) : nil
        if existing, validator != nil {
            let hashed = try FileDownloader.hash(of: part)
            hasher = hashed.hasher
            received = hashed.count
        } else {
            hasher = SHA256Digest()
            received = 0
        }
    }

    /// Runs the request to its end and returns the whole file's SHA-256.
    func run() async throws -> String {
        var request = URLRequest(url: url)
        if received > 0, let validator {
            request.setValue("bytes=\(received)-", forHTTPHeaderField: "Range")
            request.setValue(validator, forHTTPHeaderField: "If-Range")
        }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = idleTimeout
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                queue.addOperation {
                    self.continuation = continuation
                    task.resume()
                }
            }
        } onCancel: {
            task.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        guard let http = response as? HTTPURLResponse else {
            fail(FileDownloader.DownloadError.network("not an HTTP response"))
            completionHandler(.cancel)
            return
        }
        do {
            switch http.statusCode {
            case 416 where received > 0:
                // The part is already whole: nothing more to fetch (the checksum decides).
                total = received
                completionHandler(.allow)
                return
            case 206 where received > 0:
                // The rest of the same file.
                total = http.expectedContentLength >= 0 ? received + http.expectedContentLength : nil
            case 200:
                // The whole file (the server ignored the range, or the file changed): start over.
                hasher = SHA256Digest()
                received = 0
                total = http.expectedContentLength >= 0 ? http.expectedContentLength : nil
                guard FileManager.default.createFile(atPath: part.path, contents: nil) else {
                    throw FileDownloader.DownloadError.fileSystem("cannot create \(part.path)")
                }
                let validator = (http.value(forHTTPHeaderField: "ETag") ?? http.value(forHTTPHeaderField: "Last-Modified"))
                if let validator {
                    try validator.write(to: validatorFile, atomically: true, encoding: .utf8)
                } else {
                    try? FileManager.default.removeItem(at: validatorFile)
                }
            default:
                throw FileDownloader.DownloadError.httpStatus(http.statusCode, url: url.absoluteString)
            }
            guard let handle = FileHandle(forWritingAtPath: part.path) else {
                throw FileDownloader.DownloadError.fileSystem("cannot write \(part.path)")
            }
            try handle.seekToEnd()
            self.handle = handle
            progress(.init(receivedBytes: received, totalBytes: total))
            completionHandler(.allow)
        } catch {
            fail(error as? FileDownloader.DownloadError ?? .fileSystem("\(part.path): \(error.localizedDescription)"))
            completionHandler(.cancel)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard failure == nil, let handle else { return }
        do {
            try handle.write(contentsOf: data)
        } catch {
            fail(FileDownloader.DownloadError.fileSystem("\(part.path): \(error.localizedDescription)"))
            dataTask.cancel()
            return
        }
        data.withUnsafeBytes { hasher.update($0) }
        received += Int64(data.count)
        progress(.init(receivedBytes: received, totalBytes: total))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        try? handle?.close()
        handle = nil
        if let failure {
            continuation?.resume(throwing: failure)
        } else if let error {
            let cancelled = (error as? URLError)?.code == .cancelled
            continuation?.resume(throwing: cancelled ? CancellationError() : FileDownloader.DownloadError.network(error.localizedDescription))
        } else if let total, received != total {
            continuation?.resume(throwing: FileDownloader.DownloadError.network("the connection closed after \(received) of \(total) bytes"))
        } else {
            var copy = hasher
            continuation?.resume(returning: copy.finalize())
        }
        continuation = nil
    }

    private func fail(_ error: any Error) {
        if failure == nil { failure = error }
    }
}
