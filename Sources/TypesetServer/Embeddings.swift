import Foundation
import Hummingbird
import Models
import Typeset

/// A request for embeddings, as OpenAI's `POST /v1/embeddings` and llama-server's
/// `/embeddings` read it:
///
///     {"input": "a text" | [ids] | ["text", [ids], {"prompt_string": …}, {"content": [parts]}],
///      "encoding_format": "float" | "base64", "embd_normalize": 2, "dimensions": …, "model": …}
///
/// llama-server's `content` in place of `input` asks for its own shape of reply.
struct EmbeddingRequest {
    var model: String?
    var inputs: [CompletionRequest.Prompt]
    /// The field the inputs came from (`input` or `content`), for error messages.
    var field: String
    var encodesBase64: Bool
    var normalization: EmbeddingNormalization
    /// Whether the reply is OpenAI's list (`/v1/embeddings` with `input`) or llama-server's
    /// array of `{index, embedding: [vectors]}`.
    var repliesAsOpenAI: Bool

    init(_ document: JSONValue, openAIRoute: Bool, runner: ModelRunner) throws(APIError) {
        var body = try RequestObject(document)
        model = try body.string("model")
        let value: JSONValue
        if let input = body.value("input") {
            (value, field, repliesAsOpenAI) = (input, "input", openAIRoute)
        } else if let content = body.value("content") {
            (value, field, repliesAsOpenAI) = (content, "content", false)
        } else {
            throw .invalid("input", "input is required (or llama-server's content)")
        }
        inputs = try NativeCompletionRequest.prompts(value, field: field, vocabularySize: runner.tokenizer.vocabulary.count, acceptsContentParts: true)
        switch try body.string("encoding_format") ?? "float" {
        case "float": encodesBase64 = false
        case "base64":
            guard repliesAsOpenAI else {
                throw .invalid("encoding_format", "encoding_format base64 is given by /v1/embeddings with input; this reply lists floats")
            }
            encodesBase64 = true
        default: throw .invalid("encoding_format", "encoding_format must be float or base64")
        }
        normalization = switch try body.integer("embd_normalize", in: -1 ... 64) ?? 2 {
        case -1: .none
        case 0: .int16Range
        case let p: .pNorm(p)
        }
        if let dimensions = try body.integer("dimensions", in: 1 ... Int(Int32.max)), dimensions != runner.embeddingLength {
            throw .invalid("dimensions", "this model's embeddings have \(runner.embeddingLength) dimensions; it was not trained to shorten them to \(dimensions)")
        }
        _ = try body.string("user")
        try body.finish()
    }
}

extension TypesetServer {
    /// `POST /v1/embeddings` (`openAIRoute`), `/embeddings` and `/embedding`: each input's last
    /// hidden states pooled as the server's `--pooling` or the model's file says, normalized
    /// as asked (unit length by default), computed one input after another beside the replies
    /// under way.
    func embeddings(_ request: Request, openAIRoute: Bool) async throws -> Response {
        let runner = try readyRunner()
        let read = try EmbeddingRequest(try await readJSON(request), openAIRoute: openAIRoute, runner: runner)
        try checkModel(read.model, runner: runner)
        let pooling = configuration.embeddingPooling ?? runner.declaredPooling
        if read.repliesAsOpenAI, pooling == .none {
            throw APIError.invalid(
                "input",
                "this model pools no embeddings (pooling none, as generative models declare): /v1/embeddings has no single vector to give; start the server with --pooling mean, last or cls, or ask /embeddings for one vector per token")
        }
        var tokenLists: [[Int]] = []
        for (index, input) in read.inputs.enumerated() {
            let field = read.inputs.count == 1 ? read.field : "\(read.field)[\(index)]"
            let tokens = try input.tokens(for: runner, parsingSpecialTokens: true, addingEndOfSequence: true, field: field)
            guard tokens.count <= runner.contextLength else {
                var error = APIError(
                    .badRequest,
                    "\(field) has \(tokens.count) tokens, too large to process: the context holds \(runner.contextLength) (the server's --context)",
                    type: "exceed_context_size_error", parameter: field, code: "context_length_exceeded")
                error.details = [("n_prompt_tokens", JSONValue(tokens.count)), ("n_ctx", JSONValue(runner.contextLength))]
                throw error
            }
            tokenLists.append(tokens)
        }
        var results: [[[Float]]] = []
        for tokens in tokenLists {
            do {
                results.append(try await runner.embeddings(of: tokens, pooling: pooling, normalization: read.normalization))
            } catch {
                throw APIError(error)
            }
        }
        guard read.repliesAsOpenAI else {
            return .json(.array(results.enumerated().map { index, vectors in
                .object([("index", JSONValue(index)), ("embedding", .array(vectors.map(Self.floats)))])
            }))
        }
        let data = results.enumerated().map { index, vectors -> JSONValue in
            .object([
                ("object", .string("embedding")), ("index", JSONValue(index)),
                ("embedding", read.encodesBase64 ? .string(Self.base64(vectors[0])) : Self.floats(vectors[0])),
            ])
        }
        let tokens = tokenLists.reduce(0) { $0 + $1.count }
        return .json(.object([
            ("object", .string("list")), ("data", .array(data)), ("model", .string(read.model ?? modelName(runner))),
            ("usage", .object([("prompt_tokens", JSONValue(tokens)), ("total_tokens", JSONValue(tokens))])),
        ]))
    }

    /// The vector as JSON numbers, each the shortest text that reads back as the same `Float`.
    private static func floats(_ vector: [Float]) -> JSONValue { .array(vector.map { $0.isFinite ? .number($0.description) : .null }) }

    /// The vector's floats as little-endian bytes in base64, as OpenAI's `encoding_format: base64`.
    private static func base64(_ vector: [Float]) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(vector.count * 4)
        for value in vector { withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes += $0 } }
        return Data(bytes).base64EncodedString()
    }
}
