import Foundation
import GGUF
import Kernels

/// One forward call: a batch of tokens through every block, over the cache's workspace.
///
///     embed ─► for each block: mixer (attention or short convolution), feed-forward ─► logits
///
/// Each step is a method; the per-row operations between the products (norms, biases, RoPE,
/// the queries' scaling and rounding, gating, residual adds) are split across the threads, as
/// the products are: on two cores a serial step costs its full time while the other waits.
struct ForwardPass {
    let model: TransformerModel
    let cache: KVCache
    let workspace: ForwardWorkspace
    /// Tokens in this call, at positions `start ..< start + count`.
    let count: Int
    let start: Int
    let threadCount: Int
    let width: Int
    let epsilon: Float

    init(model: TransformerModel, cache: KVCache, tokenCount: Int, threadCount: Int) {
        let configuration = model.configuration
        let width = configuration.embeddingLength
        if let workspace = cache.workspace, workspace.batchCapacity >= tokenCount {
            self.workspace = workspace
        } else {
            let queryWidth = configuration.headCount * configuration.headDimension
            let keyWidth = configuration.headCountKV * configuration.headDimension
            var fusedWidth = 0
            for block in model.blocks {
                switch block.mixer {
                case let .attention(attention): if case let .fused(projection) = attention.inputs { fusedWidth = max(fusedWidth, projection.outputWidth) }
                case let .shortConvolution(convolution): fusedWidth = max(fusedWidth, convolution.inputProjection.outputWidth)
                }
                if case let .fused(projection) = block.feedForward.inputs { fusedWidth = max(fusedWidth, projection.outputWidth) }
            }
            workspace = ForwardWorkspace(
                batchCapacity: tokenCount, width: width, queryWidth: queryWidth, keyWidth: keyWidth,
                hiddenWidth: configuration.feedForwardLength, fusedWidth: fusedWidth)
            cache.workspace = workspace
        }
        self.model = model
        self.cache = cache
        self.count = tokenCount
        self.start = cache.count
        self.threadCount = threadCount
        self.width = width
        self.epsilon = Float(configuration.rmsNormEpsilon)
        // The angle tables of the model's rotary embeddings for this call's positions.
        let positions = cache.count ..< cache.count + tokenCount
        let embeddings = model.rotaryEmbeddings(contextLength: cache.contextLength)
        if workspace.rotaryAngles.count != embeddings.count { workspace.rotaryAngles = embeddings.map { _ in RotaryAngles() } }
        for (index, embedding) in embeddings.enumerated() { embedding.angles(positions: positions, into: &workspace.rotaryAngles[index]) }
    }

    /// Runs the tokens and writes the logits asked for into `result` (resized if needed).
    func run(_ tokens: [Int], logits: TransformerModel.Logits, into result: inout [Float]) throws(KernelError) {
        try embed(tokens)
        for block in model.blocks {
            switch block.mixer {
            case let .attention(attention): try attend(block, attention)
            case let .shortConvolution(convolution): try convolve(block, convolution)
            }
            try feedForward(block)
        }
        cache.append(tokens)
        try outputLogits(logits, into: &result)
    }

    // MARK: Steps

    /// `residual[row] = embedding(token)` (× √width where the family scales it).
    private func embed(_ tokens: [Int]) throws(KernelError) {
        let residual = workspace.residual
        for (row, token) in tokens.enumerated() {
            try Dequantization.dequantizeRow(token, of: model.tokenEmbedding, into: rows(residual, row ..< row + 1, width: width))
        }
        if model.traits.scalesEmbeddings {
            let factor = Float(width).squareRoot()
            for index in 0 ..< count * width { residual[index] *= factor }
        }
    }

    /// Attention: norm, query/key/value projections, per-head norms, RoPE, the queries'
    /// scaling and rounding to half, the cache, causal attention, output projection, residual.
    private func attend(_ block: BlockWeights, _ attention: AttentionWeights) throws(KernelError) {
        let configuration = model.configuration
        let headCount = configuration.headCount, headWidth = configuration.headDimension
        let keyValueHeads = attention.keyValueHeadCount
        let queryWidth = headCount * headWidth, keyWidth = keyValueHeads * headWidth
        let queries = rows(workspace.queries, 0 ..< count, width: queryWidth)
        let keys = rows(workspace.keys, 0 ..< count, width: keyWidth)
        let values = rows(workspace.values, 0 ..< count, width: keyWidth)
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.mixerNorm)
        switch attention.inputs {
        case let .separate(query, key, value):
            try project((query, queries), (key, keys), (value, values))
        case let .fused(projection):
            let fused = rows(workspace.fused, 0 ..< count, width: projection.outputWidth)
            try project((projection, fused))
            forEachRowRange { range in
                for row in range {
                    let source = fused.baseAddress! + row * projection.outputWidth
                    (queries.baseAddress! + row * queryWidth).update(from: source, count: queryWidth)
                    (keys.baseAddress! + row * keyWidth).update(from: source + queryWidth, count: keyWidth)
                    (values.baseAddress! + row * keyWidth).update(from: source + queryWidth + keyWidth, count: keyWidth)
                }
            }
        }

        let angles = attention.rotary.map { workspace.rotaryAngles[$0] }
        let scalesQueries = model.traits.scalesQueriesBeforeAttention
        let scale = model.attentionScale
        let pairing = model.traits.rotaryPairing
        (attention.queryNorm ?? []).withUnsafeBufferPointer { queryNorm in
            (attention.keyNorm ?? []).withUnsafeBufferPointer { keyNorm in
                forEachRowRange { range in
                    if attention.queryNorm != nil, attention.keyNorm != nil {
                        _rmsNorm(rows(queries, range, width: queryWidth), width: headWidth, weight: queryNorm, epsilon: epsilon)
                        _rmsNorm(rows(keys, range, width: keyWidth), width: headWidth, weight: keyNorm, epsilon: epsilon)
                    }
                    if let angles {
                        _applyRotary(queries.baseAddress!, rows: range, headCount: headCount, headWidth: headWidth, angles: angles, pairing: pairing)
                        _applyRotary(keys.baseAddress!, rows: range, headCount: keyValueHeads, headWidth: headWidth, angles: angles, pairing: pairing)
                    }
                    // llama.cpp multiplies Q by the attention scale here when the family says so
                    // (Gemma, Phi-3), then rounds it to half for the F16 product with the cache.
                    let rowQueries = rows(queries, range, width: queryWidth)
                    if scalesQueries { for index in rowQueries.indices { rowQueries[index] *= scale } }
                    _roundToHalfPrecision(rowQueries)
                }
            }
        }
        cache.store(UnsafeBufferPointer(keys), slot: block.cacheSlot, position: start, keys: true)
        cache.store(UnsafeBufferPointer(values), slot: block.cacheSlot, position: start, keys: false)

        let window = attention.window ?? Int.max
        let positionCapacity = (start + count + 15) / 16 * 16 + 16
        workspace.reserveWidePositions(start + count)
        let wideKeys = workspace.wideKeys.baseAddress!, wideValues = workspace.wideValues.baseAddress!
        let attended = workspace.attended
        let threadCount = threadCount, start = start, count = count
        cache.keys[block.cacheSlot].withUnsafeBufferPointer { cachedKeys in
            cache.values[block.cacheSlot].withUnsafeBufferPointer { cachedValues in
                // The positions any row of the batch attends to, widened once for every head.
                let attendedPositions = (window == Int.max ? 0 : max(0, start - window + 1)) ..< start + count
                let widening = CacheWideningJob(keys: cachedKeys.baseAddress!, values: cachedValues.baseAddress!,
                                                 wideKeys: wideKeys, wideValues: wideValues, keyWidth: keyWidth,
                                                 firstPosition: attendedPositions.lowerBound)
                KernelThreadPool.shared.forEachRange(of: attendedPositions.count, parts: attendedPositions.count >= 32 ? threadCount : 1,
                                                     job: widening)
                let job = AttentionJob(
                    queries: UnsafePointer(queries.baseAddress!), keys: wideKeys, values: wideValues,
                    output: attended.baseAddress!, start: start, headCount: headCount, headWidth: headWidth,
                    groupSize: headCount / keyValueHeads, keyWidth: keyWidth, window: window,
                    scale: scalesQueries ? 1 : scale)
                let pairs = count * headCount
                let parts = pairs >= 8 ? min(threadCount, KernelThreadPool.shared.threadCount) : 1
                KernelThreadPool.shared.forEachRange(
                    of: parts, parts: parts, job: AttentionParts(job: job, pairs: pairs, parts: parts, positionCapacity: positionCapacity))
            }
        }
        try project((attention.output, rows(workspace.projected, 0 ..< count, width: width)),
                    input: rows(attended, 0 ..< count, width: queryWidth))
        addToResidual(postNorm: block.postMixerNorm)
    }

    /// LFM2's short convolution: norm, in-projection to B, C, x, the gated inputs `B ⊙ x` into
    /// the cache, the causal convolution over them, `C ⊙` its output, out-projection, residual.
    private func convolve(_ block: BlockWeights, _ convolution: ShortConvolutionWeights) throws(KernelError) {
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.mixerNorm)
        let bcx = rows(workspace.fused, 0 ..< count, width: 3 * width)
        try project((convolution.inputProjection, bcx))
        let start = start, width = width
        let gated = workspace.normalized
        cache.convolutionInputs[block.cacheSlot].withUnsafeMutableBufferPointer { history in
            // The gated inputs of this call's positions, then the convolution over them and
            // the ones before (all stored by now), row by row.
            forEachRowRange { range in
                for row in range {
                    let source = bcx.baseAddress! + row * 3 * width
                    _gatedProduct(source, source + 2 * width, into: history.baseAddress! + (start + row) * width, count: width)
                }
            }
            convolution.kernel.withUnsafeBufferPointer { kernel in
                forEachRowRange { range in
                    for row in range {
                        let output = gated.baseAddress! + row * width
                        _shortConvolution(history: UnsafePointer(history.baseAddress!), position: start + row, width: width,
                                          kernel: kernel.baseAddress!, length: convolution.length, into: output)
                        let gate = bcx.baseAddress! + row * 3 * width + width
                        _gatedProduct(gate, output, into: output, count: width)
                    }
                }
            }
        }
        try project((convolution.outputProjection, rows(workspace.projected, 0 ..< count, width: width)),
                    input: rows(gated, 0 ..< count, width: width))
        addToResidual(postNorm: block.postMixerNorm)
    }

    /// The feed-forward network: norm, gate and up projections, `act(gate) · up`, down
    /// projection, residual.
    private func feedForward(_ block: BlockWeights) throws(KernelError) {
        let hiddenWidth = model.configuration.feedForwardLength
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.feedForwardNorm)
        let gates = rows(workspace.gates, 0 ..< count, width: hiddenWidth)
        let ups = rows(workspace.ups, 0 ..< count, width: hiddenWidth)
        switch block.feedForward.inputs {
        case let .separate(gate, up):
            try project((gate, gates), (up, ups))
        case let .fused(projection):
            let fused = rows(workspace.fused, 0 ..< count, width: 2 * hiddenWidth)
            try project((projection, fused))
            forEachRowRange { range in
                for row in range {
                    let source = fused.baseAddress! + row * 2 * hiddenWidth
                    (gates.baseAddress! + row * hiddenWidth).update(from: source, count: hiddenWidth)
                    (ups.baseAddress! + row * hiddenWidth).update(from: source + hiddenWidth, count: hiddenWidth)
                }
            }
        }
        let activation = model.traits.activation
        forEachRowRange { range in
            let rowGates = rows(gates, range, width: hiddenWidth)
            let rowUps = UnsafeBufferPointer(rows(ups, range, width: hiddenWidth))
            switch activation {
            case .silu: _swiGLU(rowGates, rowUps)
            case .gelu: _geGLU(rowGates, rowUps)
            }
        }
        try project((block.feedForward.down, rows(workspace.projected, 0 ..< count, width: width)),
                    input: rows(gates, 0 ..< count, width: hiddenWidth))
        addToResidual(postNorm: block.postFeedForwardNorm)
    }

    /// The final norm and the output projection of the last row, or of every row.
    private func outputLogits(_ logits: TransformerModel.Logits, into result: inout [Float]) throws(KernelError) {
        let first = logits == .last ? count - 1 : 0
        let rowCount = count - first
        let final = rows(workspace.normalized, 0 ..< rowCount, width: width)
        final.baseAddress!.update(from: workspace.residual.baseAddress! + first * width, count: rowCount * width)
        model.outputNorm.withUnsafeBufferPointer { weight in
            forEachRowRange(rowCount) { range in _rmsNorm(rows(final, range, width: width), width: width, weight: weight, epsilon: epsilon) }
        }
        let vocabulary = model.configuration.vocabularySize
        if result.count != rowCount * vocabulary { result = [Float](repeating: 0, count: rowCount * vocabulary) }
        try result.withUnsafeMutableBufferPointer { (result) throws(KernelError) in
            try project((model.output, result), input: final, rows: rowCount)
        }
    }

    // MARK: Helpers

    /// Rows `range` of a row-major buffer of `width`-float rows.
    private func rows(_ buffer: UnsafeMutableBufferPointer<Float>, _ range: Range<Int>, width: Int) -> UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: buffer.baseAddress! + range.lowerBound * width, count: range.count * width)
    }

    /// Runs `body` on ranges of this call's rows (or `rowCount` rows) split across the threads.
    private func forEachRowRange(_ rowCount: Int? = nil, _ body: (Range<Int>) -> Void) {
        _forEachRowRange(rowCount ?? count, threadCount: threadCount, body)
    }

    /// `destination = RMSNorm(source) · weight`, row by row.
    private func normalize(from source: UnsafeMutableBufferPointer<Float>, into destination: UnsafeMutableBufferPointer<Float>, weight: [Float]) {
        let width = width, epsilon = epsilon
        weight.withUnsafeBufferPointer { weight in
            forEachRowRange { range in
                let target = rows(destination, range, width: width)
                target.baseAddress!.update(from: source.baseAddress! + range.lowerBound * width, count: range.count * width)
                _rmsNorm(target, width: width, weight: weight, epsilon: epsilon)
            }
        }
    }

    /// A projection and the buffer its rows of output go to.
    private typealias Product = (projection: Projection, output: UnsafeMutableBufferPointer<Float>)

    /// Products of the same input (`workspace.normalized` unless given), each plus its bias:
    /// one quantization of the input per activation format, one dispatch. One row goes to the
    /// matrix-vector kernels, quantized into the workspace's buffers: no allocation.
    private func project(
        _ first: Product, _ second: Product? = nil, _ third: Product? = nil,
        input: UnsafeMutableBufferPointer<Float>? = nil, rows: Int? = nil
    ) throws(KernelError) {
        let rowCount = rows ?? count
        let input = input ?? self.rows(workspace.normalized, 0 ..< rowCount, width: width)
        typealias Pair = (weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)
        try withUnsafeTemporaryAllocation(of: Pair.self, capacity: 3) { (pairs) throws(KernelError) in
            var pairCount = 0
            func append(_ product: Product?) {
                guard let product else { return }
                (pairs.baseAddress! + pairCount).initialize(to: (product.projection.weights, product.output))
                pairCount += 1
            }
            append(first); append(second); append(third)
            defer { pairs.baseAddress!.deinitialize(count: pairCount) }
            let products = UnsafeBufferPointer(rebasing: pairs[..<pairCount])
            if rowCount == 1 {
                try MatrixVectorProduct.multiply(products, input: UnsafeBufferPointer(input), reusing: &workspace.activations,
                                                 threadCount: threadCount)
            } else {
                try MatrixMultiplication.multiply(Array(products), inputs: UnsafeBufferPointer(input), batch: rowCount, threadCount: threadCount)
            }
        }
        func addBias(_ product: Product?) {
            guard let product, let bias = product.projection.bias else { return }
            bias.withUnsafeBufferPointer { bias in
                forEachRowRange(rowCount) { range in _addBias(bias, to: product.output.baseAddress!, rows: range) }
            }
        }
        addBias(first); addBias(second); addBias(third)
    }

    /// `residual += postNorm(projected)` (the norm where the family has one).
    private func addToResidual(postNorm: [Float]?) {
        let residual = workspace.residual, projected = workspace.projected
        let width = width, epsilon = epsilon
        (postNorm ?? []).withUnsafeBufferPointer { norm in
            forEachRowRange { range in
                if postNorm != nil { _rmsNorm(rows(projected, range, width: width), width: width, weight: norm, epsilon: epsilon) }
                for index in range.lowerBound * width ..< range.upperBound * width { residual[index] += projected[index] }
            }
        }
    }
}
