// Instructions Swift's SIMD types do not express, reached through the compiler's builtins.
//
// This module is compiled with `-parse-stdlib` (hence `import Swift`), which makes LLVM's
// intrinsics callable as `Builtin.int_<name>`; everything here is `@inlinable` and
// `@inline(__always)`, so it dissolves into the kernels that call it. Declared only for
// targets that have the instructions (Package.swift: a tuned build on a CPU with
// AVX512-VNNI), and never in a dependency resolved by URL, where unsafe flags are refused.
import Swift

/// `accumulator + Σ_{i<4} unsigned.byte(i) × signed.byte(i)` in each of the 16 lanes: 64
/// products of an unsigned and a signed byte in one instruction (`vpdpbusd`, AVX512-VNNI),
/// summed four by four into 32-bit lanes without intermediate saturation.
@inlinable @inline(__always)
public func dotProductOfBytes(_ accumulator: SIMD16<Int32>, unsigned: SIMD16<UInt32>, signed: SIMD16<UInt32>) -> SIMD16<Int32> {
    var result = SIMD16<Int32>()
    result._storage._value = Builtin.int_x86_avx512_vpdpbusd_512(
        accumulator._storage._value, unsigned._storage._value, signed._storage._value)
    return result
}
