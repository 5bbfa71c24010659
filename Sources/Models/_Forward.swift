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

        func multiply(_ weights: WeightMatrix, _ input: [Float], into output: inout [Float], rows: Int = count) throws(KernelError) {
            if rows == 1 {
                // Decode: straight to the matrix-vector kernel, no staging buffers.
                let activations = ActivationVector(input, for: weights.type)
                try output.withUnsafeMutableBufferPointer { (output) throws(KernelError) in
                    try MatrixVectorProduct.multiply(weights, by: activations, into: output, threadCount: threadCount)
                }
                return
            }
            try input.withUnsafeBufferPointer { (input) throws(KernelError) in
                try output.withUnsafeMutableBufferPointer { (output) throws(KernelError) in
                    try MatrixMultiplication.multiply(weights, inputs: input, batch: rows, into: output, threadCount: threadCount)
                }
            }
        }
        /// Several products of the same input (a block's query, key and value projections, or
        /// its gate and up projections): one quantization per activation format, one dispatch.
        func project(_ products: [(weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)], _ input: [Float]) throws(KernelError) {
            if count == 1 {
                try MatrixVectorProduct.multiply(products, input: input, threadCount: threadCount)
            } else {
                try input.withUnsafeBufferPointer { (input) throws(KernelError) in
                    try MatrixMultiplication.multiply(products, inputs: input, batch: count, threadCount: threadCount)
                }
            }
        }
        func normalize(_ source: [Float], _ weight: [Float], into destination: inout [Float], rowWidth: Int) {
            destination = source
            destination.withUnsafeMutableBufferPointer { rows in
                weight.withUnsafeBufferPointer { _rmsNorm(rows, width: rowWidth, weight: $0, epsilon: epsilon) }
            }
        }
        func normalizeInPlace(_ rows: inout [Float], _ weight: [Float], rowWidth: Int) {
            rows.withUnsafeMutableBufferPointer { rows in
                weight.withUnsafeBufferPointer { _rmsNorm(rows, width: rowWidth, weight: $0, epsilon: epsilon) }
            }
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
            if let queryNorm = layer.queryNorm, let keyNorm = layer.keyNorm {
                normalizeInPlace(&queries, queryNorm, rowWidth: headWidth)
                normalizeInPlace(&keys, keyNorm, rowWidth: headWidth)
            }
            queries.withUnsafeMutableBufferPointer {
                _applyRotary($0, headCount: headCount, headWidth: headWidth, positions: positions, base: layer.ropeBase, pairing: traits.rotaryPairing)
                // llama.cpp multiplies Q by the attention scale here when the family says so
                // (Gemma), then rounds it to half for the F16 product with the cache.
                if traits.scalesQueriesBeforeAttention { for index in $0.indices { $0[index] *= attentionScale } }
                _roundToHalfPrecision($0)
            }
            keys.withUnsafeMutableBufferPointer {
                _applyRotary($0, headCount: configuration.headCountKV, headWidth: headWidth, positions: positions, base: layer.ropeBase,
                             pairing: traits.rotaryPairing)
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
            if let norm = layer.postAttentionNorm { normalizeInPlace(&projected, norm, rowWidth: width) }
            for index in residual.indices { residual[index] += projected[index] }

            // Feed-forward.
            normalize(residual, layer.feedForwardNorm, into: &normalized, rowWidth: width)
            try gates.withUnsafeMutableBufferPointer { (gate) throws(KernelError) in
                try ups.withUnsafeMutableBufferPointer { (up) throws(KernelError) in
                    try project([(layer.gate, gate), (layer.up, up)], normalized)
                }
            }
            gates.withUnsafeMutableBufferPointer { gates in
                ups.withUnsafeBufferPointer { ups in
                    let job = _GatedActivationJob(gates: gates.baseAddress!, ups: ups.baseAddress!, width: hiddenWidth,
                                                  activation: traits.activation)
                    KernelThreadPool.shared.forEachRange(of: count, parts: threadCount) { job.apply(rows: $0) }
                }
            }
            try multiply(layer.down, gates, into: &projected)
            if let norm = layer.postFeedForwardNorm { normalizeInPlace(&projected, norm, rowWidth: width) }
            for index in residual.indices { residual[index] += projected[index] }
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
