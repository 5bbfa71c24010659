import TypesetGrammar
import Models
import TypesetTokenizer

/// One finished reply, as `Conversation` records it.
struct Reply: Sendable {
    var message: ChatMessage
    var finishReason: FinishReason
    var stats: GenerationStats
    /// Interrupted replies are not added to the history.
    var appendsToHistory: Bool { finishReason != .interrupted && finishReason != .error }
}

/// The reply state machine behind every reply (a ``ReplyPlan`` started by the runner): each
/// step of the token loop runs the logit stages — the reply's constraint's mask (a JSON
/// Schema's grammar, a call's, or a caller's ``TokenConstraint``), or, in free text, the rules
/// after a call — then lets the ``TokenSelector`` choose the token, and routes free text into
/// reasoning, content and function calls; `finish` turns the run's outcome into the reply. A
/// ``TokenStepper`` for `BatchScheduler` (or `TokenLoop.run`).
///
///     logits ─► (logprobs: the model's own, copied) ─► stages ─► TokenSelector ─► token
///               stages: constraint mask │ after a call: another call or the end only
///                                       │ the last round: no call opening
///     token ─► detokenizer ─► router ─► reasoning │ content (stop sequences) │ call
///           ─► forced tokens the constraint dictates (jump-forward), a provisional one
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
        /// The whole reply is held to a constraint (a JSON Schema's grammar, or the caller's).
        case constrained(any TokenConstraint)
        /// Inside a function call's JSON; `text` is the JSON so far.
        case call(GrammarMatcher, text: String)
    }

    private let vocabulary: Vocabulary
    private let clock = ContinuousClock()
    private var selector: TokenSelector
    private var detokenizer: StreamingDetokenizer
    private var router: ReplyTextRouter
    private var phase: Phase
    private var mask: TokenBitmask
    private var maskIsCurrent = false
    private var content = ""
    private var reasoning = ""
    private var calls: [FunctionCall] = []
    private var constraintSeconds = 0.0
    /// The time the current mask took to compute, for ``GenerationOptions/tokenTrace``.
    private var maskSeconds = 0.0
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
    /// The call being written, streamed as it comes (``StreamedCall``); `nil` between calls.
    private var streamedCall: StreamedCall?
    /// `<think>` and `</think>` (`nil`: the model has no such tokens); a spent reasoning budget
    /// forces the closing.
    private let thinkingMarkers: ThinkingMarkers?
    /// The token that ends reasoning (`</think>`, or Harmony's `<|end|>`), which a spent budget
    /// forces, and for Harmony the header of the final message forced after it.
    private let reasoningEnd: (token: Int, then: [Int])?
    /// Each function's arguments grammar (Harmony calls), and the function of the call being
    /// written in Harmony (`nil` otherwise).
    private let argumentGrammars: [String: CompiledGrammar]
    private var harmonyCall: String?
    /// Whether the reply is Harmony messages (``HarmonyReader`` routes its free text).
    private let isHarmony: Bool
    /// Tokens of free text chosen inside a `<think>` block.
    private var reasoningTokens = 0
    /// After Gemma 4's opening, whether its label (`thought` and a newline) may still come, and
    /// the text held back meanwhile: the label is kept out of the reasoning.
    private var awaitsReasoningLabel = false
    private var heldReasoning = ""
    /// Whether the constraint is a ``ReasoningThenValue``: its tokens before the value are
    /// reasoning, not the value's text.
    private let reasonsBeforeValue: Bool

    /// The decoder of `plan`'s reply; `emit` gets what it streams.
    init(
        plan: ReplyPlan, tokenizer: Tokenizer, cancellation: CancellationFlag, isAbandoned: (@Sendable () -> Bool)? = nil,
        emit: @escaping (MessageResponse) -> Void
    ) {
        let options = plan.options, constraint = plan.constraint, callGrammar = plan.routing.calls?.grammar
        let callFormat = plan.routing.callFormat, startsWithCall = plan.routing.calls?.startsWithCall ?? false
        self.tokenizer = tokenizer
        self.options = options
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
        selector = TokenSelector(sampling: options.samplingOptions, tokenizer: tokenizer)
        detokenizer = tokenizer.makeStreamingDetokenizer()
        router = ReplyTextRouter(
            detectsThinking: plan.routing.detectsThinking, startsInReasoning: plan.routing.startsInReasoning,
            thinking: plan.routing.thinkingMarkers?.syntax ?? .tags, callFormat: callGrammar == nil ? nil : callFormat,
            harmony: plan.routing.harmony != nil)
        thinkingMarkers = plan.routing.thinkingMarkers
        if let harmony = plan.routing.harmony {
            reasoningEnd = (harmony.end, tokenizer.encode(Harmony.finalHeader, addingSpecialTokens: false, parsingSpecialTokens: true))
        } else {
            reasoningEnd = plan.routing.thinkingMarkers.map { ($0.closing, []) }
        }
        argumentGrammars = plan.routing.calls?.argumentGrammars ?? [:]
        isHarmony = plan.routing.harmony != nil
        reasonsBeforeValue = constraint is ReasoningThenValue
        phase = constraint.map { .constrained($0) } ?? .free
        if startsWithCall, let callGrammar {
            phase = .call(GrammarMatcher(callGrammar), text: "")
            router.startCall()
        }
        mask = TokenBitmask(vocabularySize: constraint?.vocabularySize ?? callGrammar?.vocabulary.size ?? 0)
        shortestCall = callGrammar.map {
            GrammarMatcher($0).shortestCompletionLength
                + ((callFormat.opening ?? "") + callFormat.afterOpening + callFormat.closing).utf8.count
        } ?? 0
        bareCall = callFormat == .json
        callClosing = tokenizer.encode(callFormat.closing, addingSpecialTokens: false, parsingSpecialTokens: true)
        stops = StopSequences(options.stopSequences)
        traceForced(opening)
    }

    // MARK: TokenStepper

    var isCancelled: Bool { cancellation.isCancelled || isAbandoned?() == true }

    func prefillProgress(computed: Int, total: Int) { onPrefill?(computed, total) }

    func reasonAtLimit() -> FinishReason {
        switch phase {
        case .free: .maxTokens
        case .constrained(let constraint): constraint.canTerminate ? .stop : .constraint
        case .call: .constraint
        }
    }

    /// One step: the next token (and any markup forced after it) for `logits`.
    func step(_ logits: inout [Float], _ context: TokenStepContext) -> TokenStepDecision {
        // The model's own distribution, before masks and penalties change the logits.
        if options.logprobs != nil, !options.logprobsAfterSampling { modelLogits.replaceSubrange(modelLogits.indices, with: logits) }
        let token: Int
        /// Whether the token was chosen inside reasoning (free text).
        var chosenInReasoning = false
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
            let reasons = router.isReasoning
            if reasons, let budget = options.reasoningBudget, let closing = reasoningEnd?.token, reasoningTokens >= budget {
                // The budget is spent: the reasoning ends here.
                for index in logits.indices where index != closing { logits[index] = -.infinity }
            }
            guard let sampled = selector.select(&logits, context) else { return .finish(.stop) }
            token = sampled
            chosenInReasoning = reasons
            if reasons { reasoningTokens += 1 }
            if afterCall != nil { afterCall! += vocabulary.bytes(of: token) }
        case .constrained(var constraint):
            // Mask the logits with the constraint; the chosen token is accepted into it.
            let started = clock.now
            defer { constraintSeconds += (clock.now - started).seconds }
            if !maskIsCurrent { fillMask(constraint) }
            mask.apply(to: &logits)
            // `nil`: no token keeps the value finishable (or none is allowed at all).
            guard let chosen = selector.select(&logits, context, constraint: &constraint, budget: budget(context.remainingTokens)) else {
                return .finish(.constraint)
            }
            token = chosen
            phase = .constrained(constraint)
        case .call(var matcher, let text):
            let started = clock.now
            defer { constraintSeconds += (clock.now - started).seconds }
            if !maskIsCurrent { fillMask(matcher) }
            mask.apply(to: &logits)
            // Room for the closing markup Typeset writes after the call.
            let remaining = context.remainingTokens - (bareCall ? 0 : callClosing.count)
            guard let chosen = selector.select(&logits, context, constraint: &matcher, budget: budget(remaining)) else {
                return .finish(.constraint)
            }
            token = chosen
            phase = .call(matcher, text: text)
        }
        maskIsCurrent = false
        if vocabulary.isEndOfGeneration(token) {
            if case .call = phase { return .finish(.constraint) }
            return .append(token)
        }
        // The end of generation is not one of the reply's tokens, nor is it traced.
        if let trace = options.tokenTrace {
            let masked: Bool = if case .free = phase { false } else { true }
            trace.append(TokenTrace.Step(token: token, allowedCount: masked ? mask.allowedCount : nil, isForced: false,
                                         maskSeconds: masked ? maskSeconds : 0))
        }
        if let count = options.logprobs {
            emit(.logprob(options.logprobsAfterSampling
                ? TokenLogprob.entry(for: token, drawnBy: selector.sampler, alternativeCount: count, vocabulary: vocabulary)
                : TokenLogprob.entry(for: token, logits: modelLogits, alternativeCount: count, vocabulary: vocabulary)))
        }
        var forced: [Int] = []
        var provisional: Int?
        var text = (try? detokenizer.append(token)) ?? ""
        if chosenInReasoning, let (end, header) = reasoningEnd, token == end, !header.isEmpty,
           let budget = options.reasoningBudget, reasoningTokens >= budget {
            // Harmony's spent budget: the final message's header follows the forced `<|end|>`.
            forced = header
            traceForced(header)
            for headerToken in header { text += (try? detokenizer.append(headerToken)) ?? "" }
        }
        if case .free = phase {
            if token == markerToken { text += callFormat.opening ?? "" }
            // Markers that are control tokens detokenize to nothing: the router reads their text.
            if text.isEmpty, let markers = thinkingMarkers {
                if token == markers.opening { text = markers.syntax.opening }
                if token == markers.closing { text = markers.syntax.closing }
            }
        }
        switch phase {
        case .constrained(var constraint):
            // Before the value: the reasoning and its markup, nothing forced.
            if reasonsBeforeValue, let segment = (constraint as? ReasoningThenValue)?.lastSegment, segment != .value {
                routeReasoning(text, segment: segment)
                break
            }
            if let segment = (constraint as? HarmonyThenValue)?.lastSegment, segment != .value {
                // Headers and `<|end|>` are nothing; analysis bodies are reasoning.
                if segment == .reasoning, !text.isEmpty { reasoning += text; emit(.reasoningChunk(text)) }
                break
            }
            content += text
            if !text.isEmpty { emit(.chunk(text)) }
            // Complete and nothing but the end may follow: done, without another step.
            if constraint.isComplete { return .appendAndFinish(token, .stop) }
            let (tokens, piece, next) = appendForcedTokens(after: token, constraint: &constraint, limit: context.remainingTokens - 1)
            provisional = next
            if !tokens.isEmpty {
                forced = tokens
                phase = .constrained(constraint)
                content += piece
                if !piece.isEmpty { emit(.chunk(piece)) }
                if constraint.isComplete { return .appendAndFinish(token, forced: forced, .stop) }
            }
        case .free:
            let callStart = take(router.route(text))
            // A stop sequence ends the reply here; its text is not part of it.
            if stops.isStopped { return .appendAndFinish(token, forced: [], .stop) }
            if isHarmony, let (name, remainder) = callStart {
                // The function's name and its arguments' start (text where calls are not parsed).
                startHarmonyCall(name: name, remainder: remainder)
                break
            }
            guard let (markup, remainder) = callStart, let callGrammar else { break }
            let marked = markup == callFormat.opening
            bareCall = !marked
            afterCall = nil
            var matcher = GrammarMatcher(callGrammar)
            let json = String(remainder.drop { $0 == " " || $0 == "\n" || $0 == "\t" })
            if json.isEmpty {
                // The model writes `<tool_call>\n{…}`: give it the newline it was trained on.
                if marked, !callFormat.afterOpening.isEmpty {
                    forced = tokenizer.encode(callFormat.afterOpening, addingSpecialTokens: false)
                    traceForced(forced)
                }
            } else if !matcher.accept(bytes: Array(json.utf8)) {
                // Not a well-formed call after all: keep it as text.
                router.resume()
                content += markup + remainder
                emit(.chunk(markup + remainder))
                break
            }
            phase = .call(matcher, text: json)
            streamCall(json)
        case .call(var matcher, let soFar):
            var written = text
            if !matcher.isComplete {
                // The forced keys and punctuation of the call, leaving room for its closing markup.
                let limit = context.remainingTokens - 1 - (bareCall ? 0 : callClosing.count)
                let (tokens, piece, next) = appendForcedTokens(after: token, constraint: &matcher, limit: limit)
                forced = tokens
                provisional = next
                written += piece
            }
            phase = .call(matcher, text: soFar + written)
            streamCall(written)
        }
        if case .call(let matcher, let json) = phase, matcher.isComplete, let name = harmonyCall {
            // A Harmony call is the end of the reply (the model would write `<|call|>`).
            let arguments = json + detokenizer.finish()
            let made = FunctionCallFormat.json.calls(
                in: Self.harmonyCallOpening(name) + arguments + "}",
                firstNumber: firstCallNumber + calls.count)
            finishStreamedCalls(made)
            calls += made
            detokenizer = tokenizer.makeStreamingDetokenizer()
            phase = .free
            return .appendAndFinish(token, forced: forced, .stop)
        }
        if case .call(let matcher, let json) = phase, matcher.isComplete {
            let made = callFormat.calls(in: json + detokenizer.finish(), firstNumber: firstCallNumber + calls.count)
            finishStreamedCalls(made)
            calls += made
            detokenizer = tokenizer.makeStreamingDetokenizer()
            maskIsCurrent = false
            phase = .free
            // A bare call is the whole reply: it ends here, complete (not "cut short").
            if bareCall { return .appendAndFinish(token, forced: forced, .stop) }
            forced += callClosing
            traceForced(callClosing)
            provisional = nil
            router.resume()
            afterCall = []
        }
        return .append(token, forced: forced, provisional: provisional)
    }

    /// A Harmony call of `name` as the JSON formats write calls, up to its arguments:
    /// `{"name":"NAME","arguments":` (the arguments and `}` follow).
    private static func harmonyCallOpening(_ name: String) -> String {
        #"{"name":"# + JSONValue.string(name).compactText + #","arguments":"#
    }

    /// Starts a Harmony call of `name` whose arguments begin with `remainder`: under that
    /// function's arguments grammar, streamed as a call of the JSON formats. An unknown
    /// function, or a start that cannot be its arguments, leaves the text as content.
    private func startHarmonyCall(name: String, remainder: String) {
        var matcher = argumentGrammars[name].map(GrammarMatcher.init)
        let json = String(remainder.drop { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard matcher != nil, json.isEmpty || matcher!.accept(bytes: Array(json.utf8)) else {
            router.resume()
            let text = "to=functions." + name + Harmony.message + remainder
            content += text
            emit(.chunk(text))
            return
        }
        bareCall = true   // no closing markup after it: the call ends the reply
        afterCall = nil
        harmonyCall = name
        phase = .call(matcher!, text: json)
        streamCall(Self.harmonyCallOpening(name) + json)
    }

    /// The constraint of a value or a call under way; free text has none. (The value's
    /// constraint leaves the phase while `body` runs, so that accepting into it copies nothing.)
    func withDraftConstraint(_ body: (inout any TokenConstraint) -> Void) -> Bool {
        switch phase {
        case .free:
            return false
        case .constrained(var constraint):
            phase = .free
            body(&constraint)
            phase = .constrained(constraint)
        case .call(let matcher, _):
            // A copy: the call's matcher is a value, left as it is.
            var constraint: any TokenConstraint = matcher
            body(&constraint)
        }
        return true
    }

    /// The reply, once the loop is over: what the detokenizer and the router still hold is
    /// flushed (and streamed), and the message assembled.
    func finish(_ outcome: TokenLoopOutcome) -> Reply {
        if case .free = phase {
            _ = take(router.route(detokenizer.finish()))
            _ = take(router.finish())
            let held = stops.finish()
            if !held.isEmpty { content += held; emit(.chunk(held)) }
        } else if case .constrained(let constraint) = phase {
            let rest = detokenizer.finish()
            if reasonsBeforeValue, let thinking = constraint as? ReasoningThenValue, thinking.stage == .reasoning {
                routeReasoning(rest, segment: .reasoning)
            } else if let harmony = constraint as? HarmonyThenValue, harmony.stage != .value {
                if harmony.stage == .reasoning, !rest.isEmpty { reasoning += rest; emit(.reasoningChunk(rest)) }
            } else if !rest.isEmpty {
                content += rest
                emit(.chunk(rest))
            }
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
        stats.stopSequence = stops.matched
        let message = ChatMessage(
            role: .assistant, content: content, reasoning: reasoning.isEmpty ? nil : reasoning.trimmingWhitespace,
            functionCalls: calls)
        return Reply(message: message, finishReason: outcome.finishReason, stats: stats)
    }

    // MARK: Steps

    /// The tokens a grammar's output may take when it must close within `remaining`; `nil`
    /// when it need not (``GenerationOptions/closesWithinMaxTokens`` off).
    private func budget(_ remaining: Int) -> Int? {
        options.closesWithinMaxTokens ? remaining : nil
    }

    /// Computes the next step's token mask now: the scheduler calls this while the model
    /// computes the logits it will apply to, so the grammar's time overlaps the forward pass.
    var hasWorkToPrepare: Bool {
        guard !maskIsCurrent else { return false }
        switch phase {
        case .constrained, .call: return true
        case .free: return false
        }
    }

    /// Records `tokens`, written without sampling, in the options' trace.
    private func traceForced(_ tokens: [Int]) {
        guard let trace = options.tokenTrace else { return }
        for token in tokens { trace.append(TokenTrace.Step(token: token, allowedCount: nil, isForced: true, maskSeconds: 0)) }
    }

    /// Fills the mask for `constraint`'s next token, timed.
    private func fillMask(_ constraint: some TokenConstraint) {
        let started = clock.now
        constraint.fillNextTokenMask(into: &mask)
        maskSeconds = (clock.now - started).seconds
    }

    func prepareNextStep() {
        guard !maskIsCurrent else { return }
        switch phase {
        case .constrained(let constraint):
            fillMask(constraint)
            constraintSeconds += maskSeconds
            maskIsCurrent = true
        case .call(let matcher, _):
            fillMask(matcher)
            constraintSeconds += maskSeconds
            maskIsCurrent = true
        case .free:
            break
        }
    }

    /// Routes the text of a token before a value (``ReasoningThenValue``): the reasoning
    /// streams as reasoning, its markers and the whitespace after it as nothing.
    private func routeReasoning(_ text: String, segment: ReasoningThenValue.Segment) {
        var thought = text
        let syntax = thinkingMarkers?.syntax ?? .tags
        switch segment {
        case .reasoning: break
        case .closing:
            if thought.hasSuffix(syntax.closing) { thought.removeLast(syntax.closing.count) }
        case .opening:
            // Gemma 4's label follows its opening: markup, not reasoning.
            awaitsReasoningLabel = !syntax.label.isEmpty
            return
        case .separator, .value: return
        }
        if awaitsReasoningLabel {
            // The text since the opening, held while it may still be the label.
            let held = heldReasoning + thought
            guard let markup = syntax.labelLength(atStartOf: held, closed: segment == .closing) else {
                heldReasoning = held
                return
            }
            thought = String(held.dropFirst(markup))
            heldReasoning = ""
            awaitsReasoningLabel = false
        }
        guard !thought.isEmpty else { return }
        reasoning += thought
        emit(.reasoningChunk(thought))
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

    // MARK: Streaming calls

    /// A call being written in a JSON format (`{"name": …, "arguments": …}`), streamed as
    /// ``MessageResponse/functionCallDelta(id:name:arguments:)``: its name once complete, then
    /// its arguments in `compactText`'s form as they arrive (the last `}` held back: it may
    /// close the call rather than the arguments). The call grammar writes the name first.
    private struct StreamedCall {
        let id: String
        var writer = CompactJSONWriter()
        /// The call so far, in compact form.
        var compact: [UInt8] = []
        var name: String?
        /// Where the arguments start in `compact`, once the name is known.
        var argumentsStart: Int?
        /// How many of the arguments' bytes (from `argumentsStart`) are streamed.
        var sentCount = 0

        /// The arguments' bytes streamed so far.
        var sent: ArraySlice<UInt8> {
            guard let start = argumentsStart else { return [] }
            return compact[start ..< start + sentCount]
        }
    }

    /// `text`, the next piece of the call being written, streamed.
    private func streamCall(_ text: String) {
        guard callFormat != .lfm, !text.isEmpty else { return }   // LFM's calls: streamed once complete
        var call = streamedCall ?? StreamedCall(id: "call_\(firstCallNumber + calls.count)")
        defer { streamedCall = call }
        call.compact += call.writer.append(text.utf8)
        if call.name == nil {
            let opening = Array(#"{"name":""#.utf8), separator = Array(#","arguments":"#.utf8)
            guard call.compact.starts(with: opening.prefix(call.compact.count)) else { call.writer.stop(); return }
            // The name's literal ends at its first unescaped quote.
            var index = opening.count, escaped = false
            while index < call.compact.count, escaped || call.compact[index] != UInt8(ascii: "\"") {
                escaped = !escaped && call.compact[index] == UInt8(ascii: "\\")
                index += 1
            }
            guard index + separator.count <= call.compact.count else { return }
            guard call.compact[(index + 1)...].starts(with: separator),
                  case .string(let name)? = try? JSONValue(parsing: String(decoding: call.compact[(opening.count - 1) ... index], as: UTF8.self))
            else { call.writer.stop(); return }
            call.name = name
            call.argumentsStart = index + 1 + separator.count
            emit(.functionCallDelta(id: call.id, name: name, arguments: ""))
        }
        guard let name = call.name, let start = call.argumentsStart else { return }
        var available = call.compact[start...]
        if available.last == UInt8(ascii: "}") { available = available.dropLast() }
        guard available.count > call.sentCount else { return }
        let piece = available.dropFirst(call.sentCount)
        call.sentCount = available.count
        emit(.functionCallDelta(id: call.id, name: name, arguments: String(decoding: piece, as: UTF8.self)))
    }

    /// The calls `made` of the call just completed: the rest of the one streamed, and each
    /// other (LFM's list, a call whose name was not streamed) whole.
    private func finishStreamedCalls(_ made: [FunctionCall]) {
        defer { streamedCall = nil }
        for call in made {
            let arguments = Array(call.argumentsText.utf8)
            if let streamed = streamedCall, streamed.id == call.id, streamed.name != nil {
                // What was streamed is the start of the arguments (of objects that name each
                // member once: a repeated one is read once); the rest follows.
                if arguments.count > streamed.sent.count, arguments.starts(with: streamed.sent) {
                    emit(.functionCallDelta(id: call.id, name: call.name, arguments: String(decoding: arguments[streamed.sent.count...], as: UTF8.self)))
                }
                continue
            }
            emit(.functionCallDelta(id: call.id, name: call.name, arguments: ""))
            if !arguments.isEmpty { emit(.functionCallDelta(id: call.id, name: call.name, arguments: call.argumentsText)) }
        }
    }

    // MARK: Jump-forward decoding

    /// ``jumpForward(after:constraint:limit:)`` when the options ask for it (not with
    /// log-probabilities, which forced tokens would not have), timed as the constraint's, with
    /// the forced tokens' text.
    private func appendForcedTokens(after token: Int, constraint: inout some TokenConstraint, limit: Int)
        -> (tokens: [Int], text: String, provisional: Int?) {
        guard options.jumpsForward, options.logprobs == nil else { return ([], "", nil) }
        let started = clock.now
        let (tokens, provisional) = jumpForward(after: token, constraint: &constraint, limit: limit)
        constraintSeconds += (clock.now - started).seconds
        traceForced(tokens)
        var text = ""
        for forcedToken in tokens { text += (try? detokenizer.append(forcedToken)) ?? "" }
        return (tokens, text, options.computesBoundaryTokensAhead ? provisional : nil)
    }

    /// The tokens for the bytes the grammar forces after `token` (a key, its quotes and
    /// colon, the rest of an enum word), accepted into `constraint`, to append without sampling:
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
    private func jumpForward(after token: Int, constraint: inout some TokenConstraint, limit: Int) -> (tokens: [Int], provisional: Int?) {
        let bytes = constraint.forcedBytes(limit: 256)
        guard bytes.count >= 2, limit > 0 else { return ([], nil) }
        func encode(_ text: [UInt8]) -> [Int] { text.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false) } }
        var encoded = encode(vocabulary.bytes(of: token) + bytes)
        if encoded.first == token { encoded.removeFirst() } else { encoded = encode(bytes) }
        guard let last = encoded.last else { return ([], nil) }
        var tokens: [Int] = []
        for forcedToken in encoded.dropLast().prefix(limit) {
            guard constraint.accept(token: forcedToken) else { return (tokens, nil) }
            tokens.append(forcedToken)
        }
        guard tokens.count < limit else { return (tokens, nil) }
        let merges = mayMerge(last, at: constraint)
        if !merges, constraint.accept(token: last) {
            tokens.append(last)
            return (tokens, nil)
        }
        // The mask `mayMerge` filled is the next step's: the constraint stays where it was.
        maskIsCurrent = true
        return (tokens, merges && tokens.count + 1 < limit && mask[last] ? last : nil)
    }

    /// Whether `constraint` allows a token longer than `token` that starts with `token`'s text
    /// (the model might write that instead of `token` and its successor). Fills `mask` with
    /// `constraint`'s next-token mask: O(vocabulary / 32), then a look at each allowed token, few
    /// where the grammar forces bytes.
    private func mayMerge(_ token: Int, at constraint: some TokenConstraint) -> Bool {
        let text = vocabulary.bytes(of: token)
        fillMask(constraint)
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
