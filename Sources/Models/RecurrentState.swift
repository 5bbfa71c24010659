import Kernels

/// The state of a cache's recurrent blocks (Qwen 3.5's Gated DeltaNet blocks, Granite 4's
/// Mamba2 blocks), beside its keys and values: what those blocks remember of every token
/// before, in a fixed size.
///
/// Unlike keys and values, such a state cannot be cut back to an earlier position: it is one
/// value, updated by every token. So the cache keeps what it needs to restore the states a
/// caller asks for, and nothing is ever recomputed silently wrong:
///
/// - **The last pass**: the state before it (the pass reads it and writes the new state
///   elsewhere, so keeping it costs no copy) and, for a pass of at most
///   ``replayableRowLimit`` rows, each row's inputs to the recurrence (the projections, not the
///   state: `rowInputFloatCount` floats a row). Any position within that pass is restored by
///   running the recurrence over the rows kept before it, which gives the state the pass
///   computed, bit for bit. This is how rejected drafts and forced tokens are taken back.
/// - **Checkpoints**: copies of the state at positions a caller marks (``KVCache/checkpoint()``:
///   the decoding loop marks the position a few tokens before each prompt's end, as
///   llama-server does, so a next turn that renders the last reply differently restarts there).
///   At most ``checkpointLimit``, the oldest dropped first.
/// - Position 0, whose state is zeros.
///
/// A position that is none of those cannot be restored: ``restore(to:)`` restores the nearest
/// one before it, and the cache then holds fewer tokens, which its caller computes again.
///
/// Memory: two states (`stateFloatCount` floats each, the last pass's start and its end),
/// ``replayableRowLimit`` rows of inputs, and one state per checkpoint; for Qwen 3.5 2B's 18
/// Gated DeltaNet blocks a state is 19 MiB. Pages are committed as they are written.
final class RecurrentState {
    /// The recurrent blocks' arithmetic, in block order (a block's `cacheSlot` indexes it).
    let recurrences: [Recurrence]
    /// Where each block's state starts in a whole state, and its inputs in a kept row.
    private let stateOffsets: [Int], inputOffsets: [Int]
    /// Floats of a whole state (every block's) and of one row's inputs (every block's).
    let stateFloatCount: Int, rowInputFloatCount: Int

    /// The most rows of a pass whose inputs are kept for restoring positions within it.
    static let replayableRowLimit = 64
    /// The most checkpoints kept.
    static let checkpointLimit = 8

    private let storage: MappedMemory
    /// The state after the cache's last position.
    private var current: UnsafeMutablePointer<Float>
    /// The state at the start of the last pass.
    private var passStartState: UnsafeMutablePointer<Float>
    /// `replayableRowLimit × rowInputFloatCount`: the last pass's rows of inputs.
    private let passInputs: UnsafeMutablePointer<Float>
    /// Scratch of a restoration (the forward pass uses its workspace's).
    private let scratch: UnsafeMutablePointer<Float>
    /// Where the last pass started, `nil` when none is known (or it was truncated away), and
    /// how many of its rows' inputs are kept (0 for a pass longer than the limit).
    private(set) var passStart: Int?
    private(set) var keptRowCount = 0
    /// The checkpoints, oldest first, each with its own state.
    private(set) var checkpoints: [(position: Int, state: UnsafeMutablePointer<Float>)] = []

    init(recurrences: [Recurrence]) {
        self.recurrences = recurrences
        var stateOffsets: [Int] = [], inputOffsets: [Int] = []
        var stateCount = 0, inputCount = 0
        for recurrence in recurrences {
            stateOffsets.append(stateCount)
            inputOffsets.append(inputCount)
            stateCount += recurrence.shape.stateFloatCount
            inputCount += recurrence.shape.rowInputWidth
        }
        (self.stateOffsets, self.inputOffsets) = (stateOffsets, inputOffsets)
        (stateFloatCount, rowInputFloatCount) = (stateCount, inputCount)
        let scratchCount = recurrences.map { $0.shape.scratchFloatCount(rows: Self.replayableRowLimit) }.max() ?? 0
        let floats = 2 * stateCount + Self.replayableRowLimit * inputCount + scratchCount
        storage = MappedMemory(byteCount: max(1, floats) * MemoryLayout<Float>.size, reservingSwap: false)
        let base = storage.bytes.bindMemory(to: Float.self, capacity: floats)
        current = base
        passStartState = base + stateCount
        passInputs = base + 2 * stateCount
        scratch = passInputs + Self.replayableRowLimit * inputCount
    }

    deinit {
        for checkpoint in checkpoints { checkpoint.state.deallocate() }
    }

    /// Bytes of the two states, the kept inputs and the checkpoints.
    var byteCount: Int {
        (2 * stateFloatCount + Self.replayableRowLimit * rowInputFloatCount + checkpoints.count * stateFloatCount) * MemoryLayout<Float>.size
    }

    /// Starts a pass of `rows` rows at `position` (what the cache holds): the current state
    /// becomes the pass's start (zeros at position 0), which the pass's blocks read, writing
    /// the new state.
    func beginPass(at position: Int, rows: Int) {
        swap(&current, &passStartState)
        if position == 0 { passStartState.update(repeating: 0, count: stateFloatCount) }
        passStart = position
        keptRowCount = rows <= Self.replayableRowLimit ? rows : 0
    }

    /// Takes back a pass that failed before its end: the state is the one before it again.
    func abandonPass() {
        swap(&current, &passStartState)
        passStart = nil
        keptRowCount = 0
    }

    /// Runs block `block`'s recurrence over the pass's rows (``beginPass(at:rows:)`` said how
    /// many), from the pass's start state to the current one, keeping the rows' inputs when
    /// the pass is short enough to restore positions within it.
    func advance(
        block: Int, rows: Int, inputs: RecurrenceInputs, outputs: UnsafeMutablePointer<Float>?,
        scratch: UnsafeMutablePointer<Float>, threadCount: Int
    ) {
        let recurrence = recurrences[block]
        if keptRowCount > 0 {
            let width = recurrence.shape.convolutionWidth, headWidth = recurrence.shape.headInputWidth
            for row in 0 ..< rows {
                let target = passInputs + row * rowInputFloatCount + inputOffsets[block]
                target.update(from: inputs.convolution + row * inputs.convolutionStride, count: width)
                (target + width).update(from: inputs.heads + row * inputs.headStride, count: headWidth)
            }
        }
        recurrence.advance(rows: rows, inputs: inputs, from: passStartState + stateOffsets[block],
                           to: current + stateOffsets[block], outputs: outputs, scratch: scratch, threadCount: threadCount)
    }

    /// Whether `position` is within the last pass's kept rows (its start included).
    private func isWithinLastPass(_ position: Int) -> Bool {
        guard let start = passStart else { return false }
        return position >= start && position - start <= keptRowCount
    }

    /// The largest position at most `position` whose state can be restored, for a cache
    /// holding `count` tokens: `count` itself, one within the last pass's kept rows, a
    /// checkpoint's, or 0.
    func restorablePosition(atMost position: Int, count: Int) -> Int {
        if position >= count { return count }
        if isWithinLastPass(position) { return position }
        var best = 0
        for checkpoint in checkpoints where checkpoint.position <= position { best = max(best, checkpoint.position) }
        if let start = passStart, start <= position { best = max(best, start) }
        return best
    }

    /// Writes the state at `position` (restorable, see ``restorablePosition(atMost:count:)``;
    /// the cache holds `count` tokens) into `destination`: the current state, the last pass's
    /// start advanced over its kept rows before `position`, a checkpoint's, or zeros.
    private func writeState(at position: Int, count: Int, into destination: UnsafeMutablePointer<Float>) {
        if position == count {
            if destination != current { destination.update(from: current, count: stateFloatCount) }
        } else if isWithinLastPass(position) {
            replay(rows: position - passStart!, inputs: passInputs, from: passStartState, to: destination)
        } else if let checkpoint = checkpoints.last(where: { $0.position == position }) {
            destination.update(from: checkpoint.state, count: stateFloatCount)
        } else {
            destination.update(repeating: 0, count: stateFloatCount)
        }
    }

    /// Makes the current state the one at the largest restorable position at most `position`
    /// (of a cache holding `count` tokens) and returns that position. Forgets the checkpoints
    /// past it (they hold states of tokens the cache no longer holds).
    func restore(to position: Int, count: Int) -> Int {
        let target = restorablePosition(atMost: position, count: count)
        defer { checkpoints.removeAll { checkpoint in
            guard checkpoint.position > target else { return false }
            checkpoint.state.deallocate()
            return true
        } }
        guard target < count else { return count }
        writeState(at: target, count: count, into: current)
        if let start = passStart, isWithinLastPass(target) {
            keptRowCount = target - start   // the rows after it are gone
        } else {
            passStart = nil
            keptRowCount = 0
        }
        return target
    }

    /// Keeps the current state as a checkpoint at `position` (what the cache holds), dropping
    /// the oldest when there are ``checkpointLimit``.
    func checkpoint(at position: Int) {
        guard position > 0, !checkpoints.contains(where: { $0.position == position }) else { return }
        if checkpoints.count >= Self.checkpointLimit { checkpoints.removeFirst().state.deallocate() }
        let state = UnsafeMutablePointer<Float>.allocate(capacity: stateFloatCount)
        state.initialize(from: current, count: stateFloatCount)
        checkpoints.append((position, state))
    }

    /// Makes the current state `other`'s at `position` (restorable there), and forgets this
    /// state's last pass and checkpoints: a cache starts from another's prefix.
    func copy(_ position: Int, of other: RecurrentState, otherCount: Int) {
        precondition(other.stateFloatCount == stateFloatCount, "copying between recurrent states of different shapes")
        precondition(other.restorablePosition(atMost: position, count: otherCount) == position,
                     "position \(position) of the other cache cannot be restored")
        other.writeState(at: position, count: otherCount, into: current)
        forgetHistory()
    }

    /// Forgets the last pass and the checkpoints (the cache was cleared).
    func forgetHistory() {
        passStart = nil
        keptRowCount = 0
        for checkpoint in checkpoints { checkpoint.state.deallocate() }
        checkpoints.removeAll()
    }

    /// Every block's recurrence over `rows` kept rows of `inputs`, from `source` to `destination`.
    private func replay(rows: Int, inputs: UnsafeMutablePointer<Float>, from source: UnsafeMutablePointer<Float>,
                        to destination: UnsafeMutablePointer<Float>) {
        for (block, recurrence) in recurrences.enumerated() {
            let blockInputs = RecurrenceInputs(
                rows: inputs + inputOffsets[block], width: rowInputFloatCount, convolutionWidth: recurrence.shape.convolutionWidth)
            recurrence.advance(rows: rows, inputs: blockInputs, from: source + stateOffsets[block], to: destination + stateOffsets[block],
                               outputs: nil, scratch: scratch, threadCount: KernelThreadPool.shared.threadCount)
        }
    }
}

/// A recurrent block's arithmetic: what ``RecurrentState`` runs to advance or restore a state.
enum Recurrence: Sendable {
    case gatedDeltaNet(GatedDeltaNetRecurrence)
    case mamba2(Mamba2Recurrence)

    var shape: RecurrenceShape {
        switch self {
        case let .gatedDeltaNet(recurrence): .gatedDeltaNet(recurrence.shape)
        case let .mamba2(recurrence): .mamba2(recurrence.shape)
        }
    }

    /// Advances a state over `rows` rows of `inputs` (see
    /// ``GatedDeltaNetRecurrence/advance(rows:inputs:from:to:outputs:scratch:threadCount:)``);
    /// over no rows, the state is copied as it is.
    func advance(
        rows: Int, inputs: RecurrenceInputs, from source: UnsafePointer<Float>, to destination: UnsafeMutablePointer<Float>,
        outputs: UnsafeMutablePointer<Float>?, scratch: UnsafeMutablePointer<Float>, threadCount: Int
    ) {
        guard rows > 0 else {
            if UnsafePointer(destination) != source { destination.update(from: source, count: shape.stateFloatCount) }
            return
        }
        switch self {
        case let .gatedDeltaNet(recurrence):
            recurrence.advance(rows: rows, inputs: inputs, from: source, to: destination, outputs: outputs, scratch: scratch,
                               threadCount: threadCount)
        case let .mamba2(recurrence):
            recurrence.advance(rows: rows, inputs: inputs, from: source, to: destination, outputs: outputs, scratch: scratch,
                               threadCount: threadCount)
        }
    }
}

/// A recurrent block's shape: its state's size and its rows' inputs.
enum RecurrenceShape: Sendable, Equatable {
    case gatedDeltaNet(GatedDeltaNetConfiguration)
    case mamba2(Mamba2Configuration)

    /// Channels of the block's causal convolution (the first inputs of each row).
    var convolutionWidth: Int {
        switch self {
        case let .gatedDeltaNet(shape): shape.convolutionWidth
        case let .mamba2(shape): shape.convolutionWidth
        }
    }

    /// Floats of each row's inputs after the convolution's: α and β per value head (Gated
    /// DeltaNet), Δ per head (Mamba2).
    var headInputWidth: Int {
        switch self {
        case let .gatedDeltaNet(shape): shape.headInputWidth
        case let .mamba2(shape): shape.headCount
        }
    }

    /// Floats of one row's inputs to the recurrence: the convolution's, then the heads'.
    var rowInputWidth: Int { convolutionWidth + headInputWidth }

    /// Floats of one block's state.
    var stateFloatCount: Int {
        switch self {
        case let .gatedDeltaNet(shape): shape.stateFloatCount
        case let .mamba2(shape): shape.stateFloatCount
        }
    }

    /// Floats of scratch an advance over `rows` rows needs: the convolution's input series,
    /// then each row's prepared inputs.
    func scratchFloatCount(rows: Int) -> Int {
        let (length, prepared) = switch self {
        case let .gatedDeltaNet(shape): (shape.convolutionLength, shape.preparedRowWidth)
        case let .mamba2(shape): (shape.convolutionLength, shape.preparedRowWidth)
        }
        return (length - 1 + rows) * convolutionWidth + rows * prepared
    }
}

/// Where a pass's rows of inputs to a recurrence are: row `r`'s convolution inputs at
/// `convolution + r × convolutionStride`, its per-head inputs (``RecurrenceShape/headInputWidth``
/// floats) at `heads + r × headStride`.
struct RecurrenceInputs {
    var convolution: UnsafePointer<Float>
    var convolutionStride: Int
    var heads: UnsafePointer<Float>
    var headStride: Int
}

extension RecurrenceInputs {
    /// The first step of an advance over `rows` rows whose convolution has `width` channels and
    /// looks `history` inputs back: the convolution's input series at `series` (the state's
    /// last inputs, read at `source`, then each row's) and the new state's last inputs (the
    /// series' last ones) at `destination`, which may be `source` (the series is apart from both).
    func writeConvolutionSeries(rows: Int, width: Int, history: Int, from source: UnsafePointer<Float>,
                                to destination: UnsafeMutablePointer<Float>, series: UnsafeMutablePointer<Float>) {
        series.update(from: source, count: history * width)
        for row in 0 ..< rows {
            (series + (history + row) * width).update(from: convolution + row * convolutionStride, count: width)
        }
        destination.update(from: series + rows * width, count: history * width)
    }

    /// Rows stored whole, `width` floats each: the convolution's inputs, then the heads'.
    init(rows base: UnsafePointer<Float>, width: Int, convolutionWidth: Int) {
        self.init(convolution: base, convolutionStride: width, heads: base + convolutionWidth, headStride: width)
    }
}
