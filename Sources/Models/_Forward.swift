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
        let scale = 1 / Float(headWidth).squareRoot()

        var residual = [Float](repeating: 0, count: count * width)
        var normalized = [Float](repeating: 0, count: count * width)
        var queries = [Float](repeating: 0, count: count * queryWidth)
        var keys = [Float](repeating: 0, count: count * keyWidth)
        var values = [Float](repeating: 0, count: count * keyWidth)
        var attended = [Float](repeating: 0, count: count * queryWidth)
        var projected = [Float](repeating: 0, count: count * width)
        var gates = [Float](repeating: 0, count: count * hiddenWidth)
        var ups = [Float](repeating: 0, count: count * hiddenWidth)

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
            if count == 1 {
                // Decode: one quantization of the input (per format) and one dispatch for all three.
                try queries.withUnsafeMutableBufferPointer { (query) throws(KernelError) in
                    try keys.withUnsafeMutableBufferPointer { (key) throws(KernelError) in
                        try values.withUnsafeMutableBufferPointer { (value) throws(KernelError) in
                            try MatrixVectorProduct.multiply(
                                [(layer.query, query), (layer.key, key), (layer.value, value)], input: normalized, threadCount: threadCount)
                        }
                    }
                }
            } else {
                try multiply(layer.query, normalized, into: &queries)
                try multiply(layer.key, normalized, into: &keys)
                try multiply(layer.value, normalized, into: &values)
            }
            if let queryNorm = layer.queryNorm, let keyNorm = layer.keyNorm {
                normalizeInPlace(&queries, queryNorm, rowWidth: headWidth)
                normalizeInPlace(&keys, keyNorm, rowWidth: headWidth)
            }
            queries.withUnsafeMutableBufferPointer {
                _applyRotary($0, headCount: headCount, headWidth: headWidth, positions: positions, base: layer.ropeBase, pairing: traits.rotaryPairing)
            }
            keys.withUnsafeMutableBufferPointer {
                _applyRotary($0, headCount: configuration.headCountKV, headWidth: headWidth, positions: positions, base: layer.ropeBase,
                             pairing: traits.rotaryPairing)
            }
            cache.keys[block].replaceSubrange(start * keyWidth ..< (start + count) * keyWidth, with: keys)
            cache.values[block].replaceSubrange(start * keyWidth ..< (start + count) * keyWidth, with: values)

            let window = layer.isLocal ? configuration.slidingWindow ?? Int.max : Int.max
            cache.keys[block].withUnsafeBufferPointer { cachedKeys in
                cache.values[block].withUnsafeBufferPointer { cachedValues in
                    queries.withUnsafeBufferPointer { queries in
                        attended.withUnsafeMutableBufferPointer { attended in
                            let job = _AttentionJob(
                                queries: queries.baseAddress!, keys: cachedKeys.baseAddress!, values: cachedValues.baseAddress!,
                                output: attended.baseAddress!, start: start, headCount: headCount, headWidth: headWidth,
                                groupSize: groupSize, keyWidth: keyWidth, window: window, scale: scale)
                            // Work grows with the position, so (row, head) pairs are dealt out
                            // round-robin rather than in contiguous ranges.
                            let pairs = count * headCount
                            let parts = pairs >= 8 ? threadCount : 1
                            KernelThreadPool.shared.run(parts: parts) { part in
                                var scores = [Float](repeating: 0, count: start + count)
                                scores.withUnsafeMutableBufferPointer { scores in
                                    for pair in stride(from: part, to: pairs, by: max(1, min(parts, KernelThreadPool.shared.threadCount))) {
                                        job.attend(row: pair / headCount, head: pair % headCount, scores: scores.baseAddress!)
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
            if count == 1 {
                try gates.withUnsafeMutableBufferPointer { (gate) throws(KernelError) in
                    try ups.withUnsafeMutableBufferPointer { (up) throws(KernelError) in
                        try MatrixVectorProduct.multiply([(layer.gate, gate), (layer.up, up)], input: normalized, threadCount: threadCount)
                    }
                }
            } else {
                try multiply(layer.gate, normalized, into: &gates)
                try multiply(layer.up, normalized, into: &ups)
            }
            let activation = traits.activation
            for index in gates.indices { gates[index] = activation(gates[index]) * ups[index] }
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

/// Causal attention for one (row, head) pair at a time, shared by the threads that split them.
///
/// `@unchecked Sendable` is sound because the buffers outlive the synchronous
/// `KernelThreadPool.run` call that uses the job, queries, keys and values are only read, and
/// each (row, head) pair writes its own `headWidth` floats of output.
struct _AttentionJob: @unchecked Sendable {
    let queries: UnsafePointer<Float>
    let keys: UnsafePointer<Float>
    let values: UnsafePointer<Float>
    let output: UnsafeMutablePointer<Float>
    let start: Int
    let headCount: Int
    let headWidth: Int
    let groupSize: Int
    let keyWidth: Int
    let window: Int
    let scale: Float

    /// Softmax(q·kᵀ · scale) · v over the positions `row` may see; `scores` has room for
    /// every position.
    func attend(row: Int, head: Int, scores: UnsafeMutablePointer<Float>) {
        let position = start + row
        let first = window == Int.max ? 0 : max(0, position - window + 1)
        let query = queries + (row * headCount + head) * headWidth
        let group = (head / groupSize) * headWidth
        var maximum = -Float.infinity
        for past in first ... position {
            let score = _dot(query, keys + past * keyWidth + group, headWidth) * scale
            scores[past] = score
            maximum = max(maximum, score)
        }
        var total: Float = 0
        for past in first ... position {
            let weight = expf(scores[past] - maximum)
            scores[past] = weight
            total += weight
        }
        let destination = output + (row * headCount + head) * headWidth
        destination.update(repeating: 0, count: headWidth)
        for past in first ... position {
            _addScaled(destination, values + past * keyWidth + group, scores[past] / total, headWidth)
        }
    }
}
