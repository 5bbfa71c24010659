/// The `count` tokens of `tokens` with the highest `logits`, highest first, ties in the order
/// of `tokens` (so to the lower id when `tokens` ascends); fewer when `tokens` has fewer.
/// One pass keeping a short sorted list: what a reply's log-probabilities list as alternatives,
/// and what closing a value within its budget tries first.
///
/// - Complexity: O(tokens × count) at worst, about O(tokens) in practice, since most tokens
///   fall below the list's last.
func likeliestTokens(_ count: Int, of tokens: some Sequence<Int>, in logits: [Float]) -> [Int] {
    guard count > 0 else { return [] }
    var top: [Int] = []
    top.reserveCapacity(count + 1)
    for token in tokens {
        let value = logits[token]
        if top.count == count, value <= logits[top[count - 1]] { continue }
        var position = top.count
        while position > 0, logits[top[position - 1]] < value { position -= 1 }
        top.insert(token, at: position)
        if top.count > count { top.removeLast() }
    }
    return top
}
