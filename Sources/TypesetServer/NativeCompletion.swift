import Foundation
import Hummingbird
import NIOCore
import Typeset
import TypesetGrammar

/// llama-server's own `POST /completion` (also `/completions`), read and checked: a prompt
/// continued, in llama-server's fields and answered in its shape, for the clients written
/// against it.
///
/// Beside the sampling fields every generation endpoint reads (``SamplingFields``, with
/// `n_predict` for the limit: none by default), it takes `n_probs` (the likeliest tokens at
/// each step, `completion_probabilities`; with `post_sampling_probs`, those the sampler drew
/// from), `return_tokens`, `json_schema`, and llama-server's
/// fields that change nothing here at their defaults (`id_slot`, `ignore_eos: false`, …), and
/// a GBNF `grammar`. What it cannot honour (`ignore_eos: true`, a sampler chain) is a 400
/// naming it.
struct NativeCompletionRequest {
    /// The prompts: one, or several answered as an array (not streamed).
    var prompts: [CompletionRequest.Prompt]
    var sampling: SamplingFields
    /// The likeliest tokens listed at each step (0: none).
    var probabilities = 0
    /// Whether those are the probabilities the sampler drew from (`post_sampling_probs`:
    /// after top-k, top-p, min-p, temperature and any grammar), listed as `prob` and
    /// `top_probs`, rather than the model's own log-probabilities (`logprob`, `top_logprobs`).
    var probabilitiesAfterSampling = false
    var returnsTokens = false
    var schema: JSONValue?
    /// A GBNF grammar the continuation is held to (llama.cpp's syntax).
    var grammar: String?
    /// llama-server's telemetry in a stream: the timings so far on every event
    /// (`timings_per_token`), and `prompt_progress` events while the prompt is read
    /// (`return_progress`).
    var timingsPerToken = false
    var returnsProgress = false

    init(_ document: JSONValue, vocabularySize: Int) throws(APIError) {
        var body = try RequestObject(document)
        _ = try body.string("model")
        prompts = try Self.prompts(body.value("prompt"), vocabularySize: vocabularySize)
        sampling = try SamplingFields(&body, maxTokensFields: [])
        try sampling.requireOneChoice()
        if sampling.includeUsage { throw .invalid("stream_options", "stream_options is OpenAI's: /completion's last event carries the counts") }
        probabilities = try body.integer("n_probs", in: 0 ... 20) ?? 0
        returnsTokens = try body.bool("return_tokens") ?? false
        if let schema = body.nonEmptyValue("json_schema") {
            guard schema.members != nil || schema == .bool(true) else { throw .invalid("json_schema", "json_schema must be a JSON Schema object") }
            if !sampling.stop.isEmpty {
                throw .invalid("stop", "stop cannot be combined with json_schema: the value ends where its schema ends it")
            }
            self.schema = schema
        }
        // Which place decodes the request, and how much of the prompt to keep on a context
        // shift: neither changes the reply (Typeset reuses any cached prefix, and refuses a
        // prompt that does not fit rather than shifting).
        _ = try body.integer("id_slot", in: -1 ... Int(Int32.max))
        _ = try body.integer("n_keep", in: -1 ... Int(Int32.max))
        if try body.bool("ignore_eos") == true {
            throw .invalid("ignore_eos", "ignore_eos is not implemented by Typeset: a reply ends at the model's end of turn")
        }
        grammar = try body.string("grammar").flatMap { $0.isEmpty ? nil : $0 }
        if grammar != nil, schema != nil { throw .invalid("grammar", "grammar and json_schema cannot both be given: the reply is held to one") }
        probabilitiesAfterSampling = try body.bool("post_sampling_probs") ?? false
        // Where llama-server samples (its GPU backend or the CPU): the same tokens and
        // probabilities either way, as its own tests check; Typeset samples on the CPU.
        _ = try body.bool("backend_sampling")
        timingsPerToken = try body.bool("timings_per_token") ?? false
        returnsProgress = try body.bool("return_progress") ?? false
        if returnsProgress && !sampling.stream {
            throw .invalid("return_progress", "return_progress reports a stream's progress: it needs stream: true")
        }
        if prompts.count > 1, sampling.stream {
            throw .invalid("prompt", "several prompts are answered whole: stream one prompt per request")
        }
        try body.finish()
    }

    /// llama-server's prompts: a text; token ids; a sequence mixing ids and texts; an object
    /// with `prompt_string`; or an array of several of these, answered one result each. With
    /// `acceptsContentParts` (embeddings' inputs), also an object whose `content` is OpenAI's
    /// parts, of which this text model reads the `text` ones.
    static func prompts(
        _ value: JSONValue?, field: String = "prompt", vocabularySize: Int, acceptsContentParts: Bool = false
    ) throws(APIError) -> [CompletionRequest.Prompt] {
        guard let value else { throw .invalid(field, "\(field) is required") }
        if case .array(let items) = value, !items.isEmpty,
           items.allSatisfy({ if case .array = $0 { true } else if case .object = $0 { true } else if case .string = $0 { true } else { false } }),
           !items.contains(where: { if case .number = $0 { true } else { false } }) {
            var prompts: [CompletionRequest.Prompt] = []
            for (index, item) in items.enumerated() {
                prompts.append(try prompt(item, at: "\(field)[\(index)]", vocabularySize: vocabularySize, acceptsContentParts: acceptsContentParts))
            }
            return prompts
        }
        return [try prompt(value, at: field, vocabularySize: vocabularySize, acceptsContentParts: acceptsContentParts)]
    }

    private static func prompt(
        _ value: JSONValue, at path: String, vocabularySize: Int, acceptsContentParts: Bool
    ) throws(APIError) -> CompletionRequest.Prompt {
        switch value {
        case .string(let text): return .text(text)
        case .object:
            var object = try RequestObject(value, path: path)
            if acceptsContentParts, let parts = try object.array("content") {
                try object.finish()
                return .text(try text(ofParts: parts, at: object.path(of: "content")))
            }
            guard let text = try object.string("prompt_string") else {
                throw .invalid(object.path(of: "prompt_string"), "\(object.path(of: "prompt_string")) is required")
            }
            if object.nonEmptyValue("multimodal_data") != nil {
                throw .invalid(object.path(of: "multimodal_data"), "multimodal_data needs a model that sees: this one reads text only")
            }
            try object.finish()
            return .text(text)
        case .array(let items):
            var pieces: [CompletionRequest.Prompt.Piece] = []
            for (index, item) in items.enumerated() {
                switch item {
                case .string(let text): pieces.append(.text(text))
                case .number(let text):
                    guard let token = Int(text), (0 ..< vocabularySize).contains(token) else {
                        throw .invalid("\(path)[\(index)]", "\(path)[\(index)] must be a token id between 0 and \(vocabularySize - 1)")
                    }
                    if case .tokens(let ids)? = pieces.last { pieces[pieces.count - 1] = .tokens(ids + [token]) } else { pieces.append(.tokens([token])) }
                default:
                    throw .invalid("\(path)[\(index)]", "\(path)[\(index)] must be a token id or a text")
                }
            }
            return CompletionRequest.Prompt(pieces: pieces)
        default:
            throw .invalid(path, "\(path) must be a text, token ids, or an object with prompt_string")
        }
    }

    /// The text of OpenAI's content parts (`[{"type": "text", "text": "…"}, …]`), joined; a
    /// part this text model cannot read (an image, audio, a video) is refused.
    private static func text(ofParts parts: [JSONValue], at path: String) throws(APIError) -> String {
        var text = ""
        for (index, part) in parts.enumerated() {
            var object = try RequestObject(part, path: "\(path)[\(index)]")
            let type = try object.string("type")
            switch type {
            case "text":
                guard let piece = try object.string("text") else {
                    throw .invalid(object.path(of: "text"), "\(object.path(of: "text")) is required")
                }
                text += piece
            case "image_url", "input_audio", "input_video", "input_image", "file":
                throw .invalid(object.path(of: "type"), "a part of type '\(type!)' needs a model that sees or hears: this one reads text only")
            default:
                throw .invalid(object.path(of: "type"), "\(object.path(of: "type")) must be 'text'")
            }
            try object.finish()
        }
        return text
    }
}

extension TypesetServer {
    /// The constraint of a request's GBNF `grammar`, compiled over the model's vocabulary; a
    /// grammar that cannot be read or enforced is a 400 naming `grammar`.
    static func constraint(grammar: String, runner: ModelRunner) async throws(APIError) -> GrammarMatcher {
        do throws(ConversationError) {
            return GrammarMatcher(try await runner.compiledGrammar(ebnf: grammar))
        } catch {
            if case .invalidSchema(let grammarError) = error {
                throw APIError(.badRequest, "the grammar cannot be enforced: \(grammarError)", parameter: "grammar", code: "unsupported_grammar")
            }
            throw APIError(error)
        }
    }

    /// `POST /completion`: llama-server's own completion endpoint.
    func nativeCompletion(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let runner = try readyRunner()
        let completion = try NativeCompletionRequest(try await readJSON(request), vocabularySize: runner.tokenizer.vocabulary.count)
        try admit()
        var releasesHere = true
        defer { if releasesHere { release() } }
        var reply = ReplyRequest(options: try completion.sampling.options(for: runner))
        if completion.schema != nil || completion.grammar != nil { try reply.options.requireNoPositiveBias(under: "a schema or grammar") }
        // Each token's id comes with its log-probability (the counts of the stream's events,
        // `tokens`, `completion_probabilities`).
        reply.options.logprobs = completion.probabilities
        reply.options.logprobsAfterSampling = completion.probabilitiesAfterSampling
        if let schema = completion.schema {
            reply.schema = .value(schema)
            do {
                _ = try await runner.compiledGrammar(schema: schema, options: reply.options.schemaOptions)
            } catch {
                throw APIError(error)
            }
        }
        if let grammar = completion.grammar { reply.constraint = try await Self.constraint(grammar: grammar, runner: runner) }
        let prompts = try completion.prompts.map { prompt throws(APIError) in try prompt.tokens(for: runner, parsingSpecialTokens: true) }
        let isAbandoned = abandonment(channel: context.channel, deadline: deadline)
        let model = modelName(runner)
        if completion.sampling.stream {
            var encoder = NativeCompletionEncoder(model: model, runner: runner, prompt: prompts[0], completion: completion, options: reply.options)
            let progress = completion.returnsProgress ? PromptProgressFeed(promptTokens: prompts[0].count) : nil
            if completion.timingsPerToken {
                let trace = TokenTrace()   // counts the tokens
                reply.options.tokenTrace = trace
                encoder.timings = RunningTimings(promptTokens: prompts[0].count, trace: trace)
            }
            if progress != nil || encoder.timings != nil {
                reply.onPrefill = { [timings = encoder.timings] computed, total in
                    progress?.report(computed: computed, total: total)
                    timings?.report(computed: computed, total: total)
                }
            }
            let events = ReplyEvents(runner.generateCompletion(of: prompts[0], request: reply, isAbandoned: isAbandoned))
            if let progress {
                releasesHere = false
                return streamedReply(first: nil, rest: events, encoder: encoder, progress: progress, context: context)
            }
            let first = try await events.next()
            releasesHere = false
            return streamedReply(first: first, rest: events, encoder: encoder, context: context)
        }
        // Each prompt's completion, decoded together, in the prompts' order.
        let request = reply
        let results = try await withThrowingTaskGroup(of: (Int, JSONValue, GenerationStats, FinishReason).self) { group in
            for (index, prompt) in prompts.enumerated() {
                group.addTask {
                    let events = ReplyEvents(runner.generateCompletion(of: prompt, request: request, isAbandoned: isAbandoned))
                    var encoder = NativeCompletionEncoder(model: model, runner: runner, prompt: prompt, completion: completion, options: request.options)
                    var final: (ChatMessage, FinishReason, GenerationStats)?
                    while let event = try await events.next() {
                        if case .complete(let message, let reason, let stats) = event { final = (message, reason, stats) }
                        encoder.collect(event)
                    }
                    guard let (message, reason, stats) = final else { throw APIError(.internalServerError, "the reply ended without completing") }
                    var result = encoder.final(content: message.content, reason: reason, stats: stats)
                    if prompts.count > 1, case .object(let members) = result { result = .object(members + [("index", JSONValue(index))]) }
                    return (index, result, stats, reason)
                }
            }
            var results: [(Int, JSONValue, GenerationStats, FinishReason)] = []
            for try await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }
        }
        for result in results { metrics.record(result.2) }
        if results.contains(where: { $0.3 == .interrupted }) {
            throw APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)")
        }
        return .json(prompts.count == 1 ? results[0].1 : .array(results.map(\.1)))
    }
}

/// Writes a completion in llama-server's own shape: the whole result, or one event per piece
/// of text as it comes (`stop: false`) and a last one with the counts (`stop: true`).
struct NativeCompletionEncoder: ReplyStreamEncoder {
    let model: String
    let runner: ModelRunner
    let prompt: [Int]
    let completion: NativeCompletionRequest
    let options: GenerationOptions
    /// Chosen tokens (and their alternatives) not yet sent, or all of them.
    fileprivate var entries: [TokenLogprob] = []
    fileprivate var allTokens: [Int] = []
    fileprivate var predicted = 0
    /// When the request asked for them (`timings_per_token`), the timings every event carries.
    var timings: RunningTimings?
    /// llama-server's own stream has no `data: [DONE]`.
    var endsWithDone: Bool { false }

    /// llama-server's progress event: an empty piece with `prompt_progress` (and the timings so
    /// far, when asked).
    func progressEvent(_ progress: PromptProgress) -> JSONValue? {
        var members: [(String, JSONValue)] = [
            ("index", JSONValue(0)), ("content", .string("")), ("tokens", .array([])), ("stop", .bool(false)), ("id_slot", JSONValue(-1)),
            ("tokens_predicted", JSONValue(0)), ("tokens_evaluated", JSONValue(prompt.count)), ("prompt_progress", progress.json),
        ]
        if timings != nil { members.append(("timings", progress.timings)) }
        return .object(members)
    }

    mutating func collect(_ event: MessageResponse) {
        if case .logprob(let entry) = event {
            entries.append(entry)
            allTokens.append(entry.chosen.token)
        }
    }

    /// The stream's event for `event`, if it makes one.
    mutating func events(for event: MessageResponse) -> [JSONValue] {
        switch event {
        case .logprob(let entry):
            entries.append(entry)
            predicted += 1
            return []
        case .chunk(let text):
            var members: [(String, JSONValue)] = [
                ("index", JSONValue(0)), ("content", .string(text)),
                ("tokens", .array(completion.returnsTokens ? entries.map { JSONValue($0.chosen.token) } : [])),
                ("stop", .bool(false)), ("id_slot", JSONValue(-1)),
                ("tokens_predicted", JSONValue(predicted)), ("tokens_evaluated", JSONValue(prompt.count)),
            ]
            if completion.probabilities > 0 { members.append(("completion_probabilities", Self.probabilities(entries, afterSampling: completion.probabilitiesAfterSampling))) }
            if let timings { members.append(("timings", timings.json)) }
            entries.removeAll()
            return [.object(members)]
        case .reasoningChunk, .functionCallDelta, .functionCalls:
            return []
        case .complete(_, let reason, let stats):
            return [final(content: "", reason: reason, stats: stats, streamed: true)]
        }
    }

    /// The whole result (streamed: the last event, its text and tokens already sent).
    func final(content: String, reason: FinishReason, stats: GenerationStats, streamed: Bool = false) -> JSONValue {
        let stopType: String, stoppingWord: String
        switch reason {
        case .stop:
            (stopType, stoppingWord) = stats.stopSequence.map { ("word", $0) } ?? ("eos", "")
        case .maxTokens, .exceededContext, .constraint: (stopType, stoppingWord) = ("limit", "")
        case .interrupted, .error: (stopType, stoppingWord) = ("none", "")
        }
        var members: [(String, JSONValue)] = [
            ("index", JSONValue(0)), ("content", .string(content)),
            ("tokens", .array(completion.returnsTokens && !streamed ? allTokens.map { JSONValue($0) } : [])),
            ("id_slot", JSONValue(-1)), ("stop", .bool(true)), ("model", .string(model)),
            ("tokens_predicted", JSONValue(stats.completionTokens)), ("tokens_evaluated", JSONValue(stats.promptTokens)),
            ("generation_settings", generationSettings),
            ("prompt", .string((try? runner.tokenizer.decode(prompt)) ?? "")),
            ("has_new_line", .bool(content.contains("\n"))), ("truncated", .bool(false)),
            ("stop_type", .string(stopType)), ("stopping_word", .string(stoppingWord)),
            ("tokens_cached", JSONValue(stats.promptTokens + stats.completionTokens)),
        ]
        if !streamed, completion.probabilities > 0 { members.append(("completion_probabilities", Self.probabilities(entries, afterSampling: completion.probabilitiesAfterSampling))) }
        return TypesetServer.adding(timings: stats, to: .object(members))
    }

    /// The settings the reply was generated with: the request's, the model's defaults for the rest.
    private var generationSettings: JSONValue {
        let filled = options.filled(from: runner.defaultOptions)
        return .object([
            ("n_predict", JSONValue(filled.maxTokens ?? -1)), ("seed", filled.seed.map { JSONValue(Int64(bitPattern: $0)) } ?? JSONValue(-1)),
            ("temperature", JSONValue(Double(filled.temperature ?? 0))), ("top_k", JSONValue(filled.topK ?? 0)),
            ("top_p", JSONValue(Double(filled.topP ?? 1))), ("min_p", JSONValue(Double(filled.minP ?? 0))),
            ("repeat_penalty", JSONValue(Double(filled.repetitionPenalty ?? 1))),
            ("stop", .array(filled.stopSequences.map(JSONValue.string))), ("stream", .bool(completion.sampling.stream)),
            ("n_probs", JSONValue(completion.probabilities)), ("post_sampling_probs", .bool(completion.probabilitiesAfterSampling)),
        ])
    }

    /// llama-server's `completion_probabilities`: each chosen token with its id, text, bytes and
    /// log-probability (`afterSampling`: the probability it was drawn with), and the likeliest
    /// tokens at its step.
    static func probabilities(_ entries: [TokenLogprob], afterSampling: Bool) -> JSONValue {
        func candidate(_ candidate: TokenLogprob.Candidate) -> [(String, JSONValue)] {
            let value = afterSampling ? ("prob", JSONValue(Double(exp(candidate.logprob)))) : ("logprob", JSONValue(Double(candidate.logprob)))
            return [("id", JSONValue(candidate.token)), ("token", .string(candidate.text)), value,
                    ("bytes", .array(candidate.bytes.map { JSONValue(Int($0)) }))]
        }
        return .array(entries.map { entry in
            .object(candidate(entry.chosen) + [(afterSampling ? "top_probs" : "top_logprobs", .array(entry.alternatives.map { .object(candidate($0)) }))])
        })
    }
}
