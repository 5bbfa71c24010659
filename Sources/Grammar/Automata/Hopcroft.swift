/// Hopcroft's DFA minimisation: the coarsest partition of the states that is stable under
/// every symbol, found by splitting blocks against "splitters" (a block and a symbol) from a
/// worklist and, after each split, queueing only the smaller half where the whole block was
/// not already queued. Each state then enters the worklist O(log n) times per symbol.
///
/// Symbols are the automaton's byte classes and the rules its states call. Missing
/// transitions stay missing (no dead state to complete the automaton): following Valmari
/// and Lehtinen, every initial block is a splitter for every symbol, which separates the
/// states that have a move on a symbol from those that have none. Only the transitions that
/// exist are stored; a splitter still visits every member of its block (docs/grammar.md,
/// "Compile time", has the step to O(m log n) in the transitions).
struct Hopcroft {
    private let stateCount: Int
    private let symbolCount: Int
    /// Sources of the transitions into each state, per symbol, in compressed rows:
    /// `sources[offsets[symbol * states + target] ..< offsets[… + 1]]`.
    private var offsets: [Int32]
    private var sources: [Int32]
    private let isFinal: [Bool]

    init(_ dfa: DFA) {
        let states = dfa.stateCount
        let bytes = dfa.byteClassRepresentatives()
        let rules = Array(Set(dfa.ruleEdges.flatMap { $0.map(\.rule) })).sorted()
        stateCount = states
        symbolCount = bytes.count + rules.count
        isFinal = dfa.isFinal
        // The transitions that exist, read row by row (a state's 256 transitions are
        // adjacent; a byte's column is not), counted per (symbol, target).
        var moves: [(row: Int32, source: Int32)] = []
        var counts = [Int32](repeating: 0, count: symbolCount * states + 1)
        for state in 0 ..< states {
            let base = state << 8
            for (symbol, byte) in bytes.enumerated() {
                let next = dfa.transitions[base | byte]
                guard next >= 0 else { continue }
                let row = symbol * states + Int(next)
                moves.append((Int32(row), Int32(state)))
                counts[row + 1] += 1
            }
            for edge in dfa.ruleEdges[state] {
                let row = (bytes.count + rules.firstIndex(notBelow: edge.rule)) * states + Int(edge.target)
                moves.append((Int32(row), Int32(state)))
                counts[row + 1] += 1
            }
        }
        for index in 1 ..< counts.count { counts[index] += counts[index - 1] }
        var fill = counts
        var sources = [Int32](repeating: 0, count: moves.count)
        for move in moves {
            sources[Int(fill[Int(move.row)])] = move.source
            fill[Int(move.row)] += 1
        }
        offsets = counts
        self.sources = sources
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
        // Initial blocks: final and non-final states.
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
        }
        // The worklist of splitters (block, symbol); `queued` says which are in it.
        var worklist: [(block: Int32, symbol: Int32)] = []
        var queued = SplitterSet(blocks: states, symbols: symbolCount)
        for block in blockStart.indices {
            for symbol in 0 ..< Int32(symbolCount) {
                worklist.append((Int32(block), symbol))
                queued.insert(Int32(block), symbol)
            }
        }
        var touched: [Int32] = []
        var splitter: [Int32] = []
        while let (block, symbol) = worklist.popLast() {
            queued.remove(block, symbol)
            // The states that `symbol` takes into `block` (copied: splitting may move them).
            splitter.removeAll(keepingCapacity: true)
            let base = Int(symbol) * states
            for index in blockStart[Int(block)] ..< blockEnd[Int(block)] {
                let target = Int(elements[Int(index)])
                for source in offsets[base + target] ..< offsets[base + target + 1] { splitter.append(sources[Int(source)]) }
            }
            // Mark them: move each to the front of its block.
            for state in splitter {
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
                blockStart[Int(owner)] = middle
                for index in start ..< middle { blockOf[Int(elements[Int(index)])] = fresh }
                let smaller = middle - start <= end - middle ? fresh : owner
                for other in 0 ..< Int32(symbolCount) {
                    if queued.contains(owner, other) {
                        worklist.append((fresh, other))
                        queued.insert(fresh, other)
                    } else {
                        worklist.append((smaller, other))
                        queued.insert(smaller, other)
                    }
                }
            }
            touched.removeAll(keepingCapacity: true)
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

/// Which (block, symbol) splitters are in Hopcroft's worklist: one bit each (blocks never
/// outnumber states).
private struct SplitterSet {
    private var words: [UInt64]
    private let symbols: Int

    init(blocks: Int, symbols: Int) {
        self.symbols = symbols
        words = [UInt64](repeating: 0, count: (blocks * symbols + 63) / 64)
    }

    func contains(_ block: Int32, _ symbol: Int32) -> Bool {
        let bit = Int(block) * symbols + Int(symbol)
        return words[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    mutating func insert(_ block: Int32, _ symbol: Int32) {
        let bit = Int(block) * symbols + Int(symbol)
        words[bit >> 6] |= 1 << UInt64(bit & 63)
    }

    mutating func remove(_ block: Int32, _ symbol: Int32) {
        let bit = Int(block) * symbols + Int(symbol)
        words[bit >> 6] &= ~(1 << UInt64(bit & 63))
    }
}
