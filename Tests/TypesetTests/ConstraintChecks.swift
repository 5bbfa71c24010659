import Testing
@testable import Typeset
import TypesetGrammar

/// Shared checks of token constraints.
enum ConstraintChecks {
    /// `constraint`'s mask for its next token.
    static func mask(_ constraint: some TokenConstraint) -> TokenBitmask {
        var mask = TokenBitmask(vocabularySize: constraint.vocabularySize)
        constraint.fillNextTokenMask(into: &mask)
        return mask
    }

    /// `tokens` accepted one by one into `fresh()` (each must be, and the whole must complete
    /// it), then every prefix rolled back to from the whole: its mask, `state` and shortest
    /// completion must be those of the same prefix accepted afresh. Drafts and the grammar's
    /// rollback rely on this.
    static func expectRollbackRestoresEveryPrefix<Constraint: TokenConstraint, State: Equatable>(
        of tokens: [Int], _ fresh: () -> Constraint, state: (Constraint) -> State, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var whole = fresh()
        for token in tokens {
            let accepted = whole.accept(token: token)
            #expect(accepted, "token \(token) refused", sourceLocation: sourceLocation)
        }
        #expect(whole.isComplete, sourceLocation: sourceLocation)
        for count in stride(from: tokens.count, through: 0, by: -1) {
            var rolledBack = whole
            rolledBack.rollback(tokens.count - count)
            var prefix = fresh()
            for token in tokens.prefix(count) { _ = prefix.accept(token: token) }
            #expect(mask(rolledBack) == mask(prefix), "mask after \(count) tokens", sourceLocation: sourceLocation)
            #expect(state(rolledBack) == state(prefix) && rolledBack.shortestCompletionLength == prefix.shortestCompletionLength,
                    "state after \(count) tokens", sourceLocation: sourceLocation)
        }
    }
}

/// A reply decoded from a scripted source, and what it streamed.
struct ScriptedReply {
    var reply: Reply
    var events: [MessageResponse]
    var source: ScriptedSource
    var promptLength: Int
    var content: String { reply.message.content }
    var reasoning: String? { reply.message.reasoning }
    var streamedReasoning: String { events.compactMap { if case .reasoningChunk(let text) = $0 { text } else { nil } }.joined() }
    var streamedContent: String { events.compactMap { if case .chunk(let text) = $0 { text } else { nil } }.joined() }
    /// The tokens the reply appended after the prompt.
    var written: [Int] { Array(source.held.dropFirst(promptLength)) }

    /// The prompt the reply suites' scripted writers write after: three spaces.
    static let prompt = [32, 32, 32]
    /// The schema their values are held to: an object with a required string `city`.
    static let citySchema = #"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#
}
