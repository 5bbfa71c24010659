import Foundation
import HTTPTypes
import Hummingbird
import Typeset

/// `POST /v1/completions`, read and checked: a prompt (text, or token ids) continued as it is.
struct CompletionRequest {
    /// One prompt: texts and token ids in order (llama-server lets a prompt mix them).
    struct Prompt {
        enum Piece {
            case text(String)
            case tokens([Int])
        }

        var pieces: [Piece]

        static func text(_ text: String) -> Prompt { Prompt(pieces: [.text(text)]) }
        static func tokens(_ tokens: [Int]) -> Prompt { Prompt(pieces: [.tokens(tokens)]) }
    }

    var model: String?
    var prompt: Prompt
    var sampling: SamplingFields
    /// Log-probabilities: the number of alternatives per token (0–5), or `nil` for none.
    var logprobs: Int?

    init(_ document: JSONValue, vocabularySize: Int) throws(APIError) {
        var body = try RequestObject(document)
        model = try body.string("model")
        prompt = try Prompt(body.value("prompt"), vocabularySize: vocabularySize)
        var fields = try SamplingFields(&body, maxTokensFields: ["max_tokens"])
        // OpenAI's default for this endpoint.
        if !fields.limitsTokens { fields.maxTokens = 16 }
        sampling = fields
        try fields.requireOneChoice()
        logprobs = try body.integer("logprobs", in: 0 ... 5)
        if try body.bool("echo") == true { throw .invalid("echo", "echo is not implemented by Typeset (only false)") }
        if let suffix = try body.string("suffix"), !suffix.isEmpty {
            throw .invalid("suffix", "suffix (insertion) is not implemented by Typeset")
        }
        if let best = try body.integer("best_of", in: 1 ... 128), best != 1 { throw .invalid("best_of", "best_of must be 1") }
        try body.finish()
    }
}

extension CompletionRequest.Prompt {
    /// A request's `prompt`: a text, an array of one text, or token ids (one prompt per
    /// request).
    init(_ value: JSONValue?, vocabularySize: Int) throws(APIError) {
        switch value {
        case .string(let text)?: self = .text(text)
        case .array(let items)? where items.count == 1:
            guard case .string(let text) = items[0] else { fallthrough }
            self = .text(text)
        case .array(let items)? where items.allSatisfy({ if case .number = $0 { true } else { false } }):
            var tokens: [Int] = []
            for (index, item) in items.enumerated() {
                guard case .number(let text) = item, let token = Int(text), (0 ..< vocabularySize).contains(token) else {
                    throw .invalid("prompt[\(index)]", "prompt[\(index)] must be a token id between 0 and \(vocabularySize - 1)")
                }
                tokens.append(token)
            }
            self = .tokens(tokens)
        case nil:
            throw .invalid("prompt", "prompt is required")
        default:
            throw .invalid("prompt", "prompt must be a string, an array of one string, or an array of token ids (one prompt per request)")
        }
    }

    /// The prompt's tokens: its texts encoded (their control tokens read as such when
    /// `parsingSpecialTokens`: llama-server's own endpoint does, OpenAI's does not) and its
    /// ids as given, with BOS first when the model adds one and the prompt opens with text
    /// (and, `addingEndOfSequence`, EOS last when the model adds one and it ends with text, as
    /// llama.cpp tokenizes an embedding's input). An empty prompt is refused, naming `field`.
    func tokens(
        for runner: ModelRunner, parsingSpecialTokens: Bool, addingEndOfSequence: Bool = false, field: String = "prompt"
    ) throws(APIError) -> [Int] {
        var tokens: [Int] = []
        for piece in pieces {
            switch piece {
            case .tokens(let ids): tokens += ids
            case .text(let text): tokens += runner.tokenizer.encode(text, addingSpecialTokens: false, parsingSpecialTokens: parsingSpecialTokens)
            }
        }
        if case .text? = pieces.first, runner.tokenizer.vocabulary.addBOS, let bos = runner.tokenizer.vocabulary.bosTokenID {
            tokens.insert(bos, at: 0)
        }
        if addingEndOfSequence, case .text? = pieces.last, runner.tokenizer.vocabulary.addEOS, let eos = runner.tokenizer.vocabulary.eosTokenID {
            tokens.append(eos)
        }
        guard !tokens.isEmpty else { throw APIError.invalid(field, "\(field) must not be empty") }
        return tokens
    }
}

extension TypesetServer {
    /// `POST /v1/completions`.
    func completion(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let runner = try readyRunner()
        let completion = try CompletionRequest(try await readJSON(request), vocabularySize: runner.tokenizer.vocabulary.count)
        try checkModel(completion.model, runner: runner)
        try admit()
        var releasesHere = true
        defer { if releasesHere { release() } }
        var options = try completion.sampling.options(for: runner)
        options.logprobs = completion.logprobs
        let tokens = try completion.prompt.tokens(for: runner, parsingSpecialTokens: false)
        let events = ReplyEvents(runner.generateCompletion(
            of: tokens, request: ReplyRequest(options: options), isAbandoned: abandonment(channel: context.channel, deadline: deadline)))
        let first = try await events.next()
        let encoder = TextCompletionEncoder(id: "cmpl-" + Self.randomIdentifier(), created: Int(Date().timeIntervalSince1970), model: modelName(runner))
        if completion.sampling.stream {
            releasesHere = false
            var streamed = encoder
            streamed.includesUsage = completion.sampling.includeUsage
            return streamedReply(first: first, rest: events, encoder: streamed, context: context)
        }
        var logprobs: [TokenLogprob] = []
        var final: (ChatMessage, FinishReason, GenerationStats)?
        var event = first
        while let current = event {
            switch current {
            case .logprob(let entry): logprobs.append(entry)
            case .complete(let message, let reason, let stats): final = (message, reason, stats)
            case .chunk, .reasoningChunk, .functionCallDelta, .functionCalls: break
            }
            event = try await events.next()
        }
        guard let (message, reason, stats) = final else { throw APIError(.internalServerError, "the reply ended without completing") }
        metrics.record(stats)
        if reason == .interrupted { throw APIError(.gatewayTimeout, "the request took longer than \(configuration.requestTimeout)") }
        return .json(Self.adding(timings: stats, to: encoder.response(
            text: message.content, logprobs: completion.logprobs == nil ? nil : logprobs, reason: reason, stats: stats)))
    }
}

/// Writes a text completion in OpenAI's `text_completion` shape.
struct TextCompletionEncoder: ReplyStreamEncoder {
    let id: String
    let created: Int
    let model: String
    /// Whether a stream ends with the usage event (`stream_options.include_usage`).
    var includesUsage = false
    /// A stream's log-probabilities not yet sent.
    private var logprobs: [TokenLogprob] = []

    init(id: String, created: Int, model: String) {
        self.id = id
        self.created = created
        self.model = model
    }

    /// The events for one of the reply's: a piece of text with its tokens' log-probabilities;
    /// at the end, the finish reason, and the usage when asked for.
    mutating func events(for event: MessageResponse) -> [JSONValue] {
        switch event {
        case .logprob(let entry):
            logprobs.append(entry)
            return []
        case .chunk(let text):
            defer { logprobs.removeAll() }
            return [chunk(text: text, logprobs: logprobs, finishReason: .null)]
        case .reasoningChunk, .functionCallDelta, .functionCalls:
            return []
        case .complete(_, let reason, let stats):
            let finish = chunk(text: "", logprobs: logprobs, finishReason: ChatCompletionsDialect.finishReason(reason, hasCalls: false))
            guard includesUsage else { return [TypesetServer.adding(timings: stats, to: finish)] }
            return [finish, TypesetServer.adding(timings: stats, to: response(text: nil, logprobs: nil, reason: nil, stats: stats))]
        }
    }

    /// The whole completion (`text` `nil`: the usage-only event of a stream).
    func response(text: String?, logprobs: [TokenLogprob]?, reason: FinishReason?, stats: GenerationStats) -> JSONValue {
        var choices: [JSONValue] = []
        if let text {
            choices.append(.object([
                ("text", .string(text)), ("index", JSONValue(0)), ("logprobs", logprobs.map(Self.logprobs) ?? .null),
                ("finish_reason", reason.map { ChatCompletionsDialect.finishReason($0, hasCalls: false) } ?? .null),
            ]))
        }
        return .object([
            ("id", .string(id)), ("object", .string("text_completion")), ("created", JSONValue(created)), ("model", .string(model)),
            ("system_fingerprint", .string(TypesetServer.systemFingerprint)), ("choices", .array(choices)), ("usage", ChatCompletionsDialect.usage(stats)),
        ])
    }

    func chunk(text: String, logprobs: [TokenLogprob], finishReason: JSONValue) -> JSONValue {
        let choice = JSONValue.object([
            ("text", .string(text)), ("index", JSONValue(0)), ("logprobs", logprobs.isEmpty ? .null : Self.logprobs(logprobs)),
            ("finish_reason", finishReason),
        ])
        return .object([
            ("id", .string(id)), ("object", .string("text_completion")), ("created", JSONValue(created)), ("model", .string(model)),
            ("system_fingerprint", .string(TypesetServer.systemFingerprint)), ("choices", .array([choice])),
        ])
    }

    /// The legacy shape: parallel lists of tokens, their log-probabilities and the top ones.
    static func logprobs(_ entries: [TokenLogprob]) -> JSONValue {
        var offset = 0
        var offsets: [JSONValue] = []
        for entry in entries {
            offsets.append(JSONValue(offset))
            offset += entry.chosen.text.utf16.count
        }
        return .object([
            ("tokens", .array(entries.map { .string($0.chosen.text) })),
            ("token_logprobs", .array(entries.map { JSONValue(Double($0.chosen.logprob)) })),
            ("top_logprobs", .array(entries.map { entry in
                .object(JSONValue.object(uniquing: entry.alternatives.map { ($0.text, JSONValue(Double($0.logprob))) }).members ?? [])
            })),
            ("text_offset", .array(offsets)),
        ])
    }
}
