import Foundation
import GGUF
import Kernels
import Models
import Synchronization
import TypesetGrammar
import TypesetTokenizer

/// A smaller model of the target's vocabulary whose greedy continuations are drafted for the
/// target to verify (speculative decoding with a draft model): Qwen2.5-Coder-0.5B for the 1.5B.
///
/// A draft costs one pass of the draft model per drafted token, then one row more in the
/// target's next pass; each drafted token the target's step chooses saves a pass of the target.
/// The reply is the one decoding without drafts gives, token for token, greedy or sampled
/// (``TokenLoop`` verifies every draft by running the step on the target's own logits); the
/// draft model decides only how many passes it takes.
///
/// Each generation drafts with a ``ModelDrafter``, which holds a KV cache of the draft model
/// for its sequence; finished generations give their caches back, and the next one takes the
/// cache sharing the longest prefix with its prompt (a conversation's next turn, a server's
/// next request with the same system prompt), so the draft model recomputes only what follows.
///
/// Checked at load against the target: the same tokens (text and kind) for every id both
/// vocabularies hold, the same special tokens, sizes within 128 padding entries, and weights
/// no larger than the target's (``DraftModelError``).
package final class DraftModel: Sendable {
    package let model: TransformerModel
    /// Positions of each generation's draft cache: the target's context, at most the draft's
    /// training context.
    package let contextLength: Int
    /// Threads for the draft model's products.
    package let threadCount: Int
    /// Ids the draft may propose: those both vocabularies hold.
    let sharedVocabularyCount: Int
    /// The most tokens one draft holds.
    package let maximumDraftLength: Int
    /// A draft ends before a token the draft model gives a probability below this: a guess
    /// the target would likely refuse costs a draft pass and a verified row for little.
    /// (0.7 measured best of 0.3 … 0.85 on prose and code with Qwen2.5-Coder 0.5B for 1.5B.)
    package let minimumProbability: Float
    /// Caches of finished generations, for the next ones.
    private let idleCaches = Mutex(IdleCaches())
    /// A cache is either here or held by one drafter, never both: handing it over under the
    /// lock is what makes sharing the list sound.
    private struct IdleCaches: @unchecked Sendable {
        var caches: [KVCache] = []
    }
    /// The most idle caches kept (their pages are committed as they are used, not at once).
    static let maximumIdleCaches = 8

    /// The difference in vocabulary size tolerated (the padding entries some families add to
    /// their embedding matrices), as llama.cpp tolerates it.
    static let vocabularySizeTolerance = 128

    /// A draft model for the target `targetModel` of vocabulary `targetVocabulary`, drafting
    /// among the first `draftedVocabularyCount` tokens (rounded down to 16): its pass then
    /// reads that part of its output matrix only (``TransformerModel/limitingLogits(to:)``) —
    /// for Qwen2.5-Coder-0.5B a third of what a pass reads, while the target's tokens in a
    /// reply are nearly all among the first 32,768 of its BPE's (frequency-ranked) ids; its
    /// drafts got 20 % faster at the same acceptance.
    ///
    /// - Throws: ``DraftModelError`` when the vocabularies differ or the draft is the larger.
    package init(
        model: TransformerModel, vocabulary: Vocabulary, targetModel: TransformerModel, targetVocabulary: Vocabulary,
        contextLength: Int, threadCount: Int, maximumDraftLength: Int = 8, minimumProbability: Float = 0.7,
        draftedVocabularyCount: Int = 32768
    ) throws(DraftModelError) {
        try Self.check(vocabulary, against: targetVocabulary)
        let draftBytes = Self.weightByteCount(of: model), targetBytes = Self.weightByteCount(of: targetModel)
        guard draftBytes <= targetBytes else { throw .largerThanTarget(draftBytes: draftBytes, targetBytes: targetBytes) }
        let limit = min(draftedVocabularyCount, model.logitsPerRow) / 16 * 16
        self.model = model.limitingLogits(to: limit) ?? model
        self.contextLength = max(1, min(contextLength, model.configuration.trainedContextLength))
        self.threadCount = max(1, threadCount)
        self.sharedVocabularyCount = min(vocabulary.count, targetVocabulary.count, model.configuration.vocabularySize,
                                         targetModel.configuration.vocabularySize)
        self.maximumDraftLength = max(1, maximumDraftLength)
        self.minimumProbability = minimumProbability
    }

    /// Loads the draft model at `path` for a target.
    ///
    /// - Throws: ``DraftModelError/loadFailed(path:reason:)`` when the file cannot be read or
    ///   run (it does not exist, an unsupported architecture…), else ``init(model:vocabulary:targetModel:targetVocabulary:contextLength:threadCount:maximumDraftLength:minimumProbability:draftedVocabularyCount:)``'s errors.
    package convenience init(
        path: String, targetModel: TransformerModel, targetVocabulary: Vocabulary, contextLength: Int, threadCount: Int
    ) throws(DraftModelError) {
        let model: TransformerModel, vocabulary: Vocabulary
        do {
            let file = try GGUFFile(contentsOf: path)
            model = try TransformerModel(file: file)
            vocabulary = try Vocabulary(metadata: file.metadata)
        } catch let error as CustomStringConvertible {
            throw .loadFailed(path: path, reason: error.description)
        } catch {
            throw .loadFailed(path: path, reason: "\(error)")
        }
        try self.init(model: model, vocabulary: vocabulary, targetModel: targetModel, targetVocabulary: targetVocabulary,
                      contextLength: contextLength, threadCount: threadCount)
    }

    /// Bytes of the weights a pass reads: every tensor of the file.
    static func weightByteCount(of model: TransformerModel) -> Int {
        model.file.tensors.reduce(0) { $0 + $1.info.byteCount }
    }

    /// Bytes of the draft's weights, as mapped.
    package var weightByteCount: Int { Self.weightByteCount(of: model) }

    /// Whether `draft` can stand for `target`: the same text and kind for every id both hold,
    /// the same beginning, end and end-of-generation tokens.
    static func check(_ draft: Vocabulary, against target: Vocabulary) throws(DraftModelError) {
        guard abs(draft.count - target.count) <= vocabularySizeTolerance else {
            throw .vocabularySize(draft: draft.count, target: target.count)
        }
        for id in 0 ..< min(draft.count, target.count) where draft.tokens[id] != target.tokens[id] || draft.types[id] != target.types[id] {
            throw .tokenMismatch(id: id, draft: draft.tokens[id], target: target.tokens[id])
        }
        let special: [(String, Int?, Int?)] = [
            ("beginning-of-sequence", draft.bosTokenID, target.bosTokenID), ("end-of-sequence", draft.eosTokenID, target.eosTokenID),
            ("end-of-turn", draft.eotTokenID, target.eotTokenID),
        ]
        for (name, draftID, targetID) in special where draftID != targetID {
            throw .specialTokenMismatch(name, draft: draftID, target: targetID)
        }
    }

    /// A cache for a generation whose tokens start with `prefix`: the idle one holding the
    /// longest part of it, else a new one.
    func takeCache(for prefix: [Int]) -> KVCache {
        let reused = idleCaches.withLock { idle -> IdleCaches in
            guard !idle.caches.isEmpty else { return IdleCaches() }
            let shared = idle.caches.map { $0.reusablePrefixLength(for: prefix) }
            return IdleCaches(caches: [idle.caches.remove(at: shared.indices.max { shared[$0] < shared[$1] }!)])
        }
        return reused.caches.first ?? model.makeCache(contextLength: contextLength)
    }

    /// Gives a generation's cache back for later ones (the oldest idle one goes past the bound).
    func recycle(_ cache: KVCache) {
        let returned = IdleCaches(caches: [cache])
        idleCaches.withLock { idle in
            idle.caches += returned.caches
            if idle.caches.count > Self.maximumIdleCaches { idle.caches.removeFirst() }
        }
    }

    /// Bytes the idle caches have committed.
    package var idleCacheByteCount: Int { idleCaches.withLock { $0.caches.reduce(0) { $0 + $1.committedByteCount } } }
}

/// Why a draft model cannot draft for a target.
package enum DraftModelError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be read or run.
    case loadFailed(path: String, reason: String)
    /// The vocabularies' sizes differ by more than padding.
    case vocabularySize(draft: Int, target: Int)
    /// Token `id` is another token in each vocabulary.
    case tokenMismatch(id: Int, draft: String, target: String)
    /// A special token (named) has another id in each.
    case specialTokenMismatch(String, draft: Int?, target: Int?)
    /// The draft reads more bytes of weights per pass than the target: it would slow decoding.
    case largerThanTarget(draftBytes: Int, targetBytes: Int)

    package var description: String {
        func id(_ value: Int?) -> String { value.map(String.init) ?? "none" }
        func mebibytes(_ bytes: Int) -> String { String(format: "%.0f MiB", Double(bytes) / 1_048_576) }
        return switch self {
        case let .loadFailed(path, reason): "cannot load the draft model '\(path)': \(reason)"
        case let .vocabularySize(draft, target):
            "the draft model's vocabulary has \(draft) tokens and the model's \(target): a draft model must share the model's vocabulary"
        case let .tokenMismatch(id, draft, target):
            "token \(id) is \(draft.debugDescription) in the draft model's vocabulary but \(target.debugDescription) in the model's: a draft model must share the model's vocabulary"
        case let .specialTokenMismatch(name, draft, target):
            "the \(name) token is \(id(draft)) in the draft model and \(id(target)) in the model: a draft model must share the model's vocabulary"
        case let .largerThanTarget(draftBytes, targetBytes):
            "the draft model's weights (\(mebibytes(draftBytes))) are larger than the model's (\(mebibytes(targetBytes))): a draft must be cheaper to run than the model it drafts for"
        }
    }
}

/// One generation's drafts from a ``DraftModel``: its own KV cache of the draft model (taken
/// from the draft model's idle ones on the first draft, given back by ``release()``), brought
/// up to the history before each draft — usually the one or two tokens chosen since the last
/// — then extended greedily, a pass per drafted token.
final class ModelDrafter {
    let draftModel: DraftModel
    private var sequence: ModelSequence?
    private var logits: [Float] = []
    /// The constraint's mask at each drafted position, when drafting under one.
    private var mask: TokenBitmask?
    private var backoff = DraftBackoff()
    /// Draft passes run (each drafted token's, and those that ended a draft early).
    private(set) var passes = 0

    init(_ draftModel: DraftModel) {
        self.draftModel = draftModel
    }

    /// The draft model's greedy continuation of `history`: at most `limit` and the draft
    /// model's `maximumDraftLength` tokens, ending before the first it gives a probability
    /// below `minimumProbability` or that does not fit its context. Empty when `limit` is 0,
    /// while drafting is paused (``record(drafted:kept:)``), and when the draft's cache is
    /// more than twice `remaining` (the tokens the generation may still append) behind the
    /// history: computing them would cost more than drafting could save (a reply nearly done
    /// when it finds itself alone in a batch, a long prompt for a short reply).
    func draft(after history: [Int], limit: Int, remaining: Int) -> [Int] {
        draft(after: history, limit: limit, remaining: remaining, restrict: { _ in }, accept: { _ in true })
    }

    /// The same, each token chosen among those `constraint` allows after the ones before it
    /// (its probability then among them: a token the grammar forces is certain), which is left
    /// as it was.
    func draft(after history: [Int], limit: Int, remaining: Int, constraint: inout any TokenConstraint) -> [Int] {
        if mask?.vocabularySize != constraint.vocabularySize { mask = TokenBitmask(vocabularySize: constraint.vocabularySize) }
        var accepted = 0
        defer { constraint.rollback(accepted) }
        return draft(after: history, limit: limit, remaining: remaining, restrict: { logits in
            constraint.fillNextTokenMask(into: &mask!)
            mask!.apply(to: &logits)
        }, accept: { token in
            guard constraint.accept(token: token) else { return false }
            accepted += 1
            return true
        })
    }

    private func draft(
        after history: [Int], limit: Int, remaining: Int, restrict: (inout [Float]) -> Void, accept: (Int) -> Bool
    ) -> [Int] {
        let count = min(limit, draftModel.maximumDraftLength)
        guard count > 0, !history.isEmpty, !backoff.isPaused() else { return [] }
        let sequence = self.sequence ?? ModelSequence(
            model: draftModel.model, cache: draftModel.takeCache(for: history), threadCount: draftModel.threadCount)
        self.sequence = sequence
        let reused = sequence.reusablePrefixLength(for: history)
        guard history.count - reused <= 2 * remaining else { return [] }
        sequence.truncate(to: reused)
        var tokens: [Int] = []
        var next = history[reused...]
        var last: [Int] = []
        while tokens.count < count, sequence.count + next.count <= sequence.contextLength {
            do { try sequence.evaluate(next, logitRows: 1, into: &logits) } catch { break }
            passes += 1
            restrict(&logits)
            guard let (token, probability) = likeliest(), probability >= draftModel.minimumProbability, accept(token) else { break }
            tokens.append(token)
            last = [token]
            next = last[...]
        }
        return tokens
    }

    /// The likeliest token of `logits` among the ids the target shares, and its probability
    /// under the draft model's softmax (over its whole vocabulary).
    private func likeliest() -> (Int, Float)? {
        logits.withUnsafeBufferPointer { row -> (Int, Float)? in
            let shared = UnsafeBufferPointer(rebasing: row[..<min(row.count, draftModel.sharedVocabularyCount)])
            guard let token = indexOfLargest(shared) else { return nil }
            // Logits more than 20 below the largest add less than e⁻²⁰ each: left out, the
            // sum is off by at most 2·10⁻⁹ per token, and the pass costs few exponentials.
            let largest = row[token], cutoff = largest - 20
            var sum: Float = 0
            for value in row where value > cutoff { sum += expf(value - largest) }
            return (token, 1 / sum)
        }
    }

    /// Learns from a draft of `drafted` tokens of which the steps kept the first `kept`: a
    /// generation whose drafts keep being refused drafts less and less often (``DraftBackoff``).
    func record(drafted: Int, kept: Int) {
        backoff.record(drafted: drafted, kept: kept)
    }

    /// Gives the cache back to the draft model. The next draft takes one again.
    func release() {
        guard let sequence else { return }
        self.sequence = nil
        draftModel.recycle(sequence.cache)
    }

    deinit { release() }
}
