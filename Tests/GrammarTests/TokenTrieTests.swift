import GGUF
import TypesetGrammar
import Testing
import TypesetTokenizer
import TypesetTestSupport

/// The trie walk against the brute-force definition: a token is allowed when every one of its
/// bytes is accepted in turn from the starting state.
@Suite struct TokenTrieTests {
    /// A deterministic automaton over bytes: `transitions[state][byte]`, -1 for "rejected".
    struct Automaton {
        var transitions: [[Int]]

        func advance(_ state: Int, _ byte: UInt8) -> Int? {
            let next = transitions[state][Int(byte)]
            return next >= 0 ? next : nil
        }

        func accepts(_ bytes: [UInt8], from state: Int) -> Bool {
            var current = state
            for byte in bytes {
                guard let next = advance(current, byte) else { return false }
                current = next
            }
            return true
        }
    }

    static func bruteForce(_ tokens: [[UInt8]], _ automaton: Automaton, from state: Int) -> [Int] {
        tokens.indices.filter { !tokens[$0].isEmpty && automaton.accepts(tokens[$0], from: state) }
    }

    static func walk(_ trie: TokenTrie, _ automaton: Automaton, from state: Int) -> [Int] {
        var mask = TokenBitmask(vocabularySize: trie.vocabularySize)
        trie.allow(into: &mask, from: state, advance: automaton.advance)
        return mask.allowedTokens
    }

    @Test func layoutOfTheDocumentedExample() {
        let trie = TokenTrie(tokens: [Array("a".utf8), Array("ab".utf8), Array("b".utf8), Array("abc".utf8), Array("ab".utf8), []])
        #expect(trie.nodeCount == 4)
        #expect(trie.maximumDepth == 3)
        #expect(trie.emptyTokens == [5])
        // Everything goes through an automaton that accepts any byte; nothing through one
        // that rejects "b" after "a".
        let any = Automaton(transitions: [[Int](repeating: 0, count: 256)])
        #expect(Self.walk(trie, any, from: 0) == [0, 1, 2, 3, 4])
        var noAB = [[Int]](repeating: [Int](repeating: 0, count: 256), count: 2)
        noAB[0][Int(UInt8(ascii: "a"))] = 1
        noAB[1][Int(UInt8(ascii: "b"))] = -1
        #expect(Self.walk(trie, Automaton(transitions: noAB), from: 0) == [0, 2])
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomAutomataAgreeWithBruteForce(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let alphabet: [UInt8] = [0x61, 0x62, 0x63, 0x00, 0xFF]
        let tokens: [[UInt8]] = (0 ..< 600).map { _ in
            (0 ..< Int(random.next() % 7)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
        }
        let trie = TokenTrie(tokens: tokens)
        for _ in 0 ..< 20 {
            let stateCount = 1 + Int(random.next() % 6)
            let transitions = (0 ..< stateCount).map { _ in
                (0 ..< 256).map { _ in random.next() % 4 == 0 ? -1 : Int(random.next() % UInt64(stateCount)) }
            }
            let automaton = Automaton(transitions: transitions)
            for state in 0 ..< stateCount {
                #expect(Self.walk(trie, automaton, from: state) == Self.bruteForce(tokens, automaton, from: state))
            }
        }
    }

    /// The JSON integer grammar `-?(0|[1-9][0-9]*)` over SmolLM2's and Gemma 3's real token bytes.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.gemma3FileName)), arguments: ["smollm2", "gemma3"])
    func realVocabulariesAgreeWithBruteForce(name: String) throws {
        let file = try GGUFFile(contentsOf: name == "gemma3" ? TestModels.gemma3Path : TestModels.smolLM2Path)
        let vocabulary = try Vocabulary(metadata: file.metadata)
        let tokens = (0 ..< vocabulary.count).map(vocabulary.bytes(of:))
        let trie = TokenTrie(tokens: tokens)
        #expect(trie.nodeCount >= vocabulary.count / 2)
        // States: 0 start, 1 after "-", 2 after a leading 0 (done), 3 in digits.
        var transitions = [[Int]](repeating: [Int](repeating: -1, count: 256), count: 4)
        for state in [0, 1] {
            transitions[state][0x30] = 2
            for digit in 0x31 ... 0x39 { transitions[state][digit] = 3 }
        }
        transitions[0][0x2D] = 1
        for digit in 0x30 ... 0x39 { transitions[3][digit] = 3 }
        let automaton = Automaton(transitions: transitions)
        for state in 0 ..< 4 {
            let walked = Self.walk(trie, automaton, from: state)
            #expect(walked == Self.bruteForce(tokens, automaton, from: state), "state \(state)")
            if state == 0 { #expect(!walked.isEmpty) }
        }
    }
}
