import GGUF

/// `Y = X · Wᵀ` for a batch of inputs: the prefill-time product.
///
/// `X` is `batch × rowLength` (row-major `Float`), `W` a GGUF weight tensor of `rowCount` rows,
/// `Y` is `batch × rowCount`. Two strategies, chosen by ``Strategy``:
///
/// - ``Strategy/blasTiles``: rows of `W` are dequantized a tile at a time (``tileRows`` rows,
///   so scratch memory stays at `tileRows × rowLength` floats, never a dequantized copy of the
///   model) and multiplied with OpenBLAS `sgemm`.
/// - ``Strategy/integerRows``: each input row is quantized once (``ActivationVector``) and every
///   weight row multiplied with it by the integer SIMD path, threads splitting weight rows.
///
/// `.automatic` takes the integer path for small batches and BLAS tiles for larger ones;
/// `typeset bench kernels` measures both per shape.
public enum MatrixMultiplication {
    public enum Strategy: String, Sendable, CaseIterable {
        case automatic
        case blasTiles
        case integerRows
    }

    /// Rows of the weight matrix dequantized per BLAS call.
    public static let tileRows = 256

    /// Batches at or below this size use the integer path under `.automatic`.
    public static let integerBatchLimit = 4

    /// Computes `output = inputs · weightsᵀ`.
    ///
    /// - Parameters:
    ///   - inputs: `batch × rowLength` floats, row-major.
    ///   - output: `batch × rowCount` floats, row-major.
    /// - Throws: ``KernelError`` for an unsupported type or mismatched sizes.
    public static func multiply(
        _ weights: GGUFTensor, inputs: UnsafeBufferPointer<Float>, batch: Int,
        into output: UnsafeMutableBufferPointer<Float>, threadCount: Int = 1, strategy: Strategy = .automatic
    ) throws(KernelError) {
        let info = weights.info
        guard Dequantization.supportedTypes.contains(info.type) else {
            throw .unsupportedType(info.type, operation: "matrix multiplication")
        }
        guard batch >= 0, inputs.count == batch * info.rowLength else {
            throw .sizeMismatch(what: "inputs for '\(info.name)' (batch \(batch))", expected: batch * info.rowLength, actual: inputs.count)
        }
        guard output.count == batch * info.rowCount else {
            throw .sizeMismatch(what: "output for '\(info.name)' (batch \(batch))", expected: batch * info.rowCount, actual: output.count)
        }
        guard batch > 0, info.rowCount > 0 else { return }

        let useIntegerRows: Bool
        switch strategy {
        case .automatic: useIntegerRows = batch <= integerBatchLimit && info.rowLength % 32 == 0
        case .integerRows: useIntegerRows = true
        case .blasTiles: useIntegerRows = false
        }
        if useIntegerRows {
            var column = [Float](repeating: 0, count: info.rowCount)
            for item in 0..<batch {
                let input = ActivationVector(Array(inputs[item * info.rowLength ..< (item + 1) * info.rowLength]))
                try column.withUnsafeMutableBufferPointer { (buffer) throws(KernelError) in
                    try MatrixVectorProduct.multiply(weights, by: input, into: buffer, threadCount: threadCount)
                }
                for row in 0..<info.rowCount { output[item * info.rowCount + row] = column[row] }
            }
            return
        }
        try multiplyWithBLASTiles(weights, inputs: inputs, batch: batch, into: output, threadCount: threadCount)
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
        let job = _TileProductJob(
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
struct _TileProductJob: @unchecked Sendable {
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
                _TileDecodeJob(type: type, source: source + firstRow * rowBytes, rowLength: rowLength,
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
struct _TileDecodeJob: @unchecked Sendable {
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
