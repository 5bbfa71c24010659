import GGUF

// Dot products of one quantized weight row with an `ActivationVector`.
//
// Fast paths (integer SIMD products of weight codes with activation codes, scaled per block)
// exist for Q4_0, Q4_1, Q5_0, Q8_0, MXFP4, Q4_K, Q5_K and Q6_K. Every other supported type goes through
// `_dotDequantizedRow`, which decodes one block at a time and multiplies with the activations'
// `Float` values. `_dotReference` is the oracle for all of them.
//
// Built for the host CPU (the root package's default on x86-64) the SIMD types lower to
// AVX2/AVX-512; for the toolchain's baseline (TYPESET_TARGET_CPU=baseline, or a dependency
// resolved by URL) to SSE2 (see docs/architecture.md).

/// Raw pointers into an `ActivationVector`, valid for the duration of one product.
struct Activations {
    let values: UnsafePointer<Float>
    let scales: UnsafePointer<Float>
    let codes: UnsafePointer<Int8>
    /// q8_0: Σ codes per block of 32; q8_K: per 16.
    let sums: UnsafePointer<Int32>
    /// q8_1: `s` per block.
    let offsets: UnsafePointer<Float>

    @inline(__always)
    func codes(block: Int) -> UnsafePointer<Int8> { codes + 32 * block }
}

// The integer kernels are plain loops with constant trip counts over pointers: LLVM's loop
// vectorizer turns them into packed multiply-adds (pmaddwd on SSE2, vpmaddwd/vpdpbusd on a
// tuned build). Swift's SIMD-type conversions between lane widths
// (`SIMD32<Int16>(truncatingIfNeeded: SIMD32<Int8>)`) are not used here: they lower lane by
// lane through the stack and were measured 100× slower.

/// Σ a[i] × b[i] for 32 int8 pairs, in Int32.
@inline(__always)
func _dot32(_ a: UnsafePointer<Int8>, _ b: UnsafePointer<Int8>) -> Int32 {
    var sum: Int32 = 0
    for i in 0..<32 { sum &+= Int32(a[i]) &* Int32(b[i]) }
    return sum
}

/// Σ over 16 nibble bytes of (low nibble − offset) × a[j] + (high nibble − offset) × a[j + 16]:
/// the integer dot of a Q4_0/Q4_1 block (offset 8 or 0) with 32 activation codes.
@inline(__always)
func _dotNibbles(_ bytes: UnsafeRawPointer, _ offset: Int32, _ a: UnsafePointer<Int8>) -> Int32 {
    var sum: Int32 = 0
    for j in 0..<16 {
        let byte = bytes.load(fromByteOffset: j, as: UInt8.self)
        sum &+= (Int32(byte & 0x0F) &- offset) &* Int32(a[j])
        sum &+= (Int32(byte >> 4) &- offset) &* Int32(a[j + 16])
    }
    return sum
}

// MARK: - Fast paths
//
// Each fuses unpacking with the multiply-add: writing unpacked codes to a scratch buffer and
// reading them back as a vector stalls on store forwarding (measured 5× slower).

func _dotQ4_0(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + BlockLayout.Q4_0.byteCount * block
        sum += (_half(base, BlockLayout.Q4_0.scale) * x.scales[block]) * Float(_dotNibbles(base + BlockLayout.Q4_0.codes, 8, x.codes(block: block)))
    }
    return sum
}

func _dotQ4_1(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + BlockLayout.Q4_1.byteCount * block
        sum += (_half(base, BlockLayout.Q4_1.scale) * x.scales[block]) * Float(_dotNibbles(base + BlockLayout.Q4_1.codes, 0, x.codes(block: block)))
        sum += _half(base, BlockLayout.Q4_1.minimum) * x.offsets[block]
    }
    return sum
}

func _dotQ5_0(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + BlockLayout.Q5_0.byteCount * block
        let high = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: BlockLayout.Q5_0.fifthBits, as: UInt32.self))
        let a = x.codes(block: block)
        var product: Int32 = 0
        for j in 0..<16 {
            let byte = base.load(fromByteOffset: BlockLayout.Q5_0.codes + j, as: UInt8.self)
            let low = Int32(byte & 0x0F) | Int32((high >> UInt32(j)) & 1) << 4
            let upper = Int32(byte >> 4) | Int32((high >> UInt32(j + 16)) & 1) << 4
            product &+= (low &- 16) &* Int32(a[j]) &+ (upper &- 16) &* Int32(a[j + 16])
        }
        sum += (_half(base, BlockLayout.Q5_0.scale) * x.scales[block]) * Float(product)
    }
    return sum
}

func _dotQ8_0(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + BlockLayout.Q8_0.byteCount * block
        let weights = (base + BlockLayout.Q8_0.codes).assumingMemoryBound(to: Int8.self)
        sum += (_half(base, BlockLayout.Q8_0.scale) * x.scales[block]) * Float(_dot32(weights, x.codes(block: block)))
    }
    return sum
}

/// MXFP4 with q8_0 activations: Σ over blocks of (d_a × ½ 2^(e − 127)) × Σ value(q)·a, as
/// ggml's `ggml_vec_dot_mxfp4_q8_0` (activation scale first, as ggml multiplies).
func _dotMXFP4(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: Activations) -> Float {
    BlockLayout.MXFP4.values.withUnsafeBufferPointer { values in
        var sum: Float = 0
        for block in 0..<blockCount {
            let base = row + BlockLayout.MXFP4.byteCount * block
            let a = x.codes(block: block)
            var product: Int32 = 0
            for j in 0..<16 {
                let byte = base.load(fromByteOffset: BlockLayout.MXFP4.codes + j, as: UInt8.self)
                product &+= Int32(values[Int(byte & 0x0F)]) &* Int32(a[j]) &+ Int32(values[Int(byte >> 4)]) &* Int32(a[j + 16])
            }
            sum += (x.scales[block] * _halfOfExponentScale(base.load(fromByteOffset: BlockLayout.MXFP4.exponent, as: UInt8.self))) * Float(product)
        }
        return sum
    }
}

/// Q4_K with q8_K activations (one scale per 256): the super-block's integer sums
/// Σ scale_g × Σ q·a and Σ min_g × Σ a, then d × d_a and dmin × d_a, as ggml does. Group 2c
/// takes the low nibbles of bytes 32c ..< 32c + 32, group 2c + 1 their high nibbles.
func _dotQ4_K(_ row: UnsafeRawPointer, _ superBlockCount: Int, _ x: Activations) -> Float {
    _dotKQuantWithMinimums(row, superBlockCount, x, fifthBits: false)
}

/// Q5_K with q8_K activations: Q4_K's sums, each code with its fifth bit (bit 2c of byte l
/// of `qh` for the low nibble of code byte 32c + l, bit 2c + 1 for the high one) worth 16.
func _dotQ5_K(_ row: UnsafeRawPointer, _ superBlockCount: Int, _ x: Activations) -> Float {
    _dotKQuantWithMinimums(row, superBlockCount, x, fifthBits: true)
}

/// ``_dotQ4_K(_:_:_:)`` and ``_dotQ5_K(_:_:_:)``: the same header (d, dmin, the 6-bit scales
/// and minimums) and nibbles, Q5_K's codes 16 higher where their fifth bit is set.
@inline(__always)
private func _dotKQuantWithMinimums(_ row: UnsafeRawPointer, _ superBlockCount: Int, _ x: Activations, fifthBits: Bool) -> Float {
    typealias Q4 = BlockLayout.Q4_K
    typealias Q5 = BlockLayout.Q5_K
    let byteCount = fifthBits ? Q5.byteCount : Q4.byteCount, codesAt = fifthBits ? Q5.codes : Q4.codes
    var sum: Float = 0
    for superBlock in 0..<superBlockCount {
        let base = row + byteCount * superBlock
        var products: Int32 = 0, minimums: Int32 = 0
        for chunk in 0..<4 {
            let bytes = base + codesAt + 32 * chunk
            let a = x.codes + 256 * superBlock + 64 * chunk
            var low: Int32 = 0, high: Int32 = 0
            for lane in 0..<32 {
                let byte = bytes.load(fromByteOffset: lane, as: UInt8.self)
                var lowCode = Int32(byte & 0x0F), highCode = Int32(byte >> 4)
                if fifthBits {
                    let bits = Int32(base.load(fromByteOffset: Q5.fifthBits + lane, as: UInt8.self)) &>> Int32(2 * chunk)
                    lowCode |= (bits & 1) &<< 4
                    highCode |= (bits & 2) &<< 3
                }
                low &+= lowCode &* Int32(a[lane])
                high &+= highCode &* Int32(a[lane + 32])
            }
            let (scaleLow, minimumLow) = _scaleAndMinimum(base + Q4.scales, 2 * chunk)
            let (scaleHigh, minimumHigh) = _scaleAndMinimum(base + Q4.scales, 2 * chunk + 1)
            let sums = x.sums + 16 * superBlock + 4 * chunk
            products &+= Int32(scaleLow) &* low &+ Int32(scaleHigh) &* high
            minimums &+= Int32(minimumLow) &* (sums[0] &+ sums[1]) &+ Int32(minimumHigh) &* (sums[2] &+ sums[3])
        }
        let scale = x.scales[superBlock]
        sum += (_half(base, Q4.scale) * scale) * Float(products) - (_half(base, Q4.minimumScale) * scale) * Float(minimums)
    }
    return sum
}

/// Q6_K with q8_K activations: Σ over 16-element groups of scale × Σ (q − 32)·a, times
/// d × d_a. For activation block j of a super-block (elements 32j ..< 32j + 32), the low
/// nibbles are 32 contiguous bytes at 64h + 32(j % 2) (nibble (j % 4) / 2) and the high pairs
/// 32 contiguous bytes at 128 + 32h (bits 2(j % 4)), with h = j / 4.
func _dotQ6_K(_ row: UnsafeRawPointer, _ superBlockCount: Int, _ x: Activations) -> Float {
    var sum: Float = 0
    for superBlock in 0..<superBlockCount {
        let base = row + BlockLayout.Q6_K.byteCount * superBlock
        var products: Int32 = 0
        for j in 0..<8 {
            let half = j / 4, quarter = j % 4
            let lowBytes = base + BlockLayout.Q6_K.lowBits + 64 * half + 32 * (quarter % 2)
            let highBytes = base + BlockLayout.Q6_K.highBits + 32 * half
            let lowShift = UInt8(4 * (quarter / 2)), highShift = UInt8(2 * quarter)
            let a = x.codes + 256 * superBlock + 32 * j
            var first: Int32 = 0, second: Int32 = 0
            for lane in 0..<16 {
                let low = (lowBytes.load(fromByteOffset: lane, as: UInt8.self) >> lowShift) & 0x0F
                let high = (highBytes.load(fromByteOffset: lane, as: UInt8.self) >> highShift) & 0x03
                first &+= (Int32(low | high << 4) &- 32) &* Int32(a[lane])
            }
            for lane in 16..<32 {
                let low = (lowBytes.load(fromByteOffset: lane, as: UInt8.self) >> lowShift) & 0x0F
                let high = (highBytes.load(fromByteOffset: lane, as: UInt8.self) >> highShift) & 0x03
                second &+= (Int32(low | high << 4) &- 32) &* Int32(a[lane])
            }
            products &+= Int32(base.load(fromByteOffset: BlockLayout.Q6_K.scales + 2 * j, as: Int8.self)) &* first
            products &+= Int32(base.load(fromByteOffset: BlockLayout.Q6_K.scales + 2 * j + 1, as: Int8.self)) &* second
        }
        sum += (_half(base, BlockLayout.Q6_K.scale) * x.scales[superBlock]) * Float(products)
    }
    return sum
}

// MARK: - General path and reference

/// Any supported type: decode one block at a time, multiply with the `Float` activations.
func _dotDequantizedRow(_ type: GGMLType, _ row: UnsafeRawPointer, _ elementCount: Int, _ x: Activations) -> Float {
    if type == .f32 { return _dotF32Row(row, elementCount, x.values) }
    if type == .f16 { return _dotF16Row(row, elementCount, x.values) }
    guard let decode = Dequantization.referenceDecoder(for: type) else { preconditionFailure("unsupported \(type)") }
    let blockElements = max(type.blockSize, 32)
    let blocksPerChunk = blockElements / type.blockSize
    return withUnsafeTemporaryAllocation(of: Float.self, capacity: blockElements) { buffer in
        let scratch = buffer.baseAddress!
        var accumulator = SIMD8<Float>()
        var start = 0
        while start < elementCount {
            for block in 0..<blocksPerChunk {
                let element = start + block * type.blockSize
                decode(row + element / type.blockSize * type.blockByteCount, scratch + block * type.blockSize)
            }
            var lane = 0
            while lane < blockElements {
                let weights = UnsafeRawPointer(scratch + lane).loadUnaligned(as: SIMD8<Float>.self)
                let values = UnsafeRawPointer(x.values + start + lane).loadUnaligned(as: SIMD8<Float>.self)
                accumulator += weights * values
                lane += 8
            }
            start += blockElements
        }
        return accumulator.sum()
    }
}

/// An F32 row (a mixture of experts' router, computed row by row): the general path's sums,
/// eight lanes at a time in the same order, without decoding one element per call. The last
/// partial group of eight counts its missing lanes as zeros.
func _dotF32Row(_ row: UnsafeRawPointer, _ elementCount: Int, _ values: UnsafePointer<Float>) -> Float {
    var accumulator = SIMD8<Float>()
    var lane = 0
    while lane + 8 <= elementCount {
        accumulator += row.loadUnaligned(fromByteOffset: lane * 4, as: SIMD8<Float>.self)
            * UnsafeRawPointer(values + lane).loadUnaligned(as: SIMD8<Float>.self)
        lane += 8
    }
    if lane < elementCount {
        var weights = SIMD8<Float>(), activations = SIMD8<Float>()
        for index in lane ..< elementCount {
            weights[index - lane] = row.loadUnaligned(fromByteOffset: index * 4, as: Float.self)
            activations[index - lane] = values[index]
        }
        accumulator += weights * activations
    }
    return accumulator.sum()
}

/// An F16 row (Gemma 4's per-layer projection, kept in half precision by llama-quantize): each
/// group of eight halves widened at once (`vcvtph2ps` where the target has F16C), then the
/// F32 row's sums in the same order, so the result is ``_dotF32Row`` of the widened row, bit for
/// bit. Decoding one element per call, as the general path would, made a 27 MB F16 matrix a
/// third of a Gemma 4 E2B decode step.
func _dotF16Row(_ row: UnsafeRawPointer, _ elementCount: Int, _ values: UnsafePointer<Float>) -> Float {
    var accumulator = SIMD8<Float>()
    var lane = 0
    while lane + 8 <= elementCount {
        accumulator += floatsFromHalves(row.loadUnaligned(fromByteOffset: lane * 2, as: SIMD8<UInt16>.self))
            * UnsafeRawPointer(values + lane).loadUnaligned(as: SIMD8<Float>.self)
        lane += 8
    }
    if lane < elementCount {
        var weights = SIMD8<Float>(), activations = SIMD8<Float>()
        for index in lane ..< elementCount {
            weights[index - lane] = floatFromHalf(row.loadUnaligned(fromByteOffset: index * 2, as: UInt16.self))
            activations[index - lane] = values[index]
        }
        accumulator += weights * activations
    }
    return accumulator.sum()
}

/// The scalar path: decode each block with the reference decoder, multiply-add one float at a
/// time. No SIMD types; what `typeset bench kernels` reports as "scalar".
func _dotScalarRow(_ type: GGMLType, _ row: UnsafeRawPointer, _ elementCount: Int, _ x: Activations) -> Float {
    guard let decode = Dequantization.referenceDecoder(for: type) else { preconditionFailure("unsupported \(type)") }
    return withUnsafeTemporaryAllocation(of: Float.self, capacity: type.blockSize) { buffer in
        let scratch = buffer.baseAddress!
        var sum: Float = 0
        for block in 0 ..< elementCount / type.blockSize {
            decode(row + block * type.blockByteCount, scratch)
            for lane in 0 ..< type.blockSize { sum += scratch[lane] * x.values[block * type.blockSize + lane] }
        }
        return sum
    }
}

/// The oracle: Σ dequantized weight × activation in `Double`, with the activations the
/// products of `type` see: code × scale in the type's quantized format, the exact `Float`
/// values for `.float`, and for q8_1 each block's sum taken from `s` as ggml takes it.
func _dotReference(_ type: GGMLType, _ row: UnsafeRawPointer, _ elementCount: Int, _ x: Activations) -> Double {
    guard let decode = Dequantization.referenceDecoder(for: type) else { preconditionFailure("unsupported \(type)") }
    let format = ActivationVector.Format(for: type)
    var weights = [Float](repeating: 0, count: type.blockSize)
    var sum = 0.0
    for block in 0 ..< elementCount / type.blockSize {
        let source = row + block * type.blockByteCount
        weights.withUnsafeMutableBufferPointer { decode(source, $0.baseAddress!) }
        var codeSum = 0.0
        for lane in 0..<type.blockSize {
            let index = block * type.blockSize + lane
            let activation = format == .float ? Double(x.values[index]) : Double(x.scales[index / format.blockSize]) * Double(x.codes[index])
            sum += Double(weights[lane]) * activation
            if format != .float { codeSum += Double(x.codes[index]) }
        }
        if format == .q8_1 {
            // Σ (d q + m) a uses m × s for m × d_a × Σ codes.
            sum += Double(_half(source, 2)) * (Double(x.offsets[block]) - Double(x.scales[block]) * codeSum)
        }
    }
    return sum
}

typealias RowDot = (UnsafeRawPointer, Int, Activations) -> Float

/// The integer fast path of `type` and the unit its count is in (blocks or super-blocks).
func _integerFastPath(for type: GGMLType) -> RowDot? {
    switch type {
    case .q4_0: _dotQ4_0
    case .q4_1: _dotQ4_1
    case .q5_0: _dotQ5_0
    case .q8_0: _dotQ8_0
    case .mxfp4: _dotMXFP4
    case .q4_K: _dotQ4_K
    case .q5_K: _dotQ5_K
    case .q6_K: _dotQ6_K
    default: nil
    }
}
