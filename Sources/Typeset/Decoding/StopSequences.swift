/// Finds the first of a reply's stop sequences in its streamed text, holding back what could
/// still turn out to be the start of one, so that no part of a stop sequence is ever streamed.
///
///     feed("The answer is 4") ─► release "The answer is 4"
///     feed(".\n\nQ")          ─► release ".", hold "\n\nQ"     (stops: ["\n\nQ:"])
///     feed(":")               ─► stopped: "\n\nQ:" reached; nothing after it is kept
///
/// Sequences are compared as `String`s (Unicode canonical equivalence), across chunk
/// boundaries.
struct StopSequences {
    let sequences: [String]
    /// Text received and not yet released.
    private var held = ""
    /// Whether a stop sequence was reached (everything fed afterwards is dropped).
    private(set) var isStopped = false
    /// The stop sequence that was reached (the one that begins first in the text).
    private(set) var matched: String?

    init(_ sequences: [String]) {
        self.sequences = sequences.filter { !$0.isEmpty }
    }

    /// Adds `text`; returns what may be streamed now: everything before the first stop
    /// sequence, or, when none is complete yet, everything but the longest tail that begins one.
    mutating func feed(_ text: String) -> String {
        guard !isStopped else { return "" }
        guard !sequences.isEmpty else { return text }
        held += text
        let found = sequences.compactMap { sequence in held.range(of: sequence).map { ($0.lowerBound, sequence) } }
        if let (first, sequence) = found.min(by: { $0.0 < $1.0 }) {
            isStopped = true
            matched = sequence
            defer { held = "" }
            return String(held[..<first])
        }
        // The longest tail of `held` that is a proper prefix of some sequence stays held.
        var kept = 0
        for sequence in sequences {
            for length in stride(from: min(sequence.count - 1, held.count), to: kept, by: -1)
            where held.hasSuffix(sequence.prefix(length)) {
                kept = length
                break
            }
        }
        let released = String(held.dropLast(kept))
        held = String(held.suffix(kept))
        return released
    }

    /// The end of the reply: what is still held (no stop sequence completed it).
    mutating func finish() -> String {
        defer { held = "" }
        return isStopped ? "" : held
    }
}
