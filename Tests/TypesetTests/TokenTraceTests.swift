import Foundation
import Testing
@testable import Typeset
import TypesetGrammar
import TypesetTestSupport

/// A reply's ``TokenTrace`` (what the server's playground shows) is what the grammar did: one
/// step per token of the reply, whose tokens spell the reply; each sampled step's allowed count
/// is the count of a fresh matcher's mask at the same point of the value, the sampled token one
/// it allows; forced steps are the tokens jump-forward wrote.
@Suite(.serialized) struct TokenTraceTests {
    @Test(arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName])
    func traceIsWhatAFreshMatcherAllows(model: String) async throws {
        guard TestModels.shouldRun(model) else { return }
        let runner = try ModelRunner(url: URL(fileURLWithPath: TestModels.path(of: model)), options: ModelRunner.Options(contextLength: 1024))
        let schema = try Fixtures.seedSchema("event.json")
        var options = GenerationOptions(temperature: 0, maxTokens: 160, jsonSchema: schema)
        let trace = TokenTrace()
        options.tokenTrace = trace
        var text = "", completionTokens = 0
        for try await response in runner.createConversation().generateResponse(
            to: "Extract the event: the Lisbon Coffee Festival is on 2025-05-17 at the Time Out Market, with about 300 attendees.",
            options: options
        ) {
            if case .complete(let message, let reason, let stats) = response {
                #expect(reason == .stop, "\(model): \(message.content)")
                text = message.content
                completionTokens = stats.completionTokens
            }
        }
        let steps = trace.takeSteps()
        #expect(steps.count == completionTokens)
        #expect(trace.takeSteps().isEmpty, "the steps are taken once")
        #expect(try runner.tokenizer.decode(steps.map(\.token)) == text)
        #expect(steps.contains(where: \.isForced) && steps.contains { !$0.isForced }, "\(model): keys forced, values sampled")

        let compiled = try await runner.compiledGrammar(schema: try JSONValue(parsing: schema), options: options.schemaOptions)
        var matcher = GrammarMatcher(compiled)
        var mask = TokenBitmask(vocabularySize: runner.tokenizer.vocabulary.count)
        for (index, step) in steps.enumerated() {
            if step.isForced {
                #expect(step.allowedCount == nil && step.maskSeconds == 0)
            } else {
                matcher.fillNextTokenMask(into: &mask)
                #expect(step.allowedCount == mask.allowedCount, "\(model): step \(index)")
                #expect(mask[step.token], "\(model): step \(index)'s token is one the mask allows")
                #expect(step.maskSeconds >= 0 && step.maskSeconds < 1)
            }
            let accepted = matcher.accept(token: step.token)
            #expect(accepted, "\(model): step \(index)'s token continues the value")
        }
        #expect(matcher.canTerminate)
    }

    /// A reply without a grammar records its tokens as free: no mask, nothing forced.
    @Test func freeTextStepsHaveNoMask() async throws {
        guard TestModels.shouldRun(TestModels.smolLM2FileName) else { return }
        let runner = try ModelRunner(url: URL(fileURLWithPath: TestModels.path(of: TestModels.smolLM2FileName)), options: ModelRunner.Options(contextLength: 512))
        var options = GenerationOptions(temperature: 0, maxTokens: 12)
        let trace = TokenTrace()
        options.tokenTrace = trace
        var completionTokens = 0
        for try await response in runner.createConversation().generateResponse(to: "Say hello.", options: options) {
            if case .complete(_, _, let stats) = response { completionTokens = stats.completionTokens }
        }
        let steps = trace.takeSteps()
        #expect(steps.count == completionTokens && completionTokens > 0)
        #expect(steps.allSatisfy { $0.allowedCount == nil && !$0.isForced && $0.maskSeconds == 0 })
    }
}
