import GGUF

/// `y = W · x` for a weight matrix stored as a GGUF tensor: the decode-time product.
///
/// `W` has `rowCount` rows of `rowLength` elements (ggml's `[rowLength, rowCount]` shape);
/// `x` is an ``ActivationVector`` of `rowLength` elements; `y` receives `rowCount` floats.
/// Rows are split into `threadCount` contiguous ranges computed concurrently on
/// ``KernelThreadPool/shared`` (at most one range per processor). The weights are
/// read in place from the mapping: nothing is dequantized into memory.
public enum MatrixVectorProduct {
    /// Which code computes the row dot products.
    public enum Implementation: String, Sendable, CaseIterable {
        /// Integer SIMD fast paths where the type has one, else block decoding with f32 SIMD.
        case simd
        /// Reference decoders and one multiply-add at a time, for comparison.
        case scalar
    }

    /// Whether `type` has an integer SIMD fast path (the others decode block by block).
    public static func hasIntegerFastPath(_ type: GGMLType) -> Bool {
        _integerFastPath(for: type) != nil
    }

    /// Computes `output = weights · input`.
    ///
    /// - Throws: ``KernelError/unsupportedType(_:operation:)`` for a type Typeset cannot
    ///   decode, ``KernelError/sizeMismatch(what:expected:actual:)`` when the shapes disagree.
    /// - Complexity: O(rowCount × rowLength) over `threadCount` threads.
    public static func multiply(
        _ weights: GGUFTensor, by input: ActivationVector, into output: UnsafeMutableBufferPointer<Float>,
        threadCount: Int = 1, implementation: Implementation = .simd
    ) throws(KernelError) {
        try _check(weights, input, output)
        let info = weights.info
        guard info.rowCount > 0, let rows = weights.bytes.baseAddress, let destination = output.baseAddress else { return }

        let type = info.type
        input.withPointers { activations in
            let job = _RowProductJob(
                type: type, rows: rows, rowBytes: info.rowByteCount, rowLength: info.rowLength,
                fastPath: implementation == .simd ? _integerFastPath(for: type) : nil,
                scalar: implementation == .scalar, activations: activations, output: destination)
            KernelThreadPool.shared.forEachRange(of: info.rowCount, parts: threadCount) { job.compute(rows: $0) }
        }
    }

    /// Computes several products of the same input in one dispatch to the thread pool,
    /// splitting all their rows together across threads: the query, key and value projections
    /// of a block, or its gate and up projections. Saves a dispatch and a quantization of the
    /// input per extra matrix, which adds up at decode time (hundreds of products per token).
    ///
    /// - Throws: ``KernelError`` as ``multiply(_:by:into:threadCount:implementation:)`` does,
    ///   for any of the products.
    public static func multiply(
        _ products: [(weights: GGUFTensor, output: UnsafeMutableBufferPointer<Float>)], by input: ActivationVector,
        threadCount: Int = 1
    ) throws(KernelError) {
        var jobs: [(job: Int, rows: Range<Int>)] = []
        var firstRow = 0
        for (index, product) in products.enumerated() {
            try _check(product.weights, input, product.output)
            let info = product.weights.info
            guard info.rowCount > 0, product.weights.bytes.baseAddress != nil, product.output.baseAddress != nil else { continue }
            jobs.append((index, firstRow ..< firstRow + info.rowCount))
            firstRow += info.rowCount
        }
        guard firstRow > 0 else { return }
        input.withPointers { activations in
            let rowJobs = jobs.map { entry in
                let info = products[entry.job].weights.info
                return (_RowProductJob(
                    type: info.type, rows: products[entry.job].weights.bytes.baseAddress!, rowBytes: info.rowByteCount,
                    rowLength: info.rowLength, fastPath: _integerFastPath(for: info.type), scalar: false,
                    activations: activations, output: products[entry.job].output.baseAddress!), entry.rows)
            }
            let group = _RowProductGroup(jobs: rowJobs)
            KernelThreadPool.shared.forEachRange(of: firstRow, parts: threadCount) { group.compute(rows: $0) }
        }
    }

    /// The checks every product makes before touching memory: a type Typeset can compute
    /// with, an input as long as a row, an output with one float per row.
    private static func _check(
        _ weights: GGUFTensor, _ input: ActivationVector, _ output: UnsafeMutableBufferPointer<Float>
    ) throws(KernelError) {
        let info = weights.info
        guard Dequantization.supportedTypes.contains(info.type) else {
            throw .unsupportedType(info.type, operation: "matrix-vector product")
        }
        guard info.rowLength == input.count else {
            throw .sizeMismatch(what: "input length for '\(info.name)'", expected: info.rowLength, actual: input.count)
        }
        guard output.count == info.rowCount else {
            throw .sizeMismatch(what: "output length for '\(info.name)'", expected: info.rowCount, actual: output.count)
        }
    }

    /// The scalar oracle for one row: Σ dequantized weight × activation in `Double` (see
    /// ``multiply(_:by:into:threadCount:)`` for which activations each type sees).
    public static func referenceDot(row index: Int, of weights: GGUFTensor, with input: ActivationVector) throws(KernelError) -> Double {
        let info = weights.info
        guard Dequantization.supportedTypes.contains(info.type) else {
            throw .unsupportedType(info.type, operation: "matrix-vector product")
        }
        guard info.rowLength == input.count, index >= 0, index < info.rowCount else {
            throw .sizeMismatch(what: "row \(index) of '\(info.name)' against \(input.count) inputs", expected: info.rowLength, actual: input.count)
        }
        let row = weights.row(index).baseAddress!
        return input.withPointers { _dotReference(info.type, row, info.rowLength, $0) }
    }
}

/// One matrix-vector product, shared by the threads that compute it.
///
/// `@unchecked Sendable` is sound because the pointed-to memory (the weight mapping, the
/// activation arrays, the output buffer) outlives the synchronous `KernelThreadPool.run` call
/// that uses the job, the inputs are only read, and each thread writes a disjoint range of
/// output rows.
struct _RowProductJob: @unchecked Sendable {
    let type: GGMLType
    let rows: UnsafeRawPointer
    let rowBytes: Int
    let rowLength: Int
    let fastPath: _RowDot?
    let scalar: Bool
    let activations: _Activations
    let output: UnsafeMutablePointer<Float>

    func compute(rows range: Range<Int>) {
        let units = rowLength / (type.blockSize == 256 ? 256 : 32)
        for row in range {
            let start = rows + row * rowBytes
            if let fastPath {
                output[row] = fastPath(start, units, activations)
            } else if scalar {
                output[row] = _dotScalarRow(type, start, rowLength, activations)
            } else {
                output[row] = _dotDequantizedRow(type, start, rowLength, activations)
            }
        }
    }
}

/// Several row-product jobs seen as one run of rows (`rows` are each job's place in it).
struct _RowProductGroup: @unchecked Sendable {
    let jobs: [(job: _RowProductJob, rows: Range<Int>)]

    func compute(rows range: Range<Int>) {
        for (job, rows) in jobs {
            let overlap = range.clamped(to: rows)
            if !overlap.isEmpty { job.compute(rows: overlap.lowerBound - rows.lowerBound ..< overlap.upperBound - rows.lowerBound) }
        }
    }
}

extension ActivationVector {
    func withPointers<Result>(_ body: (_Activations) -> Result) -> Result {
        values.withUnsafeBufferPointer { values in
            scales.withUnsafeBufferPointer { scales in
                codes.withUnsafeBufferPointer { codes in
                    halfSums.withUnsafeBufferPointer { sums in
                        body(_Activations(values: values.baseAddress!, scales: scales.baseAddress!,
                                          codes: codes.baseAddress!, halfSums: sums.baseAddress!))
                    }
                }
            }
        }
    }
}
