import ArgumentParser
import ChatTemplating
import Foundation
import Models
import Typeset
import TypesetServer

// `--pooling mean`: the enumeration's raw values are its arguments.
extension EmbeddingPooling: ExpressibleByArgument {}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the model over an OpenAI-compatible HTTP API.",
        discussion: """
        Endpoints: POST /v1/chat/completions (text, JSON Schema replies through response_format, \
        tools, streaming), POST /v1/completions, GET /v1/models, POST /tokenize and /detokenize, \
        GET /health (503 while the model loads) and GET /metrics (Prometheus); OpenAI's Responses \
        API (POST /v1/responses) and Anthropic's Messages API (POST /v1/messages); /chat/completions, \
        /models and /v1/health as llama-server serves them, with its GET /props, POST \
        /apply-template and /v1/chat/completions/input_tokens; embeddings (POST /v1/embeddings, \
        pooled as --pooling or the model says, and llama-server's /embeddings); and a browser's \
        CORS preflight on any path; a web page at / (a chat, and a playground for typed values). A request may name any model (--strict-model-names: only this one's names). Requests are \
        decoded together, --parallel at a time, one forward pass per step for all of them; \
        further requests wait (up to --queue of them; then 429). A JSON Schema keyword or a \
        request field Typeset cannot honour is refused with a 400 naming it. SIGTERM or SIGINT \
        finishes the requests in flight and exits.
        """
    )

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: "The address to listen on (loopback by default; 0.0.0.0 for every interface), or several separated by commas, each on --port.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0: any free port, printed at start).")
    var port = 8080

    @Option(help: "Requests decoded together (each holds a KV cache of --context tokens).")
    var parallel = 4

    @Option(help: "Requests that may wait beyond the --parallel ones before the server answers 429.")
    var queue = 64

    @Option(parsing: .unconditional, help: "Threads for the matrix products.")
    var threads = 2

    @Option(help: "Context length in tokens per request (prompt plus reply).")
    var context = 4096

    @Option(help: "MiB of KV cache that finished requests may keep, so that a later request starting the same way (a system prompt, a conversation's next turn) computes only what follows (0: none).")
    var promptCacheMib = ModelRunner.Options.defaultIdleCacheByteLimit >> 20

    @Option(help: "Require 'Authorization: Bearer <key>' or 'X-Api-Key: <key>' (also read from $TYPESET_API_KEY).")
    var apiKey: String?

    @Option(help: "The largest request body, in bytes.")
    var maxBodyBytes = 8 << 20

    @Option(help: "The longest a generation request may take, in seconds.")
    var timeout: Double = 600

    @Option(help: "The longest a request's body may take to arrive, in seconds (408 after it).")
    var bodyTimeout: Double = 30

    @Option(help: "Seconds a connection may sit with no request under way before it is closed.")
    var idleTimeout: Double = 30

    @Option(parsing: .unconditional, help: "The sampling temperature of requests that set none (0: greedy); by default the model's own, else greedy.")
    var temperature: Float?

    @Option(help: "The random seed of requests that set none.")
    var seed: UInt64?

    @Option(help: "The most tokens a reply may have when its request sets no limit (llama-server's --n-predict); by default none but the context.")
    var maxTokens: Int?

    @Option(help: ArgumentHelp(
        "A chat template to use in place of the model's own: the name of one of llama.cpp's built-in formats (44 of llama-server's names: chatml, llama3, mistral-v7, gemma, command-r, …), or a Jinja template's text.",
        valueName: "name-or-jinja"))
    var chatTemplate: String?

    @Option(help: "A file holding a Jinja chat template to use in place of the model's own.")
    var chatTemplateFile: String?

    @Flag(help: "Draft tokens by prompt lookup for every reply (what followed the last few tokens where they occurred before), verified in the batch's passes: the same replies, in fewer passes where they copy from their prompts (/metrics counts drafted and kept tokens).")
    var lookup = false

    @Option(help: "A smaller model of the same vocabulary (a GGUF file or known model name) whose greedy guesses of each reply's next tokens are verified in the batch's passes (where prompt lookup, with --lookup, finds none): the same replies, in fewer passes where it guesses right. Sequences draft while the batch has rows to spare.")
    var draft: String?

    @Option(help: "Whether a model that thinks does so when a request does not say (the template's enable_thinking): on, off, or auto (the template's default).")
    var reasoning: Reasoning = .auto

    enum Reasoning: String, ExpressibleByArgument, CaseIterable {
        case on, off, auto
    }

    @Option(help: "The most tokens a model that thinks may reason when a request does not say (reasoning_budget_tokens): then its </think> is forced (0: no reasoning; -1, the default: no limit).")
    var reasoningBudget: Int?

    @Option(help: "Another name for the model (repeatable); the first is the one responses give.")
    var alias: [String] = []

    @Flag(help: "Refuse a request whose 'model' is not one of this model's names (404, as OpenAI answers); by default any name is accepted, as llama-server accepts it.")
    var strictModelNames = false

    @Option(
        help: "The web pages whose scripts may call the server: '*' (any, the default), 'localhost' (pages served from this machine) or origins separated by commas.",
        transform: { text in
            guard let origins = CORSPolicy.origins(parsing: text) else {
                throw ValidationError("--cors-origins names no origin: give '*', 'localhost' or origins separated by commas")
            }
            return origins
        })
    var corsOrigins: CORSPolicy.Origins = .any

    @Option(help: "The methods a browser's CORS preflight is told are allowed.")
    var corsMethods = CORSPolicy().methods

    @Option(help: "The request headers a browser's CORS preflight is told are allowed.")
    var corsHeaders = CORSPolicy().headers

    @Flag(inversion: .prefixedNo, help: "Whether pages may send credentials (cookies, HTTP authentication) across origins.")
    var corsCredentials = true

    @Flag(inversion: .prefixedNo, help: "Whether GET /metrics answers (501 otherwise).")
    var metrics = true

    @Flag(help: "Add llama-server's __verbose member to every chat reply: the prompt as the template rendered it, and the counts.")
    var verbose = false

    @Flag(inversion: .prefixedNo, help: "Whether GET /slots answers (501 otherwise).")
    var slots = true

    @Flag(inversion: .prefixedNo, help: "Whether GET / serves the web page: a chat with the model, and a playground showing a typed value's tokens as its grammar allowed them (404 otherwise, as llama-server's --no-ui).")
    var webPage = true

    @Option(help: "A label for the model, listed by /v1/models (repeatable).")
    var tag: [String] = []

    @Option(help: "How the embedding endpoints pool a text's hidden states into one vector: mean, last, cls, or none (one per token); by default as the model's file declares (none for a generative model).")
    var pooling: EmbeddingPooling?

    @OptionGroup(title: "Compiling the requests' JSON Schemas")
    var budgetOptions: CompilationBudgetOptions

    @Option(help: "A directory to archive compiled grammars in and load them from, across restarts and between servers that trust each other (created if missing; invalid files are rebuilt).")
    var grammarCache: String?

    func validate() throws {
        guard (0 ... 65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        let hosts = host.split(separator: ",").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard !hosts.isEmpty else { throw ValidationError("--host names no address") }
        guard hosts.count == 1 || port != 0 else { throw ValidationError("several --host addresses need one --port to share (not 0)") }
        guard parallel > 0 else { throw ValidationError("--parallel must be positive") }
        guard queue >= 0 else { throw ValidationError("--queue must not be negative") }
        try validateThreads(threads)
        try validateCount(reasoningBudget, "--reasoning-budget", atLeast: -1)
        guard context > 0 else { throw ValidationError("--context must be positive") }
        guard (0 ... 1 << 20).contains(promptCacheMib) else { throw ValidationError("--prompt-cache-mib must be between 0 and 1048576") }
        guard maxBodyBytes > 0 else { throw ValidationError("--max-body-bytes must be positive") }
        guard timeout.isFinite, timeout > 0 else { throw ValidationError("--timeout must be a positive number of seconds") }
        guard bodyTimeout.isFinite, bodyTimeout > 0 else { throw ValidationError("--body-timeout must be a positive number of seconds") }
        guard idleTimeout.isFinite, idleTimeout > 0 else { throw ValidationError("--idle-timeout must be a positive number of seconds") }
        try validateNumber(temperature, "--temperature", atLeast: 0)
        if chatTemplate != nil, chatTemplateFile != nil { throw ValidationError("--chat-template and --chat-template-file both give the template: give one") }
        _ = try namedOrWrittenTemplate()
        if let maxTokens, maxTokens <= 0 { throw ValidationError("--max-tokens must be positive") }
    }

    /// `--chat-template`'s Jinja source: a built-in format's by name, or the text itself when it
    /// is a template (it has a Jinja tag); anything else is a name that is not one of them.
    func namedOrWrittenTemplate() throws -> String? {
        guard let chatTemplate else { return nil }
        if let source = BuiltInChatTemplates.source(named: chatTemplate) { return source }
        guard chatTemplate.contains("{{") || chatTemplate.contains("{%") else {
            throw ValidationError("--chat-template \(chatTemplate) is neither a built-in format nor a Jinja template; the built-in formats are \(BuiltInChatTemplates.names.joined(separator: ", "))")
        }
        return chatTemplate
    }

    func run() async throws {
        let path = try ModelStore.resolve(model)
        let key = apiKey ?? ProcessInfo.processInfo.environment["TYPESET_API_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let template = try namedOrWrittenTemplate() ?? chatTemplateFile.map { try readText($0, what: "chat template") }
        let thinking: Bool? = switch reasoning {
        case .on: true
        case .off: false
        case .auto: nil
        }
        var defaults = GenerationOptions(temperature: temperature, seed: seed, maxTokens: maxTokens, enableThinking: thinking)
        defaults.reasoningBudget = reasoningBudget.flatMap { $0 < 0 ? nil : $0 }
        if lookup { defaults.promptLookup = PromptLookup() }
        var configuration = TypesetServer.Configuration(
            host: host, port: port, apiKey: key, maximumBodyBytes: maxBodyBytes, maximumWaitingRequests: queue,
            requestTimeout: .milliseconds(Int64(timeout * 1000)), modelAliases: alias, strictModelNames: strictModelNames,
            cors: CORSPolicy(origins: corsOrigins, methods: corsMethods, headers: corsHeaders, allowsCredentials: corsCredentials),
            exposesMetrics: metrics, verbose: verbose, bodyTimeout: .milliseconds(Int64(bodyTimeout * 1000)),
            idleTimeout: .milliseconds(Int64(idleTimeout * 1000)))
        configuration.exposesSlots = slots
        configuration.servesWebPage = webPage
        configuration.tags = tag
        configuration.embeddingPooling = pooling
        var runnerOptions = ModelRunner.Options(
            contextLength: context, threadCount: threads, chatTemplate: template, defaultGenerationOptions: defaults,
            maximumConcurrentGenerations: parallel, grammarBudget: budgetOptions.budget,
            grammarCacheDirectory: grammarCache, idleCacheByteLimit: promptCacheMib << 20)
        runnerOptions.draftModelPath = try draft.map { try ModelStore.resolve($0) }
        let server = TypesetServer(modelURL: URL(fileURLWithPath: path), runnerOptions: runnerOptions, configuration: configuration)
        try await server.run { line in writeError("typeset serve: \(line)") }
    }
}
