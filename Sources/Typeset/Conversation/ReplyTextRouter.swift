/// Sorts a reply's text, as it streams in, into reasoning, visible content and the start of a
/// function call, holding back only the few characters that might still turn out to be markup.
///
///     "<think>plan</think>Sure. <tool_call>{…"
///      └ reasoning ┘        └content┘ └ call: the router stops here and reports the bytes after
///                                       the marker, which belong to the call's JSON
///
/// Markup it knows: `<think>` … `</think>` at the very start of the reply (when thinking is
/// possible; or the model's other ``ThinkingSyntax``, Gemma 4's `<|channel>thought` …
/// `<channel|>`, its label dropped), and the call marker of the function-call format (`<tool_call>` for Hermes,
/// `<|tool_call_start|>` for LFM; for plain JSON, a reply whose first non-space character is `{`). Hermes replies may also be a
/// bare call: small Qwen models often write `{"name": …, "arguments": …}` without the markup,
/// so a Hermes reply that opens with `{"name"` (possibly in a code fence) starts an unmarked
/// call, which ends the reply as a plain-JSON call does (any other JSON stays text).
struct ReplyTextRouter {
    enum Piece: Equatable {
        case reasoning(String)
        case content(String)
        /// A function call starts: `markup` is the text taken as its opening (`<tool_call>`,
        /// a code fence, nothing for a bare object), `remainder` the text after it (the JSON's
        /// beginning, possibly empty). The router passes nothing more until `resume()`.
        case callStarted(markup: String, remainder: String)
    }

    private enum Mode { case start, reasoning, content, call }

    private let thinking: ThinkingSyntax
    /// After the opening, whether its label (Gemma 4's `thought`) may still come.
    private var awaitsLabel = false
    private var mode: Mode
    private var pending = ""
    private let callFormat: FunctionCallFormat?
    /// Whether content has been emitted (a plain-JSON call must be the whole reply).
    private var sawContent = false
    /// A Harmony reply's reader (gpt-oss), which routes instead of the rest.
    private var harmony: HarmonyReader?
    /// After `</think>`, leading newlines of the content are dropped.
    private var trimLeadingContent = false

    /// - Parameters:
    ///   - detectsThinking: whether a leading `<think>` block is reasoning.
    ///   - startsInReasoning: whether the text starts inside such a block (its `<think>` was
    ///     the prompt's), with `detectsThinking`.
    ///   - callFormat: the format whose calls to detect, `nil` when no functions are registered.
    ///   - harmony: whether the reply is Harmony messages (``HarmonyReader``): their
    ///     channels say what is reasoning, content and a call.
    init(
        detectsThinking: Bool, startsInReasoning: Bool = false, thinking: ThinkingSyntax = .tags, callFormat: FunctionCallFormat?,
        harmony: Bool = false
    ) {
        mode = detectsThinking ? (startsInReasoning ? .reasoning : .start) : .content
        self.thinking = thinking
        awaitsLabel = detectsThinking && startsInReasoning && !thinking.label.isEmpty
        self.callFormat = callFormat
        if harmony { self.harmony = HarmonyReader() }
    }

    var isInCall: Bool { harmony?.isInCall ?? (mode == .call) }

    /// Whether the text so far is inside a `<think>` block (a Harmony analysis message).
    var isReasoning: Bool { harmony?.isReasoning ?? (mode == .reasoning) }

    /// Routes newly generated `text`.
    mutating func route(_ text: String) -> [Piece] {
        if harmony != nil { return harmony!.read(text) }
        guard mode != .call else { return [] }
        pending += text
        var pieces: [Piece] = []
        while true {
            switch mode {
            case .start:
                let trimmed = pending.drop { $0 == " " || $0 == "\n" }
                if trimmed.hasPrefix(thinking.opening) {
                    pending = String(trimmed.dropFirst(thinking.opening.count))
                    mode = .reasoning
                    awaitsLabel = !thinking.label.isEmpty
                    continue
                }
                if thinking.opening.hasPrefix(trimmed) { return pieces }   // maybe still coming
                mode = .content
                continue
            case .reasoning:
                if awaitsLabel {
                    // The label, once enough has come to tell.
                    guard let markup = thinking.labelLength(atStartOf: pending) else { return pieces }
                    pending = String(pending.dropFirst(markup))
                    awaitsLabel = false
                }
                if let range = pending.range(of: thinking.closing) {
                    let thought = String(pending[..<range.lowerBound])
                    if !thought.isEmpty { pieces.append(.reasoning(thought)) }
                    pending = String(pending[range.upperBound...])
                    mode = .content
                    trimLeadingContent = true
                    continue
                }
                let safe = Self.safePrefixLength(of: pending, before: thinking.closing)
                if safe > 0 {
                    pieces.append(.reasoning(String(pending.prefix(safe))))
                    pending = String(pending.dropFirst(safe))
                }
                return pieces
            case .content:
                if trimLeadingContent {
                    pending = String(pending.drop { $0 == "\n" || $0 == " " })
                    if pending.isEmpty { return pieces }
                    trimLeadingContent = false
                }
                if let callFormat, !sawContent, callFormat != .lfm {
                    // A bare call: the plain JSON format's only kind, and Hermes's unmarked one.
                    let trimmed = pending.drop { $0 == " " || $0 == "\n" || $0 == "\t" }
                    switch callFormat == .json ? Self.jsonCallStart(trimmed) : Self.bareCallStart(trimmed) {
                    case .undecided: return pieces
                    case .call(let offset):
                        pieces.append(.callStarted(markup: String(trimmed.prefix(offset)), remainder: String(trimmed.dropFirst(offset))))
                        pending = ""
                        mode = .call
                        return pieces
                    case .text: break
                    }
                }
                guard let marker = callFormat?.opening else {
                    if !pending.isEmpty { pieces.append(.content(pending)); sawContent = true }
                    pending = ""
                    return pieces
                }
                if let range = pending.range(of: marker) {
                    let before = String(pending[..<range.lowerBound])
                    if !before.isEmpty { pieces.append(.content(before)); sawContent = true }
                    pieces.append(.callStarted(markup: marker, remainder: String(pending[range.upperBound...])))
                    pending = ""
                    mode = .call
                    return pieces
                }
                let safe = Self.safePrefixLength(of: pending, before: marker)
                if safe > 0 {
                    pieces.append(.content(String(pending.prefix(safe))))
                    pending = String(pending.dropFirst(safe))
                    sawContent = true
                }
                return pieces
            case .call:
                return pieces
            }
        }
    }

    enum BareCallStart: Equatable {
        case undecided
        /// A call whose JSON object starts `offset` characters in.
        case call(offset: Int)
        case text
    }

    /// Whether a reply's start (leading spaces removed) is a plain-JSON call: any object.
    static func jsonCallStart(_ text: Substring) -> BareCallStart {
        guard let first = text.first else { return .undecided }
        return first == "{" ? .call(offset: 0) : .text
    }

    /// Whether a reply's start (leading spaces removed) opens a bare Hermes call: `{`, optional
    /// spaces, `"name"`. Two variants small Qwen models write are accepted too: the object in a
    /// Markdown code fence (```` ```json ````, as Qwen2.5-Coder-1.5B often answers), and a
    /// doubled opening brace, as in a Python format string (`{{"name": …`); the call's JSON then
    /// starts after the fence, or at the second brace.
    static func bareCallStart(_ text: Substring) -> BareCallStart {
        var offset = 0
        var rest = text
        for fence in ["```json", "```"] {
            if fence.hasPrefix(rest) && rest.count < fence.count { return .undecided }
            if rest.hasPrefix(fence) {
                let afterFence = rest.dropFirst(fence.count)
                let body = afterFence.drop { $0 == " " || $0 == "\n" || $0 == "\t" }
                if body.isEmpty { return .undecided }
                offset += rest.count - body.count
                rest = body
                break
            }
        }
        guard let first = rest.first else { return .undecided }
        guard first == "{" else { return .text }
        if rest.count == 1 { return .undecided }
        if rest.dropFirst().first == "{" {
            offset += 1
            rest = rest.dropFirst()
        }
        let key = rest.dropFirst().drop { $0 == " " || $0 == "\n" || $0 == "\t" }
        let name = "\"name\""
        if key.count < name.count { return name.hasPrefix(key) ? .undecided : .text }
        return key.hasPrefix(name) ? .call(offset: offset) : .text
    }

    /// A call starts without its marker having been routed (a required call).
    mutating func startCall() {
        mode = .call
        pending = ""
    }

    /// After a call's JSON is complete (and its closing markup generated): back to content.
    mutating func resume() {
        harmony?.resume()
        mode = .content
        trimLeadingContent = true
        pending = ""
    }

    /// The end of the reply: whatever was held back, as the kind of text it was.
    mutating func finish() -> [Piece] {
        if harmony != nil { return harmony!.finish() }
        defer { pending = "" }
        guard !pending.isEmpty else { return [] }
        switch mode {
        case .reasoning: return [.reasoning(pending)]
        case .start, .content: return trimLeadingContent ? [] : [.content(pending)]
        case .call: return []
        }
    }

    /// How many leading characters of `text` cannot be the start of `marker`: everything but the
    /// longest suffix of `text` that is a prefix of `marker`.
    static func safePrefixLength(of text: String, before marker: String) -> Int {
        let count = text.count
        var keep = min(count, marker.count - 1)
        while keep > 0 {
            if marker.hasPrefix(text.suffix(keep)) { break }
            keep -= 1
        }
        return count - keep
    }
}
