import TypesetTokenizer

/// The DRY ("don't repeat yourself") penalty: it lowers the logit of every token that would
/// extend a sequence already present in the context, by an amount that grows exponentially
/// with the length of the repeat.
///
/// For a candidate token `t`, the repeat length is the longest `n` such that the last `n`
/// tokens of the context also occur earlier, immediately followed by `t`. When `n` is at
/// least `allowedLength`, `t`'s logit drops by `multiplier × base^(n − allowedLength)`.
/// Matching never crosses a *sequence breaker*, a token whose text contains one of
/// `sequenceBreakers` (by default a newline, `:`, `"` and `*`), so the repeated scaffolding of
/// JSON (`","`, `":"`) and of chat markup is not penalized while a copied phrase is
/// (``json`` keeps `"` out, so that a repeat spans a JSON array's items).
///
/// Small models asked for a typed value tend to copy the schema's descriptions (which the
/// prompt shows them) into string values, and to loop on a sentence until the token budget
/// runs out; this is the cure llama.cpp and others ship for both. The penalty only shifts
/// logits: a token a grammar forces (every other one masked) is still chosen.
///
/// Cost per sampled token: O(W × L) comparisons for a window of `W` tokens and repeats of
/// length `L` (capped at `maximumMatchLength`).
public struct DRYPenalty: Sendable, Equatable {
    /// The penalty for a repeat of exactly `allowedLength` tokens; 0 turns DRY off.
    public var multiplier: Float
    /// How fast the penalty grows with each further repeated token (> 1).
    public var base: Float
    /// The longest repeat that goes unpenalized is `allowedLength − 1` tokens.
    public var allowedLength: Int
    /// How many of the latest tokens (prompt included) are searched for repeats; `nil`: all.
    public var window: Int?
    /// Whether the prompt is searched for repeats too (llama.cpp's DRY searches the whole
    /// context) or only the reply so far (``json``: a value restates what the prompt says, by
    /// design, so only a reply repeating itself is looping).
    public var searchesPrompt: Bool
    /// Texts that end a sequence: a token containing one of them is never part of a repeat.
    public var sequenceBreakers: [String]

    /// Repeats longer than this count as this long (keeps the penalty finite).
    package static let maximumMatchLength = 48

    public init(
        multiplier: Float = 0.8, base: Float = 1.75, allowedLength: Int = 2, window: Int? = nil,
        searchesPrompt: Bool = true, sequenceBreakers: [String] = ["\n", ":", "\"", "*"]
    ) {
        self.multiplier = multiplier
        self.base = base
        self.allowedLength = allowedLength
        self.window = window
        self.searchesPrompt = searchesPrompt
        self.sequenceBreakers = sequenceBreakers
    }

    /// llama.cpp's suggested setting (multiplier 0.8, base 1.75, allowed length 2, the whole
    /// context, breakers newline, `:`, `"` and `*`).
    public static let standard = DRYPenalty()

    /// The setting for JSON values (typed replies, tool arguments, any reply held to a
    /// schema): ``standard`` searching the reply only, without `"` among the breakers.
    ///
    /// - The reply only: a value is mostly what the prompt states (a name, a date, a phrase
    ///   to extract), and penalizing those copies cost small models a tenth of the fields they
    ///   got right (`Benchmarks/value_quality.py`); the loops DRY is for repeat the reply's
    ///   own text (`"…br.br.br.br"`, one plot point again and again).
    /// - Without `"`: the quotes delimit every string, so with `"` a breaker a repeat could
    ///   never span two items of an array, and a model looping on one item (`"She leaves the
    ///   village.", "She leaves the village.", …`) would meet the penalty only a few tokens
    ///   into each copy. `:` still breaks the keys' scaffolding (`","key":"`), which the
    ///   grammar forces anyway.
    public static let json = DRYPenalty(searchesPrompt: false, sequenceBreakers: standard.sequenceBreakers.filter { $0 != "\"" })

    /// No penalty (a multiplier of 0): what a caller sets to keep a default DRY off.
    public static let off = DRYPenalty(multiplier: 0)

    /// The amount to subtract from each token's logit after `history`, as `(token, amount)`
    /// pairs (a token appears once, with its longest repeat). `replyStart` is where the reply
    /// begins in `history` (the prompt before it is searched only when ``searchesPrompt``);
    /// `isBreaker` says whether a token is a sequence breaker.
    ///
    /// Scans `history` backwards from each earlier occurrence of the latest token's
    /// predecessor chain: O(window × repeat length).
    package func penalties(after history: [Int], replyStart: Int = 0, isBreaker: (Int) -> Bool) -> [Int: Float] {
        guard multiplier > 0, allowedLength >= 1, let last = history.last, !isBreaker(last) else { return [:] }
        let end = history.count
        let start = max(window.map { max(0, end - $0) } ?? 0, searchesPrompt ? 0 : min(max(0, replyStart), end))
        var longest: [Int: Int] = [:]
        // Position `next` holds a candidate: the token that followed an earlier copy of the tail.
        for next in Swift.stride(from: end - 1, to: start, by: -1) {
            guard history[next - 1] == last else { continue }
            let candidate = history[next]
            guard !isBreaker(candidate) else { continue }
            var length = 0
            while length < Self.maximumMatchLength, next - 1 - length >= start {
                let earlier = history[next - 1 - length], latest = history[end - 1 - length]
                guard earlier == latest, !isBreaker(latest) else { break }
                length += 1
            }
            if length > longest[candidate] ?? 0 { longest[candidate] = length }
        }
        var result: [Int: Float] = [:]
        for (token, length) in longest where length >= allowedLength {
            result[token] = multiplier * _power(base, length - allowedLength)
        }
        return result
    }

    /// The tokens of `vocabulary` whose bytes contain one of `sequenceBreakers`, as a bitmap
    /// indexed by token id. O(vocabulary bytes × breakers).
    package func breakerTokens(in vocabulary: Vocabulary) -> [Bool] {
        let breakers = sequenceBreakers.map { Array($0.utf8) }.filter { !$0.isEmpty }
        return (0 ..< vocabulary.count).map { id in
            let bytes = vocabulary.bytes(of: id)
            return breakers.contains { breaker in
                bytes.count >= breaker.count
                    && (0 ... bytes.count - breaker.count).contains { bytes[$0 ..< $0 + breaker.count].elementsEqual(breaker) }
            }
        }
    }
}

/// `base` to the power `exponent` (≥ 0) by repeated multiplication: exact for the small
/// exponents DRY uses, with no libm call.
private func _power(_ base: Float, _ exponent: Int) -> Float {
    var result: Float = 1
    for _ in 0 ..< exponent { result *= base }
    return result
}
