import Grammar
import Models
import Tokenizer

/// One finished reply, as `Conversation` records it.
struct Reply: Sendable {
    var message: ChatMessage
    var finishReason: FinishReason
    var stats: GenerationStats
    /// Interrupted replies are not added to the history.
    var appendsToHistory: Bool { finishReason != .interrupted && finishReason != .error }
}

/// The reply state machine behind `Conversation.generateResponse`: each step of the token loop
/// masks the logits with the JSON Schema's grammar when there is one, or routes free text into
/// reasoning, content and function calls, and chooses the next token; `finish` turns the run's
/// outcome into the reply. A ``TokenStepper`` for `BatchScheduler` (or `TokenLoop.run`).
///
/// A function call is generated under the registered functions' grammar from the moment its
/// marker appears (`<tool_call>`, or a leading `{` in the plain JSON format) until its JSON
/// object closes; Typeset then writes the closing markup itself (`\n</tool_call>`) and lets the
/// model go on with another call or the end of its turn — nothing else: after a call, only the
/// end of generation (before anything else) and tokens that spell out another `<tool_call>`
/// marker are allowed, so a small model cannot ramble on after its call.
///
/// Used by one loop at a time, on the thread that drives it (`emit` is called there).
final class ReplyDecoder: TokenStepper {
    let tokenizer: Tokenizer
    let options: GenerationOptions
    let constraint: CompiledGrammar?
    let callGrammar: CompiledGrammar?
    let callFormat: FunctionCallFormat
    let firstCallNumber: Int
    /// Whether another call may follow the first.
    let allowsSeveralCalls: Bool
    /// The reply may not open with what would be a call.
    let forbidsCallOpening: Bool
    let cancellation: CancellationFlag
    /// Asked before each token besides `cancellation`: the server's check that its client is
    /// still there.
    let isAbandoned: (@Sendable () -> Bool)?
    /// Told the prompt tokens computed so far and in all, after each prefill chunk.
    let onPrefill: (@Sendable (Int, Int) -> Void)?
    /// Where the streamed responses go (chunks, reasoning, calls; not `.complete`).
    let emit: (MessageResponse) -> Void
    /// Tokens written for the model before it starts: a required call's marker.
    let opening: [Int]
    /// The call marker when it is a single control token, which detokenizes to nothing.
    private let markerToken: Int?

    private enum Phase {
        /// Free text (with thinking and call detection).
        case free
        /// The whole reply is held to the JSON Schema.
        case schema(GrammarMatcher)
        /// Inside a function call's JSON; `text` is the JSON so far.
        case call(GrammarMatcher, text: String)
    }

    private let vocabulary: Vocabulary
    private let clock = ContinuousClock()
    private var sampler: Sampler
    private var detokenizer: StreamingDetokenizer
    private var router: ReplyTextRouter
    private var phase: Phase
    private var mask: TokenBitmask
    private var maskIsCurrent = false
    private var content = ""
    private var reasoning = ""
    private var calls: [FunctionCall] = []
    private var constraintSeconds = 0.0
    /// After a Hermes call: the bytes the model has written since (nil when not after a call).
    private var afterCall: [UInt8]?
    /// The most tokens another Hermes call can take: its marker and the closing markup
    /// (a few tokens each, counted as bytes) and its shortest JSON, one token per byte.
    private let shortestCall: Int
    /// Whether the call being written is a bare JSON object (it then ends the reply).
    private var bareCall: Bool
    /// The markup Typeset writes after a Hermes call, which the call's budget leaves room for.
    private let callClosing: [Int]
    /// The reply's stop sequences (free text), and what they hold back.
    private var stops: StopSequences
    /// A step's logits as the model gave them, when log-probabilities are asked for.
    private var modelLogits: [Float] = []

    /// The decoder of `plan`'s reply; `emit` gets what it streams.
    init(
        plan: ReplyPlan, tokenizer: Tokenizer, cancellation: CancellationFlag, isAbandoned: (@Sendable () -> Bool)? = nil,
        emit: @escaping (MessageResponse) -> Void
    ) {
        let options = plan.options, constraint = plan.constraint, callGrammar = plan.routing.calls?.grammar
        let callFormat = plan.routing.callFormat, startsWithCall = plan.routing.calls?.startsWithCall ?? false
        self.tokenizer = tokenizer
        self.options = options
        self.constraint = constraint
        self.callGrammar = callGrammar
        self.callFormat = callFormat
        self.firstCallNumber = plan.routing.calls?.firstNumber ?? 1
        self.allowsSeveralCalls = plan.routing.calls?.allowsSeveral ?? true
        self.forbidsCallOpening = plan.routing.forbidsCallOpening
        self.cancellation = cancellation
        self.isAbandoned = isAbandoned
        self.onPrefill = plan.onPrefill
        self.emit = emit
        let vocabulary = tokenizer.vocabulary
        self.vocabulary = vocabulary
        // A required call begins with its marker, written for the model and prefilled with the prompt.
        let marker = callFormat.opening.map { tokenizer.encode($0, addingSpecialTokens: false, parsingSpecialTokens: true) } ?? []
        opening = startsWithCall ? marker + tokenizer.encode(callFormat.afterOpening, addingSpecialTokens: false) : []
        // A marker that is one control token (LFM's) has no text of its own to route.
        markerToken = marker.count == 1 && !vocabulary.attributes[marker[0]].isDisjoint(with: .special) ? marker[0] : nil
        // Values and calls held to a grammar are where small models loop ("1.1.1.1…", one
        // plot point again and again): DRY's JSON setting is on for them unless the caller set
        // a penalty (`DRYPenalty.off` keeps it off).
        var sampling = options.samplingOptions
        if options.dry == nil, constraint != nil || callGrammar != nil { sampling.dry = .json }
        sampler = Sampler(options: sampling, vocabulary: vocabulary)
        detokenizer = tokenizer.makeStreamingDetokenizer()
        router = ReplyTextRouter(detectsThinking: plan.routing.detectsThinking, callFormat: callGrammar == nil ? nil : callFormat)
        phase = constraint.map { .schema(GrammarMatcher($0)) } ?? .free
        if startsWithCall, let callGrammar {
            phase = .call(GrammarMatcher(callGrammar), text: "")
            router.startCall()
        }
        mask = TokenBitmask(vocabularySize: (constraint ?? callGrammar)?.vocabulary.size ?? 0)
        shortestCall = callGrammar.map {
            GrammarMatcher($0).shortestCompletionLength
                + ((callFormat.opening ?? "") + callFormat.afterOpening + callFormat.closing).utf8.count
        } ?? 0
        bareCall = callFormat == .json
        callClosing = tokenizer.encode(callFormat.closing, addingSpecialTokens: false, parsingSpecialTokens: true)
        stops = StopSequences(options.stopSequences)
    }

    // MARK: TokenStepper

    var isCancelled: Bool { cancellation.isCancelled || isAbandoned?() == true }

    func prefillProgress(computed: Int, total: Int) { onPrefill?(computed, total) }

    func reasonAtLimit() -> FinishReason {
        switch phase {
        case .free: .maxTokens
        case .schema(let matcher): matcher.canTerminate ? .stop : .constraint
        case .call: .constraint
        }
    }

    /// One step: the next token (and any markup forced after it) for `logits`.
    func step(_ logits: inout [Float], _ context: TokenStepContext) -> TokenStepDecision {
        // The model's own distribution, before masks and penalties change the logits.
        if options.logprobs != nil { modelLogits.replaceSubrange(modelLogits.indices, with: logits) }
        let token: Int
        switch phase {
        case .free:
            if let written = afterCall {
                Self.allowOnlyAnotherCall(
                    after: written, marker: callFormat.opening ?? "", in: &logits, vocabulary: vocabulary,
                    fits: callFormat.marksEachCall && allowsSeveralCalls
                        && (!options.closesWithinMaxTokens || context.remainingTokens >= shortestCall))
            }
            if forbidsCallOpening, content.allSatisfy(\.isWhitespace), reasoning.isEmpty {
                Self.forbidCallOpenings(in: &logits, vocabulary: vocabulary)
            }
            guard let sampled = sampler.sample(&logits, history: context.history, replyStart: context.replyStart) else { return .finish(.stop) }
            token = sampled
            if afterCall != nil { afterCall! += vocabulary.bytes(of: token) }
        case .schema(var matcher), .call(var matcher, _):
            // Mask the logits with the grammar; the chosen token is accepted by the matcher.
            let started = clock.now
            defer { constraintSeconds += (clock.now - started).seconds }
            if !maskIsCurrent { matcher.fillNextTokenMask(into: &mask) }
            mask.apply(to: &logits)
            var budget = context.remainingTokens
            if case .call = phase, !bareCall { budget -= callClosing.count }
            guard let chosen = choose(&logits, matcher: &matcher, budget: budget, context: context) else {
                // No token keeps the value finishable (or none is allowed at all).
                return .finish(.constraint)
            }
            token = chosen
            if case .schema = phase { phase = .schema(matcher) } else if case .call(_, let text) = phase { phase = .call(matcher, text: text) }
        }
        maskIsCurrent = false
        if vocabulary.isEndOfGeneration(token) {
            if case .call = phase { return .finish(.constraint) }
            return .append(token)
        }
        if let count = options.logprobs {
            emit(.logprob(TokenLogprob.entry(for: token, logits: modelLogits, alternativeCount: count, vocabulary: vocabulary)))
        }
        var forced: [Int] = []
        var provisional: Int?
        var text = (try? detokenizer.append(token)) ?? ""
        if token == markerToken, case .free = phase { text += callFormat.opening ?? "" }
        switch phase {
        case .schema(var matcher):
            content += text
            if !text.isEmpty { emit(.chunk(text)) }
            // Complete and nothing but the end may follow: done, without another step.
            if Self.isComplete(matcher) { return .appendAndFinish(token, .stop) }
            let (tokens, piece, next) = appendForcedTokens(after: token, matcher: &matcher, limit: context.remainingTokens - 1)
            provisional = next
            if !tokens.isEmpty {
                forced = tokens
                phase = .schema(matcher)
                content += piece
                if !piece.isEmpty { emit(.chunk(piece)) }
                if Self.isComplete(matcher) { return .appendAndFinish(token, forced: forced, .stop) }
            }
        case .free:
            let callStart = take(router.route(text))
            // A stop sequence ends the reply here; its text is not part of it.
            if stops.isStopped { return .appendAndFinish(token, forced: [], .stop) }
            guard let (markup, remainder) = callStart, let callGrammar else { break }
            let marked = markup == callFormat.opening
            bareCall = !marked
            afterCall = nil
            var matcher = GrammarMatcher(callGrammar)
            let json = String(remainder.drop { $0 == " " || $0 == "\n" || $0 == "\t" })
            if json.isEmpty {
                // The model writes `<tool_call>\n{…}`: give it the newline it was trained on.
                if marked, !callFormat.afterOpening.isEmpty { forced = tokenizer.encode(callFormat.afterOpening, addingSpecialTokens: false) }
            } else if !matcher.accept(bytes: Array(json.utf8)) {
                // Not a well-formed call after all: keep it as text.
                router.resume()
                content += markup + remainder
                emit(.chunk(markup + remainder))
                break
            }
            phase = .call(matcher, text: json)
        case .call(var matcher, let soFar):
            var json = soFar + text
            if !Self.isComplete(matcher) {
                // The forced keys and punctuation of the call, leaving room for its closing markup.
                let limit = context.remainingTokens - 1 - (bareCall ? 0 : callClosing.count)
                let (tokens, piece, next) = appendForcedTokens(after: token, matcher: &matcher, limit: limit)
                forced = tokens
                provisional = next
                json += piece
            }
            phase = .call(matcher, text: json)
        }
        if case .call(let matcher, let json) = phase, Self.isComplete(matcher) {
            calls += callFormat.calls(in: json + detokenizer.finish(), firstNumber: firstCallNumber + calls.count)
            detokenizer = tokenizer.makeStreamingDetokenizer()
            maskIsCurrent = false
            phase = .free
            // A bare call is the whole reply: it ends here, complete (not "cut short").
            if bareCall { return .appendAndFinish(token, forced: forced, .stop) }
            forced += callClosing
            provisional = nil
            router.resume()
            afterCall = []
        }
        return .append(token, forced: forced, provisional: provisional)
    }

    /// The reply, once the loop is over: what the detokenizer and the router still hold is
    /// flushed (and streamed), and the message assembled.
    func finish(_ outcome: TokenLoopOutcome) -> Reply {
        if case .free = phase {
            _ = take(router.route(detokenizer.finish()))
            _ = take(router.finish())
            let held = stops.finish()
            if !held.isEmpty { content += held; emit(.chunk(held)) }
        } else if case .schema = phase {
            let rest = detokenizer.finish()
            if !rest.isEmpty { content += rest; emit(.chunk(rest)) }
        } else if case .call(_, let json) = phase {
            // A call cut short stays readable as text (the reply finishes with `.constraint`).
            let marker = bareCall ? "" : (callFormat.opening ?? "") + callFormat.afterOpening
            let text = marker + json + detokenizer.finish()
            content += text
            emit(.chunk(text))
        }
        if !calls.isEmpty {
            content = content.trimmingWhitespace
            if outcome.finishReason == .maxTokens || outcome.finishReason == .stop { emit(.functionCalls(calls)) }
        }
        var stats = outcome.stats
        stats.constraintSeconds = constraintSeconds
        let message = ChatMessage(
            role: .assistant, content: content, reasoning: reasoning.isEmpty ? nil : reasoning.trimmingWhitespace,
            functionCalls: calls)
        return Reply(message: message, finishReason: outcome.finishReason, stats: stats)
    }

    // MARK: Steps

    /// Whether the value is complete with nothing but the end allowed after it: done, without
    /// another step.
    private static func isComplete(_ matcher: GrammarMatcher) -> Bool {
        matcher.canTerminate && !matcher.acceptsMoreBytes
    }

    /// Computes the next step's token mask now: the scheduler calls this while the model
    /// computes the logits it will apply to, so the grammar's time overlaps the forward pass.
    var hasWorkToPrepare: Bool {
        guard !maskIsCurrent else { return false }
        switch phase {
        case .schema, .call: return true
        case .free: return false
        }
    }

    func prepareNextStep() {
        guard !maskIsCurrent else { return }
        switch phase {
        case .schema(let matcher), .call(let matcher, _):
            let started = clock.now
            matcher.fillNextTokenMask(into: &mask)
            constraintSeconds += (clock.now - started).seconds
            maskIsCurrent = true
        case .free:
            break
        }
    }

    /// Routes free text; returns the call's opening markup and the text after it when a
    /// call starts.
    private func take(_ pieces: [ReplyTextRouter.Piece]) -> (markup: String, remainder: String)? {
        var callStart: (markup: String, remainder: String)?
        for piece in pieces {
            switch piece {
            case .reasoning(let text): reasoning += text; emit(.reasoningChunk(text))
            case .content(let text):
                let released = stops.feed(text)
                content += released
                if !released.isEmpty { emit(.chunk(released)) }
            case .callStarted(let markup, let remainder): callStart = (markup, remainder)
            }
        }
        return callStart
    }

    // MARK: Jump-forward decoding

    /// ``jumpForward(after:matcher:limit:)`` when the options ask for it (not with
    /// log-probabilities, which forced tokens would not have), timed as the constraint's, with
    /// the forced tokens' text.
    private func appendForcedTokens(after token: Int, matcher: inout GrammarMatcher, limit: Int)
        -> (tokens: [Int], text: String, provisional: Int?) {
        guard options.jumpsForward, options.logprobs == nil else { return ([], "", nil) }
        let started = clock.now
        let (tokens, provisional) = jumpForward(after: token, matcher: &matcher, limit: limit)
        constraintSeconds += (clock.now - started).seconds
        var text = ""
        for forcedToken in tokens { text += (try? detokenizer.append(forcedToken)) ?? "" }
        return (tokens, text, options.computesBoundaryTokensAhead ? provisional : nil)
    }

    /// The tokens for the bytes the grammar forces after `token` (a key, its quotes and
    /// colon, the rest of an enum word), accepted into `matcher`, to append without sampling:
    /// one forward pass computes them all with the next step. They are the tokens the
    /// tokenizer itself writes there, so the model reads a tokenization it was trained on:
    ///
    ///     sampled  `{"`          forced bytes  `name":"`
    ///     encode(`{"` + `name":"`) = [`{"`, `name`, `":"`]  → append `name`; leave `":"`
    ///
    /// - The forced bytes are encoded together with `token`'s own bytes (its left context, for
    ///   the pre-tokenizer) when that encoding starts with `token` itself. When it does not,
    ///   `token` would have merged with the forced text, but the model chose to end its token
    ///   there (`"` where `",` was possible): the forced bytes are encoded from that boundary,
    ///   on their own.
    /// - The last token of the encoding is left to the model when it could merge with what
    ///   comes after (`"` then `,` against `",`; Qwen's `":"` against `":""`): when the
    ///   grammar allows, after the tokens before it, a longer token that starts with its text.
    ///   It comes back as `provisional`, to be computed in the same pass (the next step
    ///   decides on the logits before it, and keeps it only if it chooses it: see
    ///   `TokenStepDecision.append`). Otherwise (`":"` before a string's letters, in a
    ///   vocabulary with no `":"`-and-more token) it is forced too.
    /// - At most `limit` tokens, so `maxTokens` holds.
    private func jumpForward(after token: Int, matcher: inout GrammarMatcher, limit: Int) -> (tokens: [Int], provisional: Int?) {
        let bytes = matcher.forcedBytes(limit: 256)
        guard bytes.count >= 2, limit > 0 else { return ([], nil) }
        func encode(_ text: [UInt8]) -> [Int] { text.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false) } }
        var encoded = encode(vocabulary.bytes(of: token) + bytes)
        if encoded.first == token { encoded.removeFirst() } else { encoded = encode(bytes) }
        guard let last = encoded.last else { return ([], nil) }
        var tokens: [Int] = []
        for forcedToken in encoded.dropLast().prefix(limit) {
            guard matcher.accept(token: forcedToken) else { return (tokens, nil) }
            tokens.append(forcedToken)
        }
        guard tokens.count < limit else { return (tokens, nil) }
        let merges = mayMerge(last, at: matcher)
        if !merges, matcher.accept(token: last) {
            tokens.append(last)
            return (tokens, nil)
        }
        // The mask `mayMerge` filled is the next step's: the matcher stays where it was.
        maskIsCurrent = true
        return (tokens, merges && tokens.count + 1 < limit && mask[last] ? last : nil)
    }

    /// Whether `matcher` allows a token longer than `token` that starts with `token`'s text
    /// (the model might write that instead of `token` and its successor). Fills `mask` with
    /// `matcher`'s next-token mask: O(vocabulary / 32), then a look at each allowed token, few
    /// where the grammar forces bytes.
    private func mayMerge(_ token: Int, at matcher: GrammarMatcher) -> Bool {
        let text = vocabulary.bytes(of: token)
        matcher.fillNextTokenMask(into: &mask)
        for (index, word) in mask.words.enumerated() where word != 0 {
            var bits = word
            while bits != 0 {
                let candidate = index << 5 | bits.trailingZeroBitCount
                bits &= bits - 1
                let bytes = vocabulary.bytes(of: candidate)
                if bytes.count > text.count, bytes.starts(with: text) { return true }
            }
        }
        return false
    }

    // MARK: Choosing constrained tokens

    /// About how many tokens the shortest completion of `matcher` (`bytes` long) takes: the
    /// tokenizer's encoding of it, two more for the boundaries (it is encoded alone, not after
    /// the output), and never more than its bytes.
    private func tokensToFinish(_ matcher: GrammarMatcher, bytes: Int) -> Int {
        guard let completion = matcher.shortestCompletion(maximumBytes: 4096) else { return bytes }
        let tokens = completion.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false).count }
        return min(bytes, tokens + 2)
    }

    /// Samples a token the grammar allows (the logits are already masked) and accepts it into
    /// `matcher`. When `options.closesWithinMaxTokens`, the token must also leave the value
    /// finishable within the `budget - 1` tokens left after it (its shortest completion as the
    /// tokenizer writes it, never more than its bytes): the sample is redrawn without the
    /// offending token a few times, then the choice narrows to the most likely tokens that
    /// bring the completion closer.
    private func choose(_ logits: inout [Float], matcher: inout GrammarMatcher, budget: Int, context: TokenStepContext) -> Int? {
        let endOfGeneration = matcher.grammar.vocabulary.endOfGenerationTokens
        func acceptable(_ token: Int, progressFrom distance: Int?) -> Bool {
            if endOfGeneration.contains(token) { return matcher.accept(token: token) }
            guard matcher.accept(token: token) else { return false }
            guard options.closesWithinMaxTokens else { return true }
            let after = matcher.shortestCompletionLength
            // Progress first: one comparison, where the tokenizer's count is an encoding.
            if distance.map({ after < $0 }) ?? true, after <= budget - 1 || tokensToFinish(matcher, bytes: after) <= budget - 1 { return true }
            matcher.rollback(1)
            return false
        }
        // The penalties once, then up to four draws, each without the token rejected before it.
        sampler.applyPenalties(to: &logits, history: context.history, replyStart: context.replyStart)
        for _ in 0 ..< 4 {
            guard let token = sampler.draw(from: logits) else { return nil }
            if acceptable(token, progressFrom: nil) { return token }
            logits[token] = -.infinity
        }
        // Closing: the likeliest tokens that shorten the way to a complete value, up to 8 of
        // the 256 likeliest, or the first further down when none of those does. (Sorting and
        // trying every allowed token, 262,144 inside a string with Gemma's vocabulary, cost
        // 30 ms a step.)
        let distance = matcher.shortestCompletionLength
        let allowed = logits.indices.filter { logits[$0] > -.infinity }
        let likeliest = likeliestTokens(256, of: allowed, in: logits)
        var candidates: [Int] = []
        func collect(_ tokens: [Int], upTo count: Int) {
            for token in tokens where acceptable(token, progressFrom: distance) {
                matcher.rollback(1)
                candidates.append(token)
                if candidates.count == count { return }
            }
        }
        collect(likeliest, upTo: 8)
        if candidates.isEmpty, allowed.count > likeliest.count {
            let tried = Set(likeliest)
            collect(allowed.filter { !tried.contains($0) }.sorted { logits[$0] > logits[$1] }, upTo: 1)
        }
        guard !candidates.isEmpty else { return nil }
        // Only the candidates stay (in place: the logits are not needed after this step).
        let kept = Set(candidates)
        for token in allowed where !kept.contains(token) { logits[token] = -.infinity }
        guard let token = sampler.draw(from: logits), matcher.accept(token: token) else { return nil }
        return token
    }

    // MARK: Masks

    /// Sets to −∞ the logits of tokens whose text, after leading whitespace, opens a JSON
    /// object or a code fence (how a bare call starts).
    static func forbidCallOpenings(in logits: inout [Float], vocabulary: Vocabulary) {
        for token in 0 ..< min(logits.count, vocabulary.count) {
            let bytes = vocabulary.bytes(of: token)
            guard let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x09 && $0 != 0x0D }) else { continue }
            if first == UInt8(ascii: "{") || first == UInt8(ascii: "`") { logits[token] = -.infinity }
        }
    }

    /// Keeps in `logits` only what may follow a finished call that the model has extended by
    /// `written`: the end of generation (while `written` is only whitespace) and, when another
    /// call `fits` in the tokens left, tokens that keep spelling at most four whitespace bytes
    /// then another `marker` (so the model cannot loop on newlines either). When no call fits
    /// (or the format has every call in one list), only the end of generation is left.
    static func allowOnlyAnotherCall(after written: [UInt8], marker: String, in logits: inout [Float], vocabulary: Vocabulary, fits: Bool) {
        let marker = Array(marker.utf8)
        func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        /// Whether `text` is a little whitespace then a prefix of the marker (or the whole
        /// marker and more).
        func continuesTowardsACall(_ text: [UInt8]) -> Bool {
            let rest = text.drop(while: isWhitespace)
            return text.count - rest.count <= 4 && (rest.starts(with: marker) || marker.starts(with: rest))
        }
        let onlyWhitespace = written.allSatisfy(isWhitespace)
        for id in logits.indices where logits[id] > -.infinity {
            if vocabulary.isEndOfGeneration(id) {
                if !onlyWhitespace && fits { logits[id] = -.infinity }
            } else if !fits || !continuesTowardsACall(written + vocabulary.bytes(of: id)) {
                logits[id] = -.infinity
            }
        }
    }
}
