#if TYPESET_AVX2
import VectorIntrinsics

// The byte kernels: the packed products on bytes, on AVX2 targets (TYPESET_AVX2, set by
// Package.swift for CPUs with AVX2, FMA and F16C; AVX-512 ones included). Same packed
// matrices, same activations, same integer
// sums, same float scaling as the pair kernels of PackedKernels.swift, so the results are
// identical bit for bit; what changes is the arithmetic that produces the integer sums.
//
// The pair kernels multiply 16-bit lanes, two elements per row per 32-bit lane: a product
// costs a multiply, an add and a later widening for 32 elements of one row group and one
// activation column. Here each 32-bit lane holds four consecutive elements of its row as
// unsigned bytes (a "quad"), multiplied with four int8 activation codes: with AVX512-VNNI,
// `vpdpbusd` adds the four products into the lane, one instruction for 64 products; with
// AVX512BW alone, `vpmaddubsw` sums them two by two into 16-bit lanes, added up over several
// quads and widened at the end (`PendingQuadSums`), an instruction and an add for 64; with
// AVX2, the same two instructions on each 256-bit half of the 16 rows. Offsets
// that make a type's codes signed (Q4_0's 8, Q5_0's 16, Q6_K's 32, MXFP4's 12 after its table
// lookup, and with VNNI Q8_0's 128)
// stay out of the bytes and are taken off with the activations' block sums, as ggml's VNNI
// path does; without VNNI Q8_0's signed codes go in instead (`_q8SignedQuads`).
//
// Every layout of PackedMatrix.swift gives quads cheaply: the low nibbles of a packed word
// are elements 4w ..< 4w + 4 of the block (the high nibbles 16 further), a Q8_0 word is a
// quad already, a Q5_0 fifth-bit word spreads into bit 4 of each byte, and two of Q6_K's pair
// vectors interleave into a quad (pair 2k holds elements 4k and 4k + 2, pair 2k + 1 the other
// two).

/// A row group's pending sums against one activation column: the products of the quads
/// added since the last `take()`.
///
/// With AVX512-VNNI they are 32-bit sums from the start. Without it, each quad's
/// products are summed two by two into 16-bit lanes (`vpmaddubsw`), which hold the products
/// of several quads before they could overflow: with activation codes of at most 128 in
/// magnitude (the quantizers write −127…127, which `addSigned`'s sign trick needs: `vpsignb`
/// leaves −128 as it is), a pair is at most 2 × 128 × the largest weight code, so
///
///     weight codes   largest pair   quads between settles
///     0…15 (4 bits)        3,840    8   (30,720 ≤ 32,767)
///     0…24 (MXFP4 + 12)    6,144    5   (30,720)
///     0…31 (5 bits)        7,936    4   (31,744)
///     0…63 (6 bits)       16,128    2   (32,256)
///     0…255 (8 bits)      65,280    none: one pair saturates, so Q8_0's signed codes go
///                                   in through `addSigned`, widened at once
///
/// and the block kernels call `settle()` (`vpmaddwd` by ones, into the 32-bit sums) in time.
struct PendingQuadSums {
    #if !TYPESET_VNNI
    var pairs = SIMD32<Int16>()
    #endif
    var sums = SIMD16<Int32>()

    /// Adds the products of `quad` (unsigned bytes) and `codes` (four int8 codes per lane).
    @inline(__always) mutating func add(_ quad: SIMD16<UInt32>, _ codes: SIMD16<UInt32>) {
        #if TYPESET_VNNI
        sums = dotProductOfBytes(sums, unsigned: quad, signed: codes)
        #else
        pairs &+= productsOfBytePairs(unsigned: quad, signed: codes)
        #endif
    }

    #if !TYPESET_VNNI
    /// Adds the products of signed byte `weights` and `codes` (four int8 codes per lane, each
    /// within ±127) straight into the 32-bit sums: `magnitudes` (the weights' magnitudes) times
    /// the codes carrying the weights' signs (`vpsignb`), a pair at most 2 × 128 × 127 = 32,512,
    /// widened at once (`vpmaddwd` by ones). ggml's AVX2 Q8_0 product does the same.
    @inline(__always) mutating func addSigned(_ weights: SIMD16<UInt32>, magnitudes: SIMD16<UInt32>, _ codes: SIMD16<UInt32>) {
        sums &+= productsOfWordPairs(productsOfBytePairs(unsigned: magnitudes, signed: bytes(codes, signedAs: weights)), SIMD32(repeating: 1))
    }
    #endif

    /// Widens the 16-bit sums into the 32-bit ones (nothing to do with VNNI).
    @inline(__always) mutating func settle() {
        #if !TYPESET_VNNI
        sums &+= productsOfWordPairs(pairs, SIMD32(repeating: 1))
        pairs = SIMD32()
        #endif
    }

    /// The sums of every quad added, leaving none pending.
    @inline(__always) mutating func take() -> SIMD16<Int32> {
        settle()
        let taken = sums
        sums = SIMD16()
        return taken
    }
}

/// A row group's sums against one or several activation columns, fed quads.
protocol QuadSink {
    /// Adds `quad` · the column's activation word `word` (four int8 codes; words counted from
    /// the sink's first) to the pending sums.
    mutating func consume(_ quad: SIMD16<UInt32>, word: Int)
    /// Widens the pending sums where they are held in 16 bits: the block kernels call it
    /// before more quads than those hold (see `PendingQuadSums`); `flush` does it too.
    mutating func settle()
    #if !TYPESET_VNNI
    /// Adds `weights` (four signed bytes per lane) · the column's activation word `word`,
    /// widened at once (`PendingQuadSums.addSigned`); `magnitudes` are the weights'.
    mutating func consumeSigned(_ weights: SIMD16<UInt32>, magnitudes: SIMD16<UInt32>, word: Int)
    #endif
    /// Moves the pending sums into the totals.
    mutating func flush()
    /// Moves `(pending − offset × the column's activation sum number `sum`) × scales` into
    /// the totals (Q4_K's and Q6_K's sub-block scales; Q6_K's offset of 32).
    mutating func flush(scaledBy scales: SIMD16<Int32>, offset: Int32, sum: Int)
}

/// A column set whose products can run on quads.
protocol QuadColumnSet: ColumnSet {
    associatedtype Quads: QuadSink
    /// A sink reading the activation codes from word `word` of each column on (and its sums).
    func quadSink(atWord word: Int) -> Quads
    /// The totals `sink` holds for column `index`.
    static func quadTotals(_ sink: Quads, _ index: Int) -> SIMD16<Int32>
}

/// The activation word `word` (four codes) of `codes`, in every lane.
@inline(__always)
func _broadcastQuad(_ codes: UnsafeRawPointer, _ word: Int) -> SIMD16<UInt32> {
    SIMD16(repeating: codes.loadUnaligned(fromByteOffset: 4 &* word, as: UInt32.self))
}

/// One activation column.
struct OneQuadColumn: QuadSink {
    let codes: UnsafeRawPointer
    let sums: UnsafePointer<Int32>
    var pending = PendingQuadSums()
    var totals = SIMD16<Int32>()

    @inline(__always) mutating func consume(_ quad: SIMD16<UInt32>, word: Int) {
        pending.add(quad, _broadcastQuad(codes, word))
    }
    #if !TYPESET_VNNI
    @inline(__always) mutating func consumeSigned(_ weights: SIMD16<UInt32>, magnitudes: SIMD16<UInt32>, word: Int) {
        pending.addSigned(weights, magnitudes: magnitudes, _broadcastQuad(codes, word))
    }
    #endif
    @inline(__always) mutating func settle() { pending.settle() }
    @inline(__always) mutating func flush() { totals &+= pending.take() }
    @inline(__always) mutating func flush(scaledBy scales: SIMD16<Int32>, offset: Int32, sum: Int) {
        totals &+= (pending.take() &- SIMD16(repeating: offset &* sums[sum])) &* scales
    }
}

/// Four activation columns, `stride` bytes of codes (and `sumStride` sums) apart.
struct FourQuadColumns: QuadSink {
    let codes: UnsafeRawPointer
    let stride: Int
    let sums: UnsafePointer<Int32>
    let sumStride: Int
    var pending = (PendingQuadSums(), PendingQuadSums(), PendingQuadSums(), PendingQuadSums())
    var totals = (SIMD16<Int32>(), SIMD16<Int32>(), SIMD16<Int32>(), SIMD16<Int32>())

    @inline(__always) mutating func consume(_ quad: SIMD16<UInt32>, word: Int) {
        pending.0.add(quad, _broadcastQuad(codes, word))
        pending.1.add(quad, _broadcastQuad(codes + stride, word))
        pending.2.add(quad, _broadcastQuad(codes + 2 &* stride, word))
        pending.3.add(quad, _broadcastQuad(codes + 3 &* stride, word))
    }
    #if !TYPESET_VNNI
    @inline(__always) mutating func consumeSigned(_ weights: SIMD16<UInt32>, magnitudes: SIMD16<UInt32>, word: Int) {
        pending.0.addSigned(weights, magnitudes: magnitudes, _broadcastQuad(codes, word))
        pending.1.addSigned(weights, magnitudes: magnitudes, _broadcastQuad(codes + stride, word))
        pending.2.addSigned(weights, magnitudes: magnitudes, _broadcastQuad(codes + 2 &* stride, word))
        pending.3.addSigned(weights, magnitudes: magnitudes, _broadcastQuad(codes + 3 &* stride, word))
    }
    #endif
    @inline(__always) mutating func settle() {
        pending.0.settle()
        pending.1.settle()
        pending.2.settle()
        pending.3.settle()
    }
    @inline(__always) mutating func flush() {
        totals.0 &+= pending.0.take()
        totals.1 &+= pending.1.take()
        totals.2 &+= pending.2.take()
        totals.3 &+= pending.3.take()
    }
    @inline(__always) mutating func flush(scaledBy scales: SIMD16<Int32>, offset: Int32, sum: Int) {
        totals.0 &+= (pending.0.take() &- SIMD16(repeating: offset &* sums[sum])) &* scales
        totals.1 &+= (pending.1.take() &- SIMD16(repeating: offset &* sums[sum &+ sumStride])) &* scales
        totals.2 &+= (pending.2.take() &- SIMD16(repeating: offset &* sums[sum &+ 2 &* sumStride])) &* scales
        totals.3 &+= (pending.3.take() &- SIMD16(repeating: offset &* sums[sum &+ 3 &* sumStride])) &* scales
    }
}

/// Two sinks fed the same quads: one unpacking serves both column sets.
struct JoinedQuadSinks<First: QuadSink, Second: QuadSink>: QuadSink {
    var first: First
    var second: Second

    @inline(__always) mutating func consume(_ quad: SIMD16<UInt32>, word: Int) {
        first.consume(quad, word: word)
        second.consume(quad, word: word)
    }
    #if !TYPESET_VNNI
    @inline(__always) mutating func consumeSigned(_ weights: SIMD16<UInt32>, magnitudes: SIMD16<UInt32>, word: Int) {
        first.consumeSigned(weights, magnitudes: magnitudes, word: word)
        second.consumeSigned(weights, magnitudes: magnitudes, word: word)
    }
    #endif
    @inline(__always) mutating func settle() {
        first.settle()
        second.settle()
    }
    @inline(__always) mutating func flush() {
        first.flush()
        second.flush()
    }
    @inline(__always) mutating func flush(scaledBy scales: SIMD16<Int32>, offset: Int32, sum: Int) {
        first.flush(scaledBy: scales, offset: offset, sum: sum)
        second.flush(scaledBy: scales, offset: offset, sum: sum)
    }
}

extension OneColumnSet: QuadColumnSet {
    @inline(__always) func quadSink(atWord word: Int) -> OneQuadColumn {
        OneQuadColumn(codes: pointers.codes + 4 &* word, sums: pointers.sums)
    }
    @inline(__always) static func quadTotals(_ sink: OneQuadColumn, _ index: Int) -> SIMD16<Int32> { sink.totals }
}

extension FourColumnSet: QuadColumnSet {
    @inline(__always) func quadSink(atWord word: Int) -> FourQuadColumns {
        FourQuadColumns(codes: first.codes + 4 &* word, stride: 2 &* pairStride, sums: first.sums, sumStride: sumStride)
    }
    @inline(__always) static func quadTotals(_ sink: FourQuadColumns, _ index: Int) -> SIMD16<Int32> {
        switch index {
        case 0: sink.totals.0
        case 1: sink.totals.1
        case 2: sink.totals.2
        default: sink.totals.3
        }
    }
}

extension JoinedColumnSets: QuadColumnSet where First: QuadColumnSet, Second: QuadColumnSet {
    @inline(__always) func quadSink(atWord word: Int) -> JoinedQuadSinks<First.Quads, Second.Quads> {
        JoinedQuadSinks(first: first.quadSink(atWord: word), second: second.quadSink(atWord: word))
    }
    @inline(__always) static func quadTotals(_ sink: JoinedQuadSinks<First.Quads, Second.Quads>, _ index: Int) -> SIMD16<Int32> {
        index < First.count ? First.quadTotals(sink.first, index) : Second.quadTotals(sink.second, index &- First.count)
    }
}

// MARK: - Quads of each layout

/// Q4_0 / Q4_1: word `w`'s low nibbles are quad `w`, its high nibbles quad `w + 4`.
@inline(__always)
func _nibbleQuads<S: QuadSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    for word in 0..<4 {
        let words = _words(body, word)
        sink.consume(words & 0x0F0F_0F0F, word: word)
        sink.consume((words &>> 4) & 0x0F0F_0F0F, word: word &+ 4)
    }
}

/// Q5_0: the nibbles as Q4_0, with each element's fifth bit put in bit 4 of its byte. The
/// packed fifth-bit word is laid out for this (`_fifthBitsForQuads`): quad `k`'s bits, one
/// per byte, sit `k` above bit 4 for `k` < 4 and `k − 3` below it for the others, so one
/// shift and one mask put them in place. Codes 0…31; the driver takes off 16.
@inline(__always)
func _q5Quads<S: QuadSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    let fifth = _words(body, 0)
    @inline(__always) func word(_ word: Int, _ lowShift: UInt32, _ highShift: UInt32) {
        let words = _words(body, 1 &+ word)
        sink.consume((words & 0x0F0F_0F0F) | ((fifth &>> lowShift) & 0x1010_1010), word: word)
        sink.consume(((words &>> 4) & 0x0F0F_0F0F) | ((fifth &<< highShift) & 0x1010_1010), word: word &+ 4)
    }
    // Literal shift counts (quads w and w + 4). Four quads of five-bit codes, then the 16-bit
    // sums are widened (PendingQuadSums).
    word(0, 0, 1)
    word(1, 1, 2)
    sink.settle()
    word(2, 2, 3)
    word(3, 3, 4)
}

/// MXFP4's doubled E2M1 values plus 12 (so 0…24, unsigned), in every 128-bit lane: the
/// table `_mxfp4Quads` looks nibbles up in.
@inline(__always)
var _mxfp4OffsetValues: SIMD16<UInt32> {
    let lane: SIMD4<UInt32> = [0x0F0E_0D0C, 0x1814_1210, 0x090A_0B0C, 0x0004_0608]
    return SIMD16(lowHalf: SIMD8(lowHalf: lane, highHalf: lane), highHalf: SIMD8(lowHalf: lane, highHalf: lane))
}

/// MXFP4: nibbles as Q4_0's, each looked up as its value + 12 (`vpshufb`); codes 0…24, so
/// four quads go between widenings (PendingQuadSums: 2 × 24 × 128 × 5 would still fit); the
/// driver takes off 12.
@inline(__always)
func _mxfp4Quads<S: QuadSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    let table = _mxfp4OffsetValues
    for word in 0..<4 {
        let words = _words(body, word)
        sink.consume(lookedUpBytes(words & 0x0F0F_0F0F, in: table), word: word)
        sink.consume(lookedUpBytes((words &>> 4) & 0x0F0F_0F0F, in: table), word: word &+ 4)
        if word == 1 { sink.settle() }
    }
}

#if TYPESET_VNNI
/// Q8_0: word `c` is quad `c`, stored as code + 128; the driver takes off 128. (With
/// AVX512-VNNI only: see `PendingQuadSums`.)
@inline(__always)
func _q8Quads<S: QuadSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    for word in 0..<8 { sink.consume(_words(body, word), word: word) }
}
#else
/// Q8_0 without VNNI: word `c` is quad `c`, stored as code + 128, which is the signed code
/// with its top bit flipped. As unsigned bytes those reach 255 and overflow `vpmaddubsw`'s
/// pairs (`PendingQuadSums`), so the signed codes go in, through their magnitudes and the
/// activations carrying their signs (`PendingQuadSums.addSigned`); no offset to take off.
/// Per quad and column a sign, a multiply, a widening and an add, where the pair kernels spent
/// two multiplies, two adds and the unpacking of two pair vectors.
@inline(__always)
func _q8SignedQuads<S: QuadSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    for word in 0..<8 {
        let weights = _words(body, word) ^ 0x8080_8080
        sink.consumeSigned(weights, magnitudes: bytes(weights, signedAs: weights), word: word)
    }
}
#endif

// MARK: - Drivers

/// Blocks of 32 with one scale and an integer offset (Q4_0: 8, Q5_0: 16, Q8_0: 128, MXFP4:
/// 12): result += (Σ q·a − offset·Σ a) × (d × d_a), per block — the integers `_scaledBlocks`
/// sums. The scales are fp16, or bfloat16 (`bfloat16Scales`: MXFP4's).
@inline(__always)
func _scaledBlocksOfBytes<C: QuadColumnSet>(
    _ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C, offset: Int32, bfloat16Scales: Bool = false,
    _ block: (UnsafeRawPointer, inout C.Quads) -> Void
) {
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let scaleWords = _words(group + layout.headerOffset(index), 0)
        let scales = bfloat16Scales
            ? unsafeBitCast(index & 1 == 0 ? scaleWords &<< 16 : scaleWords & 0xFFFF_0000, to: SIMD16<Float>.self)
            : _floatFromHalves(index & 1 == 0 ? scaleWords : scaleWords &>> 16)
        var sink = columns.quadSink(atWord: 8 &* index)
        block(group + layout.bodyOffset(index), &sink)
        sink.flush()
        columns.updateEachColumn { column, c, result in
            let sums = C.quadTotals(sink, c) &- SIMD16(repeating: offset &* column.sums[index])
            result = result.addingProductWhereFused(_floatFromSmallIntegers(sums), scales * column.scales[index])
        }
    }
}

/// Q4_1: result += (Σ q·a) × (d × d_a) + m × s, per block.
@inline(__always)
func _q4_1BlocksOfBytes<C: QuadColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let header = group + layout.headerOffset(index)
        let scaleWords = _words(header, 0), minimumWords = _words(header, 1)
        let odd = index & 1 == 1
        let scales = _floatFromHalves(odd ? scaleWords &>> 16 : scaleWords)
        let minimums = _floatFromHalves(odd ? minimumWords &>> 16 : minimumWords)
        var sink = columns.quadSink(atWord: 8 &* index)
        _nibbleQuads(group + layout.bodyOffset(index), &sink)
        sink.flush()
        columns.updateEachColumn { column, c, result in
            result = result.addingProductWhereFused(minimums, SIMD16(repeating: column.offsets[index]))
            result = result.addingProductWhereFused(_floatFromSmallIntegers(C.quadTotals(sink, c)), scales * column.scales[index])
        }
    }
}

/// Q4_K super-blocks: Σ over sub-blocks of scale × Σ q·a, times d × d_a, minus Σ over
/// sub-blocks of min × Σ a, times dmin × d_a. Chunk `c`'s words hold sub-block 2c in their
/// low nibbles and 2c + 1 in their high ones, eight quads each.
@inline(__always)
func _q4_KBlocksOfBytes<C: QuadColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let header = Q4_KHeader(group + layout.headerOffset(index))
        let body = group + layout.bodyOffset(index)
        var sink = columns.quadSink(atWord: 64 &* index)
        for subBlock in 0..<8 {
            let chunk = body + 512 &* (subBlock &>> 1)
            let shift = UInt32(4 &* (subBlock & 1))
            for word in 0..<8 {
                sink.consume((_words(chunk, word) &>> shift) & 0x0F0F_0F0F, word: 8 &* subBlock &+ word)
            }
            sink.flush(scaledBy: header.scale(subBlock), offset: 0, sum: 0)
        }
        columns.updateEachColumn { column, c, result in
            header.accumulate(sums: C.quadTotals(sink, c), column: column, index: index, into: &result)
        }
    }
}

/// Q6_K super-blocks: Σ over 16-element groups of scale × (Σ q·a − 32 Σ a), times d × d_a.
/// A group's three vectors give eight pair vectors (as in `_q6_KBlocks`); pairs 2m and
/// 2m + 1 interleave into quad m.
@inline(__always)
func _q6_KBlocksOfBytes<C: QuadColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    @inline(__always) func quad(_ even: SIMD16<UInt32>, _ odd: SIMD16<UInt32>) -> SIMD16<UInt32> { even | (odd &<< 8) }
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let header = group + layout.headerOffset(index)
        let body = group + layout.bodyOffset(index)
        let d = _floatFromHalves(_words(header, 0))
        var sink = columns.quadSink(atWord: 64 &* index)
        for scaleGroup in 0..<16 {
            let codes = body + 192 &* scaleGroup
            let w0 = _words(codes, 0), w1 = _words(codes, 1), w2 = _words(codes, 2)
            let first = 4 &* scaleGroup
            sink.consume(quad(w0 & 0x003F_003F, (w0 &>> 6) & 0x003F_003F), word: first)
            sink.consume(quad(w1 & 0x003F_003F, (w1 &>> 6) & 0x003F_003F), word: first &+ 1)
            sink.settle()   // two quads of six-bit codes (PendingQuadSums)
            sink.consume(quad(w2 & 0x003F_003F, (w2 &>> 6) & 0x003F_003F), word: first &+ 2)
            sink.consume(quad(((w0 &>> 12) & 0x000F_000F) | ((w2 &>> 8) & 0x0030_0030),
                              ((w1 &>> 12) & 0x000F_000F) | ((w2 &>> 10) & 0x0030_0030)), word: first &+ 3)
            let scaleWords = unsafeBitCast(_words(header, 1 &+ (scaleGroup &>> 2)), to: SIMD16<Int32>.self)
            sink.flush(scaledBy: (scaleWords &<< Int32(24 &- 8 &* (scaleGroup & 3))) &>> 24, offset: 32, sum: 16 &* index &+ scaleGroup)
        }
        columns.updateEachColumn { column, c, result in
            result = result.addingProductWhereFused(_floatFromIntegers(C.quadTotals(sink, c)), d * column.scales[index])
        }
    }
}

/// Runs the byte driver of `layout.type` over one group.
///
/// The drivers work on a local copy of the column set: a value no pointer can reach, whose
/// running sums the compiler keeps in registers across the blocks. Updated through `columns`
/// (memory the weight pointers might alias, as far as it can tell), every block would load
/// and store each column's sums.
@inline(__always)
func _productOfGroupOfBytes<C: QuadColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ target: inout C) {
    var columns = target
    defer { target = columns }
    switch layout.type {
    case .q4_0: _scaledBlocksOfBytes(group, layout, &columns, offset: 8) { _nibbleQuads($0, &$1) }
    case .q5_0: _scaledBlocksOfBytes(group, layout, &columns, offset: 16) { _q5Quads($0, &$1) }
    case .q8_0:
        #if TYPESET_VNNI
        _scaledBlocksOfBytes(group, layout, &columns, offset: 128) { _q8Quads($0, &$1) }
        #else
        _scaledBlocksOfBytes(group, layout, &columns, offset: 0) { _q8SignedQuads($0, &$1) }
        #endif
    case .mxfp4: _scaledBlocksOfBytes(group, layout, &columns, offset: 12, bfloat16Scales: true) { _mxfp4Quads($0, &$1) }
    case .q4_1: _q4_1BlocksOfBytes(group, layout, &columns)
    case .q4_K: _q4_KBlocksOfBytes(group, layout, &columns)
    case .q6_K: _q6_KBlocksOfBytes(group, layout, &columns)
    default: preconditionFailure("no packed kernel for \(layout.type)")
    }
}
#endif
