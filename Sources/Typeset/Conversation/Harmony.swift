import TypesetGrammar
import TypesetTokenizer

/// gpt-oss's Harmony format: a reply is a run of messages, each a header and a body,
///
///     <|channel|>analysis<|message|>Let me check the dates.<|end|>
///     <|start|>assistant<|channel|>final<|message|>{"date":"2026-12-07"}<|return|>
///
///     <|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
///
/// The `analysis` channel is reasoning, `final` the answer, `commentary` a preamble the user
/// sees or, with a recipient `to=functions.NAME`, a call whose body is the arguments' JSON.
/// `<|end|>` ends a message and another follows (`<|start|>assistant` and its header);
/// `<|return|>` ends the reply, `<|call|>` ends it with the call (both end generation). The
/// vocabulary renders the header markers as text (`Vocabulary` gives `<|channel|>`,
/// `<|message|>`, `<|start|>`, `<|constrain|>` and `<|end|>` their text, as llama.cpp does), so
/// free replies are read from their text (`HarmonyReader`), and replies held to a value or
/// arguments are generated under ``HarmonyThenValue``.
enum Harmony {
    static let start = "<|start|>"
    static let end = "<|end|>"
    static let message = "<|message|>"
    static let channel = "<|channel|>"
    static let constrain = "<|constrain|>"
    /// What a template's generation prompt ends with: the reply is Harmony messages.
    static let generationPrompt = "<|start|>assistant"
    /// The header that opens the answer (after a spent reasoning budget's `<|end|>`).
    static let finalHeader = "<|start|>assistant<|channel|>final<|message|>"
}

/// The Harmony marker tokens of a vocabulary that has them (gpt-oss's o200k_harmony).
struct HarmonyMarkers: Sendable {
    let start: Int
    let end: Int
    let message: Int
    let channel: Int
    /// `<|constrain|>`, which may announce a body's format (`<|constrain|>json`).
    let constrain: Int?

    /// Every marker token.
    let all: Set<Int>
    /// The tokens whose text starts with each byte (markers and the end of generation: none),
    /// so a header's mask looks at the few that can continue it, not the whole vocabulary.
    let tokensByFirstByte: [[Int32]]

    /// The markers of `vocabulary`, `nil` unless `<|start|>`, `<|end|>`, `<|message|>` and
    /// `<|channel|>` are tokens of it. O(vocabulary), once per model.
    init?(_ vocabulary: Vocabulary) {
        let wanted: Set<String> = [Harmony.start, Harmony.end, Harmony.message, Harmony.channel, Harmony.constrain]
        var found: [String: Int] = [:]
        for (id, text) in vocabulary.tokens.enumerated() where wanted.contains(text) && found[text] == nil { found[text] = id }
        guard let start = found[Harmony.start], let end = found[Harmony.end], let message = found[Harmony.message],
              let channel = found[Harmony.channel] else { return nil }
        (self.start, self.end, self.message, self.channel) = (start, end, message, channel)
        constrain = found[Harmony.constrain]
        all = Set(found.values)
        var byFirstByte = [[Int32]](repeating: [], count: 256)
        for token in 0 ..< vocabulary.count where !all.contains(token) && !vocabulary.isEndOfGeneration(token) {
            if let first = vocabulary.bytes(of: token).first { byFirstByte[Int(first)].append(Int32(token)) }
        }
        tokensByFirstByte = byFirstByte
    }
}

/// Reads a free Harmony reply's text as it streams (``ReplyTextRouter`` in Harmony mode):
/// analysis bodies are reasoning, final and commentary bodies content, a body addressed to
/// `functions.NAME` a call; headers, `<|end|>` and `<|start|>assistant` are nothing. Text
/// without any header (a model that ignores the format) is content.
struct HarmonyReader {
    enum Body: Equatable { case reasoning, content }
    private enum Mode: Equatable {
        case header
        case body(Body)
        /// After `<|end|>`: `<|start|>` and the role, up to the next header.
        case between
        case call
    }

    private var mode = Mode.header
    private var pending = ""

    var isReasoning: Bool { mode == .body(.reasoning) }
    var isInCall: Bool { mode == .call }

    /// What a header says: its channel, and its recipient (`to=…`) when it has one.
    static func parse(header: Substring) -> (channel: String, recipient: String?) {
        func word(after marker: String) -> String? {
            guard let range = header.range(of: marker) else { return nil }
            let rest = header[range.upperBound...]
            return String(rest.prefix { $0 != " " && $0 != "<" && $0 != "\n" })
        }
        return (word(after: Harmony.channel) ?? "", word(after: "to="))
    }

    mutating func read(_ text: String) -> [ReplyTextRouter.Piece] {
        guard mode != .call else { return [] }
        pending += text
        var pieces: [ReplyTextRouter.Piece] = []
        while true {
            switch mode {
            case .header:
                // A header is on its way while the text is one (or could still become one).
                let trimmed = pending.drop { $0 == " " || $0 == "\n" }
                let openings = [Harmony.channel, "to=", Harmony.start]
                guard openings.contains(where: { trimmed.hasPrefix($0) || $0.hasPrefix(trimmed) }), pending.utf8.count < 512 else {
                    mode = .body(.content)
                    continue
                }
                if let range = pending.range(of: Harmony.message) {
                    let (channel, recipient) = Self.parse(header: pending[..<range.lowerBound])
                    let rest = String(pending[range.upperBound...])
                    pending = ""
                    if let recipient, recipient.hasPrefix("functions.") {
                        mode = .call
                        pieces.append(.callStarted(markup: String(recipient.dropFirst("functions.".count)), remainder: rest))
                        return pieces
                    }
                    mode = .body(channel == "analysis" ? .reasoning : .content)
                    pending = rest
                    continue
                }
                return pieces
            case .body(let body):
                if let range = pending.range(of: Harmony.end) {
                    let text = String(pending[..<range.lowerBound])
                    if !text.isEmpty { pieces.append(body == .reasoning ? .reasoning(text) : .content(text)) }
                    pending = String(pending[range.upperBound...])
                    mode = .between
                    continue
                }
                let safe = ReplyTextRouter.safePrefixLength(of: pending, before: Harmony.end)
                if safe > 0 {
                    let text = String(pending.prefix(safe))
                    pieces.append(body == .reasoning ? .reasoning(text) : .content(text))
                    pending = String(pending.dropFirst(safe))
                }
                return pieces
            case .between:
                // `<|start|>assistant` then the next header, which begins at `<|channel|>` or ` to=`.
                let next = [pending.range(of: Harmony.channel), pending.range(of: " to=")].compactMap { $0?.lowerBound }.min()
                guard let next else { return pieces }
                pending = String(pending[next...])
                mode = .header
                continue
            case .call:
                return pieces
            }
        }
    }

    /// The text still held back: a body's last characters (a header left unfinished is
    /// content, as text without a header is).
    mutating func finish() -> [ReplyTextRouter.Piece] {
        defer { pending = "" }
        switch mode {
        case .body(.reasoning): return pending.isEmpty ? [] : [.reasoning(pending)]
        case .body(.content), .header: return pending.isEmpty ? [] : [.content(pending)]
        case .between, .call: return []
        }
    }

    /// After a call is taken as text (its arguments were not JSON): content again.
    mutating func resume() { mode = .body(.content) }
}

/// The constraint of a Harmony reply held to a value (a JSON Schema's, a typed `respond`'s or
/// a caller's constraint): any number of analysis messages, free text (the reasoning), then
/// the final message, whose body alone is held to the value's constraint:
///
///     <|channel|>analysis<|message|>  reasoning: any token but the end of generation  <|end|>
///     <|start|>assistant<|channel|>final[ <|constrain|>json]<|message|>  value
///
/// Headers are the model's own tokens, held to the header's text (each header token's bytes,
/// or the marker token, must continue one of the allowed headers). Past the reasoning budget
/// only `<|end|>` is allowed in an analysis body. Nothing is forced before the value's first
/// token; then the value's own jump-forward. Rolls back token by token like any constraint.
struct HarmonyThenValue: TokenConstraint, Sendable {
    /// What an accepted token was part of.
    enum Segment: Sendable, Equatable { case header, reasoning, end, value }

    /// A header's text as atoms: a byte (0…255) or a marker token (−1 − id).
    private typealias Atoms = [Int]

    /// A piece of a header: a marker token or text.
    private enum HeaderPart {
        case marker(Int)
        case text(String)

        static func atoms(_ parts: [HeaderPart]) -> Atoms {
            parts.flatMap { part -> Atoms in
                switch part {
                case .marker(let token): [-1 - token]
                case .text(let text): text.utf8.map(Int.init)
                }
            }
        }
    }

    let markers: HarmonyMarkers
    let vocabularySize: Int
    let budget: Int?
    let reserve: Int
    private(set) var value: any TokenConstraint & Sendable
    /// The tokens an analysis body refuses: the markers and the end of generation.
    private let refusedInAnalysis: [Int]
    /// Atoms of the shortest final header after an `<|end|>`.
    private let laterFinalLength: Int
    /// The bytes of every token (markers and the end of generation: none), for header masks.
    private let tokenBytes: @Sendable (Int) -> [UInt8]
    /// The headers a reply may start with, and those after `<|end|>`; each ends in an
    /// analysis body (`true`) or the value (`false`).
    private let firstHeaders: [(atoms: Atoms, analysis: Bool)]
    private let laterHeaders: [(atoms: Atoms, analysis: Bool)]

    private struct State: Sendable {
        var stage = Stage.header
        /// The atoms of the header so far.
        var header: Atoms = []
        var afterEnd = false
        var reasoningCount = 0
    }

    /// Where the reply is.
    enum Stage: Sendable, Equatable { case header, reasoning, value }

    private var state = State()
    /// The state before each accepted token, and that token's segment.
    private var history: [(state: State, segment: Segment)] = []
    private var valueCount = 0

    init(value: any TokenConstraint & Sendable, markers: HarmonyMarkers, vocabulary: Vocabulary, budget: Int?, reserve: Int = 0) {
        self.value = value
        self.markers = markers
        self.vocabularySize = value.vocabularySize
        self.budget = budget
        self.reserve = max(0, reserve)
        let special = markers.all.union(vocabulary.endOfGenerationTokenIDs)
        refusedInAnalysis = special.filter { $0 < value.vocabularySize }
        tokenBytes = { special.contains($0) ? [] : vocabulary.bytes(of: $0) }
        var headers: [(atoms: Atoms, analysis: Bool)] = [
            (HeaderPart.atoms([.marker(markers.channel), .text("analysis"), .marker(markers.message)]), true),
            (HeaderPart.atoms([.marker(markers.channel), .text("final"), .marker(markers.message)]), false),
        ]
        if let constrain = markers.constrain {
            headers.append((HeaderPart.atoms([.marker(markers.channel), .text("final "), .marker(constrain), .text("json"),
                                              .marker(markers.message)]), false))
        }
        firstHeaders = headers
        let restart = HeaderPart.atoms([.marker(markers.start), .text("assistant")])
        laterHeaders = headers.map { (restart + $0.atoms, $0.analysis) }
        laterFinalLength = laterHeaders.filter { !$0.analysis }.map(\.atoms.count).min() ?? 0
    }

    var stage: Stage { state.stage }

    /// The segment of the last accepted token (`nil` before the first).
    var lastSegment: Segment? { history.last?.segment }

    /// The atoms `token` adds to a header: its marker, or its bytes (none for other special tokens).
    private func atoms(of token: Int) -> Atoms {
        if markers.all.contains(token) { return [-1 - token] }
        return tokenBytes(token).map(Int.init)
    }

    /// Whether `atoms` after the header so far continue an allowed header; and when they
    /// complete one, whether it opens an analysis body.
    private func headerMatch(_ atoms: Atoms) -> (continues: Bool, completes: Bool?) {
        guard !atoms.isEmpty else { return (false, nil) }
        let candidate = state.header + atoms
        var continues = false, completes: Bool?
        // With the budget spent, only the final message's headers.
        for (header, analysis) in state.afterEnd ? laterHeaders : firstHeaders
        where header.starts(with: candidate) && !(analysis && budgetIsSpent) {
            continues = true
            if header.count == candidate.count { completes = analysis }
        }
        return (continues, completes)
    }

    private var budgetIsSpent: Bool { budget.map { state.reasoningCount >= $0 } ?? false }

    func fillNextTokenMask(into mask: inout TokenBitmask) {
        switch state.stage {
        case .header:
            // The next atom of each header still possible: a marker, or the first byte of the
            // tokens to look at.
            mask = TokenBitmask(vocabularySize: vocabularySize)
            var firstBytes = Set<Int>()
            for (header, analysis) in state.afterEnd ? laterHeaders : firstHeaders
            where header.count > state.header.count && header.starts(with: state.header) && !(analysis && budgetIsSpent) {
                let atom = header[state.header.count]
                if atom < 0 { mask[-1 - atom] = true } else { firstBytes.insert(atom) }
            }
            for byte in firstBytes {
                for token in markers.tokensByFirstByte[byte] where Int(token) < vocabularySize && headerMatch(atoms(of: Int(token))).continues {
                    mask[Int(token)] = true
                }
            }
        case .reasoning:
            if budgetIsSpent {
                mask = TokenBitmask(vocabularySize: vocabularySize)
            } else {
                mask = TokenBitmask(vocabularySize: vocabularySize, allowingAll: true)
                for token in refusedInAnalysis { mask[token] = false }
            }
            mask[markers.end] = true
        case .value:
            value.fillNextTokenMask(into: &mask)
        }
    }

    mutating func accept(token: Int) -> Bool {
        guard (0 ..< vocabularySize).contains(token) else { return false }
        let before = state
        let segment: Segment
        switch state.stage {
        case .header:
            let atoms = atoms(of: token)
            let (continues, completes) = headerMatch(atoms)
            guard continues else { return false }
            segment = .header
            if let analysis = completes {
                state.header = []
                state.stage = analysis ? .reasoning : .value
            } else {
                state.header += atoms
            }
        case .reasoning:
            if token == markers.end {
                segment = .end
                state.stage = .header
                state.afterEnd = true
            } else {
                guard !budgetIsSpent, !refusedInAnalysis.contains(token) else { return false }
                segment = .reasoning
                state.reasoningCount += 1
            }
        case .value:
            guard value.accept(token: token) else { return false }
            segment = .value
            valueCount += 1
        }
        history.append((before, segment))
        return true
    }

    mutating func rollback(_ count: Int) {
        precondition(count <= acceptedTokenCount, "rolling back \(count) of \(acceptedTokenCount) tokens")
        guard count > 0 else { return }
        let kept = history.count - count
        let values = history[kept...].filter { $0.segment == .value }.count
        state = history[kept].state
        history.removeLast(count)
        if values > 0 {
            value.rollback(values)
            valueCount -= values
        }
    }

    /// As ``ReasoningThenValue/acceptedTokenCount``: the value's tokens come last.
    var acceptedTokenCount: Int {
        value.acceptedTokenCount < valueCount ? value.acceptedTokenCount : history.count
    }

    var canTerminate: Bool { state.stage == .value && value.canTerminate }

    var acceptsMoreBytes: Bool { state.stage != .value || value.acceptsMoreBytes }

    /// Before the value, counting each atom as at most a token: in a header, the fewest atoms
    /// left among the headers it can still become — for an analysis header, its body's `<|end|>`,
    /// the final message's header after it and the reserve besides; in an analysis body, its
    /// `<|end|>`, that header and the reserve. Then the value's.
    var shortestCompletionLength: Int {
        let laterFinal = laterFinalLength
        switch state.stage {
        case .value:
            return value.shortestCompletionLength
        case .header:
            let rest = (state.afterEnd ? laterHeaders : firstHeaders)
                .filter { $0.atoms.count > state.header.count && $0.atoms.starts(with: state.header) && !($0.analysis && budgetIsSpent) }
                .map { $0.atoms.count - state.header.count + ($0.analysis ? 1 + laterFinal + reserve : 0) }
                .min() ?? 1
            return rest + value.shortestCompletionLength
        case .reasoning:
            return 1 + laterFinal + reserve + value.shortestCompletionLength
        }
    }

    func shortestCompletion(maximumBytes: Int) -> [UInt8]? {
        state.stage == .value ? value.shortestCompletion(maximumBytes: maximumBytes) : nil
    }

    func forcedBytes(limit: Int) -> [UInt8] {
        state.stage == .value ? value.forcedBytes(limit: limit) : []
    }
}
