import Synchronization

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
/// How a call runs:
///
///     caller                              worker w (1 ..< threadCount)
///     ------                              ---------------------------
///     publish task, generation += 1  -->  sees the new generation (spinning, or woken)
///     run part 0                          run part w if w < parts
///     wait until every worker is done <--  done -= 1
///
/// Workers spin on the generation counter for a short while after each task, then sleep on a
/// condition variable. Every worker acknowledges every task (whether or not it had a part),
/// so the task, which lives on the caller's stack, is never touched after `run` returns.
///
/// `run` is not reentrant: a part must not call `run` on the same pool. Calls from different
/// threads are serialised.
public final class KernelThreadPool: @unchecked Sendable {
    /// Threads a call can use, counting the caller.
    public let threadCount: Int

    /// One pool per process, with one thread per active processor.
    public static let shared = KernelThreadPool(threadCount: sysconf(Int32(_SC_NPROCESSORS_ONLN)))

    private let generation = Atomic<Int>(0)
    private let outstanding = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// Written by the caller before `generation` is released; read by workers after acquiring it.
    private nonisolated(unsafe) var task: UnsafeRawPointer?
    private let sleep = SleepState()
    private let callLock = PthreadMutex()
    private var threads: [pthread_t] = []

    /// Spins (checks of the generation counter) before a worker goes to sleep.
    static let spinLimit = 200_000

    public init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
        for index in 1 ..< self.threadCount {
            let context = Unmanaged.passRetained(WorkerContext(pool: self, index: index)).toOpaque()
            var thread = pthread_t()
            let status = pthread_create(&thread, nil, { context in
                let worker = Unmanaged<WorkerContext>.fromOpaque(context!).takeRetainedValue()
                worker.pool.work(index: worker.index)
                return nil
            }, context)
            precondition(status == 0, "pthread_create failed: \(status)")
            threads.append(thread)
        }
    }

    deinit {
        stopping.store(true, ordering: .releasing)
        generation.add(1, ordering: .releasing)
        sleep.wakeAll()
        for thread in threads { pthread_join(thread, nil) }
    }

    /// Runs `body(part)` for every `part` in `0 ..< parts` (at most `threadCount` parts, one per
    /// thread), part 0 on the calling thread, and returns when all have finished.
    ///
    /// `body` runs concurrently on several threads, hence `@Sendable`. Handing a closure to
    /// other threads costs one heap allocation per call with more than one part (Swift boxes
    /// the closure to check that it does not escape); ``forEachRange(of:parts:job:)`` costs none.
    public func run(parts: Int, _ body: @Sendable (Int) -> Void) {
        let parts = min(max(parts, 1), threadCount)
        if parts == 1 {
            body(0)
            return
        }
        withoutActuallyEscaping(body) { body in dispatch(parts: parts, ClosurePart(body: body)) }
    }

    /// Splits `0 ..< count` into at most `parts` contiguous ranges (never more than
    /// `threadCount`) and runs `body` on each, concurrently when there is more than one.
    public func forEachRange(of count: Int, parts: Int, _ body: @Sendable (Range<Int>) -> Void) {
        let parts = max(1, min(parts, count, threadCount))
        guard parts > 1 else {
            if count > 0 { body(0 ..< count) }
            return
        }
        withoutActuallyEscaping(body) { body in forEachRange(of: count, parts: parts, job: ClosureRangeJob(body: body)) }
    }

    /// Splits `0 ..< count` as ``forEachRange(of:parts:_:)`` does and runs `job` on each range,
    /// with no heap allocation: the job stays on the caller's stack and each thread reads it
    /// through a pointer. The decode-time products and attention dispatch this way.
    public func forEachRange<Job: RangeJob>(of count: Int, parts: Int, job: Job) {
        let parts = max(1, min(parts, count, threadCount))
        guard parts > 1 else {
            if count > 0 { job.run(0 ..< count) }
            return
        }
        withUnsafePointer(to: job) { job in
            dispatch(parts: parts, RangeJobPart(job: job, count: count, perPart: (count + parts - 1) / parts))
        }
    }

    /// Publishes `body` to the workers, runs part 0, and waits for the others.
    private func dispatch(parts: Int, _ body: some Part) {
        callLock.lock()
        defer { callLock.unlock() }
        var work = Task(parts: parts, body: body)
        withUnsafePointer(to: &work) { pointer in
            task = UnsafeRawPointer(pointer)
            outstanding.store(threadCount - 1, ordering: .relaxed)
            generation.add(1, ordering: .releasing)
            sleep.wakeAll()
            body.run(part: 0)
            while outstanding.load(ordering: .acquiring) > 0 {}
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
                current = generation.load(ordering: .acquiring)
            }
            seen = current
            if stopping.load(ordering: .acquiring) { return }
            if let pointer = task {
                let work = pointer.assumingMemoryBound(to: Task.self)
                if index < work.pointee.parts { work.pointee.body.run(part: index) }
            }
            outstanding.subtract(1, ordering: .releasing)
        }
    }
}

/// Work over `0 ..< count` that ``KernelThreadPool/forEachRange(of:parts:job:)`` splits
/// into contiguous ranges, one per thread. `run` is called concurrently with disjoint ranges.
public protocol RangeJob: Sendable {
    /// Computes the units of `range`.
    func run(_ range: Range<Int>)
}

/// What a worker calls for its part of a task.
private protocol Part {
    func run(part: Int)
}

/// A closure as a range job (for ``KernelThreadPool/forEachRange(of:parts:_:)``).
private struct ClosureRangeJob: RangeJob {
    let body: @Sendable (Range<Int>) -> Void
    func run(_ range: Range<Int>) { body(range) }
}

/// A closure's parts (two words: held inline by the task's existential).
private struct ClosurePart: Part {
    let body: @Sendable (Int) -> Void
    func run(part: Int) { body(part) }
}

/// A range job's parts (three words: held inline by the task's existential, so publishing
/// one allocates nothing).
private struct RangeJobPart<Job: RangeJob>: Part {
    let job: UnsafePointer<Job>
    let count: Int
    let perPart: Int
    func run(part: Int) {
        let range = min(part * perPart, count) ..< min((part + 1) * perPart, count)
        if !range.isEmpty { job.pointee.run(range) }
    }
}

/// One call's work, on the caller's stack for the duration of the call.
private struct Task {
    let parts: Int
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
