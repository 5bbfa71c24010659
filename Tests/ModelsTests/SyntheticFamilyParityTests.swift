import Foundation
import GGUF
import Models
import Testing
import TypesetTestSupport

/// The families without real weights here (Qwen 2 with YaRN, Qwen 3, Llama 3's RoPE factors,
/// Phi-3, LFM2, SmolLM3, Qwen 3 MoE, LFM2 MoE, gpt-oss, Gemma 4 and its MoE, Qwen 3.5, Granite 4 and its MoE), on tiny
/// random-weight GGUFs written with gguf-py by
/// `Fixtures/make_synthetic_models.py write` (run by `Fixtures/fetch.sh`), against llama.cpp's
/// outputs on the same files, recorded by `make_synthetic_models.py record` in
/// `Fixtures/synthetic/<name>.json` (llama.cpp 0.3.36's CPU backend, flash attention off).
///
/// Perplexity must be within 0.5% of llama.cpp's (random weights spread the logits widely,
/// perplexities near 3·10⁵, so that is a difference of 0.005 nats per token). Top-1 choices are
/// held to llama.cpp's own noise floor, recorded with the fixture: how often its flash-attention
/// path agrees with its plain path on the same positions (96–97.5% here: random weights make
/// attention sharp and every rounding difference travels), and the largest logit difference
/// between the two (0.16–0.28). Our agreement must be within two points of that, and every
/// position where our best token is not llama.cpp's must be a near-tie: llama.cpp's choice
/// within that largest difference of ours. Qwen 3.5's and Granite 4's recurrent blocks have no
/// flash path, so their fixtures also record llama.cpp's disagreement between a chunk evaluated at once and
/// token by token (its matrix-vector kernels in place of the batched ones): the noise floor is
/// the larger of the two.
@Suite struct SyntheticFamilyParityTests {
    static let names = ["qwen2", "qwen2-yarn", "qwen3", "llama3", "phi3", "lfm2", "smollm3", "qwen3moe", "lfm2moe", "gpt-oss", "gemma4",
                        "gemma4-moe", "qwen35", "granite-hybrid", "granite-hybrid-moe"]

    static func expected(_ name: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Fixtures.data("synthetic/\(name).json")) as! [String: Any]
    }

    static func model(_ name: String, expected: [String: Any]) throws -> TransformerModel {
        let path = TestModels.syntheticPath(of: name)
        let bytes = try #require(FileManager.default.contents(atPath: path), "\(path) is missing: run bash Fixtures/fetch.sh")
        var digest = SHA256Digest()
        digest.update([UInt8](bytes))
        try #require(digest.finalize() == expected["sha256"] as! String, "\(path) differs from the file llama.cpp ran")
        return try TransformerModel(contentsOf: path)
    }

    /// The largest logit difference llama.cpp shows with itself on the fixture's chunks:
    /// between its flash and plain attention, or between a chunk at once and token by token.
    static func noise(_ expected: [String: Any]) -> Double {
        max(expected["flash_largest_difference"] as! Double, expected["single_token_largest_difference"] as? Double ?? 0)
    }

    /// llama.cpp's top-1 agreement with itself, likewise (the lower of the two).
    static func selfAgreement(_ expected: [String: Any]) -> Double {
        min(expected["flash_agreement"] as! Double, expected["single_token_agreement"] as? Double ?? 1)
    }

    static func argmax(_ values: ArraySlice<Float>) -> Int {
        var best = values.startIndex
        for index in values.indices where values[index] > values[best] { best = index }
        return best - values.startIndex
    }

    /// How far apart our best token and llama.cpp's are: in llama.cpp's logits when ours is among
    /// its best eight, else in ours.
    static func gap(ours: Int, theirs: Int, ids: [Int], logits: [Double], row: ArraySlice<Float>) -> Double {
        if let index = ids.firstIndex(of: ours) { return logits[0] - logits[index] }
        return Double(row[row.startIndex + ours] - row[row.startIndex + theirs])
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic), arguments: names)
    func perplexityAndTopOneAgreement(name: String) throws {
        let expected = try Self.expected(name)
        let model = try Self.model(name, expected: expected)
        let tokens = expected["tokens"] as! [Int]
        let context = expected["ctx"] as! Int
        let chunks = expected["chunks"] as! [[String: Any]]
        let vocabulary = model.configuration.vocabularySize
        let cache = model.makeCache(contextLength: context)
        var ours = 0.0, theirs = 0.0, scored = 0, positions = 0, agreements = 0
        var largestGap = 0.0
        let noise = Self.noise(expected)
        for (index, chunk) in chunks.enumerated() {
            let input = Array(tokens[index * context ..< (index + 1) * context])
            cache.clear()
            let logits = try model.evaluate(input, cache: cache, threadCount: 2, logits: .all)
            let topIDs = chunk["top_ids"] as! [[Int]], topLogits = chunk["top_logits"] as! [[Double]]
            for position in 0 ..< context - 1 {
                let row = logits[position * vocabulary ..< (position + 1) * vocabulary]
                let best = Self.argmax(row)
                positions += 1
                if best == topIDs[position][0] {
                    agreements += 1
                } else {
                    let gap = Self.gap(ours: best, theirs: topIDs[position][0], ids: topIDs[position], logits: topLogits[position], row: row)
                    largestGap = max(largestGap, gap)
                    #expect(gap <= noise, "\(name): chunk \(index) position \(position): ours \(best), llama.cpp \(topIDs[position]) \(topLogits[position])")
                }
                if position >= context / 2 {
                    let peak = Double(row[row.startIndex + best])
                    let total = row.reduce(0.0) { $0 + exp(Double($1) - peak) }
                    ours -= Double(row[row.startIndex + input[position + 1]]) - peak - log(total)
                    scored += 1
                }
            }
            theirs += chunk["nll"] as! Double
        }
        #expect(scored == expected["scored"] as! Int)
        let ourPerplexity = exp(ours / Double(scored)), theirPerplexity = exp(theirs / Double(scored))
        let agreement = Double(agreements) / Double(positions), floor = Self.selfAgreement(expected)
        print("\(name): perplexity \(ourPerplexity) vs llama.cpp \(theirPerplexity) (ratio \(ourPerplexity / theirPerplexity)); top-1 \(agreements)/\(positions) (llama.cpp with itself: \(floor)), largest gap at a disagreement \(largestGap) (llama.cpp's noise \(noise))")
        #expect(abs(ourPerplexity / theirPerplexity - 1) < 0.005)
        #expect(agreement >= floor - 0.02)
    }

    @Test(.enabled(if: TestModels.shouldRunSynthetic), arguments: names)
    func greedyContinuationsMatch(name: String) throws {
        let expected = try Self.expected(name)
        let model = try Self.model(name, expected: expected)
        let vocabulary = model.configuration.vocabularySize
        for prompt in expected["prompts"] as! [[String: Any]] {
            let greedy = prompt["greedy"] as! [Int], margins = prompt["margins"] as! [Double]
            let cache = model.makeCache(contextLength: 512)
            var logits = try model.evaluate(prompt["tokens"] as! [Int], cache: cache, threadCount: 2)
            var generated: [Int] = []
            for _ in greedy.indices {
                let next = Self.argmax(logits[0 ..< vocabulary])
                generated.append(next)
                logits = try model.evaluate([next], cache: cache, threadCount: 2)
            }
            if let step = generated.indices.first(where: { generated[$0] != greedy[$0] }) {
                #expect(margins[step] < Self.noise(expected), "\(name): diverges at step \(step) (llama.cpp margin \(margins[step])): ours \(generated), llama.cpp \(greedy)")
            }
        }
    }
}
