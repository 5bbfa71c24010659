import GGUF

/// A quantized weight matrix repacked for the SIMD kernels: rows in groups of 16, the
/// 32-bit words of their blocks interleaved so that one 512-bit vector holds the same word of
/// 16 rows. A product then keeps one row per 32-bit lane from the first block to the last:
/// no horizontal sums, no per-block shuffles, and every vector load feeds 16 rows.
///
/// The packed copy has the same size as the tensor's data (plus at most 64 bytes per group
/// for an odd block count or a Q6_K scale word), holds the same codes and scales bit for bit,
/// and is what ``MatrixVectorProduct`` and ``MatrixMultiplication`` read when a
/// ``WeightMatrix`` has one. Repacking is a transposition of words (Q8_0 bytes are also
/// offset by 128, Q5_0's fifth bits re-spread and Q6_K's codes regrouped), so it runs at
/// close to copy speed.
///
/// ## Layout
///
/// Groups follow each other; a group is the 16 rows `16g ..< 16g + 16`. Within a group,
/// "vector" means 16 little-endian 32-bit words, word `r` belonging to row `16g + r` (64
/// bytes). For the 32-element block types, blocks go in pairs `(b, b + 1)` behind one
/// scale vector whose word `r` is `d(r, b) | d(r, b + 1) << 16` (fp16 bits; a missing last
/// block has 0):
///
///     Q4_0  pair: [d d'] [qs b: 4 vectors] [qs b+1: 4 vectors]                   576 bytes
///     Q4_1  pair: [d d'] [m m'] [qs b] [qs b+1]                                  640 bytes
///     Q5_0  pair: [d d'] [qh b: 1 vector] [qs b] [qh b+1] [qs b+1]               704 bytes
///     Q8_0  pair: [d d'] [qs b: 8 vectors] [qs b+1: 8 vectors]                  1088 bytes
///     MXFP4 pair: [s s'] [qs b: 4 vectors] [qs b+1: 4 vectors]                   576 bytes
///
///     Q4_K  super-block: [d | dmin << 16] [scales: 3 vectors] [qs: 32 vectors]  2304 bytes
///     Q6_K  super-block: [d] [scales: 4 vectors] [codes: 16 × 3 vectors]      3392 bytes
///
/// MXFP4's scale halves are not fp16: each is the bfloat16 of ½ × 2^(e − 127) (its exponent
/// byte's scale, exact as a bfloat16 for every byte), so a shift makes it a float.
///
/// `qs` and `scales` vector `v` holds word `v` of each row's ggml field (bytes `4v ..< 4v + 4`).
/// Q6_K's codes are rearranged (same bits, other places): three vectors per scale group of 16
/// elements, each 16-bit half holding whole six-bit codes where ggml splits them between `ql`
/// nibbles and `qh` bit pairs (`_packQ6_KCodes`). Q8_0 bytes are stored as `code + 128`
/// (unsigned), and each Q5_0 `qh` word is re-spread: for the pair kernels so that the fifth
/// bits of activation pair `q` (below) sit at bits `q` and `16 + q`, for the byte kernels
/// (AVX2 targets) so that one shift and a mask bring a quad's to bit 4 of its bytes.
///
/// ## Pairs
///
/// The kernels multiply 16-bit lanes two per row, so they consume elements in pairs. Every
/// layout above yields the same pairing when a word is masked per 16-bit half: the elements
/// of quad `k` (`4k ..< 4k + 4`) form pair `2k = (4k, 4k + 2)` and pair `2k + 1 = (4k + 1,
/// 4k + 3)`; ``ActivationVector`` stores its codes in that order.
public struct PackedMatrix: Sendable {
    /// The weight type (one of ``supportedTypes``).
    public let type: GGMLType
    /// Rows (a multiple of 16).
    public let rowCount: Int
    /// Elements per row (a whole number of the type's blocks).
    public let rowLength: Int
    /// The packed bytes, zeroed, freed with the last matrix that shares them: in huge pages
    /// where the system gives them (``MappedMemory``). Each repacking thread populates its own
    /// part before writing it (`RepackJob`): faulting in a model's worth of fresh pages one at
    /// a time is most of the packing time in a new process.
    let storage: MappedMemory
    /// Where this matrix's first group starts in `storage` (0 but for a slice of rows).
    let byteOffset: Int

    /// The types with packed kernels. MXFP4 only where the byte kernels run (AVX2 targets):
    /// its codes are a table lookup (`vpshufb`), which the pair kernels' SSE2 baseline lacks,
    /// and there its rows go through the row kernels.
    #if TYPESET_AVX2
    public static let supportedTypes: Set<GGMLType> = [.q4_0, .q4_1, .q5_0, .q8_0, .mxfp4, .q4_K, .q6_K]
    #else
    public static let supportedTypes: Set<GGMLType> = [.q4_0, .q4_1, .q5_0, .q8_0, .q4_K, .q6_K]
    #endif

    /// Rows per group: the lanes of one vector.
    public static let groupRows = 16

    /// Whether `tensor` can be packed: a supported type and a row count that is a multiple
    /// of ``groupRows`` (the rows of a 3-D tensor — experts' matrices — one after another).
    public static func canPack(_ tensor: GGUFTensor) -> Bool {
        supportedTypes.contains(tensor.type) && tensor.info.shape.count <= 3
            && tensor.info.rowCount % groupRows == 0 && tensor.info.rowCount > 0
            && tensor.info.rowLength % tensor.type.blockSize == 0
    }

    /// Repacks `tensor`, splitting the groups over `threadCount` threads.
    ///
    /// - Throws: ``KernelError/unsupportedType(_:operation:)`` for a type without packed
    ///   kernels, ``KernelError/sizeMismatch(what:expected:actual:)`` for a row count that is
    ///   not a multiple of 16.
    /// - Complexity: O(bytes), one pass over the tensor's data.
    public init(_ tensor: GGUFTensor, threadCount: Int = 1) throws(KernelError) {
        guard Self.supportedTypes.contains(tensor.type) else {
            throw .unsupportedType(tensor.type, operation: "packing")
        }
        let info = tensor.info
        guard info.rowCount % Self.groupRows == 0, info.rowCount > 0 else {
            throw .sizeMismatch(what: "rows of '\(info.name)' (packing needs a multiple of 16)",
                                expected: (info.rowCount / 16 + 1) * 16, actual: info.rowCount)
        }
        type = tensor.type
        rowCount = info.rowCount
        rowLength = info.rowLength
        byteOffset = 0
        let layout = PackedLayout(type: type, rowLength: rowLength)
        storage = MappedMemory(byteCount: layout.groupBytes * (rowCount / 16), hugePages: true)
        guard let source = tensor.bytes.baseAddress else { return }
        let job = RepackJob(layout: layout, source: source, rowBytes: info.rowByteCount, storage: storage)
        KernelThreadPool.shared.forEachRange(of: rowCount / 16, parts: threadCount) { groups in
            // Each thread faults in its own source and destination pages, in one call each.
            tensor.prefaultPages(groups.lowerBound * 16 * info.rowByteCount ..< groups.upperBound * 16 * info.rowByteCount)
            job.repack(groups: groups)
        }
    }

    /// Bytes of packed data.
    public var byteCount: Int { layout.groupBytes * (rowCount / Self.groupRows) }

    /// Rows `range`, sharing these bytes (groups are stored one after another).
    ///
    /// - Precondition: `range` is non-empty, within ``rowCount``, its bounds multiples of 16.
    public func rows(_ range: Range<Int>) -> PackedMatrix {
        precondition(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= rowCount
                     && range.lowerBound % Self.groupRows == 0 && range.count % Self.groupRows == 0, "packed rows \(range)")
        return PackedMatrix(type: type, rowCount: range.count, rowLength: rowLength, storage: storage,
                            byteOffset: byteOffset + range.lowerBound / Self.groupRows * layout.groupBytes)
    }

    private init(type: GGMLType, rowCount: Int, rowLength: Int, storage: MappedMemory, byteOffset: Int) {
        self.type = type
        self.rowCount = rowCount
        self.rowLength = rowLength
        self.storage = storage
        self.byteOffset = byteOffset
    }

    var layout: PackedLayout { PackedLayout(type: type, rowLength: rowLength) }

    /// The bytes and their shape, as the product jobs read them.
    var weights: PackedWeights {
        PackedWeights(bytes: UnsafeRawPointer(storage.bytes + byteOffset), layout: layout, rowCount: rowCount, rowLength: rowLength)
    }
}

/// A packed matrix as a product job reads it: its bytes and shape, without the reference that
/// keeps the bytes alive. The job's caller holds the ``PackedMatrix`` through the synchronous
/// call. Every thread copies the jobs it runs; with a reference in them each copy would retain
/// and release the same storage object from both threads, an atomic write to a cache line the
/// two then pass back and forth (2–4 % of a four-sequence decode step's samples).
struct PackedWeights {
    let bytes: UnsafeRawPointer
    let layout: PackedLayout
    /// Rows (a multiple of 16).
    let rowCount: Int
    /// Elements per row.
    let rowLength: Int
}

/// Sizes of one packed type and row length (see ``PackedMatrix``).
struct PackedLayout {
    let type: GGMLType
    /// Blocks per row (32-element blocks, or 256-element super-blocks for K-quants).
    let blockCount: Int
    /// Bytes of a scale header (per block pair, or per super-block).
    let headerBytes: Int
    /// Bytes of one block's body, behind the header.
    let bodyBytes: Int

    init(type: GGMLType, rowLength: Int) {
        self.type = type
        blockCount = rowLength / type.blockSize
        switch type {
        case .q4_0: (headerBytes, bodyBytes) = (64, 256)
        case .q4_1: (headerBytes, bodyBytes) = (128, 256)
        case .q5_0: (headerBytes, bodyBytes) = (64, 320)
        case .q8_0: (headerBytes, bodyBytes) = (64, 512)
        case .mxfp4: (headerBytes, bodyBytes) = (64, 256)
        case .q4_K: (headerBytes, bodyBytes) = (256, 2048)
        case .q6_K: (headerBytes, bodyBytes) = (320, 3072)
        default: preconditionFailure("no packed layout for \(type)")
        }
    }

    /// Whether blocks come in pairs behind one header (the 32-element types).
    var pairsBlocks: Bool { type.blockSize == 32 }

    /// Bytes of one group of 16 rows.
    var groupBytes: Int {
        pairsBlocks ? (blockCount + 1) / 2 * headerBytes + blockCount * bodyBytes : blockCount * (headerBytes + bodyBytes)
    }

    /// Offset of block `block`'s header within its group (for pairs: the pair's header).
    @inline(__always) func headerOffset(_ block: Int) -> Int {
        pairsBlocks ? (block >> 1) &* (headerBytes &+ 2 &* bodyBytes) : block &* (headerBytes &+ bodyBytes)
    }

    /// Offset of block `block`'s body within its group.
    @inline(__always) func bodyOffset(_ block: Int) -> Int {
        headerOffset(block) &+ headerBytes &+ (pairsBlocks ? (block & 1) &* bodyBytes : 0)
    }
}

// MARK: - Repacking

/// The repacking of one tensor, shared by the threads that split its groups.
///
/// `@unchecked Sendable` is sound because the source mapping and the destination storage
/// outlive the synchronous thread-pool call, and each group is written by one thread.
struct RepackJob: @unchecked Sendable {
    let layout: PackedLayout
    let source: UnsafeRawPointer
    let rowBytes: Int
    let storage: MappedMemory
    var destination: UnsafeMutableRawPointer { storage.bytes }

    func repack(groups: Range<Int>) {
        storage.populate(groups.lowerBound * layout.groupBytes ..< groups.upperBound * layout.groupBytes)
        switch layout.type {
        case .q4_0:
            each(groups) { source, header, body, row, half in
                _copyHalf(source, BlockLayout.Q4_0.scale, to: header, row, half)
                _transpose(source + BlockLayout.Q4_0.codes, words: 4, to: body, row)
            }
        case .q4_1:
            each(groups) { source, header, body, row, half in
                _copyHalf(source, BlockLayout.Q4_1.scale, to: header, row, half)
                _copyHalf(source, BlockLayout.Q4_1.minimum, to: header + 64, row, half)
                _transpose(source + BlockLayout.Q4_1.codes, words: 4, to: body, row)
            }
        case .q5_0:
            each(groups) { source, header, body, row, half in
                _copyHalf(source, BlockLayout.Q5_0.scale, to: header, row, half)
                let fifthBits = UInt32(littleEndian: source.loadUnaligned(fromByteOffset: BlockLayout.Q5_0.fifthBits, as: UInt32.self))
                body.storeBytes(of: _packedFifthBits(fifthBits).littleEndian, toByteOffset: 4 &* row, as: UInt32.self)
                _transpose(source + BlockLayout.Q5_0.codes, words: 4, to: body + 64, row)
            }
        case .q8_0:
            each(groups) { source, header, body, row, half in
                _copyHalf(source, BlockLayout.Q8_0.scale, to: header, row, half)
                for word in 0..<8 {
                    let codes = source.loadUnaligned(fromByteOffset: BlockLayout.Q8_0.codes &+ 4 &* word, as: UInt32.self)
                    body.storeBytes(of: codes ^ 0x8080_8080, toByteOffset: 64 &* word &+ 4 &* row, as: UInt32.self)
                }
            }
        case .mxfp4:
            each(groups) { source, header, body, row, half in
                let scale = _halfOfExponentScale(source.load(fromByteOffset: BlockLayout.MXFP4.exponent, as: UInt8.self))
                header.storeBytes(of: UInt16(truncatingIfNeeded: scale.bitPattern >> 16), toByteOffset: 4 * row + half, as: UInt16.self)
                _transpose(source + BlockLayout.MXFP4.codes, words: 4, to: body, row)
            }
        case .q4_K:
            each(groups) { source, header, body, row, _ in
                _copyHalf(source, BlockLayout.Q4_K.scale, to: header, row, 0)
                _copyHalf(source, BlockLayout.Q4_K.minimumScale, to: header, row, 2)
                _transpose(source + BlockLayout.Q4_K.scales, words: 3, to: header + 64, row)
                _transpose(source + BlockLayout.Q4_K.codes, words: 32, to: body, row)
            }
        case .q6_K:
            each(groups) { source, header, body, row, _ in
                _copyHalf(source, BlockLayout.Q6_K.scale, to: header, row, 0)
                _transpose(source + BlockLayout.Q6_K.scales, words: 4, to: header + 64, row)
                _packQ6_KCodes(source, to: body, row)
            }
        default:
            preconditionFailure("no packed layout for \(layout.type)")
        }
    }

    /// Calls `body(source block, packed header, packed body, row in group, byte offset of the
    /// block's half in a pair's scale words)` for every row of every block of `groups`.
    @inline(__always)
    private func each(
        _ groups: Range<Int>,
        _ body: (UnsafeRawPointer, UnsafeMutableRawPointer, UnsafeMutableRawPointer, Int, Int) -> Void
    ) {
        let blockBytes = layout.type.blockByteCount, groupBytes = layout.groupBytes
        for group in groups {
            let packedGroup = destination + group &* groupBytes
            let firstRow = source + 16 &* group &* rowBytes
            for block in 0..<layout.blockCount {
                let header = packedGroup + layout.headerOffset(block)
                let packedBody = packedGroup + layout.bodyOffset(block)
                let half = (block & 1) &* 2
                var row = firstRow + block &* blockBytes
                for index in 0..<16 {
                    body(row, header, packedBody, index, half)
                    row += rowBytes
                }
            }
        }
    }
}

/// Stores the fp16 at `offset` of `source` into half `half` (byte 0 or 2) of word `row`.
@inline(__always)
private func _copyHalf(_ source: UnsafeRawPointer, _ offset: Int, to vector: UnsafeMutableRawPointer, _ row: Int, _ half: Int) {
    vector.storeBytes(of: source.loadUnaligned(fromByteOffset: offset, as: UInt16.self), toByteOffset: 4 * row + half, as: UInt16.self)
}

/// Word `v` of `source` (`words` words) into word `row` of vector `v` at `destination`.
@inline(__always)
private func _transpose(_ source: UnsafeRawPointer, words: Int, to destination: UnsafeMutableRawPointer, _ row: Int) {
    for word in 0..<words {
        destination.storeBytes(of: source.loadUnaligned(fromByteOffset: 4 * word, as: UInt32.self),
                               toByteOffset: 64 * word + 4 * row, as: UInt32.self)
    }
}

/// One Q6_K super-block's 256 six-bit codes (ggml: low nibbles in `ql`, two high bits in
/// `qh`) into word `row` of its 48 packed vectors: three words per 16 consecutive elements
/// (one scale group), in the eight pairs of ``PackedMatrix``'s order, each 16-bit half holding
/// the pair's first (low half) or second (high half) element:
///
///     word 0 of group g:  bits 0–5 pair 0 │ 6–11 pair 1 │ 12–15 low nibble of pair 6
///     word 1:             bits 0–5 pair 2 │ 6–11 pair 3 │ 12–15 low nibble of pair 7
///     word 2:             bits 0–5 pair 4 │ 6–11 pair 5 │ 12–13 high bits of pair 6 │ 14–15 of pair 7
///
/// so six pairs are one shift and one mask each and the other two a shift, mask and `or` of
/// two words: 30 operations per 16 codes where ggml's layout takes 54 (docs/kernels.md).
@inline(__always)
func _packQ6_KCodes(_ source: UnsafeRawPointer, to body: UnsafeMutableRawPointer, _ row: Int) {
    @inline(__always) func code(_ element: Int) -> UInt32 {
        let half = element >> 7, within = element & 127, set = within >> 5, l = within & 31
        let low = source.load(fromByteOffset: BlockLayout.Q6_K.lowBits &+ 64 &* half &+ l &+ 32 &* (set & 1), as: UInt8.self)
        let high = source.load(fromByteOffset: BlockLayout.Q6_K.highBits &+ 32 &* half &+ l, as: UInt8.self)
        let nibble = set < 2 ? low & 0x0F : low >> 4
        return UInt32(nibble) | UInt32((high >> UInt8(2 &* set)) & 3) << 4
    }
    for group in 0..<16 {
        // Pair m of the group: elements 4⌊m/2⌋ + m % 2 and that + 2.
        var words: (UInt32, UInt32, UInt32) = (0, 0, 0)
        for (shift, element) in [(0, 0), (16, 2)] as [(UInt32, Int)] {
            @inline(__always) func pair(_ m: Int) -> UInt32 { code(16 &* group &+ 4 &* (m >> 1) &+ (m & 1) &+ element) }
            words.0 |= (pair(0) | pair(1) << 6 | (pair(6) & 0xF) << 12) << shift
            words.1 |= (pair(2) | pair(3) << 6 | (pair(7) & 0xF) << 12) << shift
            words.2 |= (pair(4) | pair(5) << 6 | (pair(6) >> 4) << 12 | (pair(7) >> 4) << 14) << shift
        }
        let packed = body + (192 &* group &+ 4 &* row)
        packed.storeBytes(of: words.0.littleEndian, as: UInt32.self)
        (packed + 64).storeBytes(of: words.1.littleEndian, as: UInt32.self)
        (packed + 128).storeBytes(of: words.2.littleEndian, as: UInt32.self)
    }
}

/// Q5_0's fifth bits (bit `i` for element `i`) laid out for the target's kernels: for the
/// byte kernels on AVX2 targets (`_fifthBitsForQuads`), for the pair kernels elsewhere.
@inline(__always)
func _packedFifthBits(_ bits: UInt32) -> UInt32 {
    #if TYPESET_AVX2
    _fifthBitsForQuads(bits)
    #else
    _fifthBitsForPairs(bits)
    #endif
}

/// Q5_0's fifth bits (bit `i` for element `i`) for the byte kernels: quad `k`'s elements
/// `4k + j` (`j` < 4, one byte each in the kernel's quad) at bit `8j + 4 + k` for `k` < 4 and
/// `8j + 7 − k` for the others, so that `(bits >> k) & 0x1010_1010` (or `(bits << (k − 3)) &
/// 0x1010_1010`) puts them at bit 4 of their bytes:
///
///     bit in each byte   7   6   5   4   3   2   1   0
///     quad               3   2   1   0   4   5   6   7
@inline(__always)
func _fifthBitsForQuads(_ bits: UInt32) -> UInt32 {
    var packed: UInt32 = 0
    for quad in 0..<8 {
        let position = quad < 4 ? 4 + quad : 7 - quad
        for element in 0..<4 {
            packed |= ((bits >> UInt32(4 * quad + element)) & 1) << UInt32(8 * element + position)
        }
    }
    return packed
}

/// Q5_0's fifth bits (bit `i` for element `i`) for the pair kernels: the bits of pair `q`'s
/// two elements at bits `q` and `16 + q`, pairs numbered as in ``PackedMatrix``.
@inline(__always)
func _fifthBitsForPairs(_ bits: UInt32) -> UInt32 {
    var spread: UInt32 = 0
    for pair in 0..<16 {
        let (first, second) = _q5PairElements(pair)
        spread |= ((bits >> UInt32(first)) & 1) << UInt32(pair)
        spread |= ((bits >> UInt32(second)) & 1) << UInt32(16 + pair)
    }
    return spread
}

/// The two elements of pair `q` of a 32-element block: quad `q / 2`, offset `q % 2`.
@inline(__always)
func _q5PairElements(_ q: Int) -> (Int, Int) {
    let first = 4 * (q >> 1) + (q & 1)
    return (first, first + 2)
}
