#if TYPESET_AVX2
import VectorIntrinsics
#endif

/// Asks the caches to start loading the `byteCount` bytes from `address`, one `prefetcht0` per
/// 64-byte line, for a read soon: for a loop that walks memory the hardware prefetchers would
/// reach too late (a run that starts a new page every few iterations, many runs at once).
/// Only a hint: it never faults, whatever the address. Reached through VectorIntrinsics, so
/// on AVX2 targets; elsewhere it does nothing.
@inlinable @inline(__always)
public func prefetchForReading(_ address: UnsafeRawPointer, byteCount: Int) {
    #if TYPESET_AVX2
    var offset = 0
    while offset < byteCount {
        prefetchForReading(address + offset)
        offset &+= 64
    }
    #endif
}
