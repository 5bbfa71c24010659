/// Hopcroft's DFA minimisation: the coarsest partition of the states that is stable under
/// every symbol, found by splitting blocks against "splitter" blocks from a worklist and,
/// after each split, queueing only the smaller half where the whole block was not already
/// queued.
///
/// Symbols are the automaton's byte classes and the rules its states call. Missing
/// transitions stay missing (no dead state to complete the automaton): following Valmari
/// and Lehtinen, every initial block is a splitter, which separates the states that have a
/// move on a symbol from those that have none.
///
/// A splitter is a block, not a (block, symbol) pair: taking one from the worklist reads the
/// transitions into its members, grouped by symbol, and splits against each group in turn.
/// Only transitions that exist are read, and a state's incoming transitions are read each
/// time its block is a splitter, O(log n) times: O(m log n) in the m transitions, however
/// many symbols there are (a (block, symbol) worklist visits every member of a block once
/// per symbol, most of them with no transition on it).
struct Hopcroft {
    private let stateCount: Int
    private let symbolCount: Int
    /// The transitions into each state, in compressed rows: those into `target` are
    /// `incomingSymbols[offsets[target] ..< offsets[target + 1]]` (and the same range of
    /// `incomingSources`).
    private var offsets: [Int32]
    private var incomingSymbols: [Int32]
    private var incomingSources: [Int32]
    private let isFinal: [Bool]

    init(_ automaton: some RowsAsRuns) {
        let states = automaton.stateCount
        let bytes = automaton.byteClassRepresentatives()
        let rules = Array(Set(automaton.ruleEdges.flatMap { $0.map(\.rule) })).sorted()
        stateCount = states
        symbolCount = bytes.count + rules.count
        isFinal = automaton.isFinal
        // The first byte class whose representative is at or after each byte: a run's
        // classes are `firstClass[run.lowerBound] ..< firstClass[run.upperBound]`.
        let firstClass = (0 ... 256).map { bytes.firstIndex(notBelow: $0) }
        // Count the transitions into each state, then place them, reading the runs twice.
        var counts = [Int32](repeating: 0, count: states + 1)
        for state in 0 ..< states {
            automaton.forEachRun(of: state) { run, target in
                counts[Int(target) + 1] += Int32(firstClass[run.upperBound] - firstClass[run.lowerBound])
            }
            for edge in automaton.ruleEdges[state] { counts[Int(edge.target) + 1] += 1 }
        }
        for index in 0 ..< states { counts[index + 1] += counts[index] }
        var fill = counts
        var symbols = [Int32](repeating: 0, count: Int(counts[states]))
        var sources = [Int32](repeating: 0, count: Int(counts[states]))
        for state in 0 ..< states {
            automaton.forEachRun(of: state) { run, target in
                for symbol in firstClass[run.lowerBound] ..< firstClass[run.upperBound] {
                    symbols[Int(fill[Int(target)])] = Int32(symbol)
                    sources[Int(fill[Int(target)])] = Int32(state)
                    fill[Int(target)] += 1
                }
            }
            for edge in automaton.ruleEdges[state] {
                let target = Int(edge.target)
                symbols[Int(fill[target])] = Int32(bytes.count + rules.firstIndex(notBelow: edge.rule))
                sources[Int(fill[target])] = Int32(state)
                fill[target] += 1
            }
        }
        offsets = counts
        incomingSymbols = symbols
        incomingSources = sources
    }

    /// The class of each state, classes numbered from 0 in order of their first state.
    ///
    /// Every array the refinement touches has a fixed size known up front (at most one block
    /// per state, at most the m transitions read at once), so it all lives in one allocation
    /// read and written through pointers: the loop does no uniqueness checks and no growth.
    func partition() -> [Int32] {
        let states = stateCount
        guard states > 0 else { return [] }
        let transitionCount = incomingSources.count
        // One allocation, carved into the arrays below.
        let space = UnsafeMutablePointer<Int32>.allocate(capacity: 8 * states + 2 * symbolCount + transitionCount)
        defer { space.deallocate() }
        // Refinable partition: `elements` grouped by block, `position` inverts it.
        let elements = space, position = space + states, blockOf = space + 2 * states
        let blockStart = space + 3 * states, blockEnd = space + 4 * states
        let marked = space + 5 * states   // per block: how many of its elements are marked (moved to its front)
        let queued = space + 6 * states   // per block: 1 while it is in the worklist
        let worklist = space + 7 * states // at most one entry per block
        // A splitter's incoming transitions grouped by symbol (a counting sort over the
        // symbols it reads): the sources on `symbol` are
        // `grouped[groupStart[symbol] ..< groupStart[symbol] + groupCount[symbol]]`.
        let groupCount = space + 8 * states, groupStart = groupCount + symbolCount
        let grouped = groupStart + symbolCount
        groupCount.initialize(repeating: 0, count: symbolCount)
        var blockCount = 0, worklistCount = 0
        // Initial blocks: final and non-final states, both splitters.
        var cursor: Int32 = 0
        for wantsFinal in [true, false] {
            let first = cursor
            for state in 0 ..< states where isFinal[state] == wantsFinal {
                elements[Int(cursor)] = Int32(state)
                position[state] = cursor
                blockOf[state] = Int32(blockCount)
                cursor += 1
            }
            guard cursor > first else { continue }
            blockStart[blockCount] = first
            blockEnd[blockCount] = cursor
            marked[blockCount] = 0
            queued[blockCount] = 1
            worklist[worklistCount] = Int32(blockCount)
            worklistCount += 1
            blockCount += 1
        }
        var symbolsRead: [Int32] = []
        var touched: [Int32] = []
        offsets.withUnsafeBufferPointer { offsets in
        incomingSymbols.withUnsafeBufferPointer { incomingSymbols in
        incomingSources.withUnsafeBufferPointer { incomingSources in
            while worklistCount > 0 {
                worklistCount -= 1
                let splitter = Int(worklist[worklistCount])
                queued[splitter] = 0
                // Read the transitions into the splitter before any split reorders its members.
                symbolsRead.removeAll(keepingCapacity: true)
                var total: Int32 = 0
                for index in blockStart[splitter] ..< blockEnd[splitter] {
                    let target = Int(elements[Int(index)])
                    for transition in offsets[target] ..< offsets[target + 1] {
                        let symbol = Int(incomingSymbols[Int(transition)])
                        if groupCount[symbol] == 0 { symbolsRead.append(Int32(symbol)) }
                        groupCount[symbol] += 1
                        total += 1
                    }
                }
                guard total > 0 else { continue }
                var next: Int32 = 0
                for symbol in symbolsRead {
                    groupStart[Int(symbol)] = next
                    next += groupCount[Int(symbol)]
                    groupCount[Int(symbol)] = 0
                }
                for index in blockStart[splitter] ..< blockEnd[splitter] {
                    let target = Int(elements[Int(index)])
                    for transition in offsets[target] ..< offsets[target + 1] {
                        let symbol = Int(incomingSymbols[Int(transition)])
                        grouped[Int(groupStart[symbol] + groupCount[symbol])] = incomingSources[Int(transition)]
                        groupCount[symbol] += 1
                    }
                }
                for symbol in symbolsRead {
                    let first = Int(groupStart[Int(symbol)])
                    let last = first + Int(groupCount[Int(symbol)])
                    groupCount[Int(symbol)] = 0
                    // Mark the states `symbol` takes into the splitter: move each to the front
                    // of its block.
                    for source in first ..< last {
                        let state = grouped[source]
                        let owner = Int(blockOf[Int(state)])
                        let front = blockStart[owner] + marked[owner]
                        let at = position[Int(state)]
                        guard at >= front else { continue }  // already marked
                        let other = elements[Int(front)]
                        elements[Int(front)] = state
                        position[Int(state)] = front
                        elements[Int(at)] = other
                        position[Int(other)] = at
                        if marked[owner] == 0 { touched.append(Int32(owner)) }
                        marked[owner] += 1
                    }
                    // Split every block partly marked.
                    for owner in touched {
                        let owner = Int(owner)
                        let start = blockStart[owner], end = blockEnd[owner], middle = start + marked[owner]
                        marked[owner] = 0
                        guard middle < end else { continue }  // wholly marked: no split
                        // The marked part becomes a new block; the rest keeps the old number.
                        let fresh = blockCount
                        blockCount += 1
                        blockStart[fresh] = start
                        blockEnd[fresh] = middle
                        marked[fresh] = 0
                        queued[fresh] = 0
                        blockStart[owner] = middle
                        for index in start ..< middle { blockOf[Int(elements[Int(index)])] = Int32(fresh) }
                        // Stable under the whole block and one half means stable under the other.
                        let added = queued[owner] != 0 || middle - start <= end - middle ? fresh : owner
                        queued[added] = 1
                        worklist[worklistCount] = Int32(added)
                        worklistCount += 1
                    }
                    touched.removeAll(keepingCapacity: true)
                }
            }
        }
        }
        }
        // Number the classes in order of first appearance.
        var number = [Int32](repeating: -1, count: blockCount)
        var classes = [Int32](repeating: 0, count: states)
        var next: Int32 = 0
        for state in 0 ..< states {
            let block = Int(blockOf[state])
            if number[block] < 0 { number[block] = next; next += 1 }
            classes[state] = number[block]
        }
        return classes
    }
}
