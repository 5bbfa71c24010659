import Foundation
import Synchronization
import Typeset

/// The server's counters, exposed at `GET /metrics` in Prometheus' text format (version 0.0.4):
///
///     typeset_requests_total{route, status}           requests answered
///     typeset_request_duration_seconds_{sum,count}     their time, by route
///     typeset_requests_rejected_total                  refused for capacity (429)
///     typeset_requests_in_flight                       generation requests decoding or waiting
///     typeset_queue_depth                              replies waiting for a place in the batch
///     typeset_batch_size                               replies in the last forward pass
///     typeset_forward_passes_total, typeset_evaluated_tokens_total
///     typeset_prompt_tokens_total, typeset_cached_prompt_tokens_total, typeset_completion_tokens_total
///     typeset_time_to_first_token_seconds              histogram
///     typeset_grammar_compile_seconds_total, typeset_grammar_cache_{hits,misses}_total
///     typeset_grammar_mask_seconds_total               masks and constrained choices while decoding
///     typeset_grammar_cache_bytes, process_resident_memory_bytes
///
/// and llama-server's families under its names (`llamacpp:prompt_tokens_total`, …), so that
/// dashboards and alerts written for llama-server read Typeset's too. Its two throughput
/// gauges average over the time since the last scrape, as llama-server's do.
final class ServerMetrics: Sendable {
    /// The routes counted by name; any other path is counted as `other`.
    static let routes: Set<String> = [
        "/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions",
        "/tokenize", "/v1/tokenize", "/detokenize", "/v1/detokenize",
    ]
    /// Upper bounds of the time-to-first-token histogram's buckets, in seconds.
    static let firstTokenBuckets: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    private struct Counters {
        var requests: [String: Int] = [:]
        var durations: [String: (sum: Double, count: Int)] = [:]
        var rejected = 0
        var promptTokens = 0
        var cachedPromptTokens = 0
        var completionTokens = 0
        /// Tokens prompt lookup or the draft model drafted, and those the replies kept.
        var draftedTokens = 0
        var acceptedDraftTokens = 0
        var constraintSeconds = 0.0
        var firstToken = [Int](repeating: 0, count: ServerMetrics.firstTokenBuckets.count + 1)
        var firstTokenSum = 0.0
        var prefillSeconds = 0.0
        var decodeSeconds = 0.0
        /// The longest sequence, prompt and reply.
        var longestSequence = 0
        /// Prompt tokens computed and their seconds, tokens generated and theirs, since the
        /// last scrape (llama-server's throughput gauges).
        var window = (promptTokens: 0, prefillSeconds: 0.0, completionTokens: 0, decodeSeconds: 0.0)
    }

    /// When the server started (llama-server's `Process-Start-Time-Unix` header).
    let started = Int(Date().timeIntervalSince1970)

    private let counters = Mutex(Counters())

    /// Counts a request answered with `status` after `seconds`.
    func record(route: String, status: Int, seconds: Double) {
        let route = Self.routes.contains(route) ? route : "other"
        counters.withLock { counters in
            counters.requests["route=\"\(route)\",status=\"\(status)\"", default: 0] += 1
            counters.durations[route, default: (0, 0)].sum += seconds
            counters.durations[route, default: (0, 0)].count += 1
        }
    }

    func rejectedForCapacity() { counters.withLock { $0.rejected += 1 } }

    /// Counts a finished generation.
    func record(_ stats: GenerationStats) {
        counters.withLock { counters in
            counters.promptTokens += stats.promptTokens
            counters.cachedPromptTokens += stats.cachedPromptTokens
            counters.completionTokens += stats.completionTokens
            counters.draftedTokens += stats.draftedTokens
            counters.acceptedDraftTokens += stats.acceptedDraftTokens
            counters.constraintSeconds += stats.constraintSeconds
            let bucket = Self.firstTokenBuckets.firstIndex { stats.timeToFirstToken <= $0 } ?? Self.firstTokenBuckets.count
            counters.firstToken[bucket] += 1
            counters.firstTokenSum += stats.timeToFirstToken
            counters.prefillSeconds += stats.prefillSeconds
            counters.decodeSeconds += stats.decodeSeconds
            counters.longestSequence = max(counters.longestSequence, stats.promptTokens + stats.completionTokens)
            counters.window.promptTokens += stats.promptTokens - stats.cachedPromptTokens
            counters.window.prefillSeconds += stats.prefillSeconds
            counters.window.completionTokens += stats.completionTokens
            counters.window.decodeSeconds += stats.decodeSeconds
        }
    }

    /// The process's resident set (Linux: /proc/self/statm; 0 elsewhere).
    static func residentBytes() -> Int {
        #if os(Linux)
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Int(fields[1]) { return pages * Int(sysconf(Int32(_SC_PAGESIZE))) }
        }
        #endif
        return 0
    }

    /// The text `/metrics` answers (which starts a new window for the throughput gauges).
    func exposition(runner: ModelRunner?, inFlight: Int) -> String {
        let counters = counters.withLock { counters in
            defer { counters.window = (0, 0, 0, 0) }
            return counters
        }
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in samples { lines.append(labels.isEmpty ? "\(name) \(value)" : "\(name){\(labels)} \(value)") }
        }
        func number(_ value: Double) -> String { String(value) }
        metric("typeset_requests_total", "counter", "Requests answered, by route and HTTP status.",
               counters.requests.sorted { $0.key < $1.key }.map { ($0.key, String($0.value)) })
        let durations = counters.durations.sorted { $0.key < $1.key }
        metric("typeset_request_duration_seconds_sum", "counter", "Seconds spent answering requests, by route.",
               durations.map { ("route=\"\($0.key)\"", number($0.value.sum)) })
        metric("typeset_request_duration_seconds_count", "counter", "Requests timed, by route.",
               durations.map { ("route=\"\($0.key)\"", String($0.value.count)) })
        metric("typeset_requests_rejected_total", "counter", "Generation requests refused because the server was at capacity (429).",
               [("", String(counters.rejected))])
        metric("typeset_requests_in_flight", "gauge", "Generation requests being decoded or waiting.", [("", String(inFlight))])
        let activity = runner?.activity
        metric("typeset_queue_depth", "gauge", "Replies waiting for a place in the batch.", [("", String(activity?.waitingGenerations ?? 0))])
        metric("typeset_active_generations", "gauge", "Replies being decoded.", [("", String(activity?.activeGenerations ?? 0))])
        metric("typeset_batch_size", "gauge", "Replies in the last forward pass.", [("", String(activity?.lastBatchSize ?? 0))])
        metric("typeset_forward_passes_total", "counter", "Forward passes run (one per step of the batch).", [("", String(activity?.steps ?? 0))])
        metric("typeset_evaluated_tokens_total", "counter", "Tokens evaluated by the forward passes (prompts and replies).",
               [("", String(activity?.evaluatedTokens ?? 0))])
        metric("typeset_prompt_tokens_total", "counter", "Prompt tokens of finished generations.", [("", String(counters.promptTokens))])
        metric("typeset_cached_prompt_tokens_total", "counter", "Prompt tokens reused from a cache instead of computed.",
               [("", String(counters.cachedPromptTokens))])
        metric("typeset_completion_tokens_total", "counter", "Tokens generated.", [("", String(counters.completionTokens))])
        metric("typeset_drafted_tokens_total", "counter", "Tokens drafted by prompt lookup (--lookup) or the draft model (--draft) and verified in the passes.",
               [("", String(counters.draftedTokens))])
        metric("typeset_accepted_draft_tokens_total", "counter", "Drafted tokens the replies kept: tokens that took no pass of their own.",
               [("", String(counters.acceptedDraftTokens))])
        var cumulative = 0
        var buckets: [(String, String)] = []
        for (index, bound) in Self.firstTokenBuckets.enumerated() {
            cumulative += counters.firstToken[index]
            buckets.append(("le=\"\(bound)\"", String(cumulative)))
        }
        cumulative += counters.firstToken[Self.firstTokenBuckets.count]
        buckets.append(("le=\"+Inf\"", String(cumulative)))
        lines.append("# HELP typeset_time_to_first_token_seconds Seconds from a request to its first generated token.")
        lines.append("# TYPE typeset_time_to_first_token_seconds histogram")
        for (labels, value) in buckets { lines.append("typeset_time_to_first_token_seconds_bucket{\(labels)} \(value)") }
        lines.append("typeset_time_to_first_token_seconds_sum \(number(counters.firstTokenSum))")
        lines.append("typeset_time_to_first_token_seconds_count \(cumulative)")
        let grammars = runner?.grammarCacheStatistics
        metric("typeset_grammar_compile_seconds_total", "counter", "Seconds compiling JSON Schemas into grammars.",
               [("", number(grammars?.compileSeconds ?? 0))])
        metric("typeset_grammar_cache_hits_total", "counter", "Schemas found compiled in the cache.", [("", String(grammars?.hits ?? 0))])
        metric("typeset_grammar_cache_misses_total", "counter", "Schemas compiled (or refused).", [("", String(grammars?.misses ?? 0))])
        metric("typeset_grammar_archive_loads_total", "counter", "Grammars loaded from the grammar cache directory.",
               [("", String(grammars?.loads ?? 0))])
        metric("typeset_grammar_archives_rejected_total", "counter", "Files in the grammar cache directory that were not valid and were rebuilt.",
               [("", String(grammars?.rejectedArchives ?? 0))])
        metric("typeset_grammar_cache_bytes", "gauge", "Bytes of the compiled grammars kept.", [("", String(grammars?.byteCount ?? 0))])
        metric("typeset_grammar_mask_seconds_total", "counter", "Seconds spent on token masks and constrained choices while decoding.",
               [("", number(counters.constraintSeconds))])
        metric("process_resident_memory_bytes", "gauge", "Resident memory of the server process.", [("", String(Self.residentBytes()))])

        // llama-server's families, under its names and with its meanings.
        func llama(_ name: String, _ type: String, _ help: String, _ value: Double) {
            metric("llamacpp:" + name, type, help, [("", number(value))])
        }
        llama("prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding cached tokens",
              Double(counters.promptTokens - counters.cachedPromptTokens))
        llama("prompt_tokens_cached_total", "counter", "Number of prompt tokens reused from the cache", Double(counters.cachedPromptTokens))
        llama("prompt_seconds_total", "counter", "Total time spent processing prompts", counters.prefillSeconds)
        llama("tokens_predicted_total", "counter", "Number of generation tokens processed", Double(counters.completionTokens))
        llama("tokens_predicted_seconds_total", "counter", "Total time spent generating tokens", counters.decodeSeconds)
        llama("n_decode_total", "counter", "Total number of forward passes", Double(activity?.steps ?? 0))
        llama("n_tokens_max", "counter", "Largest observed sequence length (prompt + generation)", Double(counters.longestSequence))
        // Typeset does not speculate (yet): no drafts.
        llama("spec_decode_num_draft_tokens_total", "counter", "Speculative: Total draft tokens generated", 0)
        llama("spec_decode_num_accepted_tokens_total", "counter", "Speculative: Total draft tokens accepted by the target model", 0)
        llama("spec_decode_num_drafts_total", "counter", "Speculative: Total speculative decoding verification steps", 0)
        let window = counters.window
        llama("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s",
              window.prefillSeconds > 0 ? Double(window.promptTokens) / window.prefillSeconds : 0)
        llama("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s",
              window.decodeSeconds > 0 ? Double(window.completionTokens) / window.decodeSeconds : 0)
        llama("requests_processing", "gauge", "Number of requests processing", Double(activity?.activeGenerations ?? 0))
        llama("requests_deferred", "gauge", "Number of requests deferred", Double(activity?.waitingGenerations ?? 0))
        llama("n_busy_slots_per_decode", "gauge", "Average number of busy slots per forward pass",
              Double(activity?.batchedGenerations ?? 0) / Double(max(activity?.steps ?? 0, 1)))
        return lines.joined(separator: "\n") + "\n"
    }
}
