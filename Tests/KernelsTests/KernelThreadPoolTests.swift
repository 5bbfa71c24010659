@testable import Kernels
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct KernelThreadPoolTests {
    /// Every part runs exactly once per call, its writes are visible when `run` returns, and
    /// this holds over many back-to-back calls (workers spinning), after pauses (workers
    /// asleep, so the caller often finishes before they wake and join), and for more parts
    /// than threads.
    @Test(arguments: [1, 2, 3, 5])
    func everyPartRunsOncePerCall(threadCount: Int) throws {
        let pool = KernelThreadPool(threadCount: threadCount)
        let capacity = threadCount + 3
        let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: capacity)
        defer { counts.deallocate() }
        let shared = _Counts(base: counts.baseAddress!)
        for call in 0 ..< 2_000 {
            counts.initialize(repeating: 0)
            let parts = call % capacity + 1
            pool.run(parts: parts) { part in shared.base[part] += 1 }
            #expect(Array(counts.prefix(parts)) == Array(repeating: 1, count: parts), "call \(call)")
            #expect(counts.dropFirst(parts).allSatisfy { $0 == 0 })
            if call % 500 == 499 { usleep(20_000) }   // long enough for workers to fall asleep
        }
    }

    @Test func callsFromSeveralThreadsAreSerialised() async {
        let pool = KernelThreadPool(threadCount: 2)
        let total = _Total()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0 ..< 4 {
                group.addTask {
                    for _ in 0 ..< 500 {
                        pool.run(parts: 2) { _ in total.increment() }
                    }
                }
            }
        }
        #expect(total.value == 4 * 500 * 2)
    }

    #if os(Linux)
    /// A worker runs at the lowest priority and the caller keeps its own. Each of the two parts
    /// waits (up to a few seconds) for the other to start, so with two threads the worker runs
    /// one of them; each records the nice value of the thread it runs on.
    @Test func workersRunAtTheLowestPriorityAndTheCallerKeepsItsOwn() {
        let pool = KernelThreadPool(threadCount: 2)
        let started = Atomic<Int>(0)
        let niceValues = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 2)
        defer { niceValues.deallocate() }
        let shared = _NiceValues(base: niceValues.baseAddress!)
        let callerNice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        pool.run(parts: 2) { part in
            started.add(1, ordering: .relaxed)
            let deadline = ContinuousClock.now + .seconds(5)
            while started.load(ordering: .relaxed) < 2, ContinuousClock.now < deadline {}
            shared.base[part] = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }
        #expect(niceValues.sorted() == [callerNice, KernelThreadPool.workerNiceValue].sorted())
    }
    #endif
}

private struct _NiceValues: @unchecked Sendable {
    let base: UnsafeMutablePointer<Int32>
}

/// A raw counter array shared with pool parts; each part writes only its own element.
private struct _Counts: @unchecked Sendable {
    let base: UnsafeMutablePointer<Int>
}

private final class _Total: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

@Suite struct KernelThreadPoolRangeTests {
    /// `forEachRange` covers `0 ..< count` exactly once with contiguous ranges, for counts
    /// smaller than, equal to and larger than the part count (including 0).
    ///
    /// Five threads: a count of 5 in 4 parts (2 per part) leaves the last part nothing.
    @Test(arguments: [0, 1, 2, 3, 5, 7, 64, 1001])
    func rangesCoverEveryIndexOnce(count: Int) {
        let pool = KernelThreadPool(threadCount: 5)
        for parts in 1 ... 6 {
            let hits = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(count, 1))
            defer { hits.deallocate() }
            hits.initialize(repeating: 0)
            let shared = _Counts(base: hits.baseAddress!)
            pool.forEachRange(of: count, parts: parts) { range in
                for index in range { shared.base[index] += 1 }
            }
            #expect(hits.prefix(count).allSatisfy { $0 == 1 }, "closure: count \(count), parts \(parts)")
            hits.initialize(repeating: 0)
            pool.forEachRange(of: count, parts: parts, job: _Marking(counts: shared))
            #expect(hits.prefix(count).allSatisfy { $0 == 1 }, "job: count \(count), parts \(parts)")
        }
    }
}

/// A range job counting the indices it is given.
private struct _Marking: RangeJob {
    let counts: _Counts
    func run(_ range: Range<Int>) {
        for index in range { counts.base[index] += 1 }
    }
}

@Suite struct KernelThreadPoolChunkTests {
    /// The chunks of a range call tile `0 ..< count` in order, shrink (never below the
    /// smallest size but for the last), and the first is the largest share the schedule gives.
    @Test(arguments: [1, 2, 3, 7, 16, 100, 304, 4_864, 151_936])
    func chunksTileTheRangeAndShrink(count: Int) {
        for parts in 2 ... 5 {
            var chunks: [Range<Int>] = []
            var index = 0
            while true {
                let chunk = KernelThreadPool.chunk(index, of: count, parts: parts)
                if chunk.isEmpty { break }
                chunks.append(chunk)
                index += 1
            }
            #expect(chunks.first?.lowerBound == 0 && chunks.last?.upperBound == count, "count \(count), parts \(parts)")
            #expect(zip(chunks, chunks.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
            #expect(zip(chunks, chunks.dropFirst()).allSatisfy { $0.count >= $1.count })
            let smallest = max(1, count / (KernelThreadPool.smallestChunkDivisor * parts))
            #expect(chunks.dropLast().allSatisfy { $0.count >= smallest })
            #expect(chunks.first!.count == max(smallest, (count + 2 * parts - 1) / (2 * parts)) || chunks.count == 1)
            // The threads finish within the smallest chunk of each other.
            #expect(chunks.count == 1 || chunks.last!.count <= smallest)
            #expect(chunks.count <= count)
        }
    }
}
