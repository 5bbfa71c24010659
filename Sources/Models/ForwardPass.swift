import Foundation
import GGUF
import Kernels

/// One forward call: a batch of tokens through every block, over a workspace. The batch is
/// one or several sequences, each extending its own cache: their rows go through the products
/// together (the weights are read once for all of them), and each sequence's rows attend to
/// its own cache only.
///
///     embed ─► for each block: mixer (attention or short convolution), feed-forward ─► logits
///
///     rows:  ┌ sequence A: tokens at A's positions p…p+n ┐┌ B: one token at q ┐┌ C … ┐
///            products, norms, RoPE (each row its own position), residuals: all rows at once
///            attention, convolution, the cache store: per sequence, on its own cache
///
/// Each step is a method; the per-row operations between the products (norms, biases, RoPE,
/// the queries' scaling and rounding, gating, residual adds) are split across the threads, as
/// the products are: on two cores a serial step costs its full time while the other waits.
/// Those of a few rows (a decode step's) run on the calling thread instead, where handing them
/// over would cost more than they do (`floatsWorthSplitting`).
///
/// A row's values do not depend on the other rows of the batch: the products compute each
/// input column with the same arithmetic whatever the batch size (the packed kernels are one
/// code over one, four or eight columns), and every other step is per row or per sequence.
/// So a sequence gets the same logits, bit for bit, alone or batched with others.
struct ForwardPass {
    let model: TransformerModel
    let workspace: ForwardWorkspace
    /// The call's sequences, in row order.
    let sequences: [SequenceRows]
    /// Rows in this call (tokens of every sequence).
    let count: Int
    let threadCount: Int
    let width: Int
    let epsilon: Float

    /// A call over `sequences` (rows in order, from 0, covering `0 ..< tokenCount`), using
    /// `workspace`, which is sized for the call here.
    init(model: TransformerModel, sequences: [SequenceRows], tokenCount: Int, workspace: ForwardWorkspace, threadCount: Int) {
        let configuration = model.configuration
        workspace.reserve(rows: tokenCount, for: model)
        self.model = model
        self.workspace = workspace
        self.sequences = sequences
        self.count = tokenCount
        self.threadCount = threadCount
        self.width = configuration.embeddingLength
        self.epsilon = Float(configuration.rmsNormEpsilon)
        // The angle tables of the model's rotary embeddings, a row per token at its sequence's
        // position (with the embeddings of its cache's context length: LongRoPE's depend on it).
        let count = model.rotaryEmbeddings.count
        if workspace.rotaryAngles.count != count { workspace.rotaryAngles = Array(repeating: RotaryAngles(), count: count) }
        for index in 0 ..< count {
            workspace.rotaryAngles[index].removeAll()
            for sequence in sequences {
                model.rotaryEmbeddings(contextLength: sequence.cache.contextLength)[index]
                    .appendAngles(positions: sequence.start ..< sequence.start + sequence.rows.count, to: &workspace.rotaryAngles[index])
            }
        }
    }

    /// Runs `tokens` (every sequence's, in row order) and writes the logits asked for into
    /// `result` (resized if needed): with `.last`, each sequence's last `outputRows` rows, in
    /// sequence order.
    ///
    /// With `.last`, the last block computes only the rows whose logits are asked for once it
    /// has stored every row's keys and values (or convolution inputs): the other rows'
    /// outputs of that block feed nothing, as in llama.cpp's graphs, which keep only the
    /// output rows before the last block's attention. A multi-token pass (a prompt, the tokens
    /// jump-forward decoding appends) then costs one block's worth of products less per extra
    /// row. The rows kept get the same values as with every row computed.
    ///
    /// With `projectingToVocabulary` false, `result` gets the rows' last hidden states instead
    /// of their logits: the final norm's output, `width` floats per row (llama.cpp's
    /// `result_norm`, what its embeddings are pooled from).
    ///
    /// - Precondition: unless `.all`, each sequence's `outputRows` is within `1 ... rows.count`
    ///   (the caller sets it for `.lastRows`).
    func run(
        _ tokens: ArraySlice<Int>, logits: TransformerModel.Logits, projectingToVocabulary: Bool = true, into result: inout [Float]
    ) throws(KernelError) {
        try embed(tokens)
        var lastRowsOnly = false
        if case .all = logits {} else if count > outputRowCount { lastRowsOnly = true }
        defer { workspace.lastRows.removeAll(keepingCapacity: true) }
        for sequence in sequences { sequence.cache.recurrentState?.beginPass(at: sequence.start, rows: sequence.rows.count) }
        do {
            try runBlocks(lastRowsOnly: lastRowsOnly, logits: logits, projectingToVocabulary: projectingToVocabulary, into: &result)
        } catch {
            for sequence in sequences { sequence.cache.recurrentState?.abandonPass() }
            throw error
        }
        for sequence in sequences {
            for row in sequence.rows { sequence.cache.append(tokens[tokens.startIndex + row]) }
        }
    }

    /// The blocks and the output logits; the last block on the pass `narrowedToLastRows`
    /// returns when `lastRowsOnly`. (Its own function so that the narrowed pass, which holds
    /// `workspace.lastRows`, is gone before `run` empties that list.)
    private func runBlocks(
        lastRowsOnly: Bool, logits: TransformerModel.Logits, projectingToVocabulary: Bool, into result: inout [Float]
    ) throws(KernelError) {
        var pass = self
        for (index, block) in model.blocks.enumerated() {
            let narrows = lastRowsOnly && index == model.blocks.count - 1
            switch block.mixer {
            case let .attention(attention): pass = try attend(block, attention, narrowingToLastRows: narrows)
            case let .shortConvolution(convolution):
                try convolve(block, convolution)
                if narrows { pass = narrowedToLastRows() }
            case let .gatedDeltaNet(deltaNet):
                try runGatedDeltaNet(block, deltaNet)
                if narrows { pass = narrowedToLastRows() }
            case let .mamba2(mamba):
                try runMamba2(block, mamba)
                if narrows { pass = narrowedToLastRows() }
            }
            try pass.feedForward(block)
            if let perLayerInput = block.perLayerInput { try pass.addPerLayerInput(perLayerInput, block: index) }
            if let scale = block.outputScale { pass.scaleResidual(by: scale) }
        }
        try pass.outputLogits(logits, projectingToVocabulary: projectingToVocabulary, into: &result)
    }

    /// Rows whose logits `.last` asks for: every sequence's `outputRows`.
    private var outputRowCount: Int { sequences.reduce(0) { $0 + $1.outputRows } }

    /// This pass over each sequence's last `outputRows` rows only: those rows of the residual
    /// (and of each `carried` buffer, of `width`-float rows) move to the front,
    /// in sequence order, and each sequence becomes those rows at its last positions. Every
    /// step after it then reads and writes those rows.
    ///
    ///     rows before:  A0 A1 A2 | B0 | C0 C1      sequences A (3 rows), B (1), C (2 rows, 2 output rows)
    ///     rows after:   A2 B0 C0 C1                 A's and B's last row, C's two
    ///
    /// A row moves to a row at or before it, in increasing order, so a move never overwrites
    /// a row still to be moved.
    private func narrowedToLastRows(carrying carried: [(buffer: UnsafeMutableBufferPointer<Float>, width: Int)] = []) -> ForwardPass {
        workspace.lastRows.removeAll(keepingCapacity: true)
        // The residual, the buffer given, and the per-layer inputs the blocks still read.
        let perLayerWidth = model.perLayerEmbeddings.map { $0.width * model.blocks.count }
        func move(_ buffer: UnsafeMutableBufferPointer<Float>, rowWidth: Int, from row: Int, to target: Int) {
            (buffer.baseAddress! + target * rowWidth).update(from: buffer.baseAddress! + row * rowWidth, count: rowWidth)
        }
        var next = 0
        for sequence in sequences {
            let kept = sequence.rows.upperBound - sequence.outputRows ..< sequence.rows.upperBound
            for (offset, row) in kept.enumerated() where row != next + offset {
                move(workspace.residual, rowWidth: width, from: row, to: next + offset)
                for (buffer, rowWidth) in carried { move(buffer, rowWidth: rowWidth, from: row, to: next + offset) }
                if let perLayerWidth { move(workspace.perLayerInputs, rowWidth: perLayerWidth, from: row, to: next + offset) }
            }
            workspace.lastRows.append(SequenceRows(
                cache: sequence.cache, rows: next ..< next + kept.count, start: sequence.start + sequence.rows.count - kept.count,
                outputRows: kept.count))
            next += kept.count
        }
        return ForwardPass(model: model, workspace: workspace, sequences: workspace.lastRows, count: next,
                           threadCount: threadCount, width: width, epsilon: epsilon)
    }

    private init(model: TransformerModel, workspace: ForwardWorkspace, sequences: [SequenceRows], count: Int, threadCount: Int,
                 width: Int, epsilon: Float) {
        self.model = model
        self.workspace = workspace
        self.sequences = sequences
        self.count = count
        self.threadCount = threadCount
        self.width = width
        self.epsilon = epsilon
    }

    // MARK: Steps

    /// `residual[row] = embedding(token)` (× √width where the family scales it).
    private func embed(_ tokens: ArraySlice<Int>) throws(KernelError) {
        let residual = workspace.residual
        for (row, token) in tokens.enumerated() {
            try Dequantization.dequantizeRow(token, of: model.tokenEmbedding, into: rows(residual, row ..< row + 1, width: width))
        }
        if model.traits.scalesEmbeddings {
            let factor = Float(width).squareRoot()
            for index in 0 ..< count * width { residual[index] *= factor }
        }
        if let factor = model.configuration.multipliers.embedding {
            for index in 0 ..< count * width { residual[index] *= factor }
        }
        if let perLayer = model.perLayerEmbeddings { try embedPerLayer(tokens, perLayer) }
    }

    /// Gemma 4's per-layer inputs of every row (``PerLayerEmbeddings``), from the scaled
    /// embeddings in `residual`, into `workspace.perLayerInputs`, in llama.cpp's order:
    /// the projection scaled by 1/√width and normalized per block, plus the token's row
    /// scaled by √(per-layer width), the sum scaled by 1/√2.
    private func embedPerLayer(_ tokens: ArraySlice<Int>, _ perLayer: PerLayerEmbeddings) throws(KernelError) {
        let rowWidth = perLayer.width * model.blocks.count
        let inputs = rows(workspace.perLayerInputs, 0 ..< count, width: rowWidth)
        try project((perLayer.projection, inputs), input: rows(workspace.residual, 0 ..< count, width: width))
        let projectionScale = 1 / Float(width).squareRoot(), embeddingScale = Float(perLayer.width).squareRoot()
        let sumScale = 1 / Float(2).squareRoot()
        let epsilon = epsilon
        perLayer.norm.withUnsafeBufferPointer { norm in
            for index in inputs.indices { inputs[index] *= projectionScale }
            _rmsNorm(inputs, width: perLayer.width, weight: norm, epsilon: epsilon)
        }
        let token = workspace.perLayerToken
        for (row, id) in tokens.enumerated() {
            try Dequantization.dequantizeRow(id, of: perLayer.tokenEmbedding, into: token)
            let target = inputs.baseAddress! + row * rowWidth
            for column in 0 ..< rowWidth { target[column] = (target[column] + token[column] * embeddingScale) * sumScale }
        }
    }

    /// Gemma 4's per-layer input of block `block` (``PerLayerInputWeights``): the gate's GELU
    /// of the residual times the block's per-layer input, projected back, normalized, added.
    private func addPerLayerInput(_ weights: PerLayerInputWeights, block: Int) throws(KernelError) {
        let perLayerWidth = weights.gate.outputWidth, rowWidth = perLayerWidth * model.blocks.count
        let gates = rows(workspace.gates, 0 ..< count, width: perLayerWidth)
        try project((weights.gate, gates), input: rows(workspace.residual, 0 ..< count, width: width))
        let inputs = workspace.perLayerInputs
        forEachRowRange(floatsPerRow: 2 * perLayerWidth) { range in
            for row in range {
                _geGLU(rows(gates, row ..< row + 1, width: perLayerWidth),
                       UnsafeBufferPointer(start: inputs.baseAddress! + row * rowWidth + block * perLayerWidth, count: perLayerWidth))
            }
        }
        try project((weights.projection, rows(workspace.projected, 0 ..< count, width: width)), input: gates)
        addToResidual(postNorm: weights.norm)
    }

    /// `residual ×= scale` (Gemma 4's `layer_output_scale`).
    private func scaleResidual(by scale: Float) {
        let residual = workspace.residual, width = width
        forEachRowRange(floatsPerRow: width) { range in
            for index in range.lowerBound * width ..< range.upperBound * width { residual[index] *= scale }
        }
    }

    /// Attention: norm, query/key/value projections, per-head norms, RoPE, the queries'
    /// scaling and rounding to half, the cache, causal attention, output projection, residual.
    /// With `narrowingToLastRows`, every row's keys and values go into the caches, then only
    /// each sequence's last row goes on, on the pass returned (`narrowedToLastRows`); else
    /// the pass is this one.
    private func attend(_ block: BlockWeights, _ attention: AttentionWeights, narrowingToLastRows: Bool) throws(KernelError) -> ForwardPass {
        let headCount = model.configuration.headCount, headWidth = attention.headWidth
        let keyValueHeads = attention.keyValueHeadCount
        let queryWidth = headCount * headWidth, keyWidth = keyValueHeads * headWidth
        let queries = rows(workspace.queries, 0 ..< count, width: queryWidth)
        let keys = rows(workspace.keys, 0 ..< count, width: keyWidth)
        let values = rows(workspace.values, 0 ..< count, width: keyWidth)
        // A gated block's query projection gives each head its queries then its gate logits:
        // projected here whole, the queries copied out below, the gates read after attention.
        let gatedWidth = attention.gatesOutput ? 2 * queryWidth : 0
        let gatedQueries = rows(workspace.attentionGates, 0 ..< count, width: gatedWidth)
        let (queryTarget, targetWidth) = attention.gatesOutput ? (gatedQueries, gatedWidth) : (queries, queryWidth)
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.mixerNorm)
        var hasKeysAndValues = true
        switch attention.inputs {
        case let .separate(query, key, value?):
            try project((query, queryTarget), (key, keys), (value, values))
        case let .separate(query, key, nil):
            try project((query, queryTarget), (key, keys))
            values.baseAddress!.update(from: keys.baseAddress!, count: keys.count)
        case let .queries(query):
            try project((query, queryTarget))
            hasKeysAndValues = false
        case let .fused(projection):
            let fused = rows(workspace.fused, 0 ..< count, width: projection.outputWidth)
            try project((projection, fused))
            forEachRowRange(floatsPerRow: projection.outputWidth) { range in
                for row in range {
                    let source = fused.baseAddress! + row * projection.outputWidth
                    (queryTarget.baseAddress! + row * targetWidth).update(from: source, count: targetWidth)
                    (keys.baseAddress! + row * keyWidth).update(from: source + targetWidth, count: keyWidth)
                    (values.baseAddress! + row * keyWidth).update(from: source + targetWidth + keyWidth, count: keyWidth)
                }
            }
        }
        if attention.gatesOutput {
            forEachRowRange(floatsPerRow: gatedWidth) { range in
                for row in range {
                    for head in 0 ..< headCount {
                        (queries.baseAddress! + row * queryWidth + head * headWidth)
                            .update(from: gatedQueries.baseAddress! + row * gatedWidth + 2 * head * headWidth, count: headWidth)
                    }
                }
            }
        }

        let angles = attention.rotary.map { workspace.rotaryAngles[$0] }
        let scalesQueries = model.traits.scalesQueriesBeforeAttention
        let scale = model.attentionScale
        let pairing = model.traits.rotaryPairing
        (attention.queryNorm ?? []).withUnsafeBufferPointer { queryNorm in
            (attention.keyNorm ?? []).withUnsafeBufferPointer { keyNorm in
                (attention.valueNorm ?? []).withUnsafeBufferPointer { valueNorm in
                forEachRowRange(floatsPerRow: queryWidth + keyWidth) { range in
                    if attention.queryNorm != nil {
                        _rmsNorm(rows(queries, range, width: queryWidth), width: headWidth, weight: queryNorm, epsilon: epsilon)
                    }
                    if attention.keyNorm != nil, hasKeysAndValues {
                        _rmsNorm(rows(keys, range, width: keyWidth), width: headWidth, weight: keyNorm, epsilon: epsilon)
                    }
                    if attention.valueNorm != nil, hasKeysAndValues {
                        _rmsNorm(rows(values, range, width: keyWidth), width: headWidth, weight: valueNorm, epsilon: epsilon)
                    }
                    if let angles {
                        _applyRotary(queries.baseAddress!, rows: range, headCount: headCount, headWidth: headWidth, angles: angles, pairing: pairing)
                        if hasKeysAndValues {
                            _applyRotary(keys.baseAddress!, rows: range, headCount: keyValueHeads, headWidth: headWidth, angles: angles, pairing: pairing)
                        }
                    }
                    // llama.cpp multiplies Q by the attention scale here when the family says so
                    // (Gemma, Phi-3), then rounds it to half for the F16 product with the cache.
                    let rowQueries = rows(queries, range, width: queryWidth)
                    if scalesQueries { for index in rowQueries.indices { rowQueries[index] *= scale } }
                    _roundToHalfPrecision(rowQueries)
                }
                }
            }
        }
        for sequence in sequences where hasKeysAndValues {
            let slot = block.cacheSlot
            sequence.cache.store(UnsafeBufferPointer(rows(keys, sequence.rows, width: keyWidth)), slot: slot, position: sequence.start, keys: true)
            sequence.cache.store(UnsafeBufferPointer(rows(values, sequence.rows, width: keyWidth)), slot: slot, position: sequence.start, keys: false)
        }
        let carried = attention.gatesOutput ? [(queries, queryWidth), (gatedQueries, gatedWidth)] : [(queries, queryWidth)]
        let pass = narrowingToLastRows ? narrowedToLastRows(carrying: carried) : self
        pass.attendToCaches(slot: block.cacheSlot, window: attention.window ?? Int.max, keyValueHeads: keyValueHeads,
                            headWidth: headWidth, scale: scalesQueries ? 1 : scale, sinks: attention.sinks)
        if attention.gatesOutput { pass.gateAttention(headCount: headCount, headWidth: headWidth) }
        try pass.project((attention.output, rows(workspace.projected, 0 ..< pass.count, width: width)),
                         input: rows(workspace.attended, 0 ..< pass.count, width: queryWidth))
        pass.addToResidual(postNorm: block.postMixerNorm)
        return pass
    }

    /// Causal attention of every row to its own sequence's cache (slot `slot`, which holds
    /// the rows' keys and values by now): the heads of every row of the call, in the units of
    /// ``AttentionParts``, all sequences' shared out across the threads in one dispatch.
    private func attendToCaches(slot: Int, window: Int, keyValueHeads: Int, headWidth: Int, scale: Float, sinks: [Float]?) {
        let headCount = model.configuration.headCount
        let queryWidth = headCount * headWidth
        var positionCapacity = 16
        for sequence in sequences {
            positionCapacity = max(positionCapacity, (sequence.start + sequence.rows.count + 15) / 16 * 16 + 16)
        }
        let queries = UnsafePointer(workspace.queries.baseAddress!), attended = workspace.attended.baseAddress!
        // Whole groups of query heads per unit when there are enough of them to share out
        // (four per thread), slices of groups otherwise.
        let groups = sequences.reduce(0) { $0 + $1.rows.count } * keyValueHeads
        let groupSize = headCount / keyValueHeads
        let threads = min(threadCount, KernelThreadPool.shared.threadCount)
        let slices = min(groupSize, max(1, (4 * threads + groups - 1) / groups))
        // The sinks (`[]` for none: a buffer without a base address) outlive the dispatch.
        (sinks ?? []).withUnsafeBufferPointer { sinks in
        withUnsafeTemporaryAllocation(of: (job: AttentionJob, units: Range<Int>).self, capacity: sequences.count) { attentions in
            var units = 0
            for (index, sequence) in sequences.enumerated() {
                // The cache's storage outlives the call: the jobs read it through pointers, as
                // the thread pool's jobs read every buffer.
                let (cachedKeys, cachedValues, headStride) = sequence.cache.storage(slot: slot)
                let job = AttentionJob(
                    queries: queries + sequence.rows.lowerBound * queryWidth, keys: cachedKeys, values: cachedValues,
                    output: attended + sequence.rows.lowerBound * queryWidth, start: sequence.start, headCount: headCount,
                    headWidth: headWidth, groupSize: groupSize, headStride: headStride,
                    window: window, scale: scale, sinks: sinks.isEmpty ? nil : sinks.baseAddress)
                let count = AttentionParts.unitCount(rows: sequence.rows.count, job: job, slices: slices)
                (attentions.baseAddress! + index).initialize(to: (job, units ..< units + count))
                units += count
            }
            defer { attentions.baseAddress!.deinitialize(count: sequences.count) }
            KernelThreadPool.shared.forEachRange(
                of: units, parts: units >= 2 ? threads : 1,
                job: AttentionParts(jobs: UnsafeBufferPointer(rebasing: attentions[..<sequences.count]), slices: slices,
                                    positionCapacity: positionCapacity))
        }
        }
    }

    /// `attended ⊙= σ(gate)` for each head (Qwen 3.5's gated attention), the gates the second
    /// half of each head's query projection in `workspace.attentionGates`.
    private func gateAttention(headCount: Int, headWidth: Int) {
        let queryWidth = headCount * headWidth
        let attended = workspace.attended, gates = workspace.attentionGates
        forEachRowRange(floatsPerRow: 2 * queryWidth) { range in
            for row in range {
                for head in 0 ..< headCount {
                    let output = attended.baseAddress! + row * queryWidth + head * headWidth
                    let gate = gates.baseAddress! + row * 2 * queryWidth + (2 * head + 1) * headWidth
                    for index in 0 ..< headWidth { output[index] *= 1 / (1 + expf(-gate[index])) }
                }
            }
        }
    }

    /// Qwen 3.5's Gated DeltaNet (``GatedDeltaNetWeights``): norm, the projections (α and β
    /// row by row, as the router's), each sequence's recurrence on its own cache's state,
    /// the gated norm of the outputs, the output projection, residual.
    private func runGatedDeltaNet(_ block: BlockWeights, _ deltaNet: GatedDeltaNetWeights) throws(KernelError) {
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.mixerNorm)
        let shape = deltaNet.recurrence.shape
        let convolutionWidth = shape.convolutionWidth, heads = shape.valueHeadCount, valueWidth = heads * shape.headWidth
        let mixed = rows(workspace.fused, 0 ..< count, width: convolutionWidth)
        let gates = rows(workspace.gates, 0 ..< count, width: valueWidth)
        try project((deltaNet.inputs, mixed), (deltaNet.outputGate, gates))
        // Each row's α, then its β.
        let perHead = shape.headInputWidth
        let gateRows = workspace.recurrentGates.baseAddress!
        for row in 0 ..< count {
            try project((deltaNet.decayInput, UnsafeMutableBufferPointer(start: gateRows + row * perHead, count: heads)),
                        (deltaNet.updateInput, UnsafeMutableBufferPointer(start: gateRows + row * perHead + heads, count: heads)),
                        input: rows(workspace.normalized, row ..< row + 1, width: width), rows: 1)
        }
        let outputs = rows(workspace.ups, 0 ..< count, width: valueWidth)
        for sequence in sequences {
            let first = sequence.rows.lowerBound
            let inputs = RecurrenceInputs(
                convolution: mixed.baseAddress! + first * convolutionWidth, convolutionStride: convolutionWidth,
                heads: gateRows + first * perHead, headStride: perHead)
            sequence.cache.recurrentState!.advance(
                block: block.cacheSlot, rows: sequence.rows.count, inputs: inputs, outputs: outputs.baseAddress! + first * valueWidth,
                scratch: workspace.recurrentScratch.baseAddress!, threadCount: threadCount)
        }
        let headWidth = shape.headWidth, epsilon = epsilon
        deltaNet.norm.withUnsafeBufferPointer { norm in
            forEachRowRange(floatsPerRow: 2 * valueWidth) { range in
                let rowOutputs = rows(outputs, range, width: valueWidth)
                _rmsNorm(rowOutputs, width: headWidth, weight: norm, epsilon: epsilon)
                _swiGLU(rows(gates, range, width: valueWidth), UnsafeBufferPointer(rowOutputs))
            }
        }
        try project((deltaNet.output, rows(workspace.projected, 0 ..< count, width: width)), input: gates)
        addToResidual(postNorm: block.postMixerNorm)
    }

    /// Granite 4's Mamba2 (``Mamba2Weights``): norm, the input projection, each sequence's
    /// recurrence on its own cache's state (reading the convolution's inputs and the time steps
    /// in place), `y ⊙ SiLU(z)` normalized per group, the output projection, residual.
    private func runMamba2(_ block: BlockWeights, _ mamba: Mamba2Weights) throws(KernelError) {
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.mixerNorm)
        let shape = mamba.recurrence.shape
        let projectedWidth = shape.inputProjectionWidth, inner = shape.innerSize
        let projected = rows(workspace.fused, 0 ..< count, width: projectedWidth)
        try project((mamba.inputs, projected))
        let outputs = rows(workspace.ups, 0 ..< count, width: inner)
        for sequence in sequences {
            let first = projected.baseAddress! + sequence.rows.lowerBound * projectedWidth
            let inputs = RecurrenceInputs(convolution: first + inner, convolutionStride: projectedWidth,
                                          heads: first + inner + shape.convolutionWidth, headStride: projectedWidth)
            sequence.cache.recurrentState!.advance(
                block: block.cacheSlot, rows: sequence.rows.count, inputs: inputs,
                outputs: outputs.baseAddress! + sequence.rows.lowerBound * inner,
                scratch: workspace.recurrentScratch.baseAddress!, threadCount: threadCount)
        }
        // y ⊙ SiLU(z) (z copied out of the projection's rows), then the norm over each group.
        let gated = rows(workspace.gates, 0 ..< count, width: inner)
        let groupWidth = inner / shape.groupCount, epsilon = epsilon
        mamba.norm.withUnsafeBufferPointer { norm in
            forEachRowRange(floatsPerRow: 2 * inner) { range in
                for row in range {
                    let target = gated.baseAddress! + row * inner
                    target.update(from: projected.baseAddress! + row * projectedWidth, count: inner)
                    _swiGLU(UnsafeMutableBufferPointer(start: target, count: inner), UnsafeBufferPointer(start: outputs.baseAddress! + row * inner, count: inner))
                    for group in 0 ..< shape.groupCount {
                        _rmsNorm(UnsafeMutableBufferPointer(start: target + group * groupWidth, count: groupWidth), width: groupWidth,
                                 weight: UnsafeBufferPointer(rebasing: norm[group * groupWidth ..< (group + 1) * groupWidth]), epsilon: epsilon)
                    }
                }
            }
        }
        try project((mamba.output, rows(workspace.projected, 0 ..< count, width: width)), input: gated)
        addToResidual(postNorm: block.postMixerNorm)
    }

    /// LFM2's short convolution: norm, in-projection to B, C, x, the gated inputs `B ⊙ x` into
    /// the cache, the causal convolution over them, `C ⊙` its output, out-projection, residual.
    private func convolve(_ block: BlockWeights, _ convolution: ShortConvolutionWeights) throws(KernelError) {
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.mixerNorm)
        let bcx = rows(workspace.fused, 0 ..< count, width: 3 * width)
        try project((convolution.inputProjection, bcx))
        let width = width
        let gated = workspace.normalized
        for sequence in sequences {
            let history = sequence.cache.convolutionInputs(slot: block.cacheSlot)
            let start = sequence.start, first = sequence.rows.lowerBound
            // The gated inputs of this call's positions, then the convolution over them and
            // the ones before (all stored by now), row by row.
            _forEachRowRange(sequence.rows.count, floatsPerRow: 3 * width, threadCount: threadCount) { range in
                for offset in range {
                    let source = bcx.baseAddress! + (first + offset) * 3 * width
                    _gatedProduct(source, source + 2 * width, into: history + (start + offset) * width, count: width)
                }
            }
            convolution.kernel.withUnsafeBufferPointer { kernel in
                _forEachRowRange(sequence.rows.count, floatsPerRow: 3 * width, threadCount: threadCount) { range in
                    for offset in range {
                        let output = gated.baseAddress! + (first + offset) * width
                        _shortConvolution(history: UnsafePointer(history), position: start + offset, width: width,
                                          kernel: kernel.baseAddress!, length: convolution.length, into: output)
                        let gate = bcx.baseAddress! + (first + offset) * 3 * width + width
                        _gatedProduct(gate, output, into: output, count: width)
                    }
                }
            }
        }
        try project((convolution.outputProjection, rows(workspace.projected, 0 ..< count, width: width)),
                    input: rows(gated, 0 ..< count, width: width))
        addToResidual(postNorm: block.postMixerNorm)
    }

    /// The feed-forward network, or the mixture of experts, after the norm; then the residual.
    private func feedForward(_ block: BlockWeights) throws(KernelError) {
        normalize(from: workspace.residual, into: workspace.normalized, weight: block.feedForwardNorm)
        switch block.feedForward {
        case let .dense(weights): try feedForward(weights)
        case let .experts(experts):
            try chooseExperts(experts)
            try runExperts(experts)
        case let .expertsAndSharedExpert(experts, shared):
            // The shared expert first, kept aside, then the mixture on the same input; the
            // mixture's output plus the shared one's.
            try chooseExperts(experts)
            try feedForward(shared)
            let sharedOutputs = rows(workspace.denseOutputs, 0 ..< count, width: width)
            sharedOutputs.baseAddress!.update(from: workspace.projected.baseAddress!, count: count * width)
            try runExperts(experts)
            let projected = workspace.projected, width = width
            forEachRowRange(floatsPerRow: width) { range in
                for index in range.lowerBound * width ..< range.upperBound * width { projected[index] += sharedOutputs[index] }
            }
        case let .denseAndExperts(both):
            // The router first (it reads its own norm of the residual), then the dense network,
            // kept aside, then the experts on their input; the sum goes on as one network's.
            normalize(from: workspace.residual, into: workspace.normalized, weight: both.routerNorm)
            try chooseExperts(both.experts)
            normalize(from: workspace.residual, into: workspace.normalized, weight: block.feedForwardNorm)
            try feedForward(both.dense)
            let dense = rows(workspace.denseOutputs, 0 ..< count, width: width)
            normalize(from: workspace.projected, into: dense, weight: both.densePostNorm)
            normalize(from: workspace.residual, into: workspace.normalized, weight: both.expertsNorm)
            try runExperts(both.experts)
            let projected = workspace.projected, width = width, epsilon = epsilon
            both.expertsPostNorm.withUnsafeBufferPointer { norm in
                forEachRowRange(floatsPerRow: 2 * width) { range in
                    _rmsNorm(rows(projected, range, width: width), width: width, weight: norm, epsilon: epsilon)
                    for index in range.lowerBound * width ..< range.upperBound * width { projected[index] = dense[index] + projected[index] }
                }
            }
        }
        addToResidual(postNorm: block.postFeedForwardNorm)
    }

    /// Gate and up projections, `act(gate) · up`, down projection, into `projected`.
    private func feedForward(_ feedForward: FeedForwardWeights) throws(KernelError) {
        let hiddenWidth = feedForward.hiddenWidth
        let gates = rows(workspace.gates, 0 ..< count, width: hiddenWidth)
        let ups = rows(workspace.ups, 0 ..< count, width: hiddenWidth)
        switch feedForward.inputs {
        case let .separate(gate, up):
            try project((gate, gates), (up, ups))
        case let .fused(projection):
            let fused = rows(workspace.fused, 0 ..< count, width: 2 * hiddenWidth)
            try project((projection, fused))
            forEachRowRange(floatsPerRow: 2 * hiddenWidth) { range in
                for row in range {
                    let source = fused.baseAddress! + row * 2 * hiddenWidth
                    (gates.baseAddress! + row * hiddenWidth).update(from: source, count: hiddenWidth)
                    (ups.baseAddress! + row * hiddenWidth).update(from: source + hiddenWidth, count: hiddenWidth)
                }
            }
        }
        forEachRowRange(floatsPerRow: 2 * hiddenWidth) { range in
            activate(rows(gates, range, width: hiddenWidth), rows(ups, range, width: hiddenWidth))
        }
        try project((feedForward.down, rows(workspace.projected, 0 ..< count, width: width)),
                    input: rows(gates, 0 ..< count, width: hiddenWidth))
    }

    /// `gates = activation(gates) ⊙ ups`, the family's gated activation, in place.
    private func activate(_ gates: UnsafeMutableBufferPointer<Float>, _ ups: UnsafeMutableBufferPointer<Float>) {
        switch model.traits.activation {
        case .silu: _swiGLU(gates, UnsafeBufferPointer(ups))
        case .gelu: _geGLU(gates, UnsafeBufferPointer(ups))
        case .clampedSiLU: _clampedSwiGLU(gates, UnsafeBufferPointer(ups))
        }
    }

    /// The router's scores for every row of `normalized`, and each row's chosen experts and
    /// their weights (``ExpertWeights``), into `workspace.chosenExperts` and `expertWeights`.
    private func chooseExperts(_ experts: ExpertWeights) throws(KernelError) {
        let expertCount = experts.count, used = experts.usedCount
        let scores = rows(workspace.expertScores, 0 ..< count, width: expertCount)
        // Row by row: the matrix-vector kernel's arithmetic for every batch (the router has no
        // packed copy), so a sequence's experts do not depend on the rows batched with it.
        for row in 0 ..< count {
            try project((experts.router, rows(scores, row ..< row + 1, width: expertCount)),
                        input: rows(workspace.normalized, row ..< row + 1, width: width), rows: 1)
        }
        workspace.chosenExperts.removeAll(keepingCapacity: true)
        workspace.expertWeights.removeAll(keepingCapacity: true)
        for row in 0 ..< count {
            let probabilities = rows(scores, row ..< row + 1, width: expertCount)
            switch experts.gating {
            case .softmax: _softmax(probabilities)
            case .sigmoid: _sigmoid(probabilities)
            case .softmaxOfChosen: break   // the raw outputs choose
            }
            let first = workspace.chosenExperts.count
            // The `used` largest (with the selection bias), highest first, ties to the lower index.
            for _ in 0 ..< used {
                var best = -1, bestScore: Float = 0
                for expert in 0 ..< expertCount where !workspace.chosenExperts[first...].contains(expert) {
                    let score = probabilities[expert] + (experts.selectionBias?[expert] ?? 0)
                    if best < 0 || score > bestScore { (best, bestScore) = (expert, score) }
                }
                workspace.chosenExperts.append(best)
                workspace.expertWeights.append(probabilities[best])
            }
            if experts.gating == .softmaxOfChosen {
                // A softmax over the chosen outputs, highest first, as llama.cpp orders them.
                workspace.expertWeights.withUnsafeMutableBufferPointer { weights in
                    _softmax(UnsafeMutableBufferPointer(rebasing: weights[first ..< first + used]))
                }
                continue
            }
            var sum: Float = 0
            for slot in first ..< first + used { sum += workspace.expertWeights[slot] }
            sum = max(sum, 6.103515625e-5)
            for slot in first ..< first + used { workspace.expertWeights[slot] /= sum }
        }
    }

    /// The mixture of experts (``ExpertWeights``) of the rows of `normalized`, their experts
    /// chosen (``chooseExperts(_:)``), into `projected`: each expert once over the rows routed
    /// to it (its matrices read once for the batch, as llama.cpp's `mul_mat_id` groups them; a
    /// decode step reads only its chosen experts' rows), its outputs (times the expert's scale
    /// where the model has one) added to theirs, weighted, in the order of the experts.
    private func runExperts(_ experts: ExpertWeights) throws(KernelError) {
        let expertCount = experts.count, hiddenWidth = experts.hiddenWidth, used = experts.usedCount
        if count == 1 { return try mixtureOfOneRow(experts) }
        if workspace.routedRows.count < expertCount {
            workspace.routedRows.append(contentsOf: repeatElement([], count: expertCount - workspace.routedRows.count))
        }
        for expert in 0 ..< expertCount { workspace.routedRows[expert].removeAll(keepingCapacity: true) }
        for (slot, expert) in workspace.chosenExperts.enumerated() {
            workspace.routedRows[expert].append((row: slot / used, weight: workspace.expertWeights[slot]))
        }
        let output = rows(workspace.projected, 0 ..< count, width: width)
        output.update(repeating: 0)
        let normalized = workspace.normalized
        for expert in 0 ..< expertCount where !workspace.routedRows[expert].isEmpty {
            let routed = workspace.routedRows[expert]
            let inputs = rows(workspace.expertInputs, 0 ..< routed.count, width: width)
            for (index, entry) in routed.enumerated() {
                (inputs.baseAddress! + index * width).update(from: normalized.baseAddress! + entry.row * width, count: width)
            }
            let gates = rows(workspace.gates, 0 ..< routed.count, width: hiddenWidth)
            let ups = rows(workspace.ups, 0 ..< routed.count, width: hiddenWidth)
            try project((experts.gates[expert], gates), (experts.ups[expert], ups), input: inputs, rows: routed.count)
            for index in routed.indices { activate(rows(gates, index ..< index + 1, width: hiddenWidth), rows(ups, index ..< index + 1, width: hiddenWidth)) }
            let outputs = rows(workspace.expertOutputs, 0 ..< routed.count, width: width)
            try project((experts.downs[expert], outputs), input: gates, rows: routed.count)
            if let scale = experts.outputScales?[expert] { for index in outputs.indices { outputs[index] *= scale } }
            for (index, entry) in routed.enumerated() {
                let target = output.baseAddress! + entry.row * width, source = outputs.baseAddress! + index * width
                for column in 0 ..< width { target[column] += entry.weight * source[column] }
            }
        }
    }

    /// ``mixture(of:)`` for a decode step's one row, its experts chosen: the gate and up
    /// projections of every chosen expert in one dispatch (they share the input, quantized
    /// once), each down projection, and the outputs added in the order of the experts, as
    /// the batched path adds them (so a sequence's logits do not depend on its batch).
    private func mixtureOfOneRow(_ experts: ExpertWeights) throws(KernelError) {
        let used = experts.usedCount, hiddenWidth = experts.hiddenWidth
        let gates = rows(workspace.gates, 0 ..< used, width: hiddenWidth)
        let ups = rows(workspace.ups, 0 ..< used, width: hiddenWidth)
        typealias Product = (weights: WeightMatrix, output: UnsafeMutableBufferPointer<Float>)
        try withUnsafeTemporaryAllocation(of: Product.self, capacity: 2 * used) { (products) throws(KernelError) in
            for (slot, expert) in workspace.chosenExperts.enumerated() {
                (products.baseAddress! + 2 * slot).initialize(to: (experts.gates[expert].weights, rows(gates, slot ..< slot + 1, width: hiddenWidth)))
                (products.baseAddress! + 2 * slot + 1).initialize(to: (experts.ups[expert].weights, rows(ups, slot ..< slot + 1, width: hiddenWidth)))
            }
            defer { products.baseAddress!.deinitialize(count: 2 * used) }
            try MatrixVectorProduct.multiply(
                UnsafeBufferPointer(products), input: UnsafeBufferPointer(rows(workspace.normalized, 0 ..< 1, width: width)),
                reusing: &workspace.activations, threadCount: threadCount)
        }
        // The experts' biases (gpt-oss), as `project` adds them.
        for (slot, expert) in workspace.chosenExperts.enumerated() {
            experts.gates[expert].bias?.withUnsafeBufferPointer { _addBias($0, to: gates.baseAddress! + slot * hiddenWidth, rows: 0 ..< 1) }
            experts.ups[expert].bias?.withUnsafeBufferPointer { _addBias($0, to: ups.baseAddress! + slot * hiddenWidth, rows: 0 ..< 1) }
        }
        // Row by row: the kernel's tail depends on where a row starts, as in the batched path.
        for slot in 0 ..< used { activate(rows(gates, slot ..< slot + 1, width: hiddenWidth), rows(ups, slot ..< slot + 1, width: hiddenWidth)) }
        let outputs = rows(workspace.expertOutputs, 0 ..< used, width: width)
        // Each down projection on its own: one dispatch for all of them (each input quantized
        // into buffers of its own) measured no faster on LFM2-8B-A1B or Qwen3-30B-A3B.
        for slot in 0 ..< used {
            try project((experts.downs[workspace.chosenExperts[slot]], rows(outputs, slot ..< slot + 1, width: width)),
                        input: rows(gates, slot ..< slot + 1, width: hiddenWidth), rows: 1)
        }
        if let scales = experts.outputScales {
            for (slot, expert) in workspace.chosenExperts.enumerated() {
                for index in slot * width ..< (slot + 1) * width { outputs[index] *= scales[expert] }
            }
        }
        let output = rows(workspace.projected, 0 ..< 1, width: width)
        output.update(repeating: 0)
        for slot in workspace.chosenExperts.indices.sorted(by: { workspace.chosenExperts[$0] < workspace.chosenExperts[$1] }) {
            let weight = workspace.expertWeights[slot], source = outputs.baseAddress! + slot * width
            for column in 0 ..< width { output[column] += weight * source[column] }
        }
    }

    /// The final norm and the output projection of each sequence's last row, or of every row
    /// (without the projection: the normalized rows themselves, into `result`).
    private func outputLogits(
        _ logits: TransformerModel.Logits, projectingToVocabulary: Bool, into result: inout [Float]
    ) throws(KernelError) {
        let final: UnsafeMutableBufferPointer<Float>
        switch logits {
        case .all:
            final = rows(workspace.normalized, 0 ..< count, width: width)
            final.baseAddress!.update(from: workspace.residual.baseAddress!, count: count * width)
        case .last, .lastRows:
            final = rows(workspace.normalized, 0 ..< outputRowCount, width: width)
            var next = 0
            for sequence in sequences {
                let first = sequence.rows.upperBound - sequence.outputRows
                (final.baseAddress! + next * width).update(from: workspace.residual.baseAddress! + first * width, count: sequence.outputRows * width)
                next += sequence.outputRows
            }
        }
        let rowCount = final.count / width
        model.outputNorm.withUnsafeBufferPointer { weight in
            forEachRowRange(rowCount, floatsPerRow: width) { range in _rmsNorm(rows(final, range, width: width), width: width, weight: weight, epsilon: epsilon) }
        }
        guard projectingToVocabulary else {
            result.removeAll(keepingCapacity: true)
            result.append(contentsOf: final)
            return
        }
        let vocabulary = model.logitsPerRow
        if result.count != rowCount * vocabulary {
            // In place, so a caller alternating between one row and two allocates once.
            result.removeAll(keepingCapacity: true)
            result.append(contentsOf: repeatElement(0, count: rowCount * vocabulary))
        }
        try result.withUnsafeMutableBufferPointer { (result) throws(KernelError) in
            try project((model.output, result), input: final, rows: rowCount)
            // Granite's logit scale: a product by its inverse, as ggml's `scale`.
            if let scale = model.configuration.multipliers.logits {
                let inverse = 1 / scale
                for index in result.indices { result[index] *= inverse }
            }
            // Gemma 4's soft-capping, as ggml computes it: scale, tanh, scale back.
            // In runs of 4,096 logits shared out across the threads: 262,144 `tanhf`s per row.
            if let cap = model.configuration.finalLogitSoftCapping.map(Float.init) {
                let inverse = 1 / cap, run = 4096, total = rowCount * vocabulary
                forEachRowRange((total + run - 1) / run, floatsPerRow: run) { range in
                    for index in range.lowerBound * run ..< min(total, range.upperBound * run) { result[index] = tanhf(result[index] * inverse) * cap }
                }
            }
        }
    }

    // MARK: Helpers

    /// Rows `range` of a row-major buffer of `width`-float rows.
    private func rows(_ buffer: UnsafeMutableBufferPointer<Float>, _ range: Range<Int>, width: Int) -> UnsafeMutableBufferPointer<Float> {
        UnsafeMutableBufferPointer(start: buffer.baseAddress! + range.lowerBound * width, count: range.count * width)
    }

    /// Runs `body` on ranges of this call's rows (or `rowCount` rows) split across the threads,
    /// unless the rows' `floatsPerRow` floats are too few to be worth it (`_forEachRowRange`).
    private func forEachRowRange(_ rowCount: Int? = nil, floatsPerRow: Int, _ body: (Range<Int>) -> Void) {
        _forEachRowRange(rowCount ?? count, floatsPerRow: floatsPerRow, threadCount: threadCount, body)
    }

    /// `destination = RMSNorm(source) · weight`, row by row.
    private func normalize(from source: UnsafeMutableBufferPointer<Float>, into destination: UnsafeMutableBufferPointer<Float>, weight: [Float]) {
        let width = width, epsilon = epsilon
        weight.withUnsafeBufferPointer { weight in
            forEachRowRange(floatsPerRow: 2 * width) { range in
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
                try MatrixMultiplication.multiply(products, inputs: UnsafeBufferPointer(input), batch: rowCount, threadCount: threadCount)
            }
        }
        // The biases (Qwen's query, key and value projections have them) in one dispatch.
        guard first.projection.bias != nil || second?.projection.bias != nil || third?.projection.bias != nil else { return }
        let biasWidth = (first.output.count + (second?.output.count ?? 0) + (third?.output.count ?? 0)) / rowCount
        forEachRowRange(rowCount, floatsPerRow: biasWidth) { range in
            func addBias(_ product: Product?) {
                guard let product, let bias = product.projection.bias else { return }
                bias.withUnsafeBufferPointer { _addBias($0, to: product.output.baseAddress!, rows: range) }
            }
            addBias(first); addBias(second); addBias(third)
        }
    }

    /// `residual += postNorm(projected)` (the norm where the family has one), `projected` times
    /// Granite's residual scale where the model has one (a product, then the sum, as ggml's
    /// `scale` then `add`).
    private func addToResidual(postNorm: [Float]?) {
        let residual = workspace.residual, projected = workspace.projected
        let width = width, epsilon = epsilon
        let scale = model.configuration.multipliers.residual
        (postNorm ?? []).withUnsafeBufferPointer { norm in
            forEachRowRange(floatsPerRow: 2 * width) { range in
                if postNorm != nil { _rmsNorm(rows(projected, range, width: width), width: width, weight: norm, epsilon: epsilon) }
                let elements = range.lowerBound * width ..< range.upperBound * width
                if let scale {
                    for index in elements { residual[index] += projected[index] * scale }
                } else {
                    for index in elements { residual[index] += projected[index] }
                }
            }
        }
    }
}
