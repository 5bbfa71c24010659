import Dispatch
import Foundation
import Models

/// How an embedding is scaled once pooled (llama.cpp's `embd_normalize`).
package enum EmbeddingNormalization: Sendable, Equatable {
    /// As pooled.
    case none
    /// Divided by its largest magnitude and multiplied by 32,760: the range of a 16-bit
    /// integer (llama.cpp's 0).
    case int16Range
    /// Divided by its p-norm, (Σ|xᵢ|ᵖ)^(1/p), with p ≥ 1: 1 is the taxicab norm, 2 the
    /// Euclidean (unit length, what cosine similarity wants).
    case pNorm(Int)

    /// Unit length: the default, as in llama.cpp.
    package static let euclidean = EmbeddingNormalization.pNorm(2)

    /// `vector` scaled as this normalization says (a zero vector stays zero). Sums in `Double`,
    /// as llama.cpp's `common_embd_normalize` does.
    func apply(to vector: inout [Float]) {
        var sum: Double
        switch self {
        case .none: return
        case .int16Range: sum = Double(vector.reduce(0) { max($0, abs($1)) }) / 32_760
        case .pNorm(2): sum = vector.reduce(0.0) { $0 + Double($1) * Double($1) }.squareRoot()
        case .pNorm(let p):
            sum = pow(vector.reduce(0.0) { $0 + pow(Double(abs($1)), Double(p)) }, 1 / Double(max(1, p)))
        }
        let scale = sum > 0 ? Float(1 / sum) : 0
        for index in vector.indices { vector[index] *= scale }
    }
}

extension ModelRunner {
    /// How the model pools its embeddings, as its file declares (`pooling_type`): `.none` for a
    /// generative model, whose files declare nothing.
    package var declaredPooling: EmbeddingPooling { configuration.pooling }

    /// Width of an embedding: the model's hidden size (`embedding_length`).
    package var embeddingLength: Int { configuration.embeddingLength }

    /// `text`'s embedding: the model's last hidden states over the text (the output of its
    /// final norm, before the vocabulary projection, with the special tokens the model adds
    /// around a text), pooled into one vector of ``embeddingLength`` floats and scaled as
    /// `normalization` says. The same numbers as llama.cpp's embeddings of the same file, to
    /// within its arithmetic's rounding.
    ///
    /// Runs beside the replies under way (the products take turns on the kernel threads), one
    /// embedding at a time; O(tokens) forward-pass work, in chunks of 512 tokens.
    ///
    /// - Parameter pooling: `nil` for the model's own (``declaredPooling``).
    /// - Throws: ``ConversationError/unsupportedOption(name:reason:)`` when the pooling is
    ///   `.none` (one vector per token: ``tokenEmbeddings(of:)``);
    ///   ``ConversationError/contextOverflow(promptTokens:contextLength:)`` for a text longer
    ///   than the runner's context; ``ConversationError/runnerUnloaded``.
    package func embedding(
        of text: String, pooling: EmbeddingPooling? = nil, normalization: EmbeddingNormalization = .euclidean
    ) async throws(ConversationError) -> [Float] {
        let pooling = pooling ?? declaredPooling
        guard pooling != .none else {
            throw .unsupportedOption(
                name: "pooling",
                reason: "the model declares no pooling (pooling_type none, as generative models do): ask for .mean, .last or .cls for one vector, or use tokenEmbeddings(of:) for one per token")
        }
        return try await embeddings(of: embeddingTokens(for: text), pooling: pooling, normalization: normalization)[0]
    }

    /// `text`'s last hidden states, one vector of ``embeddingLength`` floats per token (the
    /// special tokens the model adds included), not normalized: llama.cpp's embeddings with
    /// pooling `none`.
    ///
    /// - Throws: as ``embedding(of:pooling:normalization:)``.
    package func tokenEmbeddings(of text: String) async throws(ConversationError) -> [[Float]] {
        try await embeddings(of: embeddingTokens(for: text), pooling: .none, normalization: .none)
    }

    /// The tokens an embedding of `text` reads: the text with the special tokens the model
    /// adds (beginning and end of sequence, as its tokenizer's metadata says), special-token
    /// markup parsed, as llama.cpp tokenizes an embedding's input.
    package func embeddingTokens(for text: String) -> [Int] {
        tokenizer.encode(text, addingSpecialTokens: true, parsingSpecialTokens: true)
    }

    /// The embeddings of `tokens`: one vector pooled and normalized, or with `.none` every
    /// token's vector as computed.
    ///
    /// - Throws: ``ConversationError/contextOverflow(promptTokens:contextLength:)``,
    ///   ``ConversationError/unsupportedOption(name:reason:)`` naming `input` for no tokens,
    ///   ``ConversationError/model(_:)`` for a token outside the vocabulary,
    ///   ``ConversationError/runnerUnloaded``.
    package func embeddings(
        of tokens: [Int], pooling: EmbeddingPooling, normalization: EmbeddingNormalization
    ) async throws(ConversationError) -> [[Float]] {
        guard !tokens.isEmpty else { throw .unsupportedOption(name: "input", reason: "an embedding needs at least one token") }
        guard tokens.count <= contextLength else { throw .contextOverflow(promptTokens: tokens.count, contextLength: contextLength) }
        guard let model = state.withLock({ $0.model }) else { throw .runnerUnloaded }
        let threadCount = threadCount
        let result: Result<[[Float]], ModelError> = await withCheckedContinuation { continuation in
            embeddingQueue.async {
                do throws(ModelError) {
                    continuation.resume(returning: .success(try Self.pooledHiddenStates(
                        model: model, tokens: tokens, pooling: pooling, normalization: normalization, threadCount: threadCount)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        do { return try result.get() } catch { throw .model(error) }
    }

    /// Tokens one forward pass of an embedding computes: the chunks a prompt is prefilled in.
    static let embeddingChunkLength = 512

    /// Runs `tokens` through `model` chunk after chunk with a cache of their own, and pools
    /// their last hidden states.
    static func pooledHiddenStates(
        model: TransformerModel, tokens: [Int], pooling: EmbeddingPooling, normalization: EmbeddingNormalization, threadCount: Int
    ) throws(ModelError) -> [[Float]] {
        let width = model.configuration.embeddingLength
        let cache = model.makeCache(contextLength: tokens.count)
        var rows: [Float] = []
        var vectors: [[Float]] = []
        var sum = [Double](repeating: 0, count: pooling == .mean ? width : 0)
        var start = 0
        while start < tokens.count {
            let end = min(tokens.count, start + embeddingChunkLength)
            try model.hiddenStates(tokens[start ..< end], cache: cache, threadCount: threadCount, into: &rows)
            switch pooling {
            case .none:
                for row in 0 ..< end - start { vectors.append(Array(rows[row * width ..< (row + 1) * width])) }
            case .mean:
                for row in 0 ..< end - start {
                    for column in 0 ..< width { sum[column] += Double(rows[row * width + column]) }
                }
            case .cls:
                if start == 0 { vectors = [Array(rows[0 ..< width])] }
            case .last:
                if end == tokens.count { vectors = [Array(rows[(end - start - 1) * width ..< (end - start) * width])] }
            }
            start = end
        }
        if pooling == .mean { vectors = [sum.map { Float($0 / Double(tokens.count)) }] }
        if pooling != .none { normalization.apply(to: &vectors[0]) }
        return vectors
    }
}
