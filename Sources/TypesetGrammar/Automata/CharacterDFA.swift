/// A deterministic automaton over Unicode scalars: a pattern's character automaton
/// determinized before it is written in bytes.
///
/// Determinizing a pattern at the level of bytes, after each character class has been lowered
/// to its UTF-8 and escape spellings, makes every subset carry the half-read spellings of
/// every class at once (`.*https://.*` holds a copy of the spelling of "any character" per
/// position of the search). Determinized first over *atoms* (the classes of scalars every edge
/// treats alike), the automaton stays as small as the pattern; each state's edges are then
/// spelled in bytes by one small automaton, the state's *fan*, shared by every state whose
/// edges carry the same classes (`.{1,255}`: one fan for 255 states):
///
///     state ──"a"─────────────────▶ target₀        raw ASCII: one byte, no fan
///       │
///       └──▶ [C2-DF] ─▶ [80-BF] ──▶ target₁        the fan: the spellings of the
///            [E0] ─▶ [A0-BF] ─▶ …  ▶ target₁        state's other classes, each
///            "\" ─▶ "n" ──────────▶ target₂        ending in the class's target
///
/// Spellings are one per scalar and prefix-free (UTF-8, and JSON's escapes), and a state's
/// classes are disjoint, so stitching fans between states keeps the result deterministic.
struct CharacterDFA: Sendable {
    struct Edge: Sendable {
        var characters: CodePointSet
        var target: Int32
    }

    /// Each state's edges: disjoint, non-empty sets in ascending order of their first scalar.
    /// State 0 is the start.
    let edges: [[Edge]]
    let isFinal: [Bool]

    var stateCount: Int { isFinal.count }

    /// Subset construction from `part` of `automaton` over the atoms of its edges' classes,
    /// then minimisation (when there are at most 256 atoms).
    ///
    /// - Throws: `DFA.TooLarge` past `stateLimit` states or past the compilation's budget.
    /// - Complexity: O(states × (subset size × edges per state × atoms per class)).
    init(_ part: Fragment, of automaton: CharacterNFA, stateLimit: Int = 1 << 16) throws(DFA.TooLarge) {
        let atoms = Atoms(part, of: automaton)
        let reachable = ReachableNFA(part, of: automaton)
        var closure = EpsilonClosure(reachable)
        var subsets = Subsets(stateLimit: stateLimit, bytesPerState: 256, source: ("a pattern", automaton.stateCount))
        // A state that reads any character into a closure holding itself and the end accepts
        // every non-empty continuation (a search's trailing `.*`), so a final subset holding
        // one has the language of all strings: all such subsets are one. Without this, a
        // search for several words makes one subset per combination of words half read after
        // the first was found, all alike.
        var looping: [Int32] = []
        var acceptsEverything: [Int32]? = nil
        for state in 0 ..< Int32(reachable.stateCount) {
            for edge in reachable.edges(of: state) where reachable.label(edge) == CodePointSet.all {
                let after = closure.of([reachable.targets[edge]])
                guard after.sortedContains(state), after.sortedContains(reachable.end) else { continue }
                looping.append(state)
                if acceptsEverything == nil { acceptsEverything = after }
            }
        }
        func canonical(_ set: [Int32]) -> [Int32] {
            guard let acceptsEverything, set.sortedContains(reachable.end), looping.contains(where: { set.sortedContains($0) }) else { return set }
            return acceptsEverything
        }
        _ = try subsets.intern(canonical(closure.of([reachable.start])))
        var rows: [[(atom: Int32, target: Int32)]] = []
        var isFinal: [Bool] = []
        var buckets = [[Int32]](repeating: [], count: atoms.ranges.count)
        var touched: [Int32] = []
        var cursor = 0
        var set: [Int32] = []
        while cursor < subsets.count {
            subsets.copyMembers(of: cursor, into: &set)
            cursor += 1
            for state in set {
                let edges = reachable.edges(of: state)
                for edge in edges where !reachable.isEpsilon(edge) {
                    for atom in atoms.ofEdge[Int(reachable.original[Int(state)])][edge - edges.lowerBound] {
                        if buckets[Int(atom)].isEmpty { touched.append(atom) }
                        buckets[Int(atom)].append(reachable.targets[edge])
                    }
                }
            }
            var row: [(atom: Int32, target: Int32)] = []
            var closures: [[Int32]: Int32] = [:]
            for atom in touched {
                let targets = buckets[Int(atom)]
                buckets[Int(atom)].removeAll(keepingCapacity: true)
                if let known = closures[targets] {
                    row.append((atom, known))
                } else {
                    let target = try subsets.intern(canonical(closure.of(targets)))
                    closures[targets] = target
                    row.append((atom, target))
                }
            }
            touched.removeAll(keepingCapacity: true)
            rows.append(row)
            isFinal.append(set.sortedContains(reachable.end))
        }
        // Subsets are rarely minimal (`.*(console|signup).*` makes one per combination of
        // half-read words, all alike once a word is read). With at most 256 atoms, the atoms
        // stand for bytes and the byte automaton's minimisation serves.
        if atoms.ranges.count <= 256 {
            var table = [Int32](repeating: -1, count: rows.count << 8)
            for (state, row) in rows.enumerated() {
                for (atom, target) in row { table[DFA.transitionIndex(state, Int(atom))] = target }
            }
            let minimal = DFA(transitions: table, ruleEdges: [[DFA.RuleEdge]](repeating: [], count: rows.count), isFinal: isFinal)
                .trimmedAndMinimized(productiveRules: nil)
            rows = (0 ..< minimal.stateCount).map { state in
                (0 ..< Int32(atoms.ranges.count)).compactMap { atom in
                    let target = minimal.next(Int32(state), UInt8(atom))
                    return target >= 0 ? (atom, target) : nil
                }
            }
            isFinal = minimal.isFinal
        }
        // Atoms leading to the same state become one edge.
        edges = rows.map { row in
            var rangesByTarget: [Int32: [ClosedRange<UInt32>]] = [:]
            for (atom, target) in row { rangesByTarget[target, default: []] += atoms.ranges[Int(atom)] }
            return rangesByTarget.map { Edge(characters: CodePointSet($0.value), target: $0.key) }
                .sorted { $0.characters.ranges[0].lowerBound < $1.characters.ranges[0].lowerBound }
        }
        self.isFinal = isFinal
    }

    /// The classes of scalars that every edge label of a fragment treats alike.
    private struct Atoms {
        /// Each atom's scalars, as sorted ranges.
        var ranges: [[ClosedRange<UInt32>]] = []
        /// For each automaton state and each of its edges, the atoms its label covers (empty
        /// for ε-moves and for states outside the fragment).
        var ofEdge: [[[Int32]]]

        init(_ part: Fragment, of automaton: CharacterNFA) {
            ofEdge = [[[Int32]]](repeating: [], count: automaton.stateCount)
            // The fragment's states and the distinct labels on their edges.
            var labels: [CodePointSet] = []
            var labelIndex: [CodePointSet: Int] = [:]
            var labelOfEdge: [(state: Int32, position: Int, label: Int)] = []
            var seen = [Bool](repeating: false, count: automaton.stateCount)
            var stack: [Int32] = [part.start]
            seen[Int(part.start)] = true
            while let state = stack.popLast() {
                for (position, edge) in automaton.edges(of: state).enumerated() {
                    if let label = edge.label {
                        let known = labelIndex[label] ?? {
                            labels.append(label)
                            labelIndex[label] = labels.count - 1
                            return labels.count - 1
                        }()
                        labelOfEdge.append((state, position, known))
                    }
                    if !seen[Int(edge.target)] {
                        seen[Int(edge.target)] = true
                        stack.append(edge.target)
                    }
                }
            }
            // Elementary intervals between consecutive range boundaries, each with the labels
            // containing it; intervals contained in the same labels form one atom.
            var boundaries: Set<UInt32> = []
            for label in labels {
                for range in label.ranges {
                    boundaries.insert(range.lowerBound)
                    boundaries.insert(range.upperBound + 1)
                }
            }
            let points = boundaries.sorted()
            var containing = [[Int32]](repeating: [], count: max(points.count - 1, 0))
            for (label, set) in labels.enumerated() {
                for range in set.ranges {
                    var interval = points.firstIndex(notBelow: range.lowerBound)
                    while points[interval] <= range.upperBound {
                        containing[interval].append(Int32(label))
                        interval += 1
                    }
                }
            }
            var atomOfLabels: [[Int32]: Int32] = [:]
            var atomsOfLabel = [[Int32]](repeating: [], count: labels.count)
            for (interval, owners) in containing.enumerated() where !owners.isEmpty {
                let atom: Int32
                if let known = atomOfLabels[owners] {
                    atom = known
                } else {
                    atom = Int32(ranges.count)
                    atomOfLabels[owners] = atom
                    ranges.append([])
                    for owner in owners { atomsOfLabel[Int(owner)].append(atom) }
                }
                ranges[Int(atom)].append(points[interval] ... points[interval + 1] - 1)
            }
            for (state, position, label) in labelOfEdge {
                if ofEdge[Int(state)].isEmpty { ofEdge[Int(state)] = [[Int32]](repeating: [], count: automaton.edges(of: state).reduce(0) { count, _ in count + 1 }) }
                ofEdge[Int(state)][position] = atomsOfLabel[label]
            }
        }
    }
}

extension CharacterDFA {
    /// The JSON string literals, quotes included, whose contents are strings of this
    /// language, each scalar in the one spelling `Lowering.jsonStringCharacter` gives it;
    /// trimmed and minimised.
    ///
    /// - Parameter fans: spellings already built for a list of classes (kept by the caller
    ///   across patterns of one schema).
    /// - Throws: `DFA.TooLarge` past `stateLimit` states or past the compilation's budget.
    func quotedJSONStrings(fans: inout [[CodePointSet]: DFA], stateLimit: Int = 1 << 16) throws(DFA.TooLarge) -> DFA {
        // 0: before the opening quote; 1: after the closing one; 2 + s: at state s.
        var transitions = [Int32](repeating: -1, count: (stateCount + 2) << 8)
        var isFinal = [Bool](repeating: false, count: stateCount + 2)
        isFinal[1] = true
        transitions[0x22] = 2
        func entry(_ state: Int32) -> Int32 { state + 2 }
        let meter = CompilationMeter.current
        for state in 0 ..< stateCount {
            let row = Int(entry(Int32(state))) << 8
            if self.isFinal[state] { transitions[row | 0x22] = 1 }
            var spelled: [CodePointSet] = []
            var spelledTargets: [Int32] = []
            for edge in edges[state] {
                // Raw ASCII is one byte, the same in every class: straight onto the row.
                for range in edge.characters.intersection(Self.rawASCII).ranges {
                    for scalar in range { transitions[row | Int(scalar)] = entry(edge.target) }
                }
                let rest = edge.characters.subtracting(Self.rawASCII)
                if !rest.isEmpty {
                    spelled.append(rest)
                    spelledTargets.append(edge.target)
                }
            }
            guard !spelled.isEmpty else { continue }
            let fan: DFA
            if let known = fans[spelled] {
                fan = known
            } else {
                fan = try Self.fan(spelling: spelled)
                fans[spelled] = fan
            }
            // The fan's start is this state's row; its other states are appended, except the
            // ones that end a character (their only edge is the class's "rule"), which are
            // the class's target.
            var placed = [Int32](repeating: -1, count: fan.stateCount)
            placed[0] = entry(Int32(state))
            for fanState in 1 ..< fan.stateCount where !fan.isFinal[fanState] {
                if let exit = fan.ruleEdges[fanState].first {
                    assert(fan.ruleEdges[fanState].count == 1 && fan.outgoingBytes(Int32(fanState)).isEmpty, "spellings are prefix-free")
                    placed[fanState] = entry(spelledTargets[Int(exit.rule)])
                } else {
                    placed[fanState] = Int32(isFinal.count)
                    isFinal.append(false)
                    transitions += DFA.rowWithoutMoves
                }
            }
            if isFinal.count > stateLimit { throw DFA.TooLarge() }
            if let meter, state & 63 == 63 {
                try meter.checkConstruction(bytes: transitions.count * 4, "spelling a pattern of \(stateCount) states in bytes")
            }
            for fanState in 0 ..< fan.stateCount where placed[fanState] >= 0 && fan.ruleEdges[fanState].isEmpty {
                let base = Int(placed[fanState]) << 8
                for byte in 0 ..< 256 {
                    let target = fan.next(Int32(fanState), UInt8(byte))
                    if target >= 0 { transitions[base | byte] = placed[Int(target)] }
                }
            }
        }
        let ruleEdges = [[DFA.RuleEdge]](repeating: [], count: isFinal.count)
        return DFA(transitions: transitions, ruleEdges: ruleEdges, isFinal: isFinal).trimmedAndMinimized(productiveRules: nil)
    }

    /// Scalars written as themselves in one byte inside a JSON string.
    static let rawASCII = CodePointSet([0x20 ... 0x7F]).subtracting(Lowering.mustEscape)

    /// The spellings of `classes` (disjoint) as one deterministic automaton whose states
    /// ending the spelling of a scalar of `classes[i]` have one edge, to rule `i`, and nothing
    /// else.
    private static func fan(spelling classes: [CodePointSet]) throws(DFA.TooLarge) -> DFA {
        var automaton = ByteNFA()
        let exit = automaton.addState()
        let branches = classes.indices.map { index in
            let spelling = Lowering.jsonStringCharacter(classes[index], into: &automaton)
            let done = automaton.rule(Int32(index))
            automaton.addEdge(from: done.end, to: exit, label: nil)
            return automaton.sequence([spelling, Fragment(start: done.start, end: exit)])
        }
        return try DFA(automaton.union(branches), of: automaton)
    }
}

extension RandomAccessCollection where Element: Comparable, Index == Int {
    /// The index of the first element not less than `value` (the collection sorted). O(log n).
    func firstIndex(notBelow value: Element) -> Int {
        var low = startIndex, high = endIndex
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether the sorted collection contains `value`. O(log n).
    func sortedContains(_ value: Element) -> Bool {
        let index = firstIndex(notBelow: value)
        return index < endIndex && self[index] == value
    }
}
