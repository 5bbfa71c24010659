/// Runs a compiled grammar alongside generation: says which tokens may come next, accepts
/// the token that was sampled, and can step back.
///
///     var matcher = GrammarMatcher(compiled)
///     var mask = TokenBitmask(vocabularySize: compiled.vocabulary.size)
///     while !matcher.isTerminated {
///         matcher.fillNextTokenMask(into: &mask)      // then mask the logits and sample
///         guard matcher.accept(token: sampled) else { … }
///     }
///
/// The state is a set of pushdown configurations (stacks of rule positions). A mask is the
/// union, over the configurations, of the position's precomputed accepted tokens plus those
/// of its few undecided tokens that the real stack accepts.
///
/// A matcher is a value owned by one generation; it is not shared between threads.
public struct GrammarMatcher: Sendable {
    public let grammar: CompiledGrammar
    private var frames = InternedFrames()
    private var configurations: [PushdownFrame]
    private var roots: [Bool]
    private var completed: Bool
    private var terminated = false
    /// Earlier states, for `rollback`.
    private var history: [(configurations: [PushdownFrame], roots: [Bool], completed: Bool, terminated: Bool, frameCount: Int, textCount: Int)] = []

    /// A matcher at the start of the grammar.
    public init(_ grammar: CompiledGrammar) {
        self.grammar = grammar
        var configurations = [PushdownFrame(rule: grammar.automaton.root, state: 0, parent: -1)]
        var roots = [true]
        completed = grammar.automaton.close(&configurations, roots: &roots, from: 0, store: &frames)
        self.configurations = configurations
        self.roots = roots
    }

    /// Whether the output so far is a complete sentence of the grammar (end-of-generation
    /// tokens are allowed exactly then).
    public var canTerminate: Bool { completed && !terminated }

    /// Whether an end-of-generation token has been accepted.
    public var isTerminated: Bool { terminated }

    /// The fewest bytes that complete the output from here (0 when it may end now;
    /// `Int.max` after termination). Generation under a token budget keeps this within the
    /// tokens it has left, so the value can always be finished.
    ///
    /// - Complexity: O(configurations × stack depth).
    public var shortestCompletionLength: Int {
        guard !terminated else { return Int.max }
        if completed { return 0 }
        return closestConfiguration?.length ?? Int.max
    }

    /// The configuration with the shortest completion, and its length in bytes.
    private var closestConfiguration: (length: Int, frame: PushdownFrame)? {
        var best: (length: Int, frame: PushdownFrame)? = nil
        for configuration in configurations {
            let length = grammar.completionDistances.completion(of: configuration, in: grammar.automaton, store: frames)
            if length < (best?.length ?? Int.max) { best = (length, configuration) }
        }
        return best
    }

    /// Bytes that complete the output from here, as few as there are (``shortestCompletionLength``
    /// of them): what a generation short of tokens can still write. Empty when the output may
    /// end now; `nil` after termination or when longer than `maximumBytes`.
    public func shortestCompletion(maximumBytes: Int = 1 << 16) -> [UInt8]? {
        guard !terminated else { return nil }
        if completed { return [] }
        guard let best = closestConfiguration else { return nil }
        var stack = [best.frame]
        while let parent = stack.last.map(\.parent), parent >= 0, stack.count <= 10_000 { stack.append(frames.frame(parent)) }
        return grammar.completionDistances.shortestCompletion(of: Array(stack.reversed()), in: grammar.automaton, maximumBytes: maximumBytes)
    }

    /// Whether some byte may come next. False when the output is complete and nothing may
    /// follow it (then only an end-of-generation token is allowed), or after termination:
    /// what a loop checks after accepting a token, without computing the next mask.
    ///
    /// - Complexity: O(configurations × 256).
    public var acceptsMoreBytes: Bool {
        guard !terminated else { return false }
        return configurations.contains { !grammar.automaton.outgoingBytes($0).isEmpty }
    }

    /// Tokens accepted so far that `rollback` can undo.
    public var acceptedTokenCount: Int { history.count }

    // MARK: Accepting

    /// Accepts `token` if the grammar allows it here and returns true; otherwise leaves the
    /// state unchanged and returns false. An end-of-generation token is accepted only when
    /// `canTerminate`, and terminates the matcher.
    @discardableResult
    public mutating func accept(token: Int) -> Bool {
        guard !terminated, token >= 0, token < grammar.vocabulary.size else { return false }
        if grammar.vocabulary.endOfGenerationTokens.contains(token) {
            guard completed else { return false }
            saveState()
            terminated = true
            return true
        }
        let bytes = grammar.vocabulary.tokenBytes[token]
        guard !bytes.isEmpty else { return false }
        return accept(bytes: bytes)
    }

    /// Accepts `bytes` as one step (one entry for `rollback`) if the grammar allows all of
    /// them here; otherwise leaves the state unchanged and returns false.
    @discardableResult
    public mutating func accept(bytes: [UInt8]) -> Bool {
        guard !terminated else { return false }
        let frameCount = frames.frames.count, textCount = frames.written.text.count
        var current = configurations, currentRoots = roots, currentCompleted = completed
        let automaton = grammar.automaton
        for byte in bytes {
            // Items of `uniqueItems` arrays are read from the output as they complete.
            if automaton.hasDistinctItems { frames.written.text.append(byte) }
            guard step(&current, &currentRoots, &currentCompleted, byte) else {
                discardFrames(after: frameCount, text: textCount)
                return false
            }
        }
        // Only a repeated item can leave a configuration with no way on.
        if automaton.hasDistinctItems, !currentCompleted, !current.contains(where: { automaton.canGoOn($0, store: &frames) }) {
            discardFrames(after: frameCount, text: textCount)
            return false
        }
        history.append((configurations, roots, completed, terminated, frameCount, textCount))
        configurations = current
        roots = currentRoots
        completed = currentCompleted
        return true
    }

    /// Whether `bytes` could be accepted now, without changing the state.
    public func allows(bytes: [UInt8]) -> Bool {
        var copy = self
        return copy.accept(bytes: bytes)
    }

    private mutating func step(_ current: inout [PushdownFrame], _ currentRoots: inout [Bool], _ currentCompleted: inout Bool, _ byte: UInt8) -> Bool {
        let automaton = grammar.automaton
        var next: [PushdownFrame] = []
        var nextRoots: [Bool] = []
        for configuration in current {
            guard let moved = automaton.step(configuration, byte) else { continue }
            if !next.contains(moved) {
                next.append(moved)
                nextRoots.append(true)
            }
        }
        guard !next.isEmpty else { return false }
        currentCompleted = automaton.close(&next, roots: &nextRoots, from: 0, store: &frames)
        current = next
        currentRoots = nextRoots
        return true
    }

    private mutating func saveState() {
        history.append((configurations, roots, completed, terminated, frames.frames.count, frames.written.text.count))
    }

    private mutating func discardFrames(after count: Int, text textCount: Int) {
        frames.written.text.removeSubrange(textCount...)
        guard frames.frames.count > count else { return }
        for frame in frames.frames[count...] { frames.index[frame] = nil }
        frames.frames.removeSubrange(count...)
    }

    /// Undoes the last `count` accepted steps (tokens or byte strings).
    ///
    /// - Precondition: `0 <= count <= acceptedTokenCount`.
    public mutating func rollback(_ count: Int) {
        precondition(count >= 0 && count <= history.count, "cannot roll back \(count) of \(history.count) steps")
        guard count > 0 else { return }
        let target = history[history.count - count]
        history.removeLast(count)
        configurations = target.configurations
        roots = target.roots
        completed = target.completed
        terminated = target.terminated
        discardFrames(after: target.frameCount, text: target.textCount)
    }

    /// Back to the start of the grammar.
    public mutating func reset() {
        if !history.isEmpty { rollback(history.count) }
    }

    // MARK: Masks

    /// Fills `mask` with the tokens allowed next: set bits for allowed tokens, all others
    /// cleared. End-of-generation tokens are allowed exactly when `canTerminate`.
    ///
    /// - Precondition: `mask.vocabularySize == grammar.vocabulary.size`.
    /// - Complexity: O(vocabulary / 32) once, plus each current position's list (a bitset:
    ///   vocabulary / 32 again), plus one stack check per undecided token not allowed already.
    public func fillNextTokenMask(into mask: inout TokenBitmask) {
        let vocabulary = grammar.vocabulary
        precondition(mask.vocabularySize == vocabulary.size, "the mask and the grammar have different vocabularies")
        let automaton = grammar.automaton
        mask._words.withUnsafeMutableBufferPointer { words in
            for index in words.indices { words[index] = 0 }
            guard !terminated else { return }
            var store = ScratchFrames(base: frames.frames, written: automaton.hasDistinctItems ? frames.written : nil)
            var seen: [PushdownFrame] = []
            var positions: [(configuration: PushdownFrame, undecided: [Int32])] = []
            // The text tokens every `allExcept` position leaves out: their intersection, so the
            // whole vocabulary is written once however many such positions there are.
            var excluded: [Int32]? = nil
            for (index, configuration) in configurations.enumerated() where roots[index] {
                guard !seen.contains(configuration), let position = grammar.masks.mask(of: configuration) else { continue }
                seen.append(configuration)
                switch position.accepted {
                case .listed(let tokens):
                    for token in tokens { words[Int(token) >> 5] |= 1 << UInt32(token & 31) }
                case .bitset(let bits):
                    for index in words.indices { words[index] |= bits[index] }
                case .allExcept(let tokens):
                    excluded = excluded.map { Self.intersection($0, tokens) } ?? tokens
                }
                if !position.undecided.isEmpty { positions.append((configuration, position.undecided)) }
            }
            if let excluded {
                // Text tokens minus `excluded`, merged into what other positions allowed.
                var cursor = 0
                vocabulary.textTokens._words.withUnsafeBufferPointer { text in
                    for wordIndex in words.indices {
                        var word = text[wordIndex]
                        while cursor < excluded.count, Int(excluded[cursor]) >> 5 == wordIndex {
                            word &= ~(1 << UInt32(excluded[cursor] & 31))
                            cursor += 1
                        }
                        words[wordIndex] |= word
                    }
                }
            }
            for (configuration, undecided) in positions {
                for token in undecided {
                    let bit: UInt32 = 1 << UInt32(token & 31)
                    if words[Int(token) >> 5] & bit != 0 { continue }
                    let tokenBytes = vocabulary.tokenBytes[Int(token)]
                    if automaton.hasDistinctItems { store.token = tokenBytes }
                    let found = tokenBytes.withUnsafeBufferPointer { bytes in
                        automaton.accepts(bytes, from: 0, frame: configuration, store: &store)
                    }
                    store.truncate(to: store.base.count)
                    if found { words[Int(token) >> 5] |= bit }
                }
            }
            if completed {
                for token in vocabulary.endOfGenerationTokens { words[token >> 5] |= 1 << UInt32(token & 31) }
            }
        }
    }

    /// The tokens in both ascending lists, ascending. O(`a.count` + `b.count`).
    static func intersection(_ a: [Int32], _ b: [Int32]) -> [Int32] {
        var result: [Int32] = []
        var i = 0, j = 0
        while i < a.count, j < b.count {
            if a[i] < b[j] { i += 1 } else if b[j] < a[i] { j += 1 } else { result.append(a[i]); i += 1; j += 1 }
        }
        return result
    }

    /// The bytes every continuation must start with: while exactly one byte can come next
    /// and the grammar cannot end here, that byte (at most `limit` bytes). Generation can
    /// append them without sampling ("jump forward").
    public func forcedBytes(limit: Int = 1024) -> [UInt8] {
        var copy = self
        var result: [UInt8] = []
        while result.count < limit, !copy.completed {
            var next = ByteSet()
            for configuration in copy.configurations {
                next.formUnion(grammar.automaton.outgoingBytes(configuration))
                if next.count > 1 { return result }
            }
            guard next.count == 1, let byte = next.bytes.first, copy.accept(bytes: [byte]) else { return result }
            result.append(byte)
        }
        return result
    }
}

extension Grammar {
    /// Whether `text` (its UTF-8 bytes) is a complete sentence of the grammar.
    ///
    /// Compiles the automaton on each call (no vocabulary, no masks): for tests and tools.
    public func matches(_ text: String) throws(GrammarError) -> Bool {
        try matches(bytes: Array(text.utf8))
    }

    public func matches(bytes: [UInt8]) throws(GrammarError) -> Bool {
        let compiled = try CompiledGrammar(self, vocabulary: GrammarVocabulary(tokens: [], endOfGeneration: []))
        var matcher = GrammarMatcher(compiled)
        return matcher.accept(bytes: bytes) && matcher.canTerminate
    }
}
