import Foundation
import GGUF
import Models
import Testing
import TypesetTokenizer
import TypesetTestSupport

/// Perplexity and next-token agreement with llama.cpp over ~24,000 tokens of English prose
/// (five licence texts from Debian's base-files), as recorded by
/// `Fixtures/make_generation_fixtures.py perplexity` (llama.cpp with flash attention off: its
/// f32 attention path).
///
/// By default the first 6 chunks of 512 tokens are checked, to keep CI short; run every chunk
/// with `TYPESET_PARITY_CHUNKS=all swift test -c release --filter LlamaCppPerplexityParityTests`
/// (docs/benchmarks.md has the full figures).
@Suite struct LlamaCppPerplexityParityTests {
    static var chunkLimit: Int {
        let value = ProcessInfo.processInfo.environment["TYPESET_PARITY_CHUNKS"] ?? "6"
        return value == "all" ? .max : Int(value) ?? 6
    }

    static func text(_ expected: [String: Any]) -> [UInt8]? {
        var bytes: [UInt8] = []
        for file in expected["files"] as! [String] {
            guard let data = FileManager.default.contents(atPath: file) else { return nil }
            bytes += data
        }
        var digest = SHA256Digest()
        digest.update(bytes)
        return digest.finalize() == expected["sha256"] as! String ? bytes : nil
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.qwen05FileName)), arguments: TestModels.parityModelNames)
    func perplexityAndTopOneAgreement(name: String) throws {
        let expected = try JSONSerialization.jsonObject(with: Fixtures.data("generation/\(name).perplexity.json")) as! [String: Any]
        guard let text = Self.text(expected) else {
            Issue.record("the licence texts differ from the recorded ones (\(expected["files"]!)); perplexity parity not checked")
            return
        }
        let file = try GGUFFile(contentsOf: TestModels.path(of: TestModels.fileName(of: name)))
        let model = try TransformerModel(file: file)
        let tokenizer = try Tokenizer(metadata: file.metadata)
        let vocabulary = tokenizer.vocabulary
        let tokens = text.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: vocabulary.addBOS) }
        #expect(tokens.count == expected["tokens"] as! Int)
        let context = expected["ctx"] as! Int
        let chunks = expected["chunks"] as! [[String: Any]]
        let width = model.configuration.vocabularySize
        let cache = model.makeCache(contextLength: context)
        var ours = 0.0, theirs = 0.0, scored = 0, agreements = 0, positions = 0
        var largestGap: Float = 0, decidedDisagreements = 0
        for (index, chunk) in chunks.prefix(Self.chunkLimit).enumerated() {
            var input = Array(tokens[index * context ..< (index + 1) * context])
            if vocabulary.addBOS, let bos = vocabulary.bosTokenID { input[0] = bos }
            cache.clear()
            let argmax = chunk["argmax"] as! [Int]
            // Slices of 64 positions keep the logits buffer small (Gemma: 64 × 262,144 floats).
            for sliceStart in stride(from: 0, to: context, by: 64) {
                let slice = Array(input[sliceStart ..< min(sliceStart + 64, context)])
                let logits = try model.evaluate(slice, cache: cache, threadCount: 2, logits: .all)
                for offset in slice.indices where sliceStart + offset < context - 1 {
                    let position = sliceStart + offset
                    let row = logits[offset * width ..< (offset + 1) * width]
                    var best = row.startIndex
                    for index in row.indices where row[index] > row[best] { best = index }
                    positions += 1
                    if best - row.startIndex == argmax[position] {
                        agreements += 1
                    } else {
                        // How far below our best llama.cpp's choice sits in our logits.
                        let gap = row[best] - row[row.startIndex + argmax[position]]
                        largestGap = max(largestGap, gap)
                        if gap > 1.0 { decidedDisagreements += 1 }
                    }
                    if position >= context / 2 {
                        let peak = Double(row[best])
                        let total = row.reduce(0.0) { $0 + exp(Double($1) - peak) }
                        ours -= Double(row[row.startIndex + tokens[index * context + position + 1]]) - peak - log(total)
                        scored += 1
                    }
                }
            }
            theirs += chunk["nll"] as! Double
        }
        let ourPerplexity = exp(ours / Double(scored)), theirPerplexity = exp(theirs / Double(scored))
        let agreement = Double(agreements) / Double(positions)
        print("\(name): perplexity \(ourPerplexity) vs llama.cpp \(theirPerplexity) over \(scored) scored tokens; top-1 agreement \(agreements)/\(positions) (\(agreement)); largest gap at a disagreement \(largestGap), disagreements with a gap over 1.0: \(decidedDisagreements)")
        #expect(abs(ourPerplexity / theirPerplexity - 1) < 0.01)
        // llama.cpp's own two attention paths agree on ~96.4% of these positions (see the
        // fixture script): the forward pass is chaotic under rounding. Dumping every layer of
        // both engines (docs/models.md) shows each operation agreeing to float-summation order
        // (~1e-7 relative); a value that sits on a half-precision or 8-bit rounding boundary
        // then rounds the other way, and the quantized products of the next layers amplify that
        // to 1e-3 within a layer. So top-1 agreement is held to 94%, and disagreements must be
        // near-ties: llama.cpp's choice within 2.0 of the best logit here, and within 1.0 at all
        // but 1 in 2,000 positions. (Full run: docs/benchmarks.md, "Agreement with llama.cpp".)
        #expect(agreement >= 0.94)
        #expect(largestGap < 2.0)
        #expect(decidedDisagreements * 2000 <= positions)
    }
}
