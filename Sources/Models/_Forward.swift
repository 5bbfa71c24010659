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

        func multiply(_ weights: GGUFTensor, _ input: [Float], into output: inout [Float]) throws(KernelError) {
            try input.withUnsafeBufferPointer { (input) throws(KernelError) in
                try output.withUnsafeMutableBufferPointer { (output) throws(KernelError) in
                    try MatrixMultiplication.multiply(weights, inputs: input, batch: count, into: output, threadCount: threadCount)
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

        var scores = [Float](repeating: 0, count: cache.contextLength)
        for (block, layer) in layers.enumerated() {
            // Attention.
            normalize(residual, layer.attentionNorm, into: &normalized, rowWidth: width)
            if count == 1 {
                // Decode: one quantization of the input and one dispatch for all three.
                let input = ActivationVector(normalized)
                try queries.withUnsafeMutableBufferPointer { (query) throws(KernelError) in
                    try keys.withUnsafeMutableBufferPointer { (key) throws(KernelError) in
                        try values.withUnsafeMutableBufferPointer { (value) throws(KernelError) in
                            try MatrixVectorProduct.multiply(
                                [(layer.query, query), (layer.key, key), (layer.value, value)], by: input, threadCount: threadCount)
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
                            scores.withUnsafeMutableBufferPointer { scores in
                                for row in 0 ..< count {
                                    let position = start + row
                                    let first = window == Int.max ? 0 : max(0, position - window + 1)
                                    for head in 0 ..< headCount {
                                        let query = queries.baseAddress! + (row * headCount + head) * headWidth
                                        let group = head / groupSize
                                        var maximum = -Float.infinity
                                        for past in first ... position {
                                            let key = cachedKeys.baseAddress! + past * keyWidth + group * headWidth
                                            let score = _dot(query, key, headWidth) * scale
                                            scores[past] = score
                                            maximum = max(maximum, score)
                                        }
                                        var total: Float = 0
                                        for past in first ... position {
                                            let weight = expf(scores[past] - maximum)
                                            scores[past] = weight
                                            total += weight
                                        }
                                        let output = attended.baseAddress! + (row * headCount + head) * headWidth
                                        output.update(repeating: 0, count: headWidth)
                                        for past in first ... position {
                                            _addScaled(output, cachedValues.baseAddress! + past * keyWidth + group * headWidth,
                                                       scores[past] / total, headWidth)
                                        }
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
                let input = ActivationVector(normalized)
                try gates.withUnsafeMutableBufferPointer { (gate) throws(KernelError) in
                    try ups.withUnsafeMutableBufferPointer { (up) throws(KernelError) in
                        try MatrixVectorProduct.multiply([(layer.gate, gate), (layer.up, up)], by: input, threadCount: threadCount)
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
        try final.withUnsafeBufferPointer { (input) throws(KernelError) in
            try result.withUnsafeMutableBufferPointer { (logits) throws(KernelError) in
                try MatrixMultiplication.multiply(output, inputs: input, batch: rowCount, into: logits, threadCount: threadCount)
            }
        }
        return result
    }
}
