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

    init(_ dfa: DFA) {
        let states = dfa.stateCount
        let bytes = dfa.byteClassRepresentatives()
        let rules = Array(Set(dfa.ruleEdges.flatMap { $0.map(\.rule) })).sorted()
        stateCount = states
        symbolCount = bytes.count + rules.count
        isFinal = dfa.isFinal
        // Count the transitions into each state, then place them: the table is read row by
        // row twice (a state's 256 transitions are adjacent; a byte's column is not).
        var counts = [Int32](repeating: 0, count: states + 1)
        dfa.transitions.withUnsafeBufferPointer { table in
            for state in 0 ..< states {
                let base = state << 8
                for byte in bytes where table[base | byte] >= 0 { counts[Int(table[base | byte]) + 1] += 1 }
                for edge in dfa.ruleEdges[state] { counts[Int(edge.target) + 1] += 1 }
            }
        }
        for index in 0 ..< states { counts[index + 1] += counts[index] }
        var fill = counts
        var symbols = [Int32](repeating: 0, count: Int(counts[states]))
        var sources = [Int32](repeating: 0, count: Int(counts[states]))
        dfa.transitions.withUnsafeBufferPointer { table in
            for state in 0 ..< states {
                let base = state << 8
                for (symbol, byte) in bytes.enumerated() where table[base | byte] >= 0 {
                    let target = Int(table[base | byte])
                    symbols[Int(fill[target])] = Int32(symbol)
                    sources[Int(fill[target])] = Int32(state)
                    fill[target] += 1
                }
                for edge in dfa.ruleEdges[state] {
                    let target = Int(edge.target)
                    symbols[Int(fill[target])] = Int32(bytes.count + rules.firstIndex(notBelow: edge.rule))
                    sources[Int(fill[target])] = Int32(state)
                    fill[target] += 1
                }
            }
        }
        offsets = counts
        incomingSymbols = symbols
        incomingSources = sources
    }

    /// The class of each state, classes numbered from 0 in order of their first state.
    func partition() -> [Int32] {
        let states = stateCount
        // Refinable partition: `elements` grouped by block, `position` inverts it.
        var elements = [Int32](0 ..< Int32(states))
        var position = [Int32](0 ..< Int32(states))
        var blockOf = [Int32](repeating: 0, count: states)
        var blockStart: [Int32] = []
        var blockEnd: [Int32] = []
        var marked: [Int32] = []  // per block: how many of its elements are marked (moved to its front)
        var queued: [Bool] = []   // per block: whether it is in the worklist
        // Initial blocks: final and non-final states, both splitters.
        var worklist: [Int32] = []
        let finals = (0 ..< states).filter { isFinal[$0] }
        let others = (0 ..< states).filter { !isFinal[$0] }
        var cursor: Int32 = 0
        for group in [finals, others] where !group.isEmpty {
            let block = Int32(blockStart.count)
            blockStart.append(cursor)
            for state in group {
                elements[Int(cursor)] = Int32(state)
                position[state] = cursor
                blockOf[state] = block
                cursor += 1
            }
            blockEnd.append(cursor)
            marked.append(0)
            queued.append(true)
            worklist.append(block)
        }
        // A splitter's incoming transitions grouped by symbol (a counting sort over the
        // symbols it reads): the sources on `symbol` are
        // `grouped[groupStart[symbol] ..< groupStart[symbol] + groupCount[symbol]]`.
        var groupCount = [Int32](repeating: 0, count: symbolCount)
        var groupStart = [Int32](repeating: 0, count: symbolCount)
        var grouped: [Int32] = []
        var symbolsRead: [Int32] = []
        var touched: [Int32] = []
        while let splitter = worklist.popLast() {
            queued[Int(splitter)] = false
            // Read the transitions into the splitter before any split reorders its members.
            symbolsRead.removeAll(keepingCapacity: true)
            var total: Int32 = 0
            for index in blockStart[Int(splitter)] ..< blockEnd[Int(splitter)] {
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
            grouped.removeAll(keepingCapacity: true)
            grouped.append(contentsOf: repeatElement(0, count: Int(total)))
            for index in blockStart[Int(splitter)] ..< blockEnd[Int(splitter)] {
                let target = Int(elements[Int(index)])
                for transition in offsets[target] ..< offsets[target + 1] {
                    let symbol = Int(incomingSymbols[Int(transition)])
                    grouped[Int(groupStart[symbol] + groupCount[symbol])] = incomingSources[Int(transition)]
                    groupCount[symbol] += 1
                }
            }
            for symbol in symbolsRead {
                let first = Int(groupStart[Int(symbol)])
                let sources = first ..< first + Int(groupCount[Int(symbol)])
                groupCount[Int(symbol)] = 0
                // Mark the states `symbol` takes into the splitter: move each to the front of
                // its block.
                for state in grouped[sources] {
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
                    let start = blockStart[Int(owner)], end = blockEnd[Int(owner)], middle = start + marked[Int(owner)]
                    marked[Int(owner)] = 0
                    guard middle < end else { continue }  // wholly marked: no split
                    // The marked part becomes a new block; the rest keeps the old number.
                    let fresh = Int32(blockStart.count)
                    blockStart.append(start)
                    blockEnd.append(middle)
                    marked.append(0)
                    queued.append(false)
                    blockStart[Int(owner)] = middle
                    for index in start ..< middle { blockOf[Int(elements[Int(index)])] = fresh }
                    // Stable under the whole block and one half means stable under the other.
                    let added = queued[Int(owner)] || middle - start <= end - middle ? fresh : owner
                    queued[Int(added)] = true
                    worklist.append(added)
                }
                touched.removeAll(keepingCapacity: true)
            }
        }
        // Number the classes in order of first appearance.
        var number = [Int32](repeating: -1, count: blockStart.count)
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
