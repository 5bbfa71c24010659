import GGUF

/// `Y = X · Wᵀ` for a batch of inputs: the prefill-time product.
///
/// `X` is `batch × rowLength` (row-major `Float`), `W` a weight matrix of `rowCount` rows,
/// `Y` is `batch × rowCount`. Three strategies, chosen by ``Strategy``:
///
/// - ``Strategy/packed``: each input row is quantized once (``ActivationVector``, as ggml
///   quantizes activations) and the packed kernels multiply every group of 16 weight rows
///   with four inputs at a time (eight on AVX-512 targets), the group's weights staying in
///   L1 across the batch. Needs a ``WeightMatrix`` with a packed copy.
/// - ``Strategy/blasTiles``: rows of `W` are dequantized a tile at a time (``tileRows``
///   rows, so scratch memory stays at `tileRows × rowLength` floats, never a dequantized copy
///   of the model) and multiplied with OpenBLAS `sgemm`.
/// - ``Strategy/integerRows``: each input row is quantized once and every weight row
///   multiplied with it by the integer row kernels, threads splitting weight rows.
///
/// `.automatic` takes the packed kernels when there is a packed copy, else the integer rows
/// for small batches and BLAS tiles for larger ones; `typeset bench kernels` measures each
/// per shape.
public enum MatrixMultiplication {
    public enum Strategy: String, Sendable, CaseIterable {
        case automatic
        case packed
        case blasTiles
        case integerRows
    }

    /// Rows of the weight matrix dequantized per BLAS call.
    public static let tileRows = 256

    /// Batches at or below this size use the integer rows under `.automatic` (when the
    /// matrix has no packed copy).
    public static let integerBatchLimit = 4

    /// Computes `output = inputs · weightsᵀ` on the mapped tensor.
    ///
    /// - Parameters:
    ///   - inputs: `batch × rowLength` floats, row-major.
    ///   - output: `batch × rowCount` floats, row-major.
    /// - Throws: ``KernelError`` for an unsupported type or mismatched sizes.
    public static func multiply(
        _ weights: GGUFTensor, inputs: UnsafeBufferPointer<Float>, batch: Int,
        into output: UnsafeMutableBufferPointer<Float>, threadCount: Int = 1, strategy: Strategy = .automatic
    ) throws(KernelError) {
        let matrix = try WeightMatrix(weights, packing: strategy == .packed)
        try multiply(matrix, inputs: inputs, batch: batch, into: output, threadCount: threadCount, strategy: strategy)
    }

    /// Computes `output = inputs · weightsᵀ`, with the packed kernels when `weights` has a
    /// packed copy (under `.automatic` and `.packed`).
    ///
    /// - Throws: ``KernelError`` for an unsupported type, mismatched sizes, or `.packed` on
    ///   a matrix without a packed copy.
    public static func multiply(
        _ weights: WeightMatrix, inputs: UnsafeBufferPointer<Float>, batch: Int,
        into output: UnsafeMutableBufferPointer<Float>, threadCount: Int = 1, strategy: Strategy = .automatic
    ) throws(KernelError) {
        try _check(weights, inputs: inputs, batch: batch, output: output)
        let info = weights.tensor.info
        guard batch > 0, info.rowCount > 0 else { return }

        switch strategy {
        case .automatic where weights.packed != nil, .packed:
            guard weights.packed != nil else { throw .unsupportedType(info.type, operation: "packed multiplication of '\(info.name)'") }
            [(weights: weights, output: output)].withUnsafeBufferPointer { multiplyPacked($0, inputs: inputs, batch: batch, threadCount: threadCount) }
        case .automatic where batch <= integerBatchLimit && info.rowLength % 32 == 0, .integerRows:
            var column = [Float](repeating: 0, count: info.rowCount)
            for item in 0..<batch {
                let input = ActivationVector(Array(inputs[item * info.rowLength ..< (item + 1) * info.rowLength]), for: info.type)
                try column.withUnsafeMutableBufferPointer { (buffer) throws(KernelError) in
                    try MatrixVectorProduct.multiply(weights.tensor, by: input, into: buffer, threadCount: threadCount)
                }
                for row in 0..<info.rowCount { output[item * info.rowCount + row] = column[row] }
            }
        case .blasTiles, .automatic:
            try multiplyWithBLASTiles(weights.tensor, inputs: inputs, batch: batch, into: output, threadCount: threadCount)
        }
    }

    /// Computes several products of the same inputs in one dispatch to the thread pool: the
    /// query, key and value projections of a block, or its gate and up projections. The
    /// inputs are quantized once per activation format the packed matrices take (not once
    /// per matrix), and the groups of 16 rows of all of them are split across threads
    /// together, so a small matrix (Gemma's 256-row keys) does not wait alone at a barrier.
    /// A matrix without a packed copy gets its own ``multiply(_:inputs:batch:into:threadCount:strategy:)-(WeightMatrix,_,_,_,_,_)``.
    ///
    /// - Throws: ``KernelError`` as the single products do, for any of them (before any work).
    public static func multiply(
        _ products: [(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)],
        inputs: UnsafeBufferPointer<Float>, batch: Int, threadCount: Int = 1
    ) throws(KernelError) {
        try products.withUnsafeBufferPointer { (products) throws(KernelError) in
            try multiply(products, inputs: inputs, batch: batch, threadCount: threadCount)
        }
    }

    /// ``multiply(_:inputs:batch:threadCount:)-([(weights:output:)],_,_,_)`` over a buffer of
    /// products: no arrays of its own (the jobs live on the stack for the call), only the
    /// quantized inputs.
    public static func multiply(
        _ products: UnsafeBufferPointer<(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)>,
        inputs: UnsafeBufferPointer<Float>, batch: Int, threadCount: Int = 1
    ) throws(KernelError) {
        for product in products { try _check(product.weights, inputs: inputs, batch: batch, output: product.output) }
        guard batch > 0 else { return }
        for product in products where product.weights.packed == nil {
            try multiply(product.weights, inputs: inputs, batch: batch, into: product.output, threadCount: threadCount)
        }
        multiplyPacked(products, inputs: inputs, batch: batch, threadCount: threadCount)
    }

    /// Throws unless `weights` can multiply `batch` rows of `inputs` into `output`.
    private static func _check(
        _ weights: WeightMatrix, inputs: UnsafeBufferPointer<Float>, batch: Int, output: UnsafeMutableBufferPointer<Float>
    ) throws(KernelError) {
        let info = weights.tensor.info
        guard Dequantization.supportedTypes.contains(info.type) else {
            throw .unsupportedType(info.type, operation: "matrix multiplication")
        }
        guard batch >= 0, inputs.count == batch * info.rowLength else {
            throw .sizeMismatch(what: "inputs for '\(info.name)' (batch \(batch))", expected: batch * info.rowLength, actual: inputs.count)
        }
        guard output.count == batch * info.rowCount else {
            throw .sizeMismatch(what: "output for '\(info.name)' (batch \(batch))", expected: batch * info.rowCount, actual: output.count)
        }
    }

    /// Quantizes the input rows once per activation format the packed matrices among
    /// `products` take (the others are skipped), then splits the groups of 16 rows of all of
    /// them across threads together; each group runs over the batch
    /// `PackedBatchJob.columnsPerPass` inputs at a time, then the rest in one more pass.
    private static func multiplyPacked(
        _ products: UnsafeBufferPointer<(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)>,
        inputs: UnsafeBufferPointer<Float>, batch: Int, threadCount: Int
    ) {
        typealias Quantized = (format: ActivationVector.Format, batch: ActivationBatch)
        withUnsafeTemporaryAllocation(of: Quantized.self, capacity: products.count) { batches in
            withUnsafeTemporaryAllocation(of: (job: GroupProduct, units: Range<Int>).self, capacity: products.count) { jobs in
                var batchCount = 0, jobCount = 0, units = 0
                for (weights, output) in products {
                    guard let matrix = weights.packed, matrix.rowCount > 0 else { continue }
                    let format = ActivationVector.Format(for: matrix.type)
                    let activations: ActivationBatch
                    if let known = batches[..<batchCount].first(where: { $0.format == format }) {
                        activations = known.batch
                    } else {
                        activations = ActivationBatch(inputs, batch: batch, rowLength: matrix.rowLength, format: format, threadCount: threadCount)
                        (batches.baseAddress! + batchCount).initialize(to: (format, activations))
                        batchCount += 1
                    }
                    let groups = matrix.rowCount / PackedMatrix.groupRows
                    let job = PackedBatchJob(matrix: matrix.weights, columns: activations.columns, batch: batch, output: output.baseAddress!)
                    (jobs.baseAddress! + jobCount).initialize(to: (.batch(job), units ..< units + groups))
                    jobCount += 1
                    units += groups
                }
                if units > 0 {
                    KernelThreadPool.shared.forEachRange(
                        of: units, parts: threadCount, job: ProductGroup(jobs: UnsafeBufferPointer(rebasing: jobs[..<jobCount])))
                }
                jobs.baseAddress!.deinitialize(count: jobCount)
                batches.baseAddress!.deinitialize(count: batchCount)
            }
        }
    }

    /// Tiles are split across threads, each decoding its own tiles into its own buffer and
    /// running a single-threaded `sgemm` that writes its band of output columns in place
    /// (`ldc = rowCount`). OpenBLAS's own thread pool stays at one thread: two pools spinning
    /// on two cores cost more than they bring.
    private static func multiplyWithBLASTiles(
        _ weights: GGUFTensor, inputs: UnsafeBufferPointer<Float>, batch: Int,
        into output: UnsafeMutableBufferPointer<Float>, threadCount: Int
    ) throws(KernelError) {
        let info = weights.info
        let tileRows = min(Self.tileRows, info.rowCount)
        let tileCount = (info.rowCount + tileRows - 1) / tileRows
        BLAS.setThreadCount(1)
        let job = TileProductJob(
            type: info.type, source: weights.bytes.baseAddress!, rowBytes: info.rowByteCount, rowLength: info.rowLength,
            rowCount: info.rowCount, tileRows: tileRows, batch: batch, inputs: inputs.baseAddress!, output: output.baseAddress!)
        KernelThreadPool.shared.forEachRange(of: tileCount, parts: threadCount) { job.compute(tiles: $0) }
    }
}

/// Tiles of one BLAS-tiled product, shared by the threads that split them.
///
/// `@unchecked Sendable` is sound because the weights, inputs and output outlive the
/// synchronous `KernelThreadPool` call, the inputs are only read, and each tile writes its own
/// columns of the output.
struct TileProductJob: @unchecked Sendable {
    let type: GGMLType
    let source: UnsafeRawPointer
    let rowBytes: Int
    let rowLength: Int
    let rowCount: Int
    let tileRows: Int
    let batch: Int
    let inputs: UnsafePointer<Float>
    let output: UnsafeMutablePointer<Float>

    func compute(tiles: Range<Int>) {
        var tile = [Float](repeating: 0, count: tileRows * rowLength)
        tile.withUnsafeMutableBufferPointer { buffer in
            for index in tiles {
                let firstRow = index * tileRows
                let rows = min(tileRows, rowCount - firstRow)
                TileDecodeJob(type: type, source: source + firstRow * rowBytes, rowLength: rowLength,
                               destination: buffer.baseAddress!).decode(rows: 0 ..< rows)
                BLAS.multiplyTransposed(m: batch, n: rows, k: rowLength, a: inputs, b: buffer.baseAddress!,
                                        c: output + firstRow, ldc: rowCount)
            }
        }
    }
}

/// Decoding one tile of weight rows, shared by the threads that split it.
///
/// `@unchecked Sendable` is sound because the source (the weight mapping) and the destination
/// (the tile buffer) outlive the synchronous `KernelThreadPool.run` call that uses the job, and
/// each thread writes a disjoint range of rows.
struct TileDecodeJob: @unchecked Sendable {
    let type: GGMLType
    let source: UnsafeRawPointer
    let rowLength: Int
    let destination: UnsafeMutablePointer<Float>

    /// Rows are contiguous runs of blocks, so rows `range` are blocks
    /// `range × blocksPerRow` of the tile.
    func decode(rows range: Range<Int>) {
        guard let decodeBlock = Dequantization.referenceDecoder(for: type) else { return }
        let blocksPerRow = rowLength / type.blockSize
        Dequantization._decodeBlocks(range.lowerBound * blocksPerRow ..< range.upperBound * blocksPerRow,
                                     of: type, with: decodeBlock, from: source, into: destination)
    }
}

/// A batch of inputs quantized in one format, column after column in contiguous buffers (the
/// layout `FourColumnSet` reads with strides), the rows split across threads.
final class ActivationBatch {
    let pairs: UnsafeMutableBufferPointer<UInt32>
    let scales: UnsafeMutableBufferPointer<Float>
    let codes: UnsafeMutableBufferPointer<Int8>
    /// q8_0 and q8_K sums, q8_1 offsets (whichever the format has; at least one entry).
    let sums: UnsafeMutableBufferPointer<Int32>
    let offsets: UnsafeMutableBufferPointer<Float>

    init(_ inputs: UnsafeBufferPointer<Float>, batch: Int, rowLength: Int, format: ActivationVector.Format, threadCount: Int) {
        let blocks = rowLength / format.blockSize
        pairs = .allocate(capacity: batch * rowLength / 2)
        scales = .allocate(capacity: batch * blocks)
        codes = .allocate(capacity: batch * rowLength)
        sums = .allocate(capacity: max(1, batch * format.sumCount(rowLength)))
        offsets = .allocate(capacity: max(1, format == .q8_1 ? batch * blocks : 0))
        let job = BatchQuantizationJob(
            inputs: inputs.baseAddress!, rowLength: rowLength, format: format, pairs: pairs.baseAddress!, scales: scales.baseAddress!,
            codes: codes.baseAddress!, sums: sums.baseAddress!, offsets: offsets.baseAddress!)
        // A few decode rows take about a microsecond here: less than waking a thread for
        // them. Larger batches (prefill, wide inputs) are split.
        KernelThreadPool.shared.forEachRange(of: batch, parts: batch * rowLength >= Self.valuesWorthSplitting ? threadCount : 1) {
            job.quantize(rows: $0)
        }
    }

    /// Values from which the quantization is split across threads.
    static let valuesWorthSplitting = 16_384

    deinit {
        pairs.deallocate()
        scales.deallocate()
        codes.deallocate()
        sums.deallocate()
        offsets.deallocate()
    }

    var columns: ColumnPointers {
        ColumnPointers(pairs: UnsafePointer(pairs.baseAddress!), codes: UnsafeRawPointer(codes.baseAddress!), scales: UnsafePointer(scales.baseAddress!),
                        sums: UnsafePointer(sums.baseAddress!), offsets: UnsafePointer(offsets.baseAddress!))
    }
}

/// The quantization of a batch's rows, shared by the threads that split them; each row
/// writes its own parts of the buffers, which outlive the synchronous call.
struct BatchQuantizationJob: @unchecked Sendable {
    let inputs: UnsafePointer<Float>
    let rowLength: Int
    let format: ActivationVector.Format
    let pairs: UnsafeMutablePointer<UInt32>
    let scales: UnsafeMutablePointer<Float>
    let codes: UnsafeMutablePointer<Int8>
    let sums: UnsafeMutablePointer<Int32>
    let offsets: UnsafeMutablePointer<Float>

    func quantize(rows: Range<Int>) {
        let blocks = rowLength / format.blockSize, sumCount = format.sumCount(rowLength)
        for row in rows {
            _quantize(inputs + row * rowLength, count: rowLength, format: format, into: QuantizedStorage(
                scales: scales + row * blocks, codes: codes + row * rowLength,
                sums: sumCount > 0 ? sums + row * sumCount : nil, offsets: format == .q8_1 ? offsets + row * blocks : nil,
                pairs: pairs + row * rowLength / 2))
        }
    }
}

/// One packed product over a batch, shared by the threads that split its groups.
///
/// `@unchecked Sendable` is sound because the packed storage, the quantized batch and the
/// output outlive the synchronous thread-pool call, the inputs are only read, and each
/// thread writes the rows of its own groups.
struct PackedBatchJob: @unchecked Sendable {
    let matrix: PackedWeights
    let columns: ColumnPointers
    let batch: Int
    let output: UnsafeMutablePointer<Float>

    /// Columns multiplied per pass over a group's weights: each unpacked weight vector feeds
    /// this many columns. Eight hold 16 accumulator vectors, which only AVX-512's 32 vector
    /// registers keep out of memory (measured on Zen 4: 5–13% faster than four per product,
    /// 5–8% on Gemma's prefill); elsewhere four. A batch's last columns, fewer than this,
    /// go through one more pass together (three as two and one joined, seven as four and
    /// three): each pass reads and unpacks the group's weights again.
    #if TYPESET_AVX512
    static var columnsPerPass: Int { 8 }
    #else
    static var columnsPerPass: Int { 4 }
    #endif

    func compute(groups: Range<Int>) {
        let layout = matrix.layout
        let format = ActivationVector.Format(for: layout.type)
        let pairStride = matrix.rowLength / 2, blockStride = layout.blockCount * layout.type.blockSize / format.blockSize
        let sumStride = format == .q8_K ? matrix.rowLength / 16 : matrix.rowLength / 32
        @inline(__always) func one(_ item: Int) -> OneColumnSet {
            OneColumnSet(column(item, pairStride, blockStride, sumStride))
        }
        @inline(__always) func four(_ item: Int) -> FourColumnSet {
            FourColumnSet(first: column(item, pairStride, blockStride, sumStride),
                           pairStride: pairStride, blockStride: blockStride, sumStride: sumStride)
        }
        @inline(__always) func two(_ item: Int) -> JoinedColumnSets<OneColumnSet, OneColumnSet> {
            JoinedColumnSets(first: one(item), second: one(item &+ 1))
        }
        @inline(__always) func three(_ item: Int) -> JoinedColumnSets<JoinedColumnSets<OneColumnSet, OneColumnSet>, OneColumnSet> {
            JoinedColumnSets(first: two(item), second: one(item &+ 2))
        }
        for group in groups {
            var item = 0
            while item &+ Self.columnsPerPass <= batch {
                #if TYPESET_AVX512
                multiply(group, item, JoinedColumnSets(first: four(item), second: four(item &+ 4)))
                #else
                multiply(group, item, four(item))
                #endif
                item &+= Self.columnsPerPass
            }
            // The rest in one pass, so the group's weights are unpacked once for all of it.
            switch batch &- item {
            case 0: break
            case 1: multiply(group, item, one(item))
            case 2: multiply(group, item, two(item))
            #if TYPESET_AVX512
            case 3: multiply(group, item, three(item))
            case 4: multiply(group, item, four(item))
            case 5: multiply(group, item, JoinedColumnSets(first: four(item), second: one(item &+ 4)))
            case 6: multiply(group, item, JoinedColumnSets(first: four(item), second: two(item &+ 4)))
            default: multiply(group, item, JoinedColumnSets(first: four(item), second: three(item &+ 4)))
            #else
            default: multiply(group, item, three(item))
            #endif
            }
        }
    }

    /// Multiplies group `group` with the columns of `set` (inputs `item` on) and stores their
    /// rows of the output.
    @inline(__always) private func multiply<C: PackedColumnSet>(_ group: Int, _ item: Int, _ set: C) {
        var set = set
        let layout = matrix.layout, rowCount = matrix.rowCount
        _multiplyGroup(matrix.bytes + group &* layout.groupBytes, layout, &set)
        let destination = output + (item &* rowCount &+ 16 &* group)
        for index in 0 ..< C.count {
            UnsafeMutableRawPointer(destination + index &* rowCount).storeBytes(of: set.result(index), as: SIMD16<Float>.self)
        }
    }

    @inline(__always) private func column(_ item: Int, _ pairStride: Int, _ blockStride: Int, _ sumStride: Int) -> ColumnPointers {
        ColumnPointers(pairs: columns.pairs + item &* pairStride, codes: columns.codes + item &* 2 &* pairStride,
                        scales: columns.scales + item &* blockStride,
                        sums: columns.sums + item &* sumStride, offsets: columns.offsets + item &* blockStride)
    }
}
