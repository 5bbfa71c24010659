#if TYPESET_AVX2
import VectorIntrinsics
#endif

/// Asks the caches to start loading the `byteCount` bytes from `address` into the second
/// level, one `prefetcht1` per 64-byte line, for a read soon: for a loop that walks memory the
/// hardware prefetchers would reach too late (a run that starts a new page every few
/// iterations, many runs at once). Only a hint: it never faults, whatever the address.
/// Reached through VectorIntrinsics, so on AVX2 targets; elsewhere it does nothing.
///
/// Into L2, not L1 (`prefetcht0`): the weights a kernel asks for ahead are read once, and in
/// L1 they pushed out what the kernel reads again (activations, running sums); each line in
/// flight to L1 also holds one of its few miss buffers, where L2 keeps many more requests
/// outstanding. On the 2-core Zen 4 guest decoding got 5–16 % faster (docs/kernels.md).
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
