import TypesetGrammar
import TypesetTokenizer

/// How a model marks its reasoning in its text: `<think>` … `</think>` (Qwen 3 and 3.5,
/// SmolLM3, LFM2.5-Thinking), or Gemma 4's thought channel, `<|channel>thought` … `<channel|>`,
/// whose opening is followed by a label (`thought` and a newline) that is markup, not reasoning.
struct ThinkingSyntax: Sendable, Equatable {
    let opening: String
    let closing: String
    /// What follows the opening as part of the markup (Gemma 4: `thought`), then a newline;
    /// empty for none.
    let label: String

    static let tags = ThinkingSyntax(opening: "<think>", closing: "</think>", label: "")
    static let channel = ThinkingSyntax(opening: "<|channel>", closing: "<channel|>", label: "thought")
    /// In the order a vocabulary is searched for them.
    static let known: [ThinkingSyntax] = [.tags, .channel]

    /// How many characters at the start of `text`, the text after the opening so far, are the
    /// label's markup: the label and its newline, or the label alone where the closing follows
    /// it (in `text`, or right after it when `closed`); 0 when `text` does not start with it;
    /// `nil` while `text` may still become it.
    func labelLength(atStartOf text: String, closed: Bool = false) -> Int? {
        guard !label.isEmpty else { return 0 }
        let line = label + "\n", closedLabel = label + closing
        if text.hasPrefix(line) { return line.count }
        if text.hasPrefix(closedLabel) || closed && text == label { return label.count }
        if !closed, line.hasPrefix(text) || closedLabel.hasPrefix(text) { return nil }
        return 0
    }
}

/// The tokens a model that thinks marks its reasoning with (``ThinkingSyntax``: `<think>` and
/// `</think>`, or Gemma 4's `<|channel>` and `<channel|>`, each one token of its vocabulary), and
/// the tokens that may separate the reasoning from what follows it. Found once per model.
struct ThinkingMarkers: Sendable {
    /// `<think>` (`<|channel>`).
    let opening: Int
    /// `</think>` (`<channel|>`).
    let closing: Int
    /// The tokens of whitespace only (`\n`, `\n\n`, ` `): between `</think>` and a value.
    let separators: TokenBitmask
    /// The markers' texts.
    let syntax: ThinkingSyntax

    /// The markers of `vocabulary`: the first ``ThinkingSyntax/known`` syntax whose opening and
    /// closing are both tokens of their own; `nil` for none. O(vocabulary).
    init?(_ vocabulary: Vocabulary) {
        guard let (syntax, opening, closing) = ThinkingSyntax.known.lazy.compactMap({ syntax -> (ThinkingSyntax, Int, Int)? in
            guard let opening = vocabulary.tokens.firstIndex(of: syntax.opening),
                  let closing = vocabulary.tokens.firstIndex(of: syntax.closing) else { return nil }
            return (syntax, opening, closing)
        }).first else { return nil }
        self.syntax = syntax
        self.opening = opening
        self.closing = closing
        var separators = TokenBitmask(vocabularySize: vocabulary.count)
        for token in 0 ..< vocabulary.count where !vocabulary.isEndOfGeneration(token) {
            let bytes = vocabulary.bytes(of: token)
            if !bytes.isEmpty, bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }) { separators[token] = true }
        }
        self.separators = separators
    }
}

/// Whether a reply may start with reasoning, from its prompt and options.
enum ReplyThinking: Equatable {
    /// Thinking is off (`enableThinking` false and no block opened, the tags shown inline, or
    /// the template closed an empty `<think></think>` block in the prompt).
    case off
    /// The reply may open a `<think>` block.
    case possible
    /// The template opened the block: the reply starts inside it.
    case opened

    /// A template that opened the block starts the reply inside it whatever `enableThinking`
    /// says (some templates always open it): a budget of 0 then closes it at once. Gemma 4's
    /// template writes an empty thought channel when thinking is off.
    init(promptText: String, options: GenerationOptions, syntax: ThinkingSyntax = .tags) {
        let end = promptText.trimmingWhitespace
        if options.inlineThinkingTags || end.hasSuffix(syntax.closing) {
            self = .off
        } else if end.hasSuffix(syntax.opening) || !syntax.label.isEmpty && end.hasSuffix(syntax.opening + syntax.label) {
            self = .opened
        } else {
            self = options.enableThinking == false ? .off : .possible
        }
    }
}

/// The constraint of a reply that may reason before its value: free text between the
/// thinking markers, a little whitespace, then what the value's constraint allows. The value's
/// grammar holds only the answer; reasoning is never parsed as the value, and a brace in it
/// opens nothing.
///
///     <think>  Let me look at the dates {…}  </think>  \n\n  {"date":"2026-12-07"}
///     opening  reasoning: any token but the    closing  sep.  value: the value's constraint
///              end of generation; past the
///              budget, only the closing
///
/// Where the template opened the reasoning in the prompt (`startsInReasoning`), the reply
/// starts inside it; otherwise its first token is either the opening or the value's first.
/// After the closing, up to two whitespace tokens come before the value (Qwen 3 writes
/// `</think>\n\n{`); the value's own jump-forward begins with its first token.
///
/// With a token budget (``GenerationOptions/closesWithinMaxTokens``) the reasoning counts as
/// part of the way to a complete reply: the closing, the value's shortest completion and a
/// reserve for the value (``valueReserve(tokens:)``) must fit in the tokens left, so the
/// reasoning ends in time for a value with room to say something, not only the shortest.
///
/// Rolls back token by token like any constraint (drafts, the grammar's rollback): each
/// accepted token's segment is kept, the value's own tokens rolled back in it.
struct ReasoningThenValue: TokenConstraint, Sendable {
    /// What an accepted token was.
    enum Segment: Sendable, Equatable {
        case opening, reasoning, closing, separator, value
    }

    let markers: ThinkingMarkers
    /// Reasoning tokens allowed before only the closing is (`nil`: no limit).
    let budget: Int?
    /// Tokens the reasoning leaves for the value beyond its shortest completion.
    let reserve: Int
    let vocabularySize: Int
    /// The value's constraint, after the value's tokens accepted so far.
    private(set) var value: any TokenConstraint & Sendable
    private let startsInReasoning: Bool
    private let endOfGeneration: [Int]
    /// Each accepted token's segment, in order.
    private var segments: [Segment] = []
    private var reasoningCount = 0, separatorCount = 0, valueCount = 0
    /// Where the closing is in `segments`, once accepted.
    private var closingIndex: Int?

    /// The most whitespace tokens between the closing and the value.
    static let maximumSeparators = 2

    /// What the reasoning of a reply of at most `tokens` tokens leaves for the value beyond
    /// its shortest completion: a quarter, at most 512 (a model that would reason to the last
    /// token otherwise leaves only room for `{"city":""}`).
    static func valueReserve(tokens: Int) -> Int { min(512, max(0, tokens) / 4) }

    init(
        value: any TokenConstraint & Sendable, markers: ThinkingMarkers, vocabulary: Vocabulary, startsInReasoning: Bool,
        budget: Int?, reserve: Int = 0
    ) {
        self.value = value
        self.markers = markers
        self.budget = budget
        self.reserve = max(0, reserve)
        self.vocabularySize = value.vocabularySize
        self.startsInReasoning = startsInReasoning
        endOfGeneration = vocabulary.endOfGenerationTokenIDs.filter { $0 < value.vocabularySize }
    }

    /// Where the reply is.
    enum Stage: Equatable {
        /// The first token: the opening or the value's.
        case start
        case reasoning
        /// After the closing, before the value's first token.
        case separator
        case value
    }

    var stage: Stage {
        if valueCount > 0 { return .value }
        if closingIndex != nil { return .separator }
        if startsInReasoning || segments.first == .opening { return .reasoning }
        return .start
    }

    /// The segment of the last accepted token (`nil` before the first).
    var lastSegment: Segment? { segments.last }

    /// Whether the budget is spent: only the closing may come.
    private var budgetIsSpent: Bool { budget.map { reasoningCount >= $0 } ?? false }

    func fillNextTokenMask(into mask: inout TokenBitmask) {
        switch stage {
        case .start:
            value.fillNextTokenMask(into: &mask)
            mask[markers.opening] = true
        case .reasoning:
            if budgetIsSpent {
                mask = TokenBitmask(vocabularySize: vocabularySize)
            } else {
                mask = TokenBitmask(vocabularySize: vocabularySize, allowingAll: true)
                mask[markers.opening] = false
                for token in endOfGeneration { mask[token] = false }
            }
            mask[markers.closing] = true
        case .separator:
            value.fillNextTokenMask(into: &mask)
            if separatorCount < Self.maximumSeparators { mask.formUnion(markers.separators) }
        case .value:
            value.fillNextTokenMask(into: &mask)
        }
    }

    mutating func accept(token: Int) -> Bool {
        guard (0 ..< vocabularySize).contains(token) else { return false }
        let segment: Segment
        switch stage {
        case .start where token == markers.opening:
            segment = .opening
        case .reasoning:
            if token == markers.closing {
                segment = .closing
                closingIndex = segments.count
            } else {
                guard !budgetIsSpent, token != markers.opening, !endOfGeneration.contains(token) else { return false }
                segment = .reasoning
                reasoningCount += 1
            }
        case .separator where separatorCount < Self.maximumSeparators && markers.separators[token]:
            segment = .separator
            separatorCount += 1
        case .start, .separator, .value:
            guard value.accept(token: token) else { return false }
            segment = .value
            valueCount += 1
        }
        segments.append(segment)
        return true
    }

    mutating func rollback(_ count: Int) {
        precondition(count <= acceptedTokenCount, "rolling back \(count) of \(acceptedTokenCount) tokens")
        var values = 0
        for _ in 0 ..< count {
            switch segments.removeLast() {
            case .value: values += 1
            case .reasoning: reasoningCount -= 1
            case .separator: separatorCount -= 1
            case .closing: closingIndex = nil
            case .opening: break
            }
        }
        if values > 0 {
            value.rollback(values)
            valueCount -= values
        }
    }

    /// The value's tokens come last: a rollback reaches the reasoning only when the value can
    /// roll back all of its tokens; otherwise it goes as far as the value can.
    var acceptedTokenCount: Int {
        value.acceptedTokenCount < valueCount ? value.acceptedTokenCount : segments.count
    }

    var canTerminate: Bool { stage != .reasoning && value.canTerminate }

    var acceptsMoreBytes: Bool { stage == .reasoning || value.acceptsMoreBytes }

    /// In the reasoning, the closing counts as one byte (it is one token, and a loop counts
    /// the bytes of a completion as at least its tokens: the count stays an upper bound of the
    /// tokens, which is what a budget needs, without taking eight tokens for one), and the
    /// reserve as its tokens.
    var shortestCompletionLength: Int {
        (stage == .reasoning ? 1 + reserve : 0) + value.shortestCompletionLength
    }

    /// The value's; none in the reasoning (its closing is a token, not text to encode).
    func shortestCompletion(maximumBytes: Int) -> [UInt8]? {
        stage == .reasoning ? nil : value.shortestCompletion(maximumBytes: maximumBytes)
    }

    /// Nothing is forced before the value's first token (the model writes its reasoning and
    /// chooses its separator); then the value's forced bytes.
    func forcedBytes(limit: Int) -> [UInt8] {
        stage == .value ? value.forcedBytes(limit: limit) : []
    }
}
