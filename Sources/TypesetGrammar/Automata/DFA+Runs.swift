/// A state's row as runs: the maximal ranges of adjacent bytes that go to one target.
///
/// Rows are 256 entries, and most of them are short lists in disguise: a state that spells a
/// key has one byte with a move; a state inside a string has a handful of ranges. Passes that
/// visit every move (trimming, quotients, byte classes, embedding) walk the runs instead of
/// the 256 entries: sixteen lanes at a time are compared with the run in progress, and only
/// the groups where a run ends are read one entry at a time.
///
///     row:   -1 … -1 | 7 7 7 … 7 | -1 | 7 … 7 | 3 | -1 … -1
///     runs:            (0x30..<0x3a, 7)  (0x3b..<0x41, 7) (0x41..<0x42, 3)
extension DFA {
    /// Calls `body` with each run of equal targets in the 256-entry `row`, in byte order,
    /// skipping runs of -1 (no move). Neighbouring runs have different targets.
    @inline(__always)
    static func forEachRun<Failure: Error>(
        in row: UnsafePointer<Int32>, _ body: (_ bytes: Range<Int>, _ target: Int32) throws(Failure) -> Void
    ) throws(Failure) {
        var current = row[0]
        var start = 0
        for group in stride(from: 0, to: 256, by: 16) {
            let lanes = UnsafeRawPointer(row + group).loadUnaligned(as: SIMD16<Int32>.self)
            if isZero(lanes ^ SIMD16(repeating: current)) { continue }
            for byte in group ..< group + 16 where row[byte] != current {
                if current >= 0 { try body(start ..< byte, current) }
                start = byte
                current = row[byte]
            }
        }
        if current >= 0 { try body(start ..< 256, current) }
    }

    /// Whether every lane is zero: the lanes or-ed together by halves (the standard library's
    /// `==` on `SIMD16` compiles to a lane-by-lane loop without a tuned target).
    @inline(__always)
    private static func isZero(_ lanes: SIMD16<Int32>) -> Bool {
        let eight = lanes.lowHalf | lanes.highHalf
        let four = eight.lowHalf | eight.highHalf
        let two = four.lowHalf | four.highHalf
        return two.x | two.y == 0
    }

    /// Appends the runs of `state`'s row to `runs` (see ``forEachRun(in:_:)``).
    func appendRuns(of state: Int, to runs: inout [(bytes: Range<Int>, target: Int32)]) {
        forEachRun(of: state) { bytes, target in runs.append((bytes, target)) }
    }

    /// Calls `body` with each run of `state`'s row (see ``forEachRun(in:_:)``).
    @inline(__always)
    func forEachRun<Failure: Error>(of state: Int, _ body: (_ bytes: Range<Int>, _ target: Int32) throws(Failure) -> Void) throws(Failure) {
        try transitions.withUnsafeBufferPointer { table throws(Failure) in
            try Self.forEachRun(in: table.baseAddress! + state << 8, body)
        }
    }
}

extension Array where Element == Int32 {
    /// Sets the entries at `range` to `value`.
    mutating func fill(_ range: Range<Int>, with value: Int32) {
        withUnsafeMutableBufferPointer { UnsafeMutableBufferPointer(rebasing: $0[range]).update(repeating: value) }
    }
}
