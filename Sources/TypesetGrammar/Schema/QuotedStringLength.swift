/// `minLength` and `maxLength` on a language of quoted JSON strings, unrolled into the
/// automaton: what property names use (their languages are combined with others as
/// automata), and the reference `StringLengthTests` holds `LengthCounter` to. String values
/// count in the matcher's frames instead.
///
/// The strings are canonical JSON text (one spelling per character: raw UTF-8, or an escape
/// `\"`, `\\`, `\n`… `\u00xx`), a prefix code, so every state of a trimmed automaton of them
/// stands either at a character boundary inside the quotes or in the middle of a character.
/// A small decoder finds which; then the product with a counter, bumped by each byte that
/// starts a character and checked when the closing quote comes, bounds the length. The
/// counter saturates at the largest bound that matters, so the product has at most
/// `states × (bound + 1)` states, and minimisation (Hopcroft's) brings a plain string down
/// to its 14 states per character.
///
/// Counting on the character automaton before lowering it to bytes gives the same language,
/// but its subset construction builds about five times as many states before minimising:
/// 70,000 for a thousand characters, past the budget.
enum QuotedStringLength {
    /// The strings of `language` (quoted canonical JSON strings, trimmed) with between
    /// `minimum` and `maximum` characters (`nil`: no upper bound); `nil` when `language` is
    /// not a language of quoted strings (a state both at a boundary and inside a character).
    static func bounded(_ language: DFA, minimum: Int, maximum: Int?, stateLimit: Int) throws(DFA.TooLarge) -> DFA? {
        guard !language.isEmptyLanguage else { return language }
        // Which states stand at a character boundary inside the quotes.
        guard let decoder = QuotedStringDecoder.states(of: language) else { return nil }
        // The product with the counter; `cap` is where counting may stop.
        let cap = maximum ?? minimum
        var index: [Int64: Int32] = [:]
        var keys: [(state: Int32, count: Int)] = []
        var transitions: [Int32] = []
        var isFinal: [Bool] = []
        func intern(_ state: Int32, _ count: Int) throws(DFA.TooLarge) -> Int32 {
            let key = Int64(state) << 32 | Int64(count)
            if let known = index[key] { return known }
            guard keys.count < stateLimit else { throw DFA.TooLarge() }
            let id = Int32(keys.count)
            index[key] = id
            keys.append((state, count))
            transitions.append(contentsOf: DFA.rowWithoutMoves)
            isFinal.append(language.isFinal[Int(state)])
            return id
        }
        _ = try intern(0, 0)
        var cursor = 0
        while cursor < keys.count {
            let (state, count) = keys[cursor]
            let atBoundary = decoder[Int(state)] == .boundary
            for byte in 0 ... 255 {
                let target = language.next(state, UInt8(byte))
                guard target >= 0 else { continue }
                var next = count
                if atBoundary {
                    if byte == 0x22 {
                        guard count >= minimum else { continue }  // closing too early
                    } else if count < cap {
                        next = count + 1
                    } else if maximum != nil {
                        continue  // one character too many
                    }
                }
                let id = try intern(target, next)
                transitions[DFA.transitionIndex(cursor, byte)] = id
            }
            cursor += 1
        }
        let product = DFA(transitions: transitions, ruleEdges: [[DFA.RuleEdge]](repeating: [], count: keys.count), isFinal: isFinal)
        return product.trimmedAndMinimized(productiveRules: nil)
    }
}
