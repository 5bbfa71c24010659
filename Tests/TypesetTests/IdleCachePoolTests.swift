import Foundation
import GGUF
import Models
import Synchronization
import Testing
@testable import Typeset
import TypesetTestSupport

/// The runner's pool of idle caches: which cache a prompt starts from, and that an idle cache
/// whose prefix is being copied (outside the runner's lock) is neither handed out nor reused.
@Suite(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
struct IdleCachePoolTests {
    let model: TransformerModel

    init() throws {
        model = try TransformerModel(file: GGUFFile(contentsOf: TestModels.smolLM2Path))
    }

    /// A cache of context `contextLength` holding `tokens`, computed by the model.
    private func cache(holding tokens: [Int], contextLength: Int = 128) throws -> KVCache {
        let cache = model.makeCache(contextLength: contextLength)
        _ = try model.evaluate(tokens, cache: cache, threadCount: 2)
        return cache
    }

    /// A runner's state whose pool holds `caches`, the first the least recently kept.
    private func state(keeping caches: [KVCache]) -> Mutex<RunnerState> {
        let state = Mutex(RunnerState(model: model, scheduler: nil))
        state.withLock { state in for cache in caches { state.caches.recycle(cache) } }
        return state
    }

    @Test func aCacheBeingCopiedIsNeitherHandedOutNorReused() throws {
        let opening = Array(100 ..< 140)
        let idle = try cache(holding: opening)
        let state = state(keeping: [idle])

        // A prompt sharing half of the idle cache copies that half; the idle cache stays.
        let half = state.withLock { $0.caches.take(for: Array(opening.prefix(20)) + [7, 8], of: model, contextLength: 128) }
        guard case let .copy(source, count) = half.start else { Issue.record("expected a copy, got \(half.start)"); return }
        #expect(source.cache === idle && count == 20)
        #expect(state.withLock { $0.caches.idle.map(\.copyCount) } == [1])

        // While that copy is pending, the prompt that would take the idle cache whole (its
        // next turn) copies from it too, instead of taking it and writing over what is read.
        let next = state.withLock { $0.caches.take(for: opening + [9], of: model, contextLength: 128) }
        guard case let .copy(nextSource, nextCount) = next.start else { Issue.record("expected a copy, got \(next.start)"); return }
        #expect(nextSource.cache === idle && nextCount == 40 && next.cache !== idle)
        #expect(state.withLock { $0.caches.idle.map(\.copyCount) } == [2])

        // Filled outside the lock: each holds its prefix, the marks are gone.
        #expect(half.fill(releasingUnder: state).tokens == Array(opening.prefix(20)))
        #expect(next.fill(releasingUnder: state).tokens == opening)
        #expect(state.withLock { $0.caches.idle.map(\.copyCount) } == [0])

        // With no copy pending, the next turn takes the idle cache itself.
        let taken = state.withLock { $0.caches.take(for: opening + [9], of: model, contextLength: 128) }
        guard case .asItIs = taken.start else { Issue.record("expected the cache itself, got \(taken.start)"); return }
        #expect(taken.cache === idle)
        #expect(state.withLock { $0.caches.idle.isEmpty })
    }

    /// A copied prefix gives the same logits as computing it: the copy is the cache's state.
    @Test func aCopiedPrefixContinuesAsTheComputedOne() throws {
        let opening = Array(200 ..< 230)
        let idle = try cache(holding: opening)
        let state = state(keeping: [idle])
        let prepared = state.withLock { $0.caches.take(for: Array(opening.prefix(12)) + [5, 6], of: model, contextLength: 128) }
        let copied = prepared.fill(releasingUnder: state)
        let computed = try cache(holding: Array(opening.prefix(12)))
        #expect(try model.evaluate([5, 6], cache: copied, threadCount: 2) == model.evaluate([5, 6], cache: computed, threadCount: 2))
    }

    /// When the pool is full, a new cache reuses the least recently kept idle one, but never
    /// one whose prefix is being copied.
    @Test func aFullPoolReusesTheOldestCacheNotBeingCopied() throws {
        let oldest = try cache(holding: Array(300 ..< 312), contextLength: 16)
        let fillers = try (1 ..< CachePool.maximumIdleCaches).map { try cache(holding: [400 + $0], contextLength: 16) }
        let state = state(keeping: [oldest] + fillers)
        #expect(state.withLock { $0.caches.idle.count } == CachePool.maximumIdleCaches)
        // A prompt sharing one token with the oldest copies from it: the pool gives up its
        // second oldest for the new cache.
        let sharing = state.withLock { $0.caches.take(for: [300, 999], of: model, contextLength: 16) }
        guard case let .copy(source, _) = sharing.start else { Issue.record("expected a copy, got \(sharing.start)"); return }
        #expect(source.cache === oldest)
        #expect(state.withLock { $0.caches.idle.first?.cache } === oldest)
        // Another prompt sharing nothing, while that copy is pending: again not the oldest.
        let other = state.withLock { $0.caches.take(for: [998], of: model, contextLength: 16) }
        #expect(other.cache !== oldest)
        #expect(state.withLock { $0.caches.idle.contains { $0.cache === oldest } })
        _ = sharing.fill(releasingUnder: state)
        _ = other.fill(releasingUnder: state)
    }
}
