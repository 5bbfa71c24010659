#if TYPESET_AVX2
import VectorIntrinsics
#endif

/// The index of the largest value, the lowest index among equals; NaNs are skipped, and `nil`
/// when no value is above −∞ (every one is −∞ or NaN). Greedy decoding's choice of token.
///
/// On AVX2 targets two passes sixteen lanes at a time (the running maximum, then the first
/// lane equal to it), elsewhere ``_indexOfLargestScalar(_:)``: the same index either way.
/// - Complexity: O(n), reading `values` at most twice.
public func indexOfLargest(_ values: UnsafeBufferPointer<Float>) -> Int? {
    #if TYPESET_AVX2
    guard let base = values.baseAddress else { return nil }
    let raw = UnsafeRawPointer(base)
    let wholeChunks = values.count / 16
    var running = SIMD16<Float>(repeating: -.infinity)
    for chunk in 0 ..< wholeChunks {
        running = largerLanes(raw.loadUnaligned(fromByteOffset: 64 &* chunk, as: SIMD16<Float>.self), keeping: running)
    }
    var largest = -Float.infinity
    for lane in 0 ..< 16 where running[lane] > largest { largest = running[lane] }
    for index in 16 &* wholeChunks ..< values.count where values[index] > largest { largest = values[index] }
    guard largest > -.infinity else { return nil }
    let target = SIMD16<Float>(repeating: largest)
    for chunk in 0 ..< wholeChunks {
        let lanes = equalLanes(raw.loadUnaligned(fromByteOffset: 64 &* chunk, as: SIMD16<Float>.self), target)
        if lanes != 0 { return 16 &* chunk &+ lanes.trailingZeroBitCount }
    }
    return (16 &* wholeChunks ..< values.count).first { values[$0] == largest }
    #else
    _indexOfLargestScalar(values)
    #endif
}

/// The scalar reference of ``indexOfLargest(_:)``: one pass, a strict comparison (so the
/// lowest index among equals, and NaNs never chosen).
func _indexOfLargestScalar(_ values: UnsafeBufferPointer<Float>) -> Int? {
    var best: Int?
    var bestValue = -Float.infinity
    for index in values.indices where values[index] > bestValue {
        best = index
        bestValue = values[index]
    }
    return best
}
