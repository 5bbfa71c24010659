import GGUF
#if TYPESET_AVX2
import VectorIntrinsics
#endif

/// An input vector prepared for matrix-vector products: its `Float` values and, for weight
/// types with integer kernels, the same values quantized the way llama.cpp quantizes
/// activations on x86, so that the integer dot products are identical to ggml's.
///
/// The ``Format`` follows the weight type (ggml's `vec_dot_type`):
///
///     format  weights            block  scale per block          extra per block
///     ------  -----------------  -----  -----------------------  -----------------------------
///     q8_0    Q4_0, Q5_0, Q8_0     32   fp16(amax / 127)          Σ codes (for offset weights)
///     q8_1    Q4_1               32   fp16(amax / 127)          s = fp16(d × Σ codes)
///     q8_K    Q4_K, Q5_K, Q6_K    256   1 / (−127 / max), f32     Σ codes per 16 (ggml's bsums)
///     float   the others           —    —                        —
///
/// q8_0 and q8_1 codes are `round(x × 127 / amax)`, ties to even (ggml's AVX path, which
/// uses `127 / amax` rather than `1 / d`); the scale the products use is the fp16-rounded
/// `d` read back as a float. q8_K is ggml's `quantize_row_q8_K_ref`: `max` is the first
/// element of largest magnitude with its sign, codes are `min(127, round(x × −127 / max))`.
/// Codes are in −127…127 in every format.
///
/// Share one `ActivationVector` between the products that read the same input and whose
/// weights use the same format (the query, key and value projections of a layer).
public struct ActivationVector: Sendable {
    /// How the values are quantized for the products.
    public enum Format: String, Sendable, CaseIterable {
        case q8_0, q8_1, q8_K
        /// No quantization: the products multiply with the `Float` values.
        case float

        /// The activation format the kernels use for weights of `type`.
        public init(for type: GGMLType) {
            switch type {
            case .q4_0, .q5_0, .q8_0, .mxfp4: self = .q8_0
            case .q4_1: self = .q8_1
            case .q4_K, .q5_K, .q6_K: self = .q8_K
            default: self = .float
            }
        }

        /// Entries of ``ActivationVector/sums`` for `count` elements.
        func sumCount(_ count: Int) -> Int {
            switch self {
            case .q8_0: count / 32
            case .q8_K: count / 16
            case .q8_1, .float: 0
            }
        }

        /// Elements per scale: 32, 256, or 1 for `.float`.
        public var blockSize: Int {
            switch self {
            case .q8_0, .q8_1: 32
            case .q8_K: 256
            case .float: 1
            }
        }
    }

    public let format: Format
    /// The input, unquantized.
    public private(set) var values: [Float]
    /// One scale per block: code × scale approximates the value.
    public private(set) var scales: [Float]
    /// One code per element (empty for `.float`).
    public private(set) var codes: [Int8]
    /// q8_0: Σ codes per 32-element block; q8_K: Σ codes per 16 elements; otherwise empty.
    public private(set) var sums: [Int32]
    /// q8_1: `s` per block, fp16(d × Σ codes) read back as a float; otherwise empty.
    public private(set) var offsets: [Float]
    /// Codes two by two as the packed kernels read them (``PackedMatrix``, "Pairs"): for each
    /// quad of elements `4k ..< 4k + 4`, `pairs[2k]` holds codes `4k` (low 16 bits) and
    /// `4k + 2` (high 16 bits), `pairs[2k + 1]` codes `4k + 1` and `4k + 3`, sign-extended.
    /// Filled only where the pair kernels run, on targets without AVX2; elsewhere the byte
    /// kernels read the codes, and these are allocated but stay zero.
    private(set) var pairs: [UInt32]

    /// Elements.
    public var count: Int { values.count }

    /// Quantizes `values` for products with weights of `type`.
    ///
    /// Precondition: `values.count` is a multiple of the format's block size (every weight
    /// row of such a type is a whole number of its blocks, which the products check).
    ///
    /// - Complexity: O(n).
    public init(_ values: [Float], for type: GGMLType) {
        self.init(values, format: Format(for: type))
    }

    /// Quantizes `values` in `format`. Precondition as ``init(_:for:)``.
    public init(_ values: [Float], format: Format) {
        self.init(format: format, count: values.count)
        values.withUnsafeBufferPointer { quantize($0) }
    }

    /// A vector of `count` zeros in `format`, whose storage ``quantize(_:)`` then overwrites.
    /// Precondition: `count` is a multiple of the format's block size.
    public init(format: Format, count: Int) {
        precondition(count % format.blockSize == 0, "activation length \(count) is not a multiple of \(format.blockSize)")
        self.format = format
        values = [Float](repeating: 0, count: count)
        guard format != .float else {
            (scales, codes, sums, offsets, pairs) = ([], [], [], [], [])
            return
        }
        let blockCount = count / format.blockSize
        scales = [Float](repeating: 0, count: blockCount)
        codes = [Int8](repeating: 0, count: count)
        sums = [Int32](repeating: 0, count: format.sumCount(count))
        offsets = [Float](repeating: 0, count: format == .q8_1 ? blockCount : 0)
        pairs = [UInt32](repeating: 0, count: count / 2)
    }

    /// Replaces the vector's values with `values` (as many as ``count``) and quantizes them,
    /// in place: no allocation while this vector's storage is not shared with a copy.
    ///
    /// - Complexity: O(n).
    public mutating func quantize(_ values: UnsafeBufferPointer<Float>) {
        precondition(values.count == count, "quantizing \(values.count) values into a vector of \(count)")
        guard let source = values.baseAddress else { return }
        self.values.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: source, count: values.count) }
        guard format != .float else { return }
        let format = format
        scales.withUnsafeMutableBufferPointer { scales in
            codes.withUnsafeMutableBufferPointer { codes in
                sums.withUnsafeMutableBufferPointer { sums in
                    offsets.withUnsafeMutableBufferPointer { offsets in
                        pairs.withUnsafeMutableBufferPointer { pairs in
                            _quantize(source, count: values.count, format: format, into: QuantizedStorage(
                                scales: scales.baseAddress!, codes: codes.baseAddress!, sums: sums.baseAddress,
                                offsets: offsets.baseAddress, pairs: pairs.baseAddress!))
                        }
                    }
                }
            }
        }
    }

    /// The quantized values as floats (`scale × code`), or the values for `.float`: what an
    /// exact product with these activations would multiply the weights by. (For q8_1, the
    /// kernels use `s` for the sum of a block, which differs from `scale × Σ codes` by the
    /// rounding of `s` to fp16.)
    public func dequantized() -> [Float] {
        guard format != .float else { return values }
        let blockSize = format.blockSize
        return codes.indices.map { scales[$0 / blockSize] * Float(codes[$0]) }
    }
}

/// Quantized copies of the inputs of a run of products, one ``ActivationVector`` per
/// activation format and length, kept from call to call so that quantizing the next input
/// reuses their storage. A decode loop keeps one (its products then allocate nothing); see
/// ``MatrixVectorProduct/multiply(_:input:reusing:threadCount:)``.
public struct ActivationBuffers: Sendable {
    /// At most one vector per (format, length) pair: a model has a handful.
    private(set) var vectors: [ActivationVector] = []

    public init() {}

    /// Quantizes `values` in `format` into the vector kept for that format and length (made
    /// on first use) and returns its index in ``vectors``.
    mutating func quantize(_ values: UnsafeBufferPointer<Float>, format: ActivationVector.Format) -> Int {
        let index = vectors.firstIndex { $0.format == format && $0.count == values.count } ?? {
            vectors.append(ActivationVector(format: format, count: values.count))
            return vectors.count - 1
        }()
        vectors[index].quantize(values)
        return index
    }
}

// MARK: - Quantizers (llama.cpp's x86 arithmetic, operation for operation)

/// Where `_quantize` writes one vector's quantization (sized for its format and length;
/// `sums` and `offsets` only where the format has them).
struct QuantizedStorage {
    let scales: UnsafeMutablePointer<Float>
    let codes: UnsafeMutablePointer<Int8>
    let sums: UnsafeMutablePointer<Int32>?
    let offsets: UnsafeMutablePointer<Float>?
    let pairs: UnsafeMutablePointer<UInt32>
}

/// Quantizes `count` values (a whole number of the format's blocks) in `format`.
func _quantize(_ values: UnsafePointer<Float>, count: Int, format: ActivationVector.Format, into storage: QuantizedStorage) {
    let blockSize = format.blockSize
    for block in 0 ..< count / blockSize {
        let x = values + block * blockSize
        let q = storage.codes + block * blockSize
        switch format {
        case .q8_K:
            storage.scales[block] = _quantizeQ8_K(x, into: q, sums: storage.sums! + block * 16)
        case .q8_0, .q8_1:
            let (d, sum) = _quantizeQ8_0(x, into: q)
            storage.scales[block] = roundedToHalfPrecision(d)
            if format == .q8_0 { storage.sums![block] = sum } else { storage.offsets![block] = roundedToHalfPrecision(d * Float(sum)) }
        case .float:
            return
        }
    }
    // Pairs in quad order: (4k, 4k + 2), (4k + 1, 4k + 3). Only the pair kernels read them,
    // which run where the byte kernels do not (targets without AVX2).
    #if !TYPESET_AVX2
    for quad in 0 ..< count / 4 {
        let codes = storage.codes + 4 * quad
        storage.pairs[2 * quad] = _pair(codes[0], codes[2])
        storage.pairs[2 * quad + 1] = _pair(codes[1], codes[3])
    }
    #endif
}

/// ggml's `nearest_int`: round to nearest, ties to even, for |value| < 2²².
@inline(__always)
func _nearestInteger(_ value: Float) -> Int32 {
    Int32(bitPattern: (value + 12_582_912).bitPattern & 0x7F_FFFF) &- 0x40_0000
}

/// `_nearestInteger` in every lane.
@inline(__always)
func _nearestIntegers(_ values: SIMD16<Float>) -> SIMD16<Int32> {
    (unsafeBitCast(values + 12_582_912, to: SIMD16<Int32>.self) & 0x7F_FFFF) &- 0x40_0000
}

/// Sixteen values' magnitudes as bit patterns (the sign bit cleared). For values that are
/// not NaN, the patterns are ordered as the magnitudes are: the largest magnitude is an
/// integer maximum, which has no NaN cases to handle.
@inline(__always)
func _magnitudeBits(_ values: SIMD16<Float>) -> SIMD16<UInt32> {
    unsafeBitCast(values, to: SIMD16<UInt32>.self) & 0x7FFF_FFFF
}

/// The bit pattern of a float's positive infinity: magnitude bits above it are NaNs.
let _infinityBits: UInt32 = 0x7F80_0000

/// The larger of each pair of lanes: `vpmaxud` through VectorIntrinsics on AVX2 targets
/// (Swift's generic comparison and blend compiled four lanes at a time there).
@inline(__always)
func _largerLanes(_ a: SIMD16<UInt32>, _ b: SIMD16<UInt32>) -> SIMD16<UInt32> {
    #if TYPESET_AVX2
    largerLanes(a, b)
    #else
    a.replacing(with: b, where: b .> a)
    #endif
}

/// The largest of sixteen lanes: a reduction on halving widths through VectorIntrinsics on
/// AVX2 targets, elsewhere the halving spelled out (the standard library's `max()` is a
/// lane-by-lane loop).
@inline(__always)
func _largestLane(_ lanes: SIMD16<UInt32>) -> UInt32 {
    #if TYPESET_AVX2
    largestLane(lanes)
    #else
    let eight = lanes.lowHalf.replacing(with: lanes.highHalf, where: lanes.highHalf .> lanes.lowHalf)
    let four = eight.lowHalf.replacing(with: eight.highHalf, where: eight.highHalf .> eight.lowHalf)
    let two = four.lowHalf.replacing(with: four.highHalf, where: four.highHalf .> four.lowHalf)
    return max(two[0], two[1])
    #endif
}

/// The lanes' wrapping sum, by halving on AVX2 targets.
@inline(__always)
func _wrappingSum(_ lanes: SIMD16<Int32>) -> Int32 {
    #if TYPESET_AVX2
    wrappingSum(lanes)
    #else
    lanes.wrappedSum()
    #endif
}

/// `min(value, 127)` in every lane, NaNs kept (`vminps`, once on AVX-512 targets and per
/// 256-bit half on AVX2 ones).
@inline(__always)
func _clampedTo127(_ values: SIMD16<Float>) -> SIMD16<Float> {
    #if TYPESET_AVX2
    smallerLanes(values, SIMD16(repeating: 127))
    #else
    values.replacing(with: 127, where: values .> 127)
    #endif
}

/// Stores the low byte of each lane at `codes` (`vpmovdb`).
@inline(__always)
func _storeLowBytes(_ lanes: SIMD16<Int32>, _ codes: UnsafeMutablePointer<Int8>) {
    #if TYPESET_AVX2
    let bytes = lowBytes(lanes)
    #else
    let bytes = SIMD16<Int8>(truncatingIfNeeded: lanes)
    #endif
    UnsafeMutableRawPointer(codes).storeBytes(of: bytes, as: SIMD16<Int8>.self)
}

/// Quantizes 32 values as ggml's AVX `quantize_row_q8_0` does and returns the unrounded
/// scale `d = amax / 127` (the caller stores it rounded to fp16) and the codes' sum, sixteen
/// lanes at a time. Lane for lane what `_quantizeQ8_0Scalar` computes; a block holding a NaN,
/// which the reference's comparisons skip when they look for the largest magnitude, goes to
/// the reference.
@inline(__always)
func _quantizeQ8_0(_ x: UnsafePointer<Float>, into codes: UnsafeMutablePointer<Int8>) -> (scale: Float, sum: Int32) {
    let raw = UnsafeRawPointer(x)
    let low = raw.loadUnaligned(as: SIMD16<Float>.self), high = raw.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
    let largest = _largestLane(_largerLanes(_magnitudeBits(low), _magnitudeBits(high)))
    guard largest <= _infinityBits else { return _quantizeQ8_0Scalar(x, into: codes) }
    let amax = Float(bitPattern: largest)
    let inverse: Float = amax != 0 ? 127 / amax : 0
    let lowCodes = _nearestIntegers(low * inverse), highCodes = _nearestIntegers(high * inverse)
    _storeLowBytes(lowCodes, codes)
    _storeLowBytes(highCodes, codes + 16)
    return (amax / 127, _wrappingSum(lowCodes &+ highCodes))
}

/// The scalar reference of `_quantizeQ8_0`, written as ggml's C reads: the tests hold the
/// vector code to it.
func _quantizeQ8_0Scalar(_ x: UnsafePointer<Float>, into codes: UnsafeMutablePointer<Int8>) -> (scale: Float, sum: Int32) {
    var amax: Float = 0
    for i in 0..<32 { let magnitude = abs(x[i]); if magnitude > amax { amax = magnitude } }
    let inverse: Float = amax != 0 ? 127 / amax : 0
    var sum: Int32 = 0
    for i in 0..<32 {
        codes[i] = Int8(truncatingIfNeeded: _nearestInteger(x[i] * inverse))
        sum &+= Int32(codes[i])
    }
    return (amax / 127, sum)
}

/// Quantizes 256 values as ggml's `quantize_row_q8_K_ref` does, writes the codes' sums of
/// each 16, and returns the block's scale, sixteen lanes at a time. Lane for lane what
/// `_quantizeQ8_KScalar` computes (`max` is the first value of largest magnitude); a block
/// holding a NaN goes to the reference, as in `_quantizeQ8_0`.
@inline(__always)
func _quantizeQ8_K(_ x: UnsafePointer<Float>, into codes: UnsafeMutablePointer<Int8>, sums: UnsafeMutablePointer<Int32>) -> Float {
    let raw = UnsafeRawPointer(x)
    @inline(__always) func chunk(_ index: Int) -> SIMD16<Float> { raw.loadUnaligned(fromByteOffset: 64 &* index, as: SIMD16<Float>.self) }
    var magnitudes = _magnitudeBits(chunk(0))
    for index in 1..<16 { magnitudes = _largerLanes(magnitudes, _magnitudeBits(chunk(index))) }
    let largest = _largestLane(magnitudes)
    guard largest <= _infinityBits else { return _quantizeQ8_KScalar(x, into: codes, sums: sums) }
    guard largest != 0 else {
        codes.update(repeating: 0, count: 256)
        sums.update(repeating: 0, count: 16)
        return 0
    }
    let first = _firstIndex(ofMagnitudeBits: largest, in: chunk)
    let inverseScale = -127 / x[first]
    for index in 0..<16 {
        // min(127, round(v)) is round(min(v, 127)) (rounding is monotone and keeps 127).
        let lanes = _nearestIntegers(_clampedTo127(inverseScale * chunk(index)))
        _storeLowBytes(lanes, codes + 16 &* index)
        sums[index] = _wrappingSum(lanes)
    }
    return 1 / inverseScale
}

/// The index of the first of 256 values (sixteen `chunk`s) whose magnitude's bit pattern is
/// `bits`, which one of them has and which is neither zero nor a NaN's. On AVX2 targets a
/// compare into a lane mask per chunk (as floats: for positive non-NaN values equal floats
/// are equal bit patterns); elsewhere Swift's `.==`, then the lanes one by one. (Generic
/// `any(_:.==_:)` compiled to a lane-by-lane loop through the stack on AVX2: 40% of the
/// quantization's time in four-sequence decoding.)
@inline(__always)
func _firstIndex(ofMagnitudeBits bits: UInt32, in chunk: (Int) -> SIMD16<Float>) -> Int {
    #if TYPESET_AVX2
    let target = SIMD16<Float>(repeating: Float(bitPattern: bits))
    var index = 0
    while true {
        let lanes = equalLanes(unsafeBitCast(_magnitudeBits(chunk(index)), to: SIMD16<Float>.self), target)
        if lanes != 0 { return 16 &* index &+ lanes.trailingZeroBitCount }
        index &+= 1
    }
    #else
    var index = 0
    while !any(_magnitudeBits(chunk(index)) .== SIMD16(repeating: bits)) { index += 1 }
    var first = 16 * index
    while chunk(index)[first & 15].magnitude.bitPattern != bits { first += 1 }
    return first
    #endif
}

/// The scalar reference of `_quantizeQ8_K`, written as ggml's C reads.
func _quantizeQ8_KScalar(_ x: UnsafePointer<Float>, into codes: UnsafeMutablePointer<Int8>, sums: UnsafeMutablePointer<Int32>) -> Float {
    var amax: Float = 0, maximum: Float = 0
    for i in 0..<256 {
        let magnitude = abs(x[i])
        if magnitude > amax { amax = magnitude; maximum = x[i] }
    }
    guard amax != 0 else {
        codes.update(repeating: 0, count: 256)
        sums.update(repeating: 0, count: 16)
        return 0
    }
    let inverseScale = -127 / maximum
    for i in 0..<256 { codes[i] = Int8(truncatingIfNeeded: min(127, _nearestInteger(inverseScale * x[i]))) }
    for group in 0..<16 {
        var sum: Int32 = 0
        for i in 0..<16 { sum &+= Int32(codes[16 * group + i]) }
        sums[group] = sum
    }
    return 1 / inverseScale
}

@inline(__always)
func _pair(_ low: Int8, _ high: Int8) -> UInt32 {
    UInt32(UInt16(bitPattern: Int16(low))) | UInt32(UInt16(bitPattern: Int16(high))) << 16
}

// MARK: - Pointers for the kernels

/// A zeroed word for empty arrays' pointers.
nonisolated(unsafe) private let _zeroWords: UnsafeMutableRawPointer = {
    let words = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 64)
    words.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
    return words
}()

extension ActivationVector {
    func withPointers<Result>(_ body: (Activations) -> Result) -> Result {
        values.withUnsafeBufferPointer { values in
            scales.withUnsafeBufferPointer { scales in
                codes.withUnsafeBufferPointer { codes in
                    sums.withUnsafeBufferPointer { sums in
                        offsets.withUnsafeBufferPointer { offsets in
                            body(Activations(
                                values: values.baseAddress ?? UnsafePointer(_zeroWords.assumingMemoryBound(to: Float.self)),
                                scales: scales.baseAddress ?? UnsafePointer(_zeroWords.assumingMemoryBound(to: Float.self)),
                                codes: codes.baseAddress ?? UnsafePointer(_zeroWords.assumingMemoryBound(to: Int8.self)),
                                sums: sums.baseAddress ?? UnsafePointer(_zeroWords.assumingMemoryBound(to: Int32.self)),
                                offsets: offsets.baseAddress ?? UnsafePointer(_zeroWords.assumingMemoryBound(to: Float.self))))
                        }
                    }
                }
            }
        }
    }

    func withColumnPointers<Result>(_ body: (ColumnPointers) -> Result) -> Result {
        pairs.withUnsafeBufferPointer { pairs in
            withPointers { activations in
                body(ColumnPointers(pairs: pairs.baseAddress ?? UnsafePointer(_zeroWords.assumingMemoryBound(to: UInt32.self)),
                                     codes: UnsafeRawPointer(activations.codes), scales: activations.scales, sums: activations.sums, offsets: activations.offsets))
            }
        }
    }
}
