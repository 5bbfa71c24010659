#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Zeroed memory from an anonymous mapping, unmapped with the last reference: the system
/// commits its pages as they are first written and takes them back as soon as the mapping
/// goes. The packed weights (`PackedMatrix`) and the KV cache live in it.
///
///     mapping:  [ slack ][ bytes: byteCount, from a 2 MiB boundary ........ ][ rest of the slack ]
///                         └ 2 MiB pieces: MADV_HUGEPAGE ┘└ tail: 4 KiB pages ┘
///
/// With `hugePages`, memory of 2 MiB or more starts on a 2 MiB boundary and asks Linux for
/// transparent huge pages over its whole 2 MiB pieces (the tail stays in 4 KiB pages, so
/// resident memory is what it would be without): a decode step streams every weight once, and
/// in 4 KiB pages that is a TLB miss every 4 KiB (docs/kernels.md has the figures).
/// `TYPESET_NO_HUGE_PAGES` (any value) turns them off, for a host where compacting memory for
/// them costs more than they save. Where mapping fails: a zeroed heap allocation, 64-byte
/// aligned.
package final class MappedMemory: @unchecked Sendable {
    /// The first of `byteCount` bytes: page-aligned (2 MiB-aligned with huge pages), or
    /// 64-byte aligned on the heap.
    package let bytes: UnsafeMutableRawPointer
    package let byteCount: Int
    /// The mapping `bytes` lies in (nil for a heap allocation) and its length.
    private let mapping: UnsafeMutableRawPointer?
    private let mappedLength: Int

    /// Bytes of a transparent huge page (x86-64 and arm64 with 4 KiB base pages).
    package static let hugePageBytes = 2 << 20
    /// Whether memory mapped with `hugePages` asks for them (see above).
    package static let asksForHugePages = getenv("TYPESET_NO_HUGE_PAGES") == nil

    /// - Parameters:
    ///   - hugePages: align to and ask for transparent huge pages (Linux), when `byteCount` is
    ///     at least one huge page (``hugePageBytes``) and `TYPESET_NO_HUGE_PAGES` is not set.
    ///   - reservingSwap: `false` maps with `MAP_NORESERVE`, for memory sized for the most it
    ///     may hold (a cache's whole context) of which little may ever be written.
    package init(byteCount: Int, hugePages: Bool = false, reservingSwap: Bool = true) {
        self.byteCount = byteCount
        let length = max(byteCount, 64)
        #if os(Linux)
        let aligned = hugePages && Self.asksForHugePages && length >= Self.hugePageBytes
        #else
        let aligned = false
        #endif
        // Room to slide the start to a huge-page boundary.
        let mapped = aligned ? length + Self.hugePageBytes : length
        let flags = MAP_PRIVATE | MAP_ANONYMOUS | (reservingSwap ? 0 : MAP_NORESERVE)
        if let address = mmap(nil, mapped, PROT_READ | PROT_WRITE, flags, -1, 0), address != MAP_FAILED {
            mapping = address
            mappedLength = mapped
            if aligned {
                let boundary = (Int(bitPattern: address) + Self.hugePageBytes - 1) / Self.hugePageBytes * Self.hugePageBytes
                bytes = address + (boundary - Int(bitPattern: address))
                #if os(Linux)
                _ = madvise(bytes, length / Self.hugePageBytes * Self.hugePageBytes, 14 /* MADV_HUGEPAGE */)
                #endif
            } else {
                bytes = address
            }
        } else {
            bytes = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 64)
            bytes.initializeMemory(as: UInt8.self, repeating: 0, count: length)
            mapping = nil
            mappedLength = 0
        }
    }

    /// Faults in the pages of `range` (byte offsets from `bytes`) for writing in one call
    /// (Linux 5.14 and later; elsewhere they fault in as they are written). Faulting in many
    /// fresh pages one at a time was measured at 2–6× the cost of one call.
    package func populate(_ range: Range<Int>) {
        #if os(Linux)
        guard mapping != nil, !range.isEmpty else { return }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = range.lowerBound / pageSize * pageSize
        let end = (range.upperBound + pageSize - 1) / pageSize * pageSize
        _ = madvise(bytes + start, end - start, 23 /* MADV_POPULATE_WRITE */)
        #endif
    }

    deinit {
        if let mapping { munmap(mapping, mappedLength) } else { bytes.deallocate() }
    }
}
