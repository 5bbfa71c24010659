import Models
import Synchronization

/// The runner's KV caches and the one place their rules live: each conversation's own cache,
/// kept from turn to turn, and the idle caches of replies and conversations that are gone,
/// kept for later prompts that start as theirs did.
///
///     conversation's reply ─► its own cache (made from the pool on its first reply)
///     completion, server    ─► a cache from the pool ─► back to the pool when it ends
///     conversation gone     ─► its cache back to the pool
///
///     pool: idle caches, most recently kept last, within `idleByteLimit` and
///           `maximumIdleCaches`; a new reply takes the one sharing the longest prefix with
///           its prompt (whole, or a copy of the shared part)
///
/// Held in ``RunnerState``, under the runner's lock.
struct CachePool {
    /// Each conversation's cache, by conversation identifier.
    private var owned: [Int: CacheBox] = [:]
    /// Idle caches, most recent last: the most recent whose committed bytes fit in
    /// `idleByteLimit`, at most ``maximumIdleCaches`` of them.
    private(set) var idle: [CacheBox] = []
    /// Bytes of committed positions the idle caches may hold in all.
    var idleByteLimit = ModelRunner.Options.defaultIdleCacheByteLimit

    /// The most idle caches kept whatever their size: each is a mapping of its whole context,
    /// and a new reply compares its prompt with every one.
    static let maximumIdleCaches = 64

    /// Tokens the cache of the conversation `owner` holds (0 when it has none yet).
    func tokenCount(of owner: Int) -> Int { owned[owner]?.cache.count ?? 0 }

    /// The cache for a reply of `prompt`: the conversation `owner`'s own when it has one, else
    /// one from the pool (``take(for:of:contextLength:)``), which becomes `owner`'s when there
    /// is an owner and goes back to the pool at the reply's end (``recycle(_:)``) when not.
    mutating func cache(for prompt: [Int], owner: Int?, of model: TransformerModel, contextLength: Int) -> PreparedCache {
        if let owner, let box = owned[owner] { return PreparedCache(cache: box.cache, start: .asItIs) }
        let prepared = take(for: prompt, of: model, contextLength: contextLength)
        if let owner { owned[owner] = CacheBox(cache: prepared.cache) }
        return prepared
    }

    /// The conversation `owner` is gone: its cache goes to the pool, so a new conversation
    /// that starts the same way (a server's next request with the same system prompt) reuses
    /// what it computed.
    mutating func release(owner: Int) {
        guard let box = owned.removeValue(forKey: owner) else { return }
        recycle(box.cache)
    }

    /// Keeps `cache` for a later reply, dropping the least recently kept beyond the limits.
    mutating func recycle(_ cache: KVCache) {
        idle.append(CacheBox(cache: cache))
        var bytes = 0
        var kept = 0
        for box in idle.reversed() {
            bytes += box.cache.committedByteCount
            guard bytes <= idleByteLimit, kept < Self.maximumIdleCaches else { break }
            kept += 1
        }
        idle.removeFirst(idle.count - kept)
    }

    /// Forgets every cache (the runner unloads).
    mutating func removeAll() {
        owned.removeAll()
        idle.removeAll()
    }

    /// A cache for a reply of `prompt`, starting from the idle cache that shares the longest
    /// prefix with it (of equals, the least recently kept):
    ///
    /// - that cache itself (taken out of the pool) when all it holds but at most
    ///   max(8, an eighth of its tokens) is a prefix of `prompt` (a conversation's next turn);
    /// - else a cache to hold a copy of the shared prefix, the idle one kept for later prompts
    ///   that share more of it (a server's next request with the same system prompt must not
    ///   take, and overwrite, the cache of another that may return);
    /// - a new cache when none shares a token.
    ///
    /// A new cache reuses the least recently kept when the pool holds its most caches. The
    /// copy, megabytes for a long prefix, is not made here, under the runner's lock, but by
    /// ``PreparedCache/fill(releasingUnder:)`` after it: until then the idle cache it reads is
    /// neither handed out nor reused (``CacheBox/copyCount``), so nothing writes it.
    ///
    /// - Complexity: O(*n* × *p*) for *n* idle caches and a shared prefix of *p* tokens.
    mutating func take(for prompt: [Int], of model: TransformerModel, contextLength: Int) -> PreparedCache {
        let shared = idle.map { $0.cache.reusablePrefixLength(for: prompt) }
        var source: (box: CacheBox, sharedCount: Int)?
        if let best = shared.indices.max(by: { shared[$0] < shared[$1] }), shared[best] > 0 {
            let candidate = idle[best]
            if candidate.copyCount == 0, candidate.cache.count - shared[best] <= max(8, candidate.cache.count / 8) {
                return PreparedCache(cache: idle.remove(at: best).cache, start: .asItIs)
            }
            candidate.copyCount += 1
            source = (candidate, shared[best])
        }
        let cache: KVCache
        if idle.count >= Self.maximumIdleCaches, let oldest = idle.firstIndex(where: { $0.copyCount == 0 }) {
            cache = idle.remove(at: oldest).cache
        } else {
            cache = model.makeCache(contextLength: contextLength)
        }
        return PreparedCache(cache: cache, start: source.map { .copy(of: $0.box, count: $0.sharedCount) } ?? .empty)
    }
}

/// A reply's cache as ``CachePool/cache(for:owner:of:contextLength:)`` chose it, and what it
/// is to start from.
struct PreparedCache {
    enum Start {
        /// A cache taken whole (a conversation's own, or an idle one): the reply reuses the
        /// prefix it holds.
        case asItIs
        /// The first `count` positions of an idle cache, which stays in the pool, marked as
        /// read until ``PreparedCache/fill(releasingUnder:)`` has copied them.
        case copy(of: CacheBox, count: Int)
        /// Nothing.
        case empty
    }

    let cache: KVCache
    let start: Start

    /// Gives the cache its start outside the runner's lock (a copy of a long prefix takes
    /// milliseconds), then, under `state`, lets the idle cache it read be handed out and
    /// reused again.
    func fill(releasingUnder state: borrowing Mutex<RunnerState>) -> KVCache {
        switch start {
        case .asItIs: break
        case .empty: cache.clear()
        case let .copy(source, count):
            cache.copyPrefix(count, of: source.cache)
            state.withLock { _ in source.copyCount -= 1 }
        }
        return cache
    }
}

/// A KV cache in the pool, created on a conversation's first reply (or a completion's) and
/// used only by one reply's generation at a time, on the runner's scheduler thread (which is
/// what makes sharing the reference safe).
final class CacheBox: @unchecked Sendable {
    let cache: KVCache
    /// Copies of this idle cache's prefix under way outside the runner's lock; while there
    /// are any, the pool neither hands the cache out nor reuses it. Read and written under
    /// the runner's lock.
    var copyCount = 0
    init(cache: KVCache) { self.cache = cache }
}
