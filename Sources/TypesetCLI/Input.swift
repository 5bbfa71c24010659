import Foundation
import Typeset

/// The largest input a command reads whole (a schema, a grammar, a text to tokenize or score):
/// past it, a one-line error rather than memory that grows with whatever is piped in.
let inputByteLimit = 64 << 20

/// The bytes of a file named on the command line (`-` for standard input), at most `limit`.
///
/// Reads in blocks, so an endless stream (`yes |`, `/dev/zero`) stops at the limit with
/// ``InputError/tooLarge(_:limit:)`` instead of growing without bound.
func readInput(_ path: String, limit: Int = inputByteLimit) throws -> [UInt8] {
    var bytes: [UInt8] = []
    try forEachBlock(of: path, limit: limit) { bytes.append(contentsOf: $0) }
    return bytes
}

/// Calls `body` with each block (up to 1 MiB) of a file named on the command line (`-` for
/// standard input), in order; past `limit` bytes in all, ``InputError/tooLarge(_:limit:)``.
func forEachBlock(of path: String, limit: Int, _ body: (Data) throws -> Void) throws {
    let handle: FileHandle
    if path == "-" {
        handle = FileHandle.standardInput
    } else {
        var status = stat()
        guard stat(path, &status) == 0 else { throw InputError.unreadable(path, String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT != S_IFDIR else { throw InputError.unreadable(path, "it is a directory") }
        guard let opened = FileHandle(forReadingAtPath: path) else { throw InputError.unreadable(path, String(cString: strerror(errno))) }
        handle = opened
    }
    defer { if path != "-" { try? handle.close() } }
    var total = 0
    while true {
        let block: Data?
        do { block = try handle.read(upToCount: 1 << 20) } catch { throw InputError.unreadable(path, "read failed") }
        guard let block, !block.isEmpty else { break }
        total += block.count
        if total > limit { throw InputError.tooLarge(path, limit: limit) }
        try body(block)
    }
}

/// A text input (`readInput`) that must be UTF-8; a leading byte-order mark is dropped, as
/// every JSON reader does (RFC 8259 §8.1 lets a parser ignore it).
func readText(_ path: String, what: String, limit: Int = inputByteLimit) throws -> String {
    var bytes = try readInput(path, limit: limit)
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
    guard let text = String(validating: bytes, as: UTF8.self) else {
        var offset = 0
        // The first byte where decoding fails, for the message.
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: break loop
            }
        }
        throw InputError.notUTF8(path, what: what, offset: offset)
    }
    return text
}

/// Writes `text` to the file at `path`, replacing it.
///
/// - Throws: ``InputError/unwritable(_:_:)`` with the system's reason.
func writeText(_ text: String, to path: String) throws(InputError) {
    errno = 0
    guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
        throw .unwritable(path, errno == 0 ? "it cannot be created" : String(cString: strerror(errno)))
    }
}

enum InputError: UserFacingError {
    case unreadable(String, String)
    case unwritable(String, String)
    case tooLarge(String, limit: Int)
    case notUTF8(String, what: String, offset: Int)
    /// A command's default input (`what`, at `path`) is not there; `remedy` says how to get it.
    case defaultMissing(String, path: String, remedy: String)

    var description: String {
        switch self {
        case let .unreadable(path, reason): "cannot read '\(path)': \(reason)"
        case let .unwritable(path, reason): "cannot write '\(path)': \(reason)"
        case let .tooLarge(path, limit):
            "\(path == "-" ? "standard input" : "'\(path)'") is larger than "
                + (limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes") + ", the most this command reads (see --max-bytes where it has one)"
        case let .notUTF8(path, what, offset): "the \(what) '\(path)' is not UTF-8 text (invalid byte at offset \(offset))"
        case let .defaultMissing(what, path, remedy): "\(what), which this command reads by default, is not at \(path); \(remedy)"
        }
    }
}

extension GrammarError: UserFacingError {}
