import Synchronization

/// What a constraint did at each token of a reply, recorded as the reply is decoded (for the
/// server's typed-value playground and anyone studying mask computation): the token, how many
/// tokens the constraint's mask allowed at its step, whether it was forced (jump-forward:
/// appended without sampling because the grammar allowed nothing else) and how long the mask
/// took to compute.
///
/// Set ``GenerationOptions/tokenTrace`` to one and take its steps with ``takeSteps()`` as the
/// reply streams: each step is recorded before the text it makes is streamed. One trace serves
/// one reply.
package final class TokenTrace: Sendable, Equatable {
    package struct Step: Sendable, Equatable {
        /// The token's id.
        package var token: Int
        /// Tokens the mask allowed at this step; `nil` where no constraint held the step (free
        /// text) and for forced tokens, which no mask chose.
        package var allowedCount: Int?
        /// Whether the token was forced by the grammar instead of sampled.
        package var isForced: Bool
        /// Time spent computing this step's mask, in seconds (0 for forced tokens): in the
        /// step itself, or ahead of it while the forward pass ran.
        package var maskSeconds: Double
    }

    private let steps = Mutex<(pending: [Step], count: Int)>(([], 0))

    package init() {}

    func append(_ step: Step) {
        steps.withLock { steps in
            steps.pending.append(step)
            steps.count += 1
        }
    }

    /// The steps recorded in all (those taken included): the reply's tokens so far.
    package var count: Int { steps.withLock { $0.count } }

    /// The steps recorded since the last call, in order.
    package func takeSteps() -> [Step] {
        steps.withLock { steps in
            defer { steps.pending.removeAll() }
            return steps.pending
        }
    }

    /// Traces are equal when they are the same trace.
    package static func == (left: TokenTrace, right: TokenTrace) -> Bool { left === right }
}
