import Foundation
import GGUF
import Kernels

extension TransformerModel {
    /// The forward pass over a batch of `tokens` (validated by the caller).
    func _forward(_ tokens: [Int], cache: KVCache, threadCount: Int, logits: Logits) throws(KernelError) -> [Float] {
        let configuration = configuration
        let count = tokens.count
        let width = configuration.embeddingLength
        let headCount = configuration.headCount
        let headWidth = configuration.headDimension
        let groupSize = headCount / configuration.headCountKV
        let queryWidth = headCount * headWidth
        let keyWidth = configuration.headCountKV * headWidth
        let hiddenWidth = configuration.feedForwardLength
        let epsilon = Float(configuration.rmsNormEpsilon)
        let start = cache.count
        let positions = start ..< start + count
        let attentionScale = 1 / Float(headWidth).squareRoot()

        var residual = [Float](repeating: 0, count: count * width)
        var normalized = [Float](repeating: 0, count: count * width)
        var queries = [Float](repeating: 0, count: count * queryWidth)
        var keys = [Float](repeating: 0, count: count * keyWidth)
        var values = [Float](repeating: 0, count: count * keyWidth)
        var attended = [Float](repeating: 0, count: count * queryWidth)
        var projected = [Float](repeating: 0, count: count * width)
        var gates = [Float](repeating: 0, count: count * hiddenWidth)
        var ups = [Float](repeating: 0, count: count * hiddenWidth)
        // The cache's keys and values widened to floats for attention, block after block.
        let wideKeys = UnsafeMutablePointer<Float>.allocate(capacity: (start + count) * keyWidth)
        let wideValues = UnsafeMutablePointer<Float>.allocate(capacity: (start + count) * keyWidth)
        defer {
            wideKeys.deallocate()
            wideValues.deallocate()
        }

        // Embeddings.
        try residual.withUnsafeMutableBufferPointer { (buffer) throws(KernelError) in
            for (row, token) in tokens.enumerated() {
                try Dequantization.dequantizeRow(token, of: tokenEmbedding,
                                                 into: UnsafeMutableBufferPointer(rebasing: buffer[row * width ..< (row + 1) * width]))
            }
            if traits.scalesEmbeddings {
                let factor = Float(width).squareRoot()
                for index in buffer.indices { buffer[index] *= factor }
            }
        }

        /// Products of the same input, `rows` rows of it (a block's query, key and value
        /// projections, or its gate and up projections, or one matrix): one quantization per
        /// activation format, one dispatch; one row goes to the matrix-vector kernels.
        func project(_ products: [(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)], _ input: [Float],
                     rows: Int = count) throws(KernelError) {
            if rows == 1 {
                try MatrixVectorProduct.multiply(products, input: input, threadCount: threadCount)
            } else {
                try input.withUnsafeBufferPointer { (input) throws(KernelError) in
                    try MatrixMultiplication.multiply(products, inputs: input, batch: rows, threadCount: threadCount)
                }
            }
        }
        func multiply(_ weights: WeightMatrix, _ input: [Float], into output: inout [Float], rows: Int = count) throws(KernelError) {
            try output.withUnsafeMutableBufferPointer { (output) throws(KernelError) in try project([(weights, output)], input, rows: rows) }
        }
        // Per-row operations run on the thread pool, rows split across threads (each row's
        // arithmetic is unchanged, so the values are too).
        func normalizeRows(_ rows: UnsafeMutablePointer<Float>, _ range: Range<Int>, _ weight: UnsafeBufferPointer<Float>, rowWidth: Int) {
            _rmsNorm(UnsafeMutableBufferPointer(start: rows + range.lowerBound * rowWidth, count: range.count * rowWidth),
                     width: rowWidth, weight: weight, epsilon: epsilon)
        }
        func normalize(_ source: [Float], _ weight: [Float], into destination: inout [Float], rowWidth: Int) {
            destination = source
            normalizeInPlace(&destination, weight, rowWidth: rowWidth)
        }
        func normalizeInPlace(_ rows: inout [Float], _ weight: [Float], rowWidth: Int) {
            rows.withUnsafeMutableBufferPointer { rows in
                weight.withUnsafeBufferPointer { weight in
                    _forEachRowRange(rows.count / rowWidth, threadCount: threadCount) { normalizeRows(rows.baseAddress!, $0, weight, rowWidth: rowWidth) }
                }
            }
        }
        /// `residual += postNorm(projected)` (the norm where the family has one).
        func addToResidual(_ projected: inout [Float], postNorm: [Float]?) {
            residual.withUnsafeMutableBufferPointer { residual in
                projected.withUnsafeMutableBufferPointer { projected in
                    (postNorm ?? []).withUnsafeBufferPointer { norm in
                        _forEachRowRange(count, threadCount: threadCount) { rows in
                            if postNorm != nil { normalizeRows(projected.baseAddress!, rows, norm, rowWidth: width) }
                            for index in rows.lowerBound * width ..< rows.upperBound * width { residual[index] += projected[index] }
                        }
                    }
                }
            }
        }
        var rotaryAngles: [UInt32: _RotaryAngles] = [:]
        func angles(base: Float) -> _RotaryAngles {
            if let angles = rotaryAngles[base.bitPattern] { return angles }
            let angles = _RotaryAngles(positions: positions, headWidth: headWidth, base: base)
            rotaryAngles[base.bitPattern] = angles
            return angles
        }

        for (block, layer) in layers.enumerated() {
            // Attention.
            normalize(residual, layer.attentionNorm, into: &normalized, rowWidth: width)
            try queries.withUnsafeMutableBufferPointer { (query) throws(KernelError) in
                try keys.withUnsafeMutableBufferPointer { (key) throws(KernelError) in
                    try values.withUnsafeMutableBufferPointer { (value) throws(KernelError) in
                        try project([(layer.query, query), (layer.key, key), (layer.value, value)], normalized)
                    }
                }
            }
            // Per-head norms (Gemma 3), RoPE, and the queries' scaling and rounding to half.
            let angles = angles(base: layer.ropeBase)
            queries.withUnsafeMutableBufferPointer { queries in
                keys.withUnsafeMutableBufferPointer { keys in
                    (layer.queryNorm ?? []).withUnsafeBufferPointer { queryNorm in
                        (layer.keyNorm ?? []).withUnsafeBufferPointer { keyNorm in
                            _forEachRowRange(count, threadCount: threadCount) { rows in
                                if layer.queryNorm != nil, layer.keyNorm != nil {
                                    let heads = rows.lowerBound * headCount ..< rows.upperBound * headCount
                                    normalizeRows(queries.baseAddress!, heads, queryNorm, rowWidth: headWidth)
                                    let keyHeads = rows.lowerBound * configuration.headCountKV ..< rows.upperBound * configuration.headCountKV
                                    normalizeRows(keys.baseAddress!, keyHeads, keyNorm, rowWidth: headWidth)
                                }
                                _applyRotary(queries.baseAddress!, rows: rows, headCount: headCount, angles: angles, pairing: traits.rotaryPairing)
                                _applyRotary(keys.baseAddress!, rows: rows, headCount: configuration.headCountKV, angles: angles,
                                             pairing: traits.rotaryPairing)
                                // llama.cpp multiplies Q by the attention scale here when the family
                                // says so (Gemma), then rounds it to half for the F16 product with the cache.
                                let rowQueries = UnsafeMutableBufferPointer(rebasing: queries[rows.lowerBound * queryWidth ..< rows.upperBound * queryWidth])
                                if traits.scalesQueriesBeforeAttention { for index in rowQueries.indices { rowQueries[index] *= attentionScale } }
                                _roundToHalfPrecision(rowQueries)
                            }
                        }
                    }
                }
            }
            keys.withUnsafeBufferPointer { cache.store($0, block: block, position: start, keys: true) }
            values.withUnsafeBufferPointer { cache.store($0, block: block, position: start, keys: false) }

            let window = layer.isLocal ? configuration.slidingWindow ?? Int.max : Int.max
            let positionCapacity = (start + count + 15) / 16 * 16 + 16
            cache.keys[block].withUnsafeBufferPointer { cachedKeys in
                cache.values[block].withUnsafeBufferPointer { cachedValues in
                    // The positions any row of the batch attends to, widened once for every head.
                    let attendedPositions = (window == Int.max ? 0 : max(0, start - window + 1)) ..< start + count
                    let widening = _CacheWideningJob(keys: cachedKeys.baseAddress!, values: cachedValues.baseAddress!,
                                                     wideKeys: wideKeys, wideValues: wideValues, keyWidth: keyWidth)
                    KernelThreadPool.shared.forEachRange(of: attendedPositions.count, parts: attendedPositions.count >= 32 ? threadCount : 1) {
                        widening.widen(positions: $0.lowerBound + attendedPositions.lowerBound ..< $0.upperBound + attendedPositions.lowerBound)
                    }
                    queries.withUnsafeBufferPointer { queries in
                        attended.withUnsafeMutableBufferPointer { attended in
                            let job = _AttentionJob(
                                queries: queries.baseAddress!, keys: wideKeys, values: wideValues,
                                output: attended.baseAddress!, start: start, headCount: headCount, headWidth: headWidth,
                                groupSize: groupSize, keyWidth: keyWidth, window: window,
                                scale: traits.scalesQueriesBeforeAttention ? 1 : attentionScale)
                            // Work grows with the position, so (row, head) pairs are dealt out
                            // round-robin rather than in contiguous ranges.
                            let pairs = count * headCount
                            let parts = pairs >= 8 ? threadCount : 1
                            KernelThreadPool.shared.run(parts: parts) { part in
                                withUnsafeTemporaryAllocation(of: Float.self, capacity: 2 * positionCapacity) { buffer in
                                    let scratch = _AttentionJob.Scratch(
                                        scores: buffer.baseAddress!, probabilities: buffer.baseAddress! + positionCapacity)
                                    for pair in stride(from: part, to: pairs, by: max(1, min(parts, KernelThreadPool.shared.threadCount))) {
                                        job.attend(row: pair / headCount, head: pair % headCount, scratch: scratch)
                                    }
                                }
                            }
                        }
                    }
                }
            }
            try multiply(layer.attentionOutput, attended, into: &projected)
            addToResidual(&projected, postNorm: layer.postAttentionNorm)

            // Feed-forward.
            normalize(residual, layer.feedForwardNorm, into: &normalized, rowWidth: width)
            try gates.withUnsafeMutableBufferPointer { (gate) throws(KernelError) in
                try ups.withUnsafeMutableBufferPointer { (up) throws(KernelError) in
                    try project([(layer.gate, gate), (layer.up, up)], normalized)
                }
            }
            gates.withUnsafeMutableBufferPointer { gates in
                ups.withUnsafeBufferPointer { ups in
                    _forEachRowRange(count, threadCount: threadCount) { rows in
                        let elements = rows.lowerBound * hiddenWidth ..< rows.upperBound * hiddenWidth
                        let (rowGates, rowUps) = (UnsafeMutableBufferPointer(rebasing: gates[elements]), UnsafeBufferPointer(rebasing: ups[elements]))
                        switch traits.activation {
                        case .silu: _swiGLU(rowGates, rowUps)
                        case .gelu: _geGLU(rowGates, rowUps)
                        }
                    }
                }
            }
            try multiply(layer.down, gates, into: &projected)
            addToResidual(&projected, postNorm: layer.postFeedForwardNorm)
        }
        cache.append(tokens)

        // Logits.
        let rows = logits == .last ? Array(residual[(count - 1) * width ..< count * width]) : residual
        let rowCount = rows.count / width
        var final = rows
        normalizeInPlace(&final, outputNorm, rowWidth: width)
        var result = [Float](repeating: 0, count: rowCount * configuration.vocabularySize)
        try multiply(output, final, into: &result, rows: rowCount)
        return result
    }
}
