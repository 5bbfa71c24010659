import GGUF

// Dot products of one quantized weight row with an `ActivationVector`.
//
// Fast paths (integer SIMD products of weight codes with activation codes, scaled per block)
// exist for Q4_0, Q4_1, Q5_0, Q8_0, Q4_K and Q6_K. Every other supported type goes through
// `_dotDequantizedRow`, which decodes one block at a time and multiplies with the activations'
// `Float` values. `_dotReference` is the oracle for all of them.
//
// With the default target the SIMD types lower to SSE2; built with TYPESET_TARGET_CPU=native
// they use AVX2/AVX-512 (see docs/architecture.md).

/// Raw pointers into an `ActivationVector`, valid for the duration of one product.
struct _Activations {
    let values: UnsafePointer<Float>
    let scales: UnsafePointer<Float>
    let codes: UnsafePointer<Int8>
    let halfSums: UnsafePointer<Int32>

    @inline(__always)
    func codes(block: Int) -> SIMD32<Int16> {
        SIMD32<Int16>(truncatingIfNeeded: UnsafeRawPointer(codes + 32 * block).loadUnaligned(as: SIMD32<Int8>.self))
    }

    @inline(__always)
    func sum(block: Int) -> Int32 { halfSums[2 * block] &+ halfSums[2 * block + 1] }
}

/// Σ a[i] × b[i] over 32 lanes, products in Int16 (callers keep |a × b| < 2^15), sums in Int32.
@inline(__always)
func _sumOfProducts(_ a: SIMD32<Int16>, _ b: SIMD32<Int16>) -> Int32 {
    SIMD32<Int32>(truncatingIfNeeded: a &* b).wrappedSum()
}

/// The low and high 16-lane halves of Σ a[i] × b[i], for formats with a scale per 16 elements.
@inline(__always)
func _halfSumsOfProducts(_ a: SIMD32<Int16>, _ b: SIMD32<Int16>) -> (Int32, Int32) {
    let products = SIMD32<Int32>(truncatingIfNeeded: a &* b)
    return (products.lowHalf.wrappedSum(), products.highHalf.wrappedSum())
}

/// Sixteen nibble bytes → 32 lanes: low nibbles first, then high nibbles (Q4_0/Q4_1/Q5 order).
@inline(__always)
func _nibbles(_ bytes: SIMD16<UInt8>) -> SIMD32<Int16> {
    SIMD32<Int16>(lowHalf: SIMD16<Int16>(truncatingIfNeeded: bytes & 0x0F),
                  highHalf: SIMD16<Int16>(truncatingIfNeeded: bytes &>> 4))
}

/// Bit `i` of `bits` in lane `i`, shifted left by 4 (the fifth bit of Q5 codes).
@inline(__always)
func _fifthBits(_ bits: UInt32) -> SIMD32<Int16> {
    let lanes = SIMD16<UInt32>(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
    let low = (SIMD16<UInt32>(repeating: bits) &>> lanes) & 1
    let high = (SIMD16<UInt32>(repeating: bits) &>> (lanes &+ 16)) & 1
    return SIMD32<Int16>(lowHalf: SIMD16<Int16>(truncatingIfNeeded: low), highHalf: SIMD16<Int16>(truncatingIfNeeded: high)) &<< 4
}

// MARK: - Fast paths

func _dotQ4_0(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: _Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + 18 * block
        let weights = _nibbles(base.loadUnaligned(fromByteOffset: 2, as: SIMD16<UInt8>.self)) &- 8
        sum += (_half(base, 0) * x.scales[block]) * Float(_sumOfProducts(weights, x.codes(block: block)))
    }
    return sum
}

func _dotQ4_1(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: _Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + 20 * block
        let weights = _nibbles(base.loadUnaligned(fromByteOffset: 4, as: SIMD16<UInt8>.self))
        let scale = x.scales[block]
        sum += (_half(base, 0) * scale) * Float(_sumOfProducts(weights, x.codes(block: block)))
        sum += (_half(base, 2) * scale) * Float(x.sum(block: block))
    }
    return sum
}

func _dotQ5_0(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: _Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + 22 * block
        let high = _fifthBits(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 2, as: UInt32.self)))
        let weights = (_nibbles(base.loadUnaligned(fromByteOffset: 6, as: SIMD16<UInt8>.self)) | high) &- 16
        sum += (_half(base, 0) * x.scales[block]) * Float(_sumOfProducts(weights, x.codes(block: block)))
    }
    return sum
}

func _dotQ8_0(_ row: UnsafeRawPointer, _ blockCount: Int, _ x: _Activations) -> Float {
    var sum: Float = 0
    for block in 0..<blockCount {
        let base = row + 34 * block
        let weights = SIMD32<Int16>(truncatingIfNeeded: base.loadUnaligned(fromByteOffset: 2, as: SIMD32<Int8>.self))
        sum += (_half(base, 0) * x.scales[block]) * Float(_sumOfProducts(weights, x.codes(block: block)))
    }
    return sum
}

/// Q4_K: per 32-element group g, (d × scale_g) × Σ q·a − (dmin × min_g) × Σ a, each times the
/// activation block's scale.
func _dotQ4_K(_ row: UnsafeRawPointer, _ superBlockCount: Int, _ x: _Activations) -> Float {
    var sum: Float = 0
    for superBlock in 0..<superBlockCount {
        let base = row + 144 * superBlock
        let d = _half(base, 0), dmin = _half(base, 2)
        for chunk in 0..<4 {
            let bytes = base.loadUnaligned(fromByteOffset: 16 + 32 * chunk, as: SIMD32<UInt8>.self)
            for nibble in 0..<2 {
                let group = 2 * chunk + nibble
                let codes = nibble == 0 ? bytes & 0x0F : bytes &>> 4
                let block = 8 * superBlock + group
                let (scale, minimum) = _scaleAndMinimum(base + 4, group)
                let product = _sumOfProducts(SIMD32<Int16>(truncatingIfNeeded: codes), x.codes(block: block))
                sum += x.scales[block] * ((d * Float(scale)) * Float(product) - (dmin * Float(minimum)) * Float(x.sum(block: block)))
            }
        }
    }
    return sum
}

/// Q6_K: per 16-element group, (d × scale) × Σ (q − 32)·a, times the activation block's scale.
/// For activation block j of a super-block (elements 32j ..< 32j + 32), the low nibbles are
/// 32 contiguous bytes at 64h + 32(j % 2) (nibble (j % 4) / 2) and the high pairs 32
/// contiguous bytes at 128 + 32h (bits 2(j % 4)), with h = j / 4.
func _dotQ6_K(_ row: UnsafeRawPointer, _ superBlockCount: Int, _ x: _Activations) -> Float {
    var sum: Float = 0
    for superBlock in 0..<superBlockCount {
        let base = row + 210 * superBlock
        let d = _half(base, 208)
        for j in 0..<8 {
            let half = j / 4, quarter = j % 4
            let lowBytes = base.loadUnaligned(fromByteOffset: 64 * half + 32 * (quarter % 2), as: SIMD32<UInt8>.self)
            let highBytes = base.loadUnaligned(fromByteOffset: 128 + 32 * half, as: SIMD32<UInt8>.self)
            let low = (lowBytes &>> UInt8(4 * (quarter / 2))) & 0x0F
            let high = (highBytes &>> UInt8(2 * quarter)) & 0x03
            let weights = SIMD32<Int16>(truncatingIfNeeded: low | (high &<< 4)) &- 32
            let block = 8 * superBlock + j
            let (first, second) = _halfSumsOfProducts(weights, x.codes(block: block))
            let scale0 = Float(base.load(fromByteOffset: 192 + 2 * j, as: Int8.self))
            let scale1 = Float(base.load(fromByteOffset: 193 + 2 * j, as: Int8.self))
            sum += x.scales[block] * ((d * scale0) * Float(first) + (d * scale1) * Float(second))
        }
    }
    return sum
}

// MARK: - General path and reference

/// Any supported type: decode one block at a time, multiply with the `Float` activations.
func _dotDequantizedRow(_ type: GGMLType, _ row: UnsafeRawPointer, _ elementCount: Int, _ x: _Activations) -> Float {
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

/// The oracle: Σ dequantized weight × activation in `Double`, with the activations the fast
/// path of `type` would see (quantized codes × scale for types with an integer fast path,
/// the exact `Float` values otherwise).
func _dotReference(_ type: GGMLType, _ row: UnsafeRawPointer, _ elementCount: Int, _ x: _Activations) -> Double {
    guard let decode = Dequantization.referenceDecoder(for: type) else { preconditionFailure("unsupported \(type)") }
    let usesCodes = _integerFastPath(for: type) != nil
    var weights = [Float](repeating: 0, count: type.blockSize)
    var sum = 0.0
    for block in 0 ..< elementCount / type.blockSize {
        weights.withUnsafeMutableBufferPointer { decode(row + block * type.blockByteCount, $0.baseAddress!) }
        for lane in 0..<type.blockSize {
            let index = block * type.blockSize + lane
            let activation = usesCodes ? Double(x.scales[index / 32]) * Double(x.codes[index]) : Double(x.values[index])
            sum += Double(weights[lane]) * activation
        }
    }
    return sum
}

typealias _RowDot = (UnsafeRawPointer, Int, _Activations) -> Float

/// The integer fast path of `type` and the unit its count is in (blocks or super-blocks).
func _integerFastPath(for type: GGMLType) -> _RowDot? {
    switch type {
    case .q4_0: _dotQ4_0
    case .q4_1: _dotQ4_1
    case .q5_0: _dotQ5_0
    case .q8_0: _dotQ8_0
    case .q4_K: _dotQ4_K
    case .q6_K: _dotQ6_K
    default: nil
    }
}
