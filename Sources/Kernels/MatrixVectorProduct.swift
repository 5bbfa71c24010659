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
        /// The packed kernels when the matrix has a packed copy, else ``rows``.
        case simd
        /// Row by row on the mapped tensor: integer SIMD dot products where the type has
        /// them, block decoding with f32 SIMD otherwise.
        case rows
        /// Reference decoders and one multiply-add at a time, for comparison.
        case scalar
    }

    /// Whether `type` has an integer SIMD row kernel (the others decode block by block).
    public static func hasIntegerFastPath(_ type: GGMLType) -> Bool {
        _integerFastPath(for: type) != nil
    }

    /// Computes `output = weights · input` on the mapped tensor (no packed copy).
    ///
    /// - Throws: ``KernelError/unsupportedType(_:operation:)`` for a type Typeset cannot
    ///   decode, ``KernelError/sizeMismatch(what:expected:actual:)`` when the shapes disagree,
    ///   ``KernelError/activationFormatMismatch(weights:expected:actual:)`` when `input` was
    ///   quantized for another type.
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
            let job = RowProductJob(
                type: type, rows: rows, rowBytes: info.rowByteCount, rowLength: info.rowLength,
                fastPath: implementation == .scalar ? nil : _integerFastPath(for: type),
                scalar: implementation == .scalar, activations: activations, output: destination)
            KernelThreadPool.shared.forEachRange(of: info.rowCount, parts: threadCount) { job.compute(rows: $0) }
        }
    }

    /// Computes `output = weights · input`, with the packed kernels when `weights` has a
    /// packed copy and `implementation` is ``Implementation/simd``.
    ///
    /// - Throws: as ``multiply(_:by:into:threadCount:implementation:)-(GGUFTensor,_,_,_,_)``.
    public static func multiply(
        _ weights: WeightMatrix, by input: ActivationVector, into output: UnsafeMutableBufferPointer<Float>,
        threadCount: Int = 1, implementation: Implementation = .simd
    ) throws(KernelError) {
        guard weights.packed != nil, implementation == .simd else {
            return try multiply(weights.tensor, by: input, into: output, threadCount: threadCount, implementation: implementation)
        }
        try multiply([(weights, output)], by: input, threadCount: threadCount)
    }

    /// Computes several products of the same input in one dispatch to the thread pool,
    /// splitting all their rows (packed groups of 16, or single rows) together across
    /// threads: the query, key and value projections of a block, or its gate and up
    /// projections. Saves a dispatch and a quantization of the input per extra matrix, which
    /// adds up at decode time (hundreds of products per token).
    ///
    /// - Throws: ``KernelError`` as ``multiply(_:by:into:threadCount:implementation:)-(GGUFTensor,_,_,_,_)``
    ///   does, for any of the products.
    public static func multiply(
        _ products: [(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)], by input: ActivationVector,
        threadCount: Int = 1
    ) throws(KernelError) {
        try products.withUnsafeBufferPointer { (products) throws(KernelError) in
            try multiply(products, by: input, threadCount: threadCount)
        }
    }

    /// ``multiply(_:by:threadCount:)-([(weights:output:)],_,_)`` over a buffer of products:
    /// allocates nothing (the per-product jobs live on the stack for the call).
    public static func multiply(
        _ products: UnsafeBufferPointer<(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)>, by input: ActivationVector,
        threadCount: Int = 1
    ) throws(KernelError) {
        for product in products { try _check(product.weights.tensor, input, product.output) }
        input.withPointers { activations in
            input.withColumnPointers { column in
                withUnsafeTemporaryAllocation(of: (job: GroupProduct, units: Range<Int>).self, capacity: products.count) { jobs in
                    var units = 0, jobCount = 0
                    for product in products {
                        let weights = product.weights
                        guard weights.rowCount > 0, let rows = weights.tensor.bytes.baseAddress, let output = product.output.baseAddress else { continue }
                        // A packed matrix is split by groups of 16 rows, a mapped one by rows.
                        let job: GroupProduct, count: Int
                        if let packed = weights.packed {
                            job = .packed(PackedProductJob(matrix: packed.weights, column: column, output: output))
                            count = weights.rowCount / PackedMatrix.groupRows
                        } else {
                            let info = weights.tensor.info
                            job = .rows(RowProductJob(
                                type: info.type, rows: rows, rowBytes: info.rowByteCount, rowLength: info.rowLength,
                                fastPath: _integerFastPath(for: info.type), scalar: false, activations: activations, output: output))
                            count = weights.rowCount
                        }
                        (jobs.baseAddress! + jobCount).initialize(to: (job, units ..< units + count))
                        jobCount += 1
                        units += count
                    }
                    let group = ProductGroup(jobs: UnsafeBufferPointer(rebasing: jobs[..<jobCount]))
                    KernelThreadPool.shared.forEachRange(of: units, parts: threadCount, job: group)
                    jobs.baseAddress!.deinitialize(count: jobCount)
                }
            }
        }
    }

    /// Computes several products of the same input values: quantizes `values` once per
    /// activation format the matrices take, and runs the products of each format in one
    /// dispatch (see ``multiply(_:by:threadCount:)-([(weights:output:)],_,_)``).
    ///
    /// - Throws: ``KernelError`` as the single products do.
    public static func multiply(
        _ products: [(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)], input values: [Float],
        threadCount: Int = 1
    ) throws(KernelError) {
        var activations = ActivationBuffers()
        try products.withUnsafeBufferPointer { (products) throws(KernelError) in
            try values.withUnsafeBufferPointer { (values) throws(KernelError) in
                try multiply(products, input: values, reusing: &activations, threadCount: threadCount)
            }
        }
    }

    /// ``multiply(_:input:threadCount:)`` quantizing into `activations`, whose storage is
    /// reused from call to call: a decode loop that keeps its `ActivationBuffers` runs its
    /// products with no heap allocation.
    ///
    /// - Throws: ``KernelError`` as the single products do.
    public static func multiply(
        _ products: UnsafeBufferPointer<(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)>,
        input values: UnsafeBufferPointer<Float>, reusing activations: inout ActivationBuffers, threadCount: Int = 1
    ) throws(KernelError) {
        try withUnsafeTemporaryAllocation(of: (weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>).self,
                                          capacity: products.count) { (sameFormat) throws(KernelError) in
            var done = 0
            for (index, product) in products.enumerated() {
                let format = product.weights.activationFormat
                // Formats are taken in order of first appearance; a product whose format came earlier is done.
                guard !products[..<index].contains(where: { $0.weights.activationFormat == format }) else { continue }
                guard values.count % format.blockSize == 0 else {
                    throw .sizeMismatch(what: "input length (whole \(format.rawValue) blocks)",
                                        expected: values.count / format.blockSize * format.blockSize, actual: values.count)
                }
                var count = 0
                for other in products[index...] where other.weights.activationFormat == format {
                    (sameFormat.baseAddress! + count).initialize(to: other)
                    count += 1
                }
                defer { sameFormat.baseAddress!.deinitialize(count: count) }
                let input = activations.quantize(values, format: format)
                try multiply(UnsafeBufferPointer(rebasing: sameFormat[..<count]), by: activations.vectors[input], threadCount: threadCount)
                done += count
            }
            assert(done == products.count)
        }
    }

    /// The checks every product makes before touching memory: a type Typeset can compute
    /// with, an input as long as a row and quantized for its type, an output with one float
    /// per row.
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
        let format = ActivationVector.Format(for: info.type)
        guard input.format == format else {
            throw .activationFormatMismatch(weights: info.type, expected: format.rawValue, actual: input.format.rawValue)
        }
    }

    /// The scalar oracle for one row: Σ dequantized weight × activation in `Double` (see
    /// ``ActivationVector`` for which activations each type sees).
    public static func referenceDot(row index: Int, of weights: GGUFTensor, with input: ActivationVector) throws(KernelError) -> Double {
        let info = weights.info
        guard Dequantization.supportedTypes.contains(info.type) else {
            throw .unsupportedType(info.type, operation: "matrix-vector product")
        }
        guard info.rowLength == input.count, index >= 0, index < info.rowCount else {
            throw .sizeMismatch(what: "row \(index) of '\(info.name)' against \(input.count) inputs", expected: info.rowLength, actual: input.count)
        }
        let format = ActivationVector.Format(for: info.type)
        guard input.format == format else {
            throw .activationFormatMismatch(weights: info.type, expected: format.rawValue, actual: input.format.rawValue)
        }
        let row = weights.row(index).baseAddress!
        return input.withPointers { _dotReference(info.type, row, info.rowLength, $0) }
    }
}

/// One packed matrix-vector product: groups of 16 rows against one column.
///
/// `@unchecked Sendable` is sound because the packed storage, the activations and the output
/// outlive the synchronous `KernelThreadPool.run` call that uses the job, the inputs are only
/// read, and each thread writes a disjoint range of groups.
struct PackedProductJob: @unchecked Sendable {
    let matrix: PackedWeights
    let column: ColumnPointers
    let output: UnsafeMutablePointer<Float>

    func compute(groups: Range<Int>) {
        let layout = matrix.layout
        let base = matrix.bytes
        for group in groups {
            var columns = OneColumnSet(column)
            _multiplyGroup(base + group &* layout.groupBytes, layout, &columns)
            UnsafeMutableRawPointer(output + 16 &* group).storeBytes(of: columns.result, as: SIMD16<Float>.self)
        }
    }
}

/// One product among several that share a dispatch: its work units are packed groups (one
/// column, or a batch of columns) or mapped rows.
enum GroupProduct {
    case packed(PackedProductJob)
    case batch(PackedBatchJob)
    case rows(RowProductJob)
}

/// Several products seen as one run of work units, numbered one product after another; each
/// thread computes the units of its range.
struct ProductGroup: RangeJob, @unchecked Sendable {
    let jobs: UnsafeBufferPointer<(job: GroupProduct, units: Range<Int>)>

    func run(_ range: Range<Int>) {
        for (job, units) in jobs {
            let overlap = range.clamped(to: units)
            guard !overlap.isEmpty else { continue }
            let local = overlap.lowerBound - units.lowerBound ..< overlap.upperBound - units.lowerBound
            switch job {
            case .packed(let product): product.compute(groups: local)
            case .batch(let product): product.compute(groups: local)
            case .rows(let product): product.compute(rows: local)
            }
        }
    }
}

/// One matrix-vector product, shared by the threads that compute it.
///
/// `@unchecked Sendable` is sound because the pointed-to memory (the weight mapping, the
/// activation arrays, the output buffer) outlives the synchronous `KernelThreadPool.run` call
/// that uses the job, the inputs are only read, and each thread writes a disjoint range of
/// output rows.
struct RowProductJob: @unchecked Sendable {
    let type: GGMLType
    let rows: UnsafeRawPointer
    let rowBytes: Int
    let rowLength: Int
    let fastPath: RowDot?
    let scalar: Bool
    let activations: Activations
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
