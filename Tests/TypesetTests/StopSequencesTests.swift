import Testing
@testable import Typeset

/// Stop sequences over text that arrives in pieces, against the plain answer: the text before
/// the first occurrence of any sequence in the whole text.
@Suite struct StopSequencesTests {
    /// Feeds `pieces`, then finishes; what was released, and the sequence that stopped it.
    static func run(_ sequences: [String], _ pieces: [String]) -> (String, String?) {
        var stops = StopSequences(sequences)
        var released = ""
        for piece in pieces { released += stops.feed(piece) }
        released += stops.finish()
        return (released, stops.matched)
    }

    /// The independent answer, from the whole text at once.
    static func expected(_ sequences: [String], _ text: String) -> (String, String?) {
        let found = sequences.filter { !$0.isEmpty }.compactMap { sequence in text.range(of: sequence).map { ($0.lowerBound, sequence) } }
        guard let first = found.min(by: { $0.0 < $1.0 }) else { return (text, nil) }
        return (String(text[..<first.0]), first.1)
    }

    @Test(arguments: [
        (["world"], ["hello wo", "rld and more"]),
        (["END", "and"], ["hello wo", "rld and more END"]),          // the one that begins first wins, not the first listed
        (["xyz"], ["no stop ", "here at all"]),
        (["ab", "b"], ["aab"]),                                        // "ab" begins before "b"
        (["\n\n"], ["line one\n", "\nline two"]),
        (["", "two"], ["one two three"]),
    ])
    func theTextBeforeTheFirstStop(sequences: [String], pieces: [String]) {
        let (released, matched) = Self.run(sequences, pieces)
        let (text, sequence) = Self.expected(sequences, pieces.joined())
        #expect(released == text)
        #expect(matched == sequence)
    }

    @Test func everySplitOfTheText() {
        let text = "The answer is 42. END of story, and more."
        let sequences = ["and", "END", "story"]
        for cut in 0 ... text.count {
            let pieces = [String(text.prefix(cut)), String(text.dropFirst(cut))]
            let (released, matched) = Self.run(sequences, pieces)
            #expect(released == "The answer is 42. ")
            #expect(matched == "END")
        }
    }
}
