import Testing
@testable import Typeset
import TypesetTestSupport

/// `likeliestTokens`, which picks the likeliest tokens when a reply must close within its
/// budget and a reply's log-probability alternatives, against sorting every token by its logit
/// (ties in token order).
@Suite struct LikeliestTokensTests {
    @Test func theHighestAreTheFirstOfTheSortedOrder() {
        var random = SplitMix64(seed: 41)
        for _ in 0 ..< 200 {
            let count = Int.random(in: 0 ... 600, using: &random)
            // Few distinct values, so ties are common; some tokens excluded (−∞).
            let logits = (0 ..< count).map { _ in Int.random(in: 0 ..< 6, using: &random) == 0 ? -Float.infinity : Float(Int.random(in: -8 ... 8, using: &random)) / 2 }
            let allowed = logits.indices.filter { logits[$0] > -.infinity }
            let sorted = allowed.sorted { logits[$0] > logits[$1] || (logits[$0] == logits[$1] && $0 < $1) }
            for take in [0, 1, 8, 256] {
                #expect(likeliestTokens(take, of: allowed, in: logits) == Array(sorted.prefix(take)))
            }
        }
    }
}
