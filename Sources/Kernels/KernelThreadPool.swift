import Synchronization
#if canImport(VectorIntrinsics)
import VectorIntrinsics
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fixed set of threads that run the parts of one kernel call in parallel, with a wake-up
/// cost of a few hundred nanoseconds rather than the tens of microseconds of creating or
/// waking threads per call. Decoding one token runs hundreds of 20–100 µs products, so that
/// difference decides whether a second thread helps at all.
///
/// A call's work is cut into chunks (a range into contiguous pieces that shrink towards its
/// end, or the parts of ``run(parts:_:)``), and every thread taking part takes the next chunk
/// (one atomic increment) until none is left:
///
///     caller                                  worker w (1 ..< threadCount)
///     ------                                  ---------------------------
///     publish task, generation += 1      -->  sees the new generation (spinning, or woken)
///     take chunks until none is left          joins the task unless closed or full,
///     close the task to joining                 takes chunks until none is left
///     wait until every joined worker is done <-- done += 1
///
/// Nothing waits for a thread that is not running. On a shared two-core machine one of the
/// two is often held up for a while (by another process, an interrupt, the sibling hyperthread
/// running something else): with fixed halves every call would wait for the late half; here
/// the running thread takes the chunks the other would have taken, and a worker that arrives
/// after the work is gone does not join at all. The task lives on the caller's stack, and a
/// worker touches it only after joining, which the caller's close bounds.
///
/// The workers run at the lowest scheduling priority (nice 19, on Linux); the caller keeps
/// its own. Every call waits for its caller, which can take every chunk itself, while a worker
/// only helps: when something else on the machine wants a core (the HTTP client of a local
/// server, the preparation of the next grammar masks, another process), the kernel should take
/// it from a worker, not from the caller. At equal priority it took it from either, and while
/// the caller was off its core the work stopped (measured alternated on a Zen 4 on 2026-12-04:
/// a local server's four clients on the same two cores served 1.17× faster, 8 of 8 pairs, and
/// two decoding processes side by side; the tables are in docs/benchmarks.md as of 0c0fd5f). Where
/// nothing else runs, the priority changes nothing. A worker that joined and then waits for a
/// core keeps its chunk, and the caller waits for that chunk: the price of its helping at all.
///
/// Workers spin on the generation counter for a short while after each task (with the
/// `pause` hint where the target has it, leaving the core to its sibling hyperthread), then
/// sleep on a condition variable.
///
/// `run` is not reentrant: a part must not call `run` on the same pool. Calls from different
/// threads are serialised.
public final class KernelThreadPool: @unchecked Sendable {
    /// Threads a call can use, counting the caller.
    public let threadCount: Int

    /// One pool per process, with one thread per active processor.
    public static let shared = KernelThreadPool(threadCount: sysconf(Int32(_SC_NPROCESSORS_ONLN)))

    /// The number of the last task published.
    private let generation = Atomic<Int>(0)
    /// Who may still join the current task, in one word (see ``Admission``).
    private let admission = Atomic<Int>(0)
    /// Joined workers that have finished the current task.
    private let finished = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// The next chunk of the current task; reset before each is published.
    fileprivate let nextChunk = Atomic<Int>(0)
    /// Written by the caller before `generation` is released; read by workers once joined.
    private nonisolated(unsafe) var task: UnsafeRawPointer?
    private let sleep = SleepState()
    private let callLock = PthreadMutex()
    private var threads: [pthread_t] = []

    /// Spins (checks of the generation counter) before a worker goes to sleep: about a
    /// millisecond either way (a `pause` takes on the order of a hundred cycles).
    #if canImport(VectorIntrinsics)
    static let spinLimit = 20_000
    #else
    static let spinLimit = 200_000
    #endif

    /// A range call's chunks (guided scheduling): each takes `1 / (2 · parts)` of what is left
    /// of the range, and at least `1 / (smallestChunkDivisor · parts)` of the range. The
    /// first chunks are large, so taking one (an atomic increment on a line the threads
    /// share) stays negligible next to it; the last ones are small, so the threads finish
    /// within a small chunk of each other. With equal chunks of an eighth (two threads, four
    /// each) a thread waited half a chunk on average at the end of every call: about 6 % of
    /// a decode step's products.
    ///
    ///     two threads, 100 units:  25 19 14 11 8 6 5 3 3 3 3   (11 chunks)
    static let smallestChunkDivisor = 16

    /// Chunk `index` of a range call over `0 ..< count` on `parts` threads; empty past the
    /// last. O(index): a call has at most `count` chunks, and for two threads about a dozen.
    static func chunk(_ index: Int, of count: Int, parts: Int) -> Range<Int> {
        let smallest = max(1, count / (smallestChunkDivisor * parts))
        let share = 2 * parts
        var start = 0
        var chunk = 0
        while start < count {
            let size = min(count - start, max(smallest, (count - start + share - 1) / share))
            if chunk == index { return start ..< start + size }
            start += size
            chunk += 1
        }
        return count ..< count
    }

    public init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
        for index in 1 ..< self.threadCount {
            let context = Unmanaged.passRetained(WorkerContext(pool: self, index: index)).toOpaque()
            var thread = pthread_t()
            let status = pthread_create(&thread, nil, { context in
                let worker = Unmanaged<WorkerContext>.fromOpaque(context!).takeRetainedValue()
                KernelThreadPool.lowerPriorityOfCurrentThread()
                worker.pool.work(index: worker.index)
                return nil
            }, context)
            precondition(status == 0, "pthread_create failed: \(status)")
            threads.append(thread)
        }
    }

    /// The nice value of the workers, on Linux (where it is a per-thread attribute).
    static let workerNiceValue: Int32 = 19

    /// Gives the calling thread the workers' priority: the lowest on Linux. Elsewhere the
    /// thread keeps the process's (on Darwin a lower quality of service would also move it to
    /// the efficiency cores).
    private static func lowerPriorityOfCurrentThread() {
        #if os(Linux)
        // `who` 0 is the calling thread; a failure leaves the priority as it was.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, workerNiceValue)
        #endif
    }

    deinit {
        stopping.store(true, ordering: .releasing)
        generation.add(1, ordering: .releasing)
        sleep.wakeAll()
        for thread in threads { pthread_join(thread, nil) }
    }

    /// Runs `body(part)` for every `part` in `0 ..< parts`, on at most `parts` threads (never
    /// more than `threadCount`), the calling thread among them, and returns when all have
    /// finished. Which thread runs which part is not fixed.
    ///
    /// `body` runs concurrently on several threads, hence `@Sendable`. Handing a closure to
    /// other threads costs one heap allocation per call with more than one part (Swift boxes
    /// the closure to check that it does not escape); ``forEachRange(of:parts:job:)`` costs none.
    public func run(parts: Int, _ body: @Sendable (Int) -> Void) {
        guard parts > 0 else { return }
        let threads = min(parts, threadCount)
        if threads == 1 {
            for part in 0 ..< parts { body(part) }
            return
        }
        withoutActuallyEscaping(body) { body in dispatch(threads: threads, ClosureParts(body: body, parts: parts)) }
    }

    /// Runs `body` over contiguous ranges that together cover `0 ..< count` once, on at most
    /// `parts` threads (never more than `threadCount`), concurrently when there is more than
    /// one. A thread may run several ranges, one after another: the range is cut into chunks
    /// that shrink towards its end (``chunk(_:of:parts:)``), taken in order by whichever
    /// thread is free.
    public func forEachRange(of count: Int, parts: Int, _ body: @Sendable (Range<Int>) -> Void) {
        let parts = max(1, min(parts, count, threadCount))
        guard parts > 1 else {
            if count > 0 { body(0 ..< count) }
            return
        }
        withoutActuallyEscaping(body) { body in forEachRange(of: count, parts: parts, job: ClosureRangeJob(body: body)) }
    }

    /// Cuts `0 ..< count` as ``forEachRange(of:parts:_:)`` does and runs `job` on each range,
    /// with no heap allocation: the job stays on the caller's stack and each thread reads it
    /// through a pointer. The decode-time products and attention dispatch this way.
    public func forEachRange<Job: RangeJob>(of count: Int, parts: Int, job: Job) {
        let parts = max(1, min(parts, count, threadCount))
        guard parts > 1 else {
            if count > 0 { job.run(0 ..< count) }
            return
        }
        withUnsafePointer(to: job) { job in
            dispatch(threads: parts, RangeJobChunks(job: job, count: count, parts: parts))
        }
    }

    /// The next chunk of the current task, if it is below `count`.
    @inline(__always)
    fileprivate func takeChunk(below count: Int) -> Int? {
        let chunk = nextChunk.wrappingAdd(1, ordering: .relaxed).oldValue
        return chunk < count ? chunk : nil
    }

    /// Publishes `body` to the workers (at most `threads − 1` of them may join), takes its
    /// chunks with them, closes it and waits for the workers that joined.
    private func dispatch(threads: Int, _ body: some Part) {
        callLock.lock()
        defer { callLock.unlock() }
        var work = Task(body: body)
        withUnsafePointer(to: &work) { pointer in
            let number = generation.load(ordering: .relaxed) &+ 1
            task = UnsafeRawPointer(pointer)
            nextChunk.store(0, ordering: .relaxed)
            finished.store(0, ordering: .relaxed)
            admission.store(Admission(task: number, limit: threads - 1).word, ordering: .relaxed)
            generation.store(number, ordering: .releasing)
            sleep.wakeAll()
            body.run(of: self)
            let joined = Admission(word: admission.bitwiseOr(Admission.closedBit, ordering: .acquiringAndReleasing).oldValue).joined
            while finished.load(ordering: .acquiring) < joined { _pauseWhileSpinning() }
            task = nil
        }
    }

    /// The loop of worker `index`.
    private func work(index: Int) {
        var seen = 0
        while true {
            var spins = 0
            var current = generation.load(ordering: .acquiring)
            while current == seen {
                spins += 1
                if spins >= Self.spinLimit {
                    sleep.wait { self.generation.load(ordering: .acquiring) != seen }
                    spins = 0
                }
                _pauseWhileSpinning()
                current = generation.load(ordering: .acquiring)
            }
            seen = current
            if stopping.load(ordering: .acquiring) { return }
            // Join task `seen` while it is open and has room; a later task (the caller moved
            // on) or a closed one is left alone.
            var state = Admission(word: admission.load(ordering: .relaxed))
            while state.isOpen(forTask: seen) {
                let (joined, original) = admission.compareExchange(
                    expected: state.word, desired: state.word &+ 1, ordering: .acquiring)
                if joined {
                    task!.assumingMemoryBound(to: Task.self).pointee.body.run(of: self)
                    finished.add(1, ordering: .releasing)
                    break
                }
                state = Admission(word: original)
            }
        }
    }
}

/// The admission word of a task: its number's low 32 bits, whether it is closed, how many
/// workers may join and how many have.
///
///     bits 32…63   task number (low 32 bits)
///     bit  30      closed: the caller has taken the last chunk and waits for the joined
///     bits 15…29   limit: workers that may join
///     bits  0…14   joined
private struct Admission {
    static let closedBit = 1 << 30
    let word: Int

    init(word: Int) { self.word = word }
    init(task: Int, limit: Int) { word = (task & 0xFFFF_FFFF) << 32 | limit << 15 }

    var joined: Int { word & 0x7FFF }
    var limit: Int { (word >> 15) & 0x7FFF }

    /// Whether a worker that saw task `number` published may join now.
    func isOpen(forTask number: Int) -> Bool {
        word >> 32 == number & 0xFFFF_FFFF && word & Self.closedBit == 0 && joined < limit
    }
}

/// The `pause` hint in a spin loop, where the target has it (a tuned build on x86-64).
@inline(__always)
func _pauseWhileSpinning() {
    #if canImport(VectorIntrinsics)
    pauseWhileSpinning()
    #endif
}

/// Work over `0 ..< count` that ``KernelThreadPool/forEachRange(of:parts:job:)`` cuts into
/// contiguous ranges. `run` is called concurrently with disjoint ranges, possibly several
/// times on one thread; the ranges together cover `0 ..< count` exactly once.
public protocol RangeJob: Sendable {
    /// Computes the units of `range`.
    func run(_ range: Range<Int>)
}

/// What a thread calls for its share of a task: it takes chunks from `pool` until none is left.
private protocol Part {
    func run(of pool: KernelThreadPool)
}

/// A closure as a range job (for ``KernelThreadPool/forEachRange(of:parts:_:)``).
private struct ClosureRangeJob: RangeJob {
    let body: @Sendable (Range<Int>) -> Void
    func run(_ range: Range<Int>) { body(range) }
}

/// A closure's parts, one chunk each (three words: held inline by the task's existential).
private struct ClosureParts: Part {
    let body: @Sendable (Int) -> Void
    let parts: Int
    func run(of pool: KernelThreadPool) {
        while let part = pool.takeChunk(below: parts) { body(part) }
    }
}

/// A range job cut into the chunks of ``KernelThreadPool/chunk(_:of:parts:)``. Three words:
/// held inline by the task's existential, so publishing one allocates nothing.
private struct RangeJobChunks<Job: RangeJob>: Part {
    let job: UnsafePointer<Job>
    let count: Int
    let parts: Int
    func run(of pool: KernelThreadPool) {
        while let index = pool.takeChunk(below: count) {
            let range = KernelThreadPool.chunk(index, of: count, parts: parts)
            if range.isEmpty { break }
            job.pointee.run(range)
        }
    }
}

/// One call's work, on the caller's stack for the duration of the call.
private struct Task {
    let body: any Part
}

private final class WorkerContext {
    let pool: KernelThreadPool
    let index: Int
    init(pool: KernelThreadPool, index: Int) {
        self.pool = pool
        self.index = index
    }
}

/// A pthread mutex (the pool predates a portable `Mutex` on every platform it supports).
final class PthreadMutex: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit { pthread_mutex_destroy(mutex); mutex.deallocate() }
    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}

/// Where idle workers sleep. `wait` re-checks its condition under the mutex, and `wakeAll`
/// broadcasts under the same mutex, so a task published between a worker's last spin and
/// its sleep is never missed.
final class SleepState: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Sleeps until `ready()` holds.
    func wait(until ready: () -> Bool) {
        pthread_mutex_lock(mutex)
        while !ready() { pthread_cond_wait(condition, mutex) }
        pthread_mutex_unlock(mutex)
    }

    func wakeAll() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }
}
