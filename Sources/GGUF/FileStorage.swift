#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The immutable bytes a ``GGUFFile`` reads: either a read-only memory mapping of a file or a
/// private heap copy of caller-supplied bytes. Views into it (tensor data, lazily decoded
/// metadata arrays) keep a reference so the bytes outlive every view.
///
/// The memory is never written after initialisation, which is what makes sharing it across
/// tasks sound.
final class FileStorage: @unchecked Sendable {
    /// The whole file. Its base address is page-aligned for mappings and 64-byte aligned for
    /// heap copies, so aligned tensor offsets stay aligned in memory.
    let bytes: UnsafeRawBufferPointer
    private let ownership: Ownership

    private enum Ownership { case mapped, allocated, borrowed }

    /// Maps `path` read-only. The mapping is private: later writes to the file by others are
    /// not guaranteed to be seen, and truncating the file while it is mapped is undefined
    /// (as for every memory-mapped reader).
    init(mapping path: String) throws(GGUFError) {
        // A FIFO or device is refused before it is opened (opening a FIFO for reading blocks
        // until a writer comes); O_NONBLOCK covers the path changing in between.
        var before = stat()
        guard stat(path, &before) == 0 else { throw .cannotOpen(path: path, reason: _systemError()) }
        guard (before.st_mode & S_IFMT) == S_IFREG else { throw .cannotOpen(path: path, reason: Self.kind(of: before.st_mode)) }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw .cannotOpen(path: path, reason: _systemError()) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .cannotOpen(path: path, reason: _systemError()) }
        guard (status.st_mode & S_IFMT) == S_IFREG else { throw .cannotOpen(path: path, reason: Self.kind(of: status.st_mode)) }
        let size = Int(status.st_size)
        if size == 0 {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            ownership = .borrowed
            return
        }
        guard let address = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0),
              address != MAP_FAILED
        else { throw .cannotOpen(path: path, reason: _systemError()) }
        bytes = UnsafeRawBufferPointer(start: address, count: size)
        ownership = .mapped
    }

    /// Why a file of `mode` cannot be a model: what it is instead.
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "it is a directory, not a GGUF file"
        case S_IFIFO: "it is a pipe (FIFO), not a regular file"
        case S_IFCHR, S_IFBLK: "it is a device, not a regular file"
        case S_IFSOCK: "it is a socket, not a regular file"
        default: "not a regular file"
        }
    }

    /// Copies `source` into a private, 64-byte aligned allocation.
    init(copying source: UnsafeRawBufferPointer) {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(source.count, 1), alignment: 64)
        if let base = source.baseAddress, source.count > 0 {
            copy.baseAddress!.copyMemory(from: base, byteCount: source.count)
        }
        bytes = UnsafeRawBufferPointer(start: copy.baseAddress, count: source.count)
        ownership = .allocated
    }

    /// Refers to memory the caller owns and keeps alive (see `GGUFFile.withBorrowedBytes`).
    init(borrowing source: UnsafeRawBufferPointer) {
        bytes = source
        ownership = .borrowed
    }

    /// Tells the system that `range`'s pages of a mapping are not needed now: they leave
    /// resident memory and are read again from the file if touched. Only whole pages inside
    /// `range` are released; heap copies are left alone.
    func releasePages(_ range: Range<Int>) {
        guard ownership == .mapped, let base = bytes.baseAddress else { return }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (range.lowerBound + pageSize - 1) / pageSize * pageSize
        let end = range.upperBound / pageSize * pageSize
        guard end > start else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, MADV_DONTNEED)
    }

    /// Maps `range`'s pages of a mapping into the process now (where the system can), rather
    /// than one fault at a time as they are first read.
    func prefaultPages(_ range: Range<Int>) {
        #if os(Linux)
        guard ownership == .mapped, let base = bytes.baseAddress, !range.isEmpty else { return }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = range.lowerBound / pageSize * pageSize
        let end = min(bytes.count, (range.upperBound + pageSize - 1) / pageSize * pageSize)
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, 22 /* MADV_POPULATE_READ, Linux 5.14 */)
        #endif
    }

    deinit {
        guard let base = bytes.baseAddress else { return }
        switch ownership {
        case .mapped: munmap(UnsafeMutableRawPointer(mutating: base), bytes.count)
        case .allocated: base.deallocate()
        case .borrowed: break
        }
    }
}

func _systemError() -> String {
    String(cString: strerror(errno))
}
