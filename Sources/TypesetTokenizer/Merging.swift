// The two merge loops. Both reproduce llama.cpp's priority-queue order exactly: byte-level BPE
// merges the adjacent pair with the lowest merge rank, SentencePiece the adjacent pair whose
// joined text is the token with the highest score; ties go to the leftmost pair.

// MARK: - Byte-level BPE

/// Merges the bytes of one word into tokens with `merges`; appends the tokens to `output`.
/// `initial[b]` is the token of byte `b` (-1 when the vocabulary lacks it: that byte is dropped,
/// as llama.cpp drops it).
///
/// Short words (the vast majority) use a scan for the best pair per merge, O(n²) in the word's
/// length with n ≤ 48; longer words use a binary heap, O(n log n).
func _mergeBytePairs(
    _ word: UnsafeBufferPointer<UInt8>, initial: UnsafeBufferPointer<Int32>, merges: MergeTable,
    scratch: inout MergeScratch, into output: inout [Int]
) {
    let count = word.count
    if count == 1 {
        let token = initial[Int(word[0])]
        if token >= 0 { output.append(Int(token)) }
        return
    }
    _mergeByRank(count, merges, &scratch, initial: { initial[Int(word[$0])] }) { _, token in
        if token >= 0 { output.append(Int(token)) }
    }
}

/// Links `count` symbols, symbol `i` starting as token `initial(i)` (-1: none, which never
/// merges), merges the adjacent pair of lowest rank until none is left (leftmost on ties), and
/// hands each remaining symbol's index and token to `body`, in order.
@inline(__always)
private func _mergeByRank(
    _ count: Int, _ merges: MergeTable, _ scratch: inout MergeScratch, initial: (Int) -> Int32, _ body: (Int, Int32) -> Void
) {
    scratch.prepare(count)
    for index in 0 ..< count {
        scratch.tokens[index] = initial(index)
        scratch.next[index] = Int32(index + 1)
        scratch.previous[index] = Int32(index - 1)
    }
    scratch.next[count - 1] = -1
    if count <= 48 {
        _mergeByScanning(count, merges, &scratch)
    } else {
        _mergeWithHeap(count, merges, &scratch)
    }
    var index = 0
    while index >= 0 {
        body(index, scratch.tokens[index])
        index = Int(scratch.next[index])
    }
}

/// Working arrays reused across words.
struct MergeScratch {
    var tokens: [Int32] = []
    var next: [Int32] = []
    var previous: [Int32] = []
    var ranks: [Int32] = []
    var results: [Int32] = []
    var heap: [PairCandidate] = []

    mutating func prepare(_ count: Int) {
        if tokens.count < count {
            let size = max(count, 64)
            tokens = [Int32](repeating: 0, count: size)
            next = tokens
            previous = tokens
            ranks = tokens
            results = tokens
        }
    }
}

private let _noMerge = Int32.max

private func _mergeByScanning(_ count: Int, _ merges: MergeTable, _ scratch: inout MergeScratch) {
    @inline(__always) func refresh(_ left: Int, _ scratch: inout MergeScratch) {
        let right = Int(scratch.next[left])
        if right >= 0, scratch.tokens[left] >= 0, scratch.tokens[right] >= 0,
           let merge = merges.merge(scratch.tokens[left], scratch.tokens[right]) {
            scratch.ranks[left] = merge.rank
            scratch.results[left] = merge.result
        } else {
            scratch.ranks[left] = _noMerge
        }
    }
    for index in 0 ..< count { refresh(index, &scratch) }
    while true {
        var best = -1
        var bestRank = _noMerge
        var index = 0
        while index >= 0 {
            if scratch.ranks[index] < bestRank { bestRank = scratch.ranks[index]; best = index }
            index = Int(scratch.next[index])
        }
        guard best >= 0 else { return }
        let right = Int(scratch.next[best])
        scratch.tokens[best] = scratch.results[best]
        scratch.next[best] = scratch.next[right]
        if scratch.next[right] >= 0 { scratch.previous[Int(scratch.next[right])] = Int32(best) }
        refresh(best, &scratch)
        let before = Int(scratch.previous[best])
        if before >= 0 { refresh(before, &scratch) }
    }
}

/// A candidate merge in the heap. Stale when either side changed since it was pushed.
struct PairCandidate {
    var priority: Int64  // rank (BPE) or negated score bits (SentencePiece); lower first
    var left: Int32
    var right: Int32
    var leftToken: Int32
    var rightToken: Int32

    @inline(__always)
    static func precedes(_ a: PairCandidate, _ b: PairCandidate) -> Bool {
        a.priority != b.priority ? a.priority < b.priority : a.left < b.left
    }
}

/// A binary min-heap over `PairCandidate.precedes`, on a reused array.
struct CandidateHeap {
    static func push(_ candidate: PairCandidate, _ heap: inout [PairCandidate]) {
        heap.append(candidate)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard PairCandidate.precedes(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    static func pop(_ heap: inout [PairCandidate]) -> PairCandidate? {
        guard let top = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                guard left < heap.count else { break }
                var smallest = left
                if left + 1 < heap.count, PairCandidate.precedes(heap[left + 1], heap[left]) { smallest = left + 1 }
                guard PairCandidate.precedes(heap[smallest], heap[parent]) else { break }
                heap.swapAt(smallest, parent)
                parent = smallest
            }
        }
        return top
    }
}

private func _mergeWithHeap(_ count: Int, _ merges: MergeTable, _ scratch: inout MergeScratch) {
    scratch.heap.removeAll(keepingCapacity: true)
    @inline(__always) func consider(_ left: Int, _ scratch: inout MergeScratch) {
        guard left >= 0 else { return }
        let right = Int(scratch.next[left])
        guard right >= 0 else { return }
        let leftToken = scratch.tokens[left], rightToken = scratch.tokens[right]
        guard leftToken >= 0, rightToken >= 0, let merge = merges.merge(leftToken, rightToken) else { return }
        // The result is looked up again when the candidate is popped and found still valid.
        CandidateHeap.push(
            PairCandidate(priority: Int64(merge.rank), left: Int32(left), right: Int32(right),
                           leftToken: leftToken, rightToken: rightToken),
            &scratch.heap)
    }
    for index in 0 ..< count - 1 { consider(index, &scratch) }
    while let candidate = CandidateHeap.pop(&scratch.heap) {
        let left = Int(candidate.left), right = Int(candidate.right)
        guard scratch.next[left] == candidate.right, scratch.tokens[left] == candidate.leftToken,
              scratch.tokens[right] == candidate.rightToken else { continue }
        guard let merge = merges.merge(candidate.leftToken, candidate.rightToken) else { continue }
        scratch.tokens[left] = merge.result
        scratch.tokens[right] = -2  // merged away
        scratch.next[left] = scratch.next[right]
        if scratch.next[right] >= 0 { scratch.previous[Int(scratch.next[right])] = Int32(left) }
        consider(Int(scratch.previous[left]), &scratch)
        consider(left, &scratch)
    }
}

// MARK: - SentencePiece BPE

/// Splits `text` (already space-escaped) into characters by lead byte and merges adjacent
/// symbols into the highest-scoring token their joined text forms; appends the resulting
/// tokens, with `<0xNN>` byte fallback for characters that are not tokens.
func _mergeSentencePiece(
    _ text: UnsafeBufferPointer<UInt8>, lookup: ByteStringTable, scores: [Float],
    byteFallback: [Int32], scratch: inout MergeScratch, into output: inout [Int]
) {
    let byteCount = text.count
    guard byteCount > 0 else { return }
    // Symbols: start offset in `tokens`, length in `ranks` (lengths change as symbols merge).
    var starts: [Int32] = []
    starts.reserveCapacity(byteCount)
    var offset = 0
    while offset < byteCount {
        starts.append(Int32(offset))
        offset += min(_utf8SequenceLength(lead: text[offset]), byteCount - offset)
    }
    let count = starts.count
    scratch.prepare(count)
    for index in 0 ..< count {
        let end = index + 1 < count ? Int(starts[index + 1]) : byteCount
        scratch.ranks[index] = Int32(end - Int(starts[index]))  // length in bytes
        scratch.next[index] = index + 1 < count ? Int32(index + 1) : -1
        scratch.previous[index] = Int32(index - 1)
    }
    scratch.heap.removeAll(keepingCapacity: true)
    let base = UnsafeRawPointer(text.baseAddress!)
    @inline(__always) func consider(_ left: Int, _ scratch: inout MergeScratch) {
        guard left >= 0 else { return }
        let right = Int(scratch.next[left])
        guard right >= 0 else { return }
        let size = Int(scratch.ranks[left] + scratch.ranks[right])
        let joined = UnsafeRawBufferPointer(start: base + Int(starts[left]), count: size)
        guard let token = lookup.lookup(joined) else { return }
        // Higher score first: order by the score's negation, as a totally ordered integer.
        let score = scores[Int(token)]
        CandidateHeap.push(
            PairCandidate(priority: _descendingKey(score), left: Int32(left), right: Int32(right),
                           leftToken: Int32(size), rightToken: 0),
            &scratch.heap)
    }
    for index in 0 ..< count - 1 { consider(index, &scratch) }
    while let candidate = CandidateHeap.pop(&scratch.heap) {
        let left = Int(candidate.left), right = Int(candidate.right)
        let leftLength = scratch.ranks[left], rightLength = scratch.ranks[right]
        guard leftLength != 0, rightLength != 0, leftLength + rightLength == candidate.leftToken else { continue }
        scratch.ranks[left] = leftLength + rightLength
        scratch.ranks[right] = 0
        scratch.next[left] = scratch.next[right]
        if scratch.next[right] >= 0 { scratch.previous[Int(scratch.next[right])] = Int32(left) }
        consider(Int(scratch.previous[left]), &scratch)
        consider(left, &scratch)
    }
    var index = 0
    while index >= 0 {
        let start = Int(starts[index])
        let length = Int(scratch.ranks[index])
        let symbol = UnsafeRawBufferPointer(start: base + start, count: length)
        if let token = lookup.lookup(symbol) {
            output.append(Int(token))
        } else {
            for byte in symbol {
                let token = byteFallback[Int(byte)]
                if token >= 0 { output.append(Int(token)) }
            }
        }
        index = Int(scratch.next[index])
    }
}

// MARK: - SentencePiece's alphabet with merges

/// Merges the characters of one run of text (already space-escaped; Gemma 4) by rank, as
/// byte-level BPE merges bytes: each character starts as its token (or as none: a character
/// that is no token never merges), the adjacent pair of lowest rank merges first (leftmost on
/// ties). Appends the resulting tokens; a symbol left without a token falls back to its
/// bytes' `<0xNN>` tokens (`byteFallback`, -1 for none: that byte is dropped, as llama.cpp
/// drops it).
func _mergeCharacterPairs(
    _ text: UnsafeBufferPointer<UInt8>, lookup: ByteStringTable, merges: MergeTable,
    byteFallback: [Int32], scratch: inout MergeScratch, into output: inout [Int]
) {
    let byteCount = text.count
    guard byteCount > 0 else { return }
    var starts: [Int32] = []
    starts.reserveCapacity(byteCount + 1)
    var offset = 0
    while offset < byteCount {
        starts.append(Int32(offset))
        offset += min(_utf8SequenceLength(lead: text[offset]), byteCount - offset)
    }
    let count = starts.count
    starts.append(Int32(byteCount))
    let base = UnsafeRawPointer(text.baseAddress!)
    _mergeByRank(count, merges, &scratch, initial: { index in
        lookup.lookup(UnsafeRawBufferPointer(start: base + Int(starts[index]), count: Int(starts[index + 1] - starts[index]))) ?? -1
    }) { index, token in
        if token >= 0 {
            output.append(Int(token))
            return
        }
        // Never merged: one character.
        for position in Int(starts[index]) ..< Int(starts[index + 1]) where byteFallback[Int(text[position])] >= 0 {
            output.append(Int(byteFallback[Int(text[position])]))
        }
    }
}

/// An integer key that sorts floats in descending order (NaN last).
@inline(__always)
func _descendingKey(_ score: Float) -> Int64 {
    let bits = Int64(Int32(bitPattern: score.bitPattern))
    let ascending = bits >= 0 ? bits : Int64(Int32.min) - bits  // monotonic in the float's value
    return -ascending
}
