import Foundation
import GGUF
import Models
import Testing
import TypesetTestSupport

/// Several sequences in one forward pass get exactly the logits each gets alone: the promise
/// that lets a server batch its requests and still answer each as it would alone (greedy).
///
/// Each case runs three sequences of different lengths, first one at a time (prefill, then a
/// token per call: the matrix-vector kernels), then together, with their prompts split and
/// interleaved so that one sequence decodes while another is still prefilling, and compares
/// every logit bit for bit.
@Suite struct BatchedEvaluationTests {
    /// What one sequence does: its prompt, evaluated in `chunks`, then `steps` greedy tokens.
    struct Script {
        var prompt: [Int]
        var chunks: [Int]
        var steps: Int
    }

    /// Three sequences, and for a model with sliding-window attention a fourth whose later
    /// rows attend to a window that has left its first positions behind.
    static func scripts(for configuration: ModelConfiguration) -> [Script] {
        var generator = SplitMix64(seed: 42)
        let vocabulary = UInt64(min(configuration.vocabularySize, 20_000))
        func tokens(_ count: Int) -> [Int] { (0 ..< count).map { _ in Int(generator.next() % vocabulary) + 10 } }
        var scripts = [
            Script(prompt: tokens(37), chunks: [37], steps: 6),
            Script(prompt: tokens(5), chunks: [2, 3], steps: 9),
            Script(prompt: tokens(70), chunks: [16, 1, 40, 13], steps: 4),
        ]
        if let window = configuration.slidingWindow {
            scripts.append(Script(prompt: tokens(window + 20), chunks: [window - 10, 30], steps: 3))
        }
        return scripts
    }

    static func contextLength(_ scripts: [Script]) -> Int { scripts.map { $0.prompt.count + $0.steps }.max()! }

    static func argmax(_ logits: ArraySlice<Float>) -> Int {
        logits.indices.max { logits[$0] < logits[$1] || (logits[$0] == logits[$1] && $0 > $1) }! - logits.startIndex
    }

    /// Every logits row each sequence sees, one sequence at a time (a chunk per call, then one
    /// token per call).
    static func alone(_ model: TransformerModel, _ scripts: [Script]) throws -> [[[Float]]] {
        try scripts.map { script in
            let cache = model.makeCache(contextLength: Self.contextLength(scripts))
            var rows: [[Float]] = []
            var position = 0
            for chunk in script.chunks {
                rows.append(try model.evaluate(script.prompt[position ..< position + chunk], cache: cache, threadCount: 2))
                position += chunk
            }
            for _ in 0 ..< script.steps {
                rows.append(try model.evaluate([Self.argmax(rows.last![...])], cache: cache, threadCount: 2))
            }
            return rows
        }
    }

    /// The same rows with every sequence advanced by one call per round, all in one batch:
    /// sequence 0 decodes from the second round while sequence 2 is still prefilling.
    static func together(_ model: TransformerModel, _ scripts: [Script]) throws -> [[[Float]]] {
        let caches = scripts.map { _ in model.makeCache(contextLength: Self.contextLength(scripts)) }
        var rows = scripts.map { _ in [[Float]]() }
        var positions = scripts.map { _ in 0 }
        let workspace = ForwardWorkspace()
        var logits: [Float] = []
        let vocabulary = model.configuration.vocabularySize
        while true {
            var batch: [TransformerModel.SequenceTokens] = [], members: [Int] = []
            for (index, script) in scripts.enumerated() where rows[index].count < script.chunks.count + script.steps {
                let call = rows[index].count
                let tokens: ArraySlice<Int>
                if call < script.chunks.count {
                    tokens = script.prompt[positions[index] ..< positions[index] + script.chunks[call]]
                    positions[index] += script.chunks[call]
                } else {
                    tokens = [Self.argmax(rows[index].last![...])][...]
                }
                batch.append(.init(cache: caches[index], tokens: tokens))
                members.append(index)
            }
            if batch.isEmpty { return rows }
            try model.evaluate(batch, workspace: workspace, threadCount: 2, into: &logits)
            #expect(logits.count == batch.count * vocabulary)
            for (row, index) in members.enumerated() {
                rows[index].append(Array(logits[row * vocabulary ..< (row + 1) * vocabulary]))
            }
        }
    }

    /// How many of the logits differ in any bit.
    static func differing(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Int {
        zip(a, b).filter { $0.0.bitPattern != $0.1.bitPattern }.count
    }

    /// Asking for the last row's logits only, where the last block computes only that row
    /// (`ForwardPass.run`), gives that row of every row's logits bit for bit, and leaves the
    /// same cache behind: the next token's logits agree too.
    static func checkLastRowsOnly(_ model: TransformerModel, _ scripts: [Script]) throws {
        let vocabulary = model.configuration.vocabularySize
        var allRows: [[Float]] = []
        for (index, script) in scripts.enumerated() {
            let narrowed = model.makeCache(contextLength: Self.contextLength(scripts))
            let full = model.makeCache(contextLength: Self.contextLength(scripts))
            let last = try model.evaluate(script.prompt, cache: narrowed, threadCount: 2)
            let all = try model.evaluate(script.prompt, cache: full, threadCount: 2, logits: .all)
            allRows.append(all)
            #expect(all.count == script.prompt.count * vocabulary && last.count == vocabulary)
            #expect(Self.differing(last[...], all.suffix(vocabulary)) == 0, "sequence \(index): the last row's logits differ")
            let next = [Self.argmax(last[...])]
            let after = try model.evaluate(next, cache: narrowed, threadCount: 2)
            let expected = try model.evaluate(next, cache: full, threadCount: 2)
            #expect(Self.differing(after[...], expected[...]) == 0, "sequence \(index): the next token's logits differ")
            // The last few rows (a provisional token's pass asks for two).
            for rows in 2 ... 3 where rows <= script.prompt.count {
                let some = try model.evaluate(script.prompt, cache: model.makeCache(contextLength: Self.contextLength(scripts)),
                                              threadCount: 2, logits: .lastRows(rows))
                #expect(some.count == rows * vocabulary && Self.differing(some[...], all.suffix(rows * vocabulary)) == 0,
                        "sequence \(index): the last \(rows) rows' logits differ")
            }
        }
        // Batched, each sequence asking for its last two rows or one, alternately.
        let rowCounts = scripts.indices.map { min($0 % 2 == 0 ? 2 : 1, scripts[$0].prompt.count) }
        let batch = scripts.indices.map {
            TransformerModel.SequenceTokens(cache: model.makeCache(contextLength: Self.contextLength(scripts)),
                                            tokens: scripts[$0].prompt[...], logitRows: rowCounts[$0])
        }
        var logits: [Float] = []
        try model.evaluate(batch, workspace: ForwardWorkspace(), threadCount: 2, into: &logits)
        #expect(logits.count == rowCounts.reduce(0, +) * vocabulary)
        var offset = 0
        for (index, rows) in rowCounts.enumerated() where offset + rows * vocabulary <= logits.count {
            #expect(Self.differing(logits[offset ..< offset + rows * vocabulary], allRows[index].suffix(rows * vocabulary)) == 0,
                    "sequence \(index) in a batch: its last \(rows) rows' logits differ")
            offset += rows * vocabulary
        }
    }

    static func check(_ model: TransformerModel) throws {
        #expect(model.everyMatrixIsPacked)
        let scripts = Self.scripts(for: model.configuration)
        try checkLastRowsOnly(model, scripts)
        let expected = try alone(model, scripts)
        let actual = try together(model, scripts)
        for (index, script) in scripts.enumerated() {
            #expect(actual[index].count == script.chunks.count + script.steps)
            for (call, (a, b)) in zip(actual[index], expected[index]).enumerated() {
                let differing = Self.differing(a[...], b[...])
                #expect(differing == 0, "sequence \(index), call \(call): \(differing) logits differ")
            }
        }
    }

    /// Gemma 3 adds sliding-window attention (each sequence's window of its own cache).
    @Test(arguments: ["smollm2", "gemma3"])
    func realSequencesGetTheirOwnLogitsInABatch(name: String) throws {
        let fileName = TestModels.fileName(of: name)
        guard TestModels.shouldRun(fileName) else { return }
        try Self.check(try TransformerModel(contentsOf: TestModels.path(of: fileName)))
    }

    /// The other families' steps (LFM2's convolutions, which keep per-sequence inputs; Phi-3's
    /// fused projections; Qwen 3's per-head norms; YaRN's angles; Qwen 3 MoE's rows grouped by
    /// expert, each expert's products over however many rows chose it), on the random-weight
    /// models.
    @Test(.enabled(if: TestModels.shouldRunSynthetic), arguments: ["lfm2", "phi3", "qwen3", "qwen2-yarn", "qwen3moe", "lfm2moe", "gpt-oss", "gemma4", "gemma4-moe",
                                                                    "qwen35"])
    func syntheticSequencesGetTheirOwnLogitsInABatch(name: String) throws {
        try Self.check(try TransformerModel(file: try TestModels.packableSynthetic(of: name)))
    }

    /// Whether a model's products are all packed (and so batch-invariant) is known: the
    /// synthetic models mix in F16 matrices, which have no packed kernels.
    @Test(.enabled(if: TestModels.shouldRunSynthetic))
    func modelsSayWhetherEveryMatrixIsPacked() throws {
        #expect(!(try TransformerModel(contentsOf: TestModels.syntheticPath(of: "lfm2"))).everyMatrixIsPacked)
        #expect(try TransformerModel(file: try TestModels.packableSynthetic(of: "lfm2")).everyMatrixIsPacked)
    }
}
