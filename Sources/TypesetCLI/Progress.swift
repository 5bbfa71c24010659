import ArgumentParser
import Foundation
import Synchronization
import Typeset

/// `--progress`: progress of long work (loading and packing a model, long prefills, many
/// schemas or chunks) on standard error.
struct ProgressOptions: ParsableArguments {
    @Flag(help: "Report progress on standard error even when it is not a terminal (on a terminal it is reported anyway).")
    var progress = false

    /// The reporter for this run: on when standard error is a terminal or `--progress` is set.
    func makeReporter() -> ProgressReporter {
        ProgressReporter(mode: isatty(STDERR_FILENO) == 1 ? .terminal : progress ? .lines : .off)
    }
}

/// Writes progress to standard error: on a terminal, one line rewritten in place (and erased
/// when the work is done, so the output that follows starts on a clean line); with
/// `--progress` and standard error redirected, a line per update at most once a second; else
/// nothing, so scripts reading standard output or standard error see only results.
///
/// Thread-safe: loading reports from the thread that packs the weights.
final class ProgressReporter: Sendable {
    enum Mode: Sendable { case off, terminal, lines }

    let mode: Mode
    private struct State {
        var lastWrite: ContinuousClock.Instant?
        var showing = false
    }
    private let state = Mutex(State())

    init(mode: Mode) { self.mode = mode }

    /// Reports `task`, `fraction` of it done (0 … 1) when known.
    func report(_ task: String, fraction: Double? = nil) {
        guard mode != .off else { return }
        let now = ContinuousClock.now
        let text = fraction.map { "\(task) \(Int(($0 * 100).rounded(.down)))%" } ?? task
        state.withLock { state in
            let interval: Duration = mode == .terminal ? .milliseconds(100) : .seconds(1)
            if let last = state.lastWrite, now - last < interval, fraction.map({ $0 < 1 }) ?? true { return }
            state.lastWrite = now
            state.showing = mode == .terminal
            let line = mode == .terminal ? "\r\u{1B}[2K" + text : text + "\n"
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    /// A `ModelRunner.load` progress handler that reports here.
    var loadingProgress: @Sendable (ModelRunner.LoadProgress) -> Void {
        { [self] progress in
            if progress.stage != .ready { report("loading the model", fraction: progress.fractionCompleted) }
        }
    }

    /// Erases the progress line (on a terminal) before results are printed.
    func clear() {
        state.withLock { state in
            guard state.showing else { return }
            state.showing = false
            state.lastWrite = nil
            FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
        }
    }
}
