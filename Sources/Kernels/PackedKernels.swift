import GGUF

// The packed kernels: one group of 16 rows (PackedMatrix.swift) against one or four
// activation columns. Each type has a block function, which turns the words of a block into
// pair vectors for a `ColumnSink` (flushing before 16-bit sums could overflow), and a
// driver, which walks the blocks and applies the scales. Drivers are generic over the
// column set, so the matrix-vector product (one column) and the prefill product (four) are
// the same code; the column count is a static constant and the loops over it unroll.
//
// The integer sums are exactly ggml's (same codes, same products); the float scaling is
// ggml's too (weight scale × activation scale, times the block's integer sum), summed per
// row in block order.

/// Pointers into one quantized activation column.
struct ColumnPointers {
    let pairs: UnsafePointer<UInt32>
    /// The int8 codes in element order (the byte kernels read them four at a time).
    let codes: UnsafeRawPointer
    let scales: UnsafePointer<Float>
    /// q8_0: Σ codes per block; q8_K: Σ codes per 16 elements.
    let sums: UnsafePointer<Int32>
    /// q8_1: `s` per block.
    let offsets: UnsafePointer<Float>
}

protocol ColumnSet {
    associatedtype Sink: ColumnSink
    /// Columns in the set.
    static var count: Int { get }
    /// A sink reading the activation pairs from pair `pair` of each column on.
    func sink(atPair pair: Int) -> Sink
    /// The 32-bit sums `sink` holds for column `index`.
    static func sums(_ sink: Sink, _ index: Int) -> SIMD16<Int32>
    /// Calls `body` once for each column, in order, with its pointers, its number and its 16
    /// running row results to update.
    ///
    /// The conformances spell the calls out one by one, so that where a driver inlines this,
    /// each call's column number is a constant: `sums(_:_:)` then picks its vector without a
    /// branch, and the compiler keeps every running result in a register across the blocks.
    /// (With a loop over the column numbers, the four-column Q4_1 loop kept one of them in
    /// memory: a store and a reload per block.)
    mutating func updateEachColumn(_ body: (ColumnPointers, Int, inout SIMD16<Float>) -> Void)
    /// Column `index`'s 16 row results.
    func result(_ index: Int) -> SIMD16<Float>
}

struct OneColumnSet: ColumnSet {
    let pointers: ColumnPointers
    var result = SIMD16<Float>()

    init(_ pointers: ColumnPointers) { self.pointers = pointers }

    static var count: Int { 1 }
    @inline(__always) func sink(atPair pair: Int) -> OneColumn { OneColumn(pairs: pointers.pairs + pair) }
    @inline(__always) static func sums(_ sink: OneColumn, _ index: Int) -> SIMD16<Int32> { sink.sums }
    @inline(__always) mutating func updateEachColumn(_ body: (ColumnPointers, Int, inout SIMD16<Float>) -> Void) {
        body(pointers, 0, &result)
    }
    @inline(__always) func result(_ index: Int) -> SIMD16<Float> { result }
}

/// Four columns of an activation batch, `stride` pairs (and `blockStride` blocks) apart.
struct FourColumnSet: ColumnSet {
    let first: ColumnPointers
    let pairStride: Int
    let blockStride: Int
    let sumStride: Int
    var results = (SIMD16<Float>(), SIMD16<Float>(), SIMD16<Float>(), SIMD16<Float>())

    static var count: Int { 4 }
    @inline(__always) func sink(atPair pair: Int) -> FourColumns { FourColumns(pairs: first.pairs + pair, stride: pairStride) }
    @inline(__always) private func column(_ index: Int) -> ColumnPointers {
        ColumnPointers(pairs: first.pairs + index &* pairStride, codes: first.codes + index &* 2 &* pairStride,
                        scales: first.scales + index &* blockStride,
                        sums: first.sums + index &* sumStride, offsets: first.offsets + index &* blockStride)
    }
    @inline(__always) static func sums(_ sink: FourColumns, _ index: Int) -> SIMD16<Int32> {
        switch index {
        case 0: sink.sums.0
        case 1: sink.sums.1
        case 2: sink.sums.2
        default: sink.sums.3
        }
    }
    @inline(__always) mutating func updateEachColumn(_ body: (ColumnPointers, Int, inout SIMD16<Float>) -> Void) {
        body(column(0), 0, &results.0)
        body(column(1), 1, &results.1)
        body(column(2), 2, &results.2)
        body(column(3), 3, &results.3)
    }
    @inline(__always) func result(_ index: Int) -> SIMD16<Float> {
        switch index {
        case 0: results.0
        case 1: results.1
        case 2: results.2
        default: results.3
        }
    }
}

/// Two column sets multiplied together: their columns are `First`'s then `Second`'s.
struct JoinedColumnSets<First: ColumnSet, Second: ColumnSet>: ColumnSet {
    var first: First
    var second: Second

    static var count: Int { First.count + Second.count }
    @inline(__always) func sink(atPair pair: Int) -> JoinedSinks<First.Sink, Second.Sink> {
        JoinedSinks(first: first.sink(atPair: pair), second: second.sink(atPair: pair))
    }
    @inline(__always) static func sums(_ sink: JoinedSinks<First.Sink, Second.Sink>, _ index: Int) -> SIMD16<Int32> {
        index < First.count ? First.sums(sink.first, index) : Second.sums(sink.second, index &- First.count)
    }
    @inline(__always) mutating func updateEachColumn(_ body: (ColumnPointers, Int, inout SIMD16<Float>) -> Void) {
        first.updateEachColumn(body)
        second.updateEachColumn { body($0, $1 &+ First.count, &$2) }
    }
    @inline(__always) func result(_ index: Int) -> SIMD16<Float> {
        index < First.count ? first.result(index) : second.result(index &- First.count)
    }
}

// MARK: - Block functions

/// Q4_0 / Q4_1: 4 words of nibbles. Word `w` (bytes 4w ..< 4w + 4 of `qs`) holds quads `w`
/// (low nibbles) and `w + 4` (high nibbles). Values 0…15, 16 pairs: one flush.
@inline(__always)
func _nibbleBlock<S: ColumnSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    for word in 0..<4 {
        let words = _words(body, word)
        sink.consume(_pairVector(words, shift: 0, mask: 0x000F_000F), index: 2 &* word)
        sink.consume(_pairVector(words, shift: 8, mask: 0x000F_000F), index: 2 &* word &+ 1)
        sink.consume(_pairVector(words, shift: 4, mask: 0x000F_000F), index: 8 &+ 2 &* word)
        sink.consume(_pairVector(words, shift: 12, mask: 0x000F_000F), index: 9 &+ 2 &* word)
    }
    sink.flush()
}

/// Q5_0: a word of re-spread fifth bits (pair `q` at bits `q` and `16 + q`), then the nibbles
/// as Q4_0. The codes 0…31 are offset by −16 here, to ggml's values −16…15: a product is then
/// at most 16 × 127 in magnitude, so the 16 pairs of a block fit one flush, and the driver
/// needs no offset correction (the integer sums are the same). (Every shift count is a
/// literal after inlining: variable counts made LLVM vectorize the loop across words, with
/// shuffles.)
@inline(__always)
func _q5Block<S: ColumnSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    let fifth = _words(body, 0)
    let offset = SIMD32<Int16>(repeating: 16)
    @inline(__always) func pair(_ words: SIMD16<UInt32>, _ shift: UInt32, _ index: Int) {
        let high = index <= 4 ? (fifth &<< UInt32(4 &- index)) : (fifth &>> UInt32(index &- 4))
        let codes = unsafeBitCast(((words &>> shift) & 0x000F_000F) | (high & 0x0010_0010), to: SIMD32<Int16>.self)
        sink.consume(codes &- offset, index: index)
    }
    @inline(__always) func word(_ word: Int) {
        let words = _words(body, 1 &+ word)
        pair(words, 0, 2 &* word)
        pair(words, 8, 2 &* word &+ 1)
        pair(words, 4, 8 &+ 2 &* word)
        pair(words, 12, 9 &+ 2 &* word)
    }
    word(0)
    word(1)
    word(2)
    word(3)
    sink.flush()
}

/// Q8_0: 8 words of codes + 128; word `c` is quad `c`. Values −128…127 after the offset:
/// a flush every 2 pairs.
@inline(__always)
func _q8Block<S: ColumnSink>(_ body: UnsafeRawPointer, _ sink: inout S) {
    let bias = SIMD32<Int16>(repeating: 128)
    for word in 0..<8 {
        let words = _words(body, word)
        sink.consume(_pairVector(words, shift: 0, mask: 0x00FF_00FF) &- bias, index: 2 &* word)
        sink.consume(_pairVector(words, shift: 8, mask: 0x00FF_00FF) &- bias, index: 2 &* word &+ 1)
        sink.flush()
    }
}

// MARK: - Drivers

/// Starts loading block `index`'s share of the group after `group` (the group's bytes over
/// its block count, from the same relative offset): over a group's blocks, the next group
/// arrives while this one is computed. Groups follow each other in memory, so this is the
/// data the thread most likely reads next; past the matrix's end the hint is harmless. (A
/// hint on AVX2 targets only: see `prefetchForReading(_:byteCount:)`.)
@inline(__always)
func _prefetchNextGroup(_ group: UnsafeRawPointer, _ layout: PackedLayout, block index: Int) {
    let share = layout.groupBytes / layout.blockCount
    prefetchForReading(group + (layout.groupBytes &+ index &* share), byteCount: share)
}

/// Blocks of 32 with one fp16 scale and an integer offset (Q4_0: 8; Q5_0 and Q8_0: 0, their
/// block functions having offset the codes already):
/// result += (Σ q·a − offset·Σ a) × (d × d_a), per block.
@inline(__always)
func _scaledBlocks<C: ColumnSet>(
    _ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C, offset: Int32,
    _ block: (UnsafeRawPointer, inout C.Sink) -> Void
) {
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let scaleWords = _words(group + layout.headerOffset(index), 0)
        let scales = _floatFromHalves(index & 1 == 0 ? scaleWords : scaleWords &>> 16)
        var sink = columns.sink(atPair: 16 &* index)
        block(group + layout.bodyOffset(index), &sink)
        columns.updateEachColumn { column, c, result in
            let sums = C.sums(sink, c) &- SIMD16(repeating: offset &* column.sums[index])
            result = result.addingProductWhereFused(_floatFromSmallIntegers(sums), scales * column.scales[index])
        }
    }
}

/// Q8_0 on the pair kernels: `_scaledBlocks` with `_q8Block`, whose codes are offset already.
@inline(__always)
func _q8_0Blocks<C: ColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    _scaledBlocks(group, layout, &columns, offset: 0) { _q8Block($0, &$1) }
}

/// Q4_1: result += (Σ q·a) × (d × d_a) + m × s, per block.
@inline(__always)
func _q4_1Blocks<C: ColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let header = group + layout.headerOffset(index)
        let scaleWords = _words(header, 0), minimumWords = _words(header, 1)
        let odd = index & 1 == 1
        let scales = _floatFromHalves(odd ? scaleWords &>> 16 : scaleWords)
        let minimums = _floatFromHalves(odd ? minimumWords &>> 16 : minimumWords)
        var sink = columns.sink(atPair: 16 &* index)
        _nibbleBlock(group + layout.bodyOffset(index), &sink)
        columns.updateEachColumn { column, c, result in
            result = result.addingProductWhereFused(minimums, SIMD16(repeating: column.offsets[index]))
            result = result.addingProductWhereFused(_floatFromSmallIntegers(C.sums(sink, c)), scales * column.scales[index])
        }
    }
}

/// A Q4_K super-block's header: `d` and `dmin` per row, and its eight 6-bit sub-block scales
/// and minimums (ggml's get_scale_min_k4, four bytes at a time: sub-blocks 0…3 and 4…7).
struct Q4_KHeader {
    let d, dmin: SIMD16<Float>
    let scalesLow, scalesHigh, minimumsLow, minimumsHigh: SIMD16<UInt32>

    @inline(__always) init(_ header: UnsafeRawPointer) {
        let dWords = _words(header, 0)
        d = _floatFromHalves(dWords)
        dmin = _floatFromHalves(dWords &>> 16)
        let packed0 = _words(header, 1), packed1 = _words(header, 2), packed2 = _words(header, 3)
        scalesLow = packed0 & 0x3F3F_3F3F
        minimumsLow = packed1 & 0x3F3F_3F3F
        scalesHigh = (packed2 & 0x0F0F_0F0F) | ((packed0 &>> 2) & 0x3030_3030)
        minimumsHigh = ((packed2 &>> 4) & 0x0F0F_0F0F) | ((packed1 &>> 2) & 0x3030_3030)
    }

    /// Sub-block `subBlock`'s scale per row.
    @inline(__always) func scale(_ subBlock: Int) -> SIMD16<Int32> { Self.byte(subBlock < 4 ? scalesLow : scalesHigh, subBlock & 3) }

    @inline(__always) static func byte(_ words: SIMD16<UInt32>, _ index: Int) -> SIMD16<Int32> {
        unsafeBitCast((words &>> UInt32(8 &* index)) & 0xFF, to: SIMD16<Int32>.self)
    }

    /// Adds to `result` what super-block `index` gives a column whose scaled integer sums are
    /// `sums`: `sums × d × d_a − Σ over sub-blocks of min × Σ a × dmin × d_a`.
    @inline(__always) func accumulate(sums: SIMD16<Int32>, column: ColumnPointers, index: Int, into result: inout SIMD16<Float>) {
        let activationSums = column.sums + 16 &* index
        var minimumSum = SIMD16<Int32>()
        for subBlock in 0..<8 {
            let activationSum = activationSums[2 &* subBlock] &+ activationSums[2 &* subBlock &+ 1]
            minimumSum &+= Self.byte(subBlock < 4 ? minimumsLow : minimumsHigh, subBlock & 3) &* SIMD16(repeating: activationSum)
        }
        let scale = column.scales[index]
        result = result.addingProductWhereFused(_floatFromSmallIntegers(minimumSum), -(dmin * scale))
        result = result.addingProductWhereFused(_floatFromIntegers(sums), d * scale)
    }
}

/// Q4_K super-blocks: Σ over sub-blocks of scale × Σ q·a, times d × d_a, minus Σ over
/// sub-blocks of min × Σ a, times dmin × d_a. Scales and minimums are ggml's 6-bit fields.
@inline(__always)
func _q4_KBlocks<C: ColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let header = Q4_KHeader(group + layout.headerOffset(index))
        let body = group + layout.bodyOffset(index)
        var sink = columns.sink(atPair: 128 &* index)
        for subBlock in 0..<8 {
            // Sub-block 2c is the low nibbles of chunk c's 8 words, 2c + 1 the high ones.
            let chunk = body + 512 &* (subBlock &>> 1)
            let shift = UInt32(4 &* (subBlock & 1))
            for word in 0..<8 {
                let words = _words(chunk, word)
                sink.consume(_pairVector(words, shift: shift, mask: 0x000F_000F), index: 16 &* subBlock &+ 2 &* word)
                sink.consume(_pairVector(words, shift: shift &+ 8, mask: 0x000F_000F), index: 16 &* subBlock &+ 2 &* word &+ 1)
            }
            sink.flush(scaledBy: header.scale(subBlock))
        }
        columns.updateEachColumn { column, c, result in
            header.accumulate(sums: C.sums(sink, c), column: column, index: index, into: &result)
        }
    }
}

/// Q6_K super-blocks: Σ over 16-element groups of scale × Σ (q − 32)·a, times d × d_a.
/// Each group is three vectors (`_packQ6_KCodes`): six pairs come out of one shift and mask
/// each, two out of two words; the 32 is subtracted per pair vector, so 8 pairs of products
/// of at most 32 × 127 fit the 16-bit lanes until the group's scaled flush.
@inline(__always)
func _q6_KBlocks<C: ColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    let bias = SIMD32<Int16>(repeating: 32)
    @inline(__always) func pair(_ words: SIMD16<UInt32>) -> SIMD32<Int16> { unsafeBitCast(words, to: SIMD32<Int16>.self) &- bias }
    for index in 0..<layout.blockCount {
        _prefetchNextGroup(group, layout, block: index)
        let header = group + layout.headerOffset(index)
        let body = group + layout.bodyOffset(index)
        let d = _floatFromHalves(_words(header, 0))
        var sink = columns.sink(atPair: 128 &* index)
        for scaleGroup in 0..<16 {
            let codes = body + 192 &* scaleGroup
            let w0 = _words(codes, 0), w1 = _words(codes, 1), w2 = _words(codes, 2)
            let first = 8 &* scaleGroup
            sink.consume(pair(w0 & 0x003F_003F), index: first)
            sink.consume(pair((w0 &>> 6) & 0x003F_003F), index: first &+ 1)
            sink.consume(pair(w1 & 0x003F_003F), index: first &+ 2)
            sink.consume(pair((w1 &>> 6) & 0x003F_003F), index: first &+ 3)
            sink.consume(pair(w2 & 0x003F_003F), index: first &+ 4)
            sink.consume(pair((w2 &>> 6) & 0x003F_003F), index: first &+ 5)
            sink.consume(pair(((w0 &>> 12) & 0x000F_000F) | ((w2 &>> 8) & 0x0030_0030)), index: first &+ 6)
            sink.consume(pair(((w1 &>> 12) & 0x000F_000F) | ((w2 &>> 10) & 0x0030_0030)), index: first &+ 7)
            // The group's int8 scale: byte `scaleGroup` of the 16.
            let scaleWords = unsafeBitCast(_words(header, 1 &+ (scaleGroup &>> 2)), to: SIMD16<Int32>.self)
            sink.flush(scaledBy: (scaleWords &<< Int32(24 &- 8 &* (scaleGroup & 3))) &>> 24)
        }
        columns.updateEachColumn { column, c, result in
            result = result.addingProductWhereFused(_floatFromIntegers(C.sums(sink, c)), d * column.scales[index])
        }
    }
}

#if TYPESET_AVX2
/// The column sets the packed products take: those the byte kernels can run.
typealias PackedColumnSet = QuadColumnSet
#else
/// The column sets the packed products take.
typealias PackedColumnSet = ColumnSet
#endif

/// The product of one group with `columns`: the byte kernels (PackedByteKernels.swift) on
/// AVX2 targets (AVX-512 ones included), the pair kernels above elsewhere. Both give the
/// same results.
@inline(__always)
func _multiplyGroup<C: PackedColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ columns: inout C) {
    #if TYPESET_AVX2
    _productOfGroupOfBytes(group, layout, &columns)
    #else
    _productOfGroup(group, layout, &columns)
    #endif
}

/// Runs the driver of `layout.type` over one group, on a local copy of the column set (as
/// `_productOfGroupOfBytes` does, so that the running sums stay in registers).
@inline(__always)
func _productOfGroup<C: ColumnSet>(_ group: UnsafeRawPointer, _ layout: PackedLayout, _ target: inout C) {
    var columns = target
    defer { target = columns }
    switch layout.type {
    case .q4_0: _scaledBlocks(group, layout, &columns, offset: 8) { _nibbleBlock($0, &$1) }
    case .q5_0: _scaledBlocks(group, layout, &columns, offset: 0) { _q5Block($0, &$1) }
    case .q8_0: _q8_0Blocks(group, layout, &columns)
    case .q4_1: _q4_1Blocks(group, layout, &columns)
    case .q4_K: _q4_KBlocks(group, layout, &columns)
    case .q6_K: _q6_KBlocks(group, layout, &columns)
    default: preconditionFailure("no packed kernel for \(layout.type)")
    }
}
