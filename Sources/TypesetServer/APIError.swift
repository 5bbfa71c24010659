import HTTPTypes
import Typeset

/// An error answered to a client, in OpenAI's shape:
///
///     HTTP 400
///     {"error": {"message": "…", "type": "invalid_request_error", "param": "response_format", "code": null}}
///
/// Every refusal names what is wrong in one readable sentence, and `param` the request field
/// at fault (a JSON path such as `messages[2].content`) when there is one.
struct APIError: Error, Sendable {
    var status: HTTPResponse.Status
    var message: String
    /// OpenAI's error `type`.
    var type: String
    var parameter: String?
    var code: String?
    /// Further members of the error object (llama-server's `n_prompt_tokens` and `n_ctx`).
    var details: [(String, JSONValue)] = []

    init(_ status: HTTPResponse.Status, _ message: String, type: String? = nil, parameter: String? = nil, code: String? = nil) {
        self.status = status
        self.message = message
        self.type = type ?? Self.type(for: status)
        self.parameter = parameter
        self.code = code
    }

    private static func type(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 401: "authentication_error"
        case 404: "not_found_error"
        case 413: "request_too_large"
        case 429: "rate_limit_error"
        case 503: "unavailable_error"
        case 504: "timeout_error"
        case 400 ..< 500: "invalid_request_error"
        default: "server_error"
        }
    }

    /// A request field that is invalid: 400 naming it.
    static func invalid(_ parameter: String, _ message: String, code: String? = nil) -> APIError {
        APIError(.badRequest, message, parameter: parameter, code: code)
    }

    var json: JSONValue {
        .object([("error", .object([
            ("message", .string(message)), ("type", .string(type)),
            ("param", parameter.map(JSONValue.string) ?? .null), ("code", code.map(JSONValue.string) ?? .null),
        ] + details))])
    }

    /// How Typeset's conversation errors reach a client.
    init(_ error: ConversationError) {
        switch error {
        case .contextOverflow(let promptTokens, let contextLength):
            // OpenAI's code, llama-server's type and counts.
            self.init(.badRequest, error.description, type: "exceed_context_size_error", parameter: "messages", code: "context_length_exceeded")
            details = [("n_prompt_tokens", JSONValue(promptTokens)), ("n_ctx", JSONValue(contextLength))]
        case .invalidSchema(let grammarError):
            // Fail closed: a schema the compiler cannot enforce is refused, naming the keyword
            // and its JSON pointer, never answered unconstrained.
            self.init(.badRequest, "the JSON Schema cannot be enforced: \(grammarError)", parameter: "response_format", code: "unsupported_schema")
        case .maxTokensTooSmall(let needed, let maxTokens):
            self.init(.badRequest, "the JSON Schema's shortest value takes \(needed) tokens, more than max_tokens (\(maxTokens))",
                      parameter: "max_tokens", code: "max_tokens_too_small")
        case .invalidFunction(let name, let reason):
            self.init(.badRequest, "tool '\(name)': \(reason)", parameter: "tools")
        case .invalidHistory(let index, let reason):
            self.init(.badRequest, reason, parameter: index.map { "messages[\($0)]" } ?? "messages")
        case .template(let message):
            self.init(.badRequest, "the model's chat template cannot render these messages: \(message)", parameter: "messages")
        case .unsupportedOption(let name, _):
            self.init(.badRequest, error.description, parameter: name)
        case .runnerUnloaded:
            self.init(.serviceUnavailable, "the model is not loaded")
        case .generationInProgress, .emptyHistory, .loadFailed, .model:
            self.init(.internalServerError, error.description)
        }
    }
}
