// LFM2's short causal convolution, as ggml's CPU backend computes `ssm_conv` (read off
// llama.cpp's machine code: products and sums rounded separately, no fused multiply-add,
// summed from 0 in tap order).

/// `output[c] = Σ_{i < length} input(position − length + 1 + i)[c] · kernel[c × length + i]`,
/// where `input(p)` is row `p` of `history` (`width` floats per position) and 0 before
/// position 0: the convolution of one position over its channels.
///
/// - Precondition: `history` holds rows `0 ... position`; `output` has `width` floats.
/// - Complexity: O(width × length).
@inline(__always)
func _shortConvolution(
    history: UnsafePointer<Float>, position: Int, width: Int, kernel: UnsafePointer<Float>, length: Int,
    into output: UnsafeMutablePointer<Float>
) {
    let first = position - length + 1
    for channel in 0 ..< width {
        var sum: Float = 0
        for tap in 0 ..< length where first + tap >= 0 {
            sum += history[(first + tap) * width + channel] * kernel[channel * length + tap]
        }
        output[channel] = sum
    }
}

/// `output[i] = first[i] · second[i]` (ggml's `mul`); `output` may be `second`.
@inline(__always)
func _gatedProduct(_ first: UnsafePointer<Float>, _ second: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>, count: Int) {
    for index in 0 ..< count { output[index] = first[index] * second[index] }
}
