import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Models
import NIOCore
import NIOHTTPTypes
import ServiceLifecycle
import Synchronization
import Typeset

/// An OpenAI-compatible HTTP server over one model: `typeset serve`.
///
///     POST /v1/chat/completions   chat, JSON Schema replies, tool calls; streamed as server-sent events
///          /chat/completions      (the same, as llama-server also serves it)
///     POST /v1/completions        raw text continuation
///     POST /completion, /completions  the same in llama-server's own shape
///     GET  /v1/models, /models    the served model
///     POST /tokenize, /detokenize token ids of a text, and back
///     GET  /props                 the server's settings, as llama-server describes its own
///     POST /apply-template        the prompt a chat request's reply would read, as text
///     POST /v1/chat/completions/input_tokens  and its length in tokens
///     GET  /health, /v1/health    200 when ready, 503 while the model loads
///     GET  /metrics               Prometheus text: requests, tokens, queue, batch, grammar times
///                                 (and llama-server's llamacpp:* families)
///     GET  /                      the web page: a chat, and the typed-value playground (``WebPage``)
///     POST /grammar/automaton     a JSON Schema's automaton in Graphviz's DOT, for the page
///     OPTIONS any path            a browser's CORS preflight (``CORSPolicy``)
///
/// Requests are decoded together by the model runner's scheduler (continuous batching: one
/// forward pass per step for every reply under way), so concurrent clients share the weights'
/// memory traffic, and each still gets exactly the reply it would get alone (greedy).
///
/// It fails closed: a JSON Schema keyword the grammar compiler cannot enforce is a 400 naming
/// the keyword and its JSON pointer, a request field Typeset does not implement a 400 naming
/// the field — never a reply that ignores them. Hardened for a shared machine: loopback by
/// default, an optional API key, limits on the body, the prompt and the time of a request,
/// a bounded admission queue (429 beyond it), generation cancelled within one token when the
/// client goes away, and SIGTERM/SIGINT finishing the requests in flight before exiting.
public final class TypesetServer: Sendable {
    /// Typeset's version, as `typeset --version` prints it and `system_fingerprint` names it.
    package static let version = "0.1.0"

    /// How the server listens and what it allows.
    public struct Configuration: Sendable {
        /// The address to bind: loopback unless told otherwise; several, separated by commas,
        /// are each bound on the same port (`127.0.0.1,::1`).
        public var host: String

        /// The addresses ``host`` names.
        var hosts: [String] { host.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
        public var port: Int
        /// When set, every request but `GET /health` needs `Authorization: Bearer <key>`.
        public var apiKey: String?
        /// The largest request body read, in bytes (413 beyond).
        public var maximumBodyBytes: Int
        /// Generation requests that may wait for a place beyond those being decoded (429 beyond).
        public var maximumWaitingRequests: Int
        /// The longest a generation request may take (504, or an error event when streaming).
        public var requestTimeout: Duration
        /// The longest a request's body may take to arrive (408 after it: a client sending
        /// a byte a second, or a chunked body that never ends, holds nothing longer).
        public var bodyTimeout: Duration
        /// How long a connection may sit with no request under way before it is closed: a
        /// client trickling its headers, or one of thousands left open, is let go after it.
        public var idleTimeout: Duration
        /// Other names for the model: the first is the one responses and `/v1/models` give.
        public var modelAliases: [String]
        /// Whether a request's `model` must be one of the model's names (404 otherwise, as
        /// OpenAI answers). By default any name is accepted, as llama-server accepts it for
        /// the one model it serves: clients ship placeholder names (`gpt-3.5-turbo`).
        public var strictModelNames: Bool
        /// Which web pages' scripts may call the server, and how.
        public var cors: CORSPolicy
        /// Whether `GET /metrics` answers (501 otherwise, as llama-server without `--metrics`).
        public var exposesMetrics: Bool
        /// Whether every chat reply carries llama-server's `__verbose` debugging member (the
        /// prompt as rendered, the counts), as with `llama-server --verbose`.
        public var verbose: Bool
        /// Whether `GET /slots` answers (501 otherwise, as llama-server with `--no-slots`).
        public var exposesSlots: Bool = true
        /// Labels for the model, listed by `/v1/models` (llama-server's `--tags`).
        public var tags: [String] = []
        /// How the embedding endpoints pool a text's hidden states (llama-server's
        /// `--pooling`); `nil` for the model's own declaration (none for a generative model,
        /// which `/v1/embeddings` then refuses: it answers one vector per input).
        public var embeddingPooling: EmbeddingPooling?
        /// Whether `GET /` serves the web page (a chat, and the typed-value playground); 404
        /// otherwise, as llama-server with `--no-ui`.
        public var servesWebPage = true

        public init(
            host: String = "127.0.0.1", port: Int = 8080, apiKey: String? = nil, maximumBodyBytes: Int = 8 << 20,
            maximumWaitingRequests: Int = 64, requestTimeout: Duration = .seconds(600), modelAliases: [String] = [],
            strictModelNames: Bool = false, cors: CORSPolicy = CORSPolicy(), exposesMetrics: Bool = true, verbose: Bool = false,
            bodyTimeout: Duration = .seconds(30), idleTimeout: Duration = .seconds(30)
        ) {
            self.host = host
            self.port = port
            self.apiKey = apiKey
            self.maximumBodyBytes = maximumBodyBytes
            self.maximumWaitingRequests = maximumWaitingRequests
            self.requestTimeout = requestTimeout
            self.modelAliases = modelAliases
            self.strictModelNames = strictModelNames
            self.cors = cors
            self.exposesMetrics = exposesMetrics
            self.verbose = verbose
            self.bodyTimeout = bodyTimeout
            self.idleTimeout = idleTimeout
        }
    }

    /// The name clients use for the model (`model` in requests, `/v1/models`): the first alias,
    /// else the file's name without `.gguf`.
    func modelName(_ runner: ModelRunner) -> String {
        configuration.modelAliases.first ?? runner.url.deletingPathExtension().lastPathComponent
    }

    /// The model's state: the server answers `/health` (and refuses generation with 503) while
    /// it loads.
    enum ModelState: Sendable {
        case loading(fraction: Double)
        case ready(ModelRunner)
    }

    public let configuration: Configuration
    let modelURL: URL
    let runnerOptions: ModelRunner.Options
    let model = Mutex(ModelState.loading(fraction: 0))
    let metrics = ServerMetrics()
    /// Generation requests being decoded or waiting.
    let inFlight = Atomic<Int>(0)
    let created = Int(Date().timeIntervalSince1970)

    /// A server for the model at `modelURL`, loaded with `runnerOptions` when `run` starts
    /// (`maximumConcurrentGenerations` is the number of requests decoded together).
    public init(modelURL: URL, runnerOptions: ModelRunner.Options, configuration: Configuration = Configuration()) {
        self.modelURL = modelURL
        self.runnerOptions = runnerOptions
        self.configuration = configuration
    }

    /// Serves until SIGTERM or SIGINT (then stops accepting connections, finishes the requests
    /// in flight and returns). The model loads in the background once the server listens.
    ///
    /// - Parameter onEvent: told when the server listens and when the model is ready (one line
    ///   each, for a log).
    /// - Throws: a bind failure, or ``ConversationError/loadFailed(path:reason:)`` when the
    ///   model cannot be loaded (the server stops then).
    public func run(onEvent: @escaping @Sendable (String) -> Void = { _ in }) async throws {
        var logger = Logger(label: "typeset.serve")
        logger.logLevel = .critical
        let configuration = configuration
        // One application per address, each with its own router over the same handlers.
        let applications = configuration.hosts.map { host in
            let router = Router(context: ServerRequestContext.self)
            router.middlewares.add(AccessMiddleware(server: self))
            addRoutes(to: router)
            let shown = host.contains(":") ? "[\(host)]" : host
            return Application(
                router: router,
                server: .http1(configuration: .init(
                    additionalChannelHandlers: [ClientDisconnectHandler()],
                    idleTimeout: .nanoseconds(Int64(configuration.idleTimeout.seconds * 1e9)))),
                configuration: .init(address: .hostname(host, port: configuration.port), serverName: "typeset"),
                onServerRunning: { channel in
                    onEvent("listening on http://\(shown):\(channel.localAddress?.port ?? configuration.port)")
                },
                logger: logger)
        }
        let group = ServiceGroup(configuration: .init(services: applications, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let loading = Task { [self] () throws -> Void in
            let runner = try await ModelRunner.load(from: modelURL, options: runnerOptions) { progress in
                self.model.withLock { if case .loading = $0 { $0 = .loading(fraction: progress.fractionCompleted) } }
            }
            model.withLock { $0 = .ready(runner) }
            onEvent("model \(modelName(runner)) ready (context \(runner.contextLength), \(runnerOptions.maximumConcurrentGenerations) decoded together)")
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                do {
                    try await loading.value
                } catch {
                    await group.triggerGracefulShutdown()
                    throw error
                }
            }
            // The service group ends on a signal; the load's outcome matters only if it failed.
            for try await _ in tasks {}
        }
        if case .ready(let runner) = model.withLock({ $0 }) { runner.unload() }
    }

    // MARK: Shared by the handlers

    /// The runner, or a 503 while the model loads.
    func readyRunner() throws(APIError) -> ModelRunner {
        switch model.withLock({ $0 }) {
        case .ready(let runner): return runner
        case .loading(let fraction):
            throw APIError(.serviceUnavailable, "the model is loading (\(Int(fraction * 100))%); retry shortly", code: "model_loading")
        }
    }

    /// The request's body as JSON (413 past the limit, 408 when it takes longer than the body
    /// timeout to arrive, 400 when it is not JSON).
    func readJSON(_ request: Request) async throws(APIError) -> JSONValue {
        let limit = configuration.maximumBodyBytes
        let timeout = configuration.bodyTimeout
        let read: Result<ByteBuffer, APIError> = await withTaskGroup(of: Result<ByteBuffer, APIError>.self) { group in
            group.addTask {
                var request = request
                do {
                    return .success(try await request.collectBody(upTo: limit))
                } catch {
                    return .failure(APIError(.contentTooLarge, "the request body exceeds \(limit) bytes"))
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .failure(APIError(.requestTimeout, "the request body did not arrive within \(timeout)", code: "body_timeout"))
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        let buffer = try read.get()
        do {
            return try JSONValue(parsing: Array(buffer.readableBytesView), maximumDepth: 128, loneSurrogates: .reject)
        } catch {
            throw APIError(.badRequest, "the request body cannot be read as JSON: \(error)", parameter: "body")
        }
    }

    /// With ``Configuration/strictModelNames``, refuses a `model` that is not this server's
    /// (404), accepting its name, its file's name (with or without `.gguf`) and the configured
    /// aliases; otherwise accepts any.
    func checkModel(_ name: String?, runner: ModelRunner) throws(APIError) {
        guard let name, configuration.strictModelNames else { return }
        let file = runner.url.lastPathComponent
        let accepted = [runner.modelID, file, runner.url.deletingPathExtension().lastPathComponent] + configuration.modelAliases
        guard accepted.contains(name) else {
            throw APIError(.notFound, "the model '\(name)' is not served here; this server serves '\(modelName(runner))'",
                           parameter: "model", code: "model_not_found")
        }
    }

    /// Takes a place for a generation request: the runner decodes
    /// `maximumConcurrentGenerations` at once, and up to `maximumWaitingRequests` more wait
    /// (429 beyond). Give it back with `release()`.
    func admit() throws(APIError) {
        let limit = runnerOptions.maximumConcurrentGenerations + configuration.maximumWaitingRequests
        let count = inFlight.add(1, ordering: .relaxed).newValue
        guard count <= limit else {
            inFlight.subtract(1, ordering: .relaxed)
            metrics.rejectedForCapacity()
            throw APIError(.tooManyRequests, "the server is at capacity (\(limit) generation requests in flight); retry later",
                           code: "server_busy")
        }
    }

    func release() { inFlight.subtract(1, ordering: .relaxed) }

    /// A check, asked before each token, that the request still matters: its client is
    /// connected and its time is not up.
    func abandonment(channel: any Channel, deadline: ContinuousClock.Instant) -> @Sendable () -> Bool {
        { !channel.isActive || ContinuousClock.now >= deadline }
    }

    var deadline: ContinuousClock.Instant { .now + configuration.requestTimeout }

    // MARK: Routes

    private func addRoutes(to router: Router<ServerRequestContext>) {
        for path in ["health", "v1/health"] {
            router.get(RouterPath(path)) { [self] _, _ -> Response in
                switch model.withLock({ $0 }) {
                case .ready: return .json(.object([("status", .string("ok"))]))
                case .loading(let fraction):
                    return .json(.object([("status", .string("loading")), ("progress", JSONValue(fraction))]), status: .serviceUnavailable)
                }
            }
        }
        router.get("metrics") { [self] _, _ -> Response in
            guard configuration.exposesMetrics else {
                throw APIError(.notImplemented, "this server's metrics are off (started with --no-metrics)", type: "not_supported_error")
            }
            let runner: ModelRunner? = if case .ready(let runner) = model.withLock({ $0 }) { runner } else { nil }
            var response = Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: metrics.exposition(runner: runner, inFlight: inFlight.load(ordering: .relaxed)))))
            response.headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            response.headers[HTTPField.Name("Process-Start-Time-Unix")!] = String(metrics.started)
            return response
        }
        for path in ["v1/models", "models"] {
            router.get(RouterPath(path)) { [self] _, _ -> Response in
                let runner = try readyRunner()
                let entry = JSONValue.object([
                    ("id", .string(modelName(runner))), ("object", .string("model")), ("created", JSONValue(created)),
                    ("owned_by", .string("typeset")),
                    ("aliases", .array((configuration.modelAliases.isEmpty ? [modelName(runner)] : configuration.modelAliases).map(JSONValue.string))),
                    ("tags", .array(configuration.tags.map(JSONValue.string))),
                    ("meta", .object([
                        ("name", .string(runner.modelID)), ("context_length", JSONValue(runner.contextLength)),
                        ("vocabulary_size", JSONValue(runner.tokenizer.vocabulary.count)),
                    ])),
                ])
                return .json(.object([("object", .string("list")), ("data", .array([entry]))]))
            }
        }
        for path in ["v1/chat/completions", "chat/completions"] {
            router.post(RouterPath(path)) { [self] request, context -> Response in
                try await chatCompletion(request, context: context)
            }
        }
        router.post("v1/completions") { [self] request, context -> Response in
            try await completion(request, context: context)
        }
        for path in ["completion", "completions"] {
            router.post(RouterPath(path)) { [self] request, context -> Response in
                try await nativeCompletion(request, context: context)
            }
        }
        router.get("props") { [self] _, _ -> Response in .json(properties(try readyRunner())) }
        router.get("slots") { [self] _, _ -> Response in
            guard configuration.exposesSlots else {
                throw APIError(.notImplemented, "this server's slots are not shown (started with --no-slots)", type: "not_supported_error")
            }
            return .json(slots(try readyRunner()))
        }
        router.post("apply-template") { [self] request, _ -> Response in
            let runner = try readyRunner()
            let chat = try ChatCompletionRequest(try await readJSON(request))
            return .json(.object([("prompt", .string(try await renderedPrompt(of: chat, runner: runner).text))]))
        }
        for path in ["chat/completions/input_tokens", "v1/chat/completions/input_tokens"] {
            router.post(RouterPath(path)) { [self] request, _ -> Response in
                let runner = try readyRunner()
                let chat = try ChatCompletionRequest(try await readJSON(request))
                return .json(.object([
                    ("object", .string("response.input_tokens")),
                    ("input_tokens", JSONValue(try await renderedPrompt(of: chat, runner: runner).tokens.count)),
                ]))
            }
        }
        for path in ["v1/responses", "responses"] {
            router.post(RouterPath(path)) { [self] request, context -> Response in try await responses(request, context: context) }
        }
        for path in ["v1/responses/input_tokens", "responses/input_tokens"] {
            router.post(RouterPath(path)) { [self] request, _ -> Response in
                let runner = try readyRunner()
                let read = try ResponsesRequest(try await readJSON(request))
                do throws(APIError) {
                    let tokens = try await renderedPrompt(of: read.chat, runner: runner).tokens
                    return .json(.object([("object", .string("response.input_tokens")), ("input_tokens", JSONValue(tokens.count))]))
                } catch {
                    throw ResponsesDialect.translate(error)
                }
            }
        }
        for path in ["v1/messages", "messages"] {
            router.post(RouterPath(path)) { [self] request, context -> Response in try await messages(request, context: context) }
        }
        for path in ["v1/messages/count_tokens", "messages/count_tokens"] {
            router.post(RouterPath(path)) { [self] request, _ -> Response in try await countMessageTokens(request) }
        }
        router.post("v1/embeddings") { [self] request, _ -> Response in try await embeddings(request, openAIRoute: true) }
        for path in ["embeddings", "embedding"] {
            router.post(RouterPath(path)) { [self] request, _ -> Response in try await embeddings(request, openAIRoute: false) }
        }
        for path in ["tokenize", "v1/tokenize"] {
            router.post(RouterPath(path)) { [self] request, _ -> Response in try await tokenize(request) }
        }
        for path in ["detokenize", "v1/detokenize"] {
            router.post(RouterPath(path)) { [self] request, _ -> Response in try await detokenize(request) }
        }
        addWebPageRoutes(to: router)
    }

    /// `GET /slots`: llama-server's view of its places: one per reply decoded together
    /// (`--parallel`), each with the context a reply may fill and whether a reply holds it
    /// now. Typeset's scheduler gives places to replies as they come rather than fixing
    /// them, so the places held are the first ones; what each reply reads and has written is
    /// not shown (llama-server's `prompt`, `params`, `next_token`).
    private func slots(_ runner: ModelRunner) -> JSONValue {
        let active = runner.activity.activeGenerations
        return .array((0 ..< runnerOptions.maximumConcurrentGenerations).map { place in
            .object([
                ("id", JSONValue(place)), ("n_ctx", JSONValue(runner.contextLength)), ("speculative", .bool(false)),
                ("is_processing", .bool(place < active)),
            ])
        })
    }

    /// `GET /props`: the server's settings as llama-server describes its own (the defaults a
    /// request starts from, the context per request, the places, the model and its template).
    private func properties(_ runner: ModelRunner) -> JSONValue {
        let defaults = runner.defaultOptions
        func number(_ value: Float?, default fallback: Double) -> JSONValue { JSONValue(value.map(Double.init) ?? fallback) }
        let vocabulary = runner.tokenizer.vocabulary
        func token(_ id: Int?) -> JSONValue { id.map { .string(vocabulary.tokens[$0]) } ?? .string("") }
        return .object([
            ("default_generation_settings", .object([
                ("params", .object([
                    ("temperature", number(defaults.temperature, default: 0)), ("top_k", JSONValue(defaults.topK ?? 0)),
                    ("top_p", number(defaults.topP, default: 1)), ("min_p", number(defaults.minP, default: 0)),
                    ("repeat_penalty", number(defaults.repetitionPenalty, default: 1)),
                    ("seed", defaults.seed.map { JSONValue(Int64(bitPattern: $0)) } ?? JSONValue(-1)),
                    ("n_predict", JSONValue(defaults.maxTokens ?? -1)),
                ])),
                ("n_ctx", JSONValue(runner.contextLength)),
            ])),
            ("total_slots", JSONValue(runnerOptions.maximumConcurrentGenerations)),
            ("model_alias", .string(modelName(runner))),
            ("model_path", .string(runner.url.path)),
            ("modalities", .object([("vision", .bool(false)), ("video", .bool(false)), ("audio", .bool(false))])),
            ("endpoint_slots", .bool(configuration.exposesSlots)), ("endpoint_props", .bool(false)), ("endpoint_metrics", .bool(configuration.exposesMetrics)),
            ("ui", .bool(false)),
            ("chat_template", .string(runner.chatTemplateSource ?? "")),
            ("bos_token", token(vocabulary.bosTokenID)), ("eos_token", token(vocabulary.eosTokenID)),
            ("build_info", .string(Self.systemFingerprint)),
            ("is_sleeping", .bool(false)),
        ])
    }

    /// The prompt a chat request's reply would read (`POST /apply-template`, and the count of
    /// `/chat/completions/input_tokens`): the request checked as a chat completion would be
    /// (its schema and tools compiled, the schema's instruction added), rendered by the chat
    /// template, and tokenized, without a reply.
    func renderedPrompt(of chat: ChatCompletionRequest, runner: ModelRunner) async throws(APIError) -> (text: String, tokens: [Int]) {
        try checkModel(chat.model, runner: runner)
        let plan = try await ChatPlan(chat, runner: runner)
        do {
            return try plan.conversation.prompt(answering: plan.message, request: plan.request)
        } catch {
            throw APIError(error)
        }
    }

    /// `POST /tokenize`: `{"content": …, "add_special": false, "parse_special": true,
    /// "with_pieces": false}` to `{"tokens": [ids]}` (or `[{"id", "piece"}]` with pieces), as
    /// llama-server answers (and with its defaults: control tokens written in the text are read
    /// as such).
    private func tokenize(_ request: Request) async throws -> Response {
        let runner = try readyRunner()
        var body = try RequestObject(try await readJSON(request))
        guard let content = try body.string("content") else { throw APIError.invalid("content", "content is required") }
        let addSpecial = try body.bool("add_special") ?? false
        let parseSpecial = try body.bool("parse_special") ?? true
        let withPieces = try body.bool("with_pieces") ?? false
        try body.finish()
        var tokens = runner.tokenizer.encode(content, addingSpecialTokens: false, parsingSpecialTokens: parseSpecial)
        if addSpecial, runner.tokenizer.vocabulary.addBOS, let bos = runner.tokenizer.vocabulary.bosTokenID { tokens.insert(bos, at: 0) }
        let list: [JSONValue] = tokens.map { token in
            guard withPieces else { return JSONValue(token) }
            let bytes = runner.tokenizer.vocabulary.bytes(of: token)
            let piece: JSONValue = String(validating: bytes, as: UTF8.self).map(JSONValue.string) ?? .array(bytes.map { JSONValue(Int($0)) })
            return .object([("id", JSONValue(token)), ("piece", piece)])
        }
        return .json(.object([("tokens", .array(list))]))
    }

    /// `POST /detokenize`: `{"tokens": [ids]}` to `{"content": …}`.
    private func detokenize(_ request: Request) async throws -> Response {
        let runner = try readyRunner()
        var body = try RequestObject(try await readJSON(request))
        let items = try body.array("tokens") ?? []
        try body.finish()
        var tokens: [Int] = []
        let size = runner.tokenizer.vocabulary.count
        for (index, item) in items.enumerated() {
            guard case .number(let text) = item, let token = Int(text), (0 ..< size).contains(token) else {
                throw APIError.invalid("tokens[\(index)]", "tokens[\(index)] must be a token id between 0 and \(size - 1)")
            }
            tokens.append(token)
        }
        return .json(.object([("content", .string((try? runner.tokenizer.decode(tokens)) ?? ""))]))
    }
}

/// The request context: the connection's channel, whose state tells whether the client is
/// still there.
struct ServerRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Answers a browser's CORS preflight, checks the API key, adds the CORS headers to every
/// response and counts every request (by route and status) for `/metrics`; turns
/// ``APIError``s into OpenAI-shaped error responses.
struct AccessMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: TypesetServer

    /// Anthropic's header for the key.
    static let apiKeyField = HTTPField.Name("X-Api-Key")!

    /// The routes that need no API key: a load balancer's health check, and the web page's
    /// files (the page asks for the key to call the API).
    static let publicRoutes = Set(["/health", "/v1/health"]).union(WebPage.paths)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let route = request.uri.path
        let cors = server.configuration.cors
        let origin = request.headers[.origin]
        var response: Response
        if request.method == .options {
            // A browser sends its preflight without credentials: it is answered before the key
            // is checked, and says what the real request may carry.
            response = Response(status: .ok)
            cors.addPreflightHeaders(to: &response.headers)
        } else {
            do {
                if let key = server.configuration.apiKey, !Self.publicRoutes.contains(route), !Self.presents(key, in: request.headers) {
                    throw APIError(.unauthorized, "a valid API key is required: send it as 'Authorization: Bearer <key>' or 'X-Api-Key: <key>'",
                                   code: "invalid_api_key")
                }
                response = try await next(request, context)
            } catch {
                let apiError = error as? APIError ?? (error as? HTTPError).map { APIError($0.status, $0.body ?? $0.status.reasonPhrase) }
                    ?? APIError(.internalServerError, "\(error)")
                // Anthropic's clients read errors in Anthropic's shape.
                let anthropic = route.hasPrefix("/v1/messages") || route.hasPrefix("/messages")
                response = .json(anthropic ? apiError.anthropicJSON : apiError.json, status: apiError.status)
            }
        }
        cors.addOriginHeader(to: &response.headers, origin: origin)
        server.metrics.record(route: route, status: response.status.code, seconds: (ContinuousClock.now - started).seconds)
        return response
    }

    /// Whether the request carries `key`: as `Authorization: Bearer <key>` (OpenAI's clients),
    /// `X-Api-Key: <key>` (Anthropic's), or a bare `Authorization: <key>`, as llama-server
    /// accepts them.
    static func presents(_ key: String, in headers: HTTPFields) -> Bool {
        var given = headers[.authorization] ?? headers[Self.apiKeyField] ?? ""
        if given.hasPrefix("Bearer ") { given.removeFirst("Bearer ".count) }
        return given == key
    }
}

/// Closes a connection whose client has closed its side: an HTTP/1.1 client never does while
/// it still waits for a reply, so the generation for it can stop (the channel's `isActive` is
/// what the generation checks before each token).
final class ClientDisconnectHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }
}

extension Response {
    /// A JSON response.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        var response = Response(status: status, body: .init(byteBuffer: ByteBuffer(string: value.compactText)))
        response.headers[.contentType] = "application/json"
        return response
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
