import HTTPTypes
import Hummingbird
import NIOCore
import Typeset
import TypesetGrammar
import TypesetTokenizer

/// The web page at `/`: a chat with the model, and a playground for typed values that shows,
/// token by token, what the grammar allowed, which tokens it forced and what each mask cost,
/// beside a picture of the grammar's automaton.
///
/// The page is four static files (Sources/TypesetServer/WebPage/), compiled into the binary
/// (SwiftPM's `embedInCode`): no build step, nothing fetched from elsewhere. It uses only the
/// server's own API, with two Typeset extensions:
///
///     POST /v1/chat/completions {…, "typeset_trace": true}
///          each streamed chunk carries the steps decoded since the previous one:
///          "typeset_trace": [{"token": 90, "text": "{", "allowed": 2, "forced": false, "mask_us": 3.1}, …]
///     POST /grammar/automaton {"schema": {…}} or {"grammar": "<GBNF>"}
///          {"dot": "digraph grammar {…}", "rules": 3, "states": 41, "positions": 38,
///           "computed_positions": 12}: the automaton in DOT, as `typeset grammar compile --dot`
///          prints it; the positions whose masks are computed so far show their token counts
enum WebPage {
    /// A file of the page: its path and media type, and its bytes.
    struct File: Sendable {
        let path: String
        let contentType: String
        let bytes: [UInt8]
    }

    static let files = [
        File(path: "/", contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html),
        File(path: "/page.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.page_css),
        File(path: "/page.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.page_js),
        File(path: "/automaton.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.automaton_js),
    ]

    /// The page's paths, which need no API key (the page asks for one to call the API).
    static let paths = Set(files.map(\.path))
}

extension TypesetServer {
    func addWebPageRoutes(to router: Router<ServerRequestContext>) {
        if configuration.servesWebPage {
            for file in WebPage.files {
                router.get(RouterPath(file.path)) { _, _ -> Response in
                    var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
                    response.headers[.contentType] = file.contentType
                    response.headers[.cacheControl] = "no-cache"
                    // The page runs only its own scripts and styles, and is not framed by others.
                    response.headers[HTTPField.Name("Content-Security-Policy")!] =
                        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
                    response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
                    return response
                }
            }
        }
        router.post("grammar/automaton") { [self] request, _ -> Response in try await automaton(request) }
    }

    /// The most states `POST /grammar/automaton` draws: its DOT takes O(states × 256) to write
    /// and is read by a person.
    static let mostAutomatonStates = 20_000

    /// `POST /grammar/automaton`: a JSON Schema (`schema`) or a GBNF grammar (`grammar`)
    /// compiled over the model's vocabulary (a schema as a chat request's is, so the same
    /// compiled grammar serves both), as Graphviz's DOT.
    private func automaton(_ request: Request) async throws -> Response {
        let runner = try readyRunner()
        var body = try RequestObject(try await readJSON(request))
        let schema = body.value("schema")
        let grammar = try body.string("grammar")
        try body.finish()
        let compiled: CompiledGrammar
        let field: String
        switch (schema, grammar) {
        case (let schema?, nil):
            field = "schema"
            do {
                compiled = try await runner.compiledGrammar(schema: schema, options: GenerationOptions().schemaOptions)
            } catch {
                var refusal = APIError(error)
                if case .invalidSchema = error { refusal.parameter = field }
                throw refusal
            }
        case (nil, let grammar?):
            field = "grammar"
            compiled = try await Self.constraint(grammar: grammar, runner: runner).grammar
        case (nil, nil):
            throw APIError.invalid("schema", "give a JSON Schema as schema, or a GBNF grammar as grammar")
        case (.some, .some):
            throw APIError.invalid("grammar", "give a JSON Schema as schema or a GBNF grammar as grammar, not both")
        }
        let statistics = compiled.statistics
        guard statistics.automatonStates <= Self.mostAutomatonStates else {
            throw APIError.invalid(field, "the automaton has \(statistics.automatonStates) states, more than the \(Self.mostAutomatonStates) drawn here: typeset grammar compile --dot prints it whole")
        }
        return .json(.object([
            ("dot", .string(compiled.graphviz)), ("rules", JSONValue(statistics.rules)), ("states", JSONValue(statistics.automatonStates)),
            ("positions", JSONValue(statistics.positions)), ("computed_positions", JSONValue(statistics.computedPositions)),
        ]))
    }
}

/// A reply's ``TokenTrace`` as the server writes it: one object per token, in order.
struct TokenTraceWriter: Sendable {
    let trace: TokenTrace
    let vocabulary: Vocabulary

    /// The steps recorded since the last call (`nil` when there are none).
    func takeSteps() -> JSONValue? {
        let steps = trace.takeSteps()
        guard !steps.isEmpty else { return nil }
        return .array(steps.map { step in
            .object([
                ("token", JSONValue(step.token)),
                ("text", .string(String(decoding: vocabulary.bytes(of: step.token), as: UTF8.self))),
                ("allowed", step.allowedCount.map(JSONValue.init) ?? .null),
                ("forced", .bool(step.isForced)),
                ("mask_us", JSONValue((step.maskSeconds * 1e7).rounded() / 10)),
            ])
        })
    }

    /// `value` (an object) with the steps recorded since the last call as `typeset_trace`.
    func adding(to value: JSONValue) -> JSONValue {
        guard case .object(var members) = value, let steps = takeSteps() else { return value }
        members.append(("typeset_trace", steps))
        return .object(members)
    }
}
