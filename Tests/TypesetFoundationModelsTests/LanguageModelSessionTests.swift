import Foundation
import Observation
import Testing
@testable import TypesetFoundationModels
import TypesetTestSupport

private let sessionRunner: ModelRunner? = try? ModelRunner(
    url: URL(fileURLWithPath: TestModels.smolLM2Path), options: ModelRunner.Options(contextLength: 2048))

@Generable
struct SessionCity: Equatable {
    @Guide(description: "The city's name")
    var name: String
    @Guide(description: "Its population in millions", .range(0...40))
    var population: Int
}

struct SessionLookup: Tool {
    let description = "Returns the population of a city, in millions."

    @Generable
    struct Arguments {
        @Guide(description: "The city")
        var city: String
    }

    func call(arguments: Arguments) async throws -> String { "\(arguments.city) has 2 million people." }
}

/// `LanguageModelSession` over a Typeset model, as Foundation Models code uses it: typed and
/// text replies, the transcript each request extends, restoring a session from it, one
/// request at a time, errors as Foundation Models names them.
@Suite(.serialized, .enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
struct LanguageModelSessionTests {
    @Test func typedRepliesFollowTheirGuidesAndExtendTheTranscript() async throws {
        let session = LanguageModelSession(runner: try runner(), instructions: "You describe cities.")
        let options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 60)
        let city = try await session.respond(to: "Describe Paris.", generating: SessionCity.self, options: options)
        #expect((0...40).contains(city.content.population))
        let entries = Array(session.transcript)
        #expect(entries.count == 3)
        guard case .instructions(let instructions)? = entries.first, case .prompt(let prompt) = entries[1],
              case .response(let response) = entries[2]
        else { Issue.record("unexpected entries: \(entries)"); return }
        #expect(instructions.segments.first?.description == "You describe cities.")
        // The request as the model read it: the schema, then the prompt (includeSchemaInPrompt).
        let read = prompt.segments.first?.description ?? ""
        #expect(read.hasPrefix("Answer with a JSON value that conforms to this JSON Schema:\n{"))
        #expect(read.hasSuffix("}\n\nDescribe Paris."))
        #expect(prompt.responseFormat?.name == "SessionCity")
        guard case .structure(let value)? = response.segments.first else { Issue.record("the value is no structure"); return }
        #expect(try SessionCity(value.content) == city.content)
        #expect(Array(city.transcriptEntries).map(\.id) == entries.dropFirst().map(\.id))

        let text = try await session.respond(to: "Say hello.", options: GenerationOptions(maximumResponseTokens: 8))
        #expect(!text.content.isEmpty)
        #expect(session.transcript.count == 5)
        #expect(!session.isResponding)
    }

    /// SwiftUI reads `isResponding` and `transcript` through Observation: a request starting
    /// and ending, and its entries joining the transcript, are each a change observers hear of.
    @Test func observersHearRequestsStartAndEnd() async throws {
        let session = LanguageModelSession(runner: try runner(), instructions: "You are brief.")
        let changes = ObservedChanges()
        func observe() {
            withObservationTracking {
                _ = session.isResponding
                _ = session.transcript
            } onChange: {
                changes.record()
            }
        }
        observe()
        let reply = Task { try await session.respond(to: "Say hi.", options: GenerationOptions(maximumResponseTokens: 4)) }
        while changes.count == 0 { try await Task.sleep(for: .milliseconds(1)) }
        observe()
        _ = try await reply.value
        while changes.count < 2 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(!session.isResponding)
        #expect(session.transcript.count == 3)
    }

    /// The seed's first sample, on the small model: a Float, which once came back as 4,000
    /// digits that no Float holds.
    @Test func aFloatIsANumberAFloatHolds() async throws {
        let session = LanguageModelSession(runner: try runner())
        let response = try await session.respond(to: "How many tablespoons are in a cup?", generating: Float.self)
        #expect(response.content.isFinite)
        #expect(response.rawContent.jsonString.count <= 34)
    }

    @Test func aRestoredSessionContinuesItsTranscript() async throws {
        let first = LanguageModelSession(runner: try runner(), instructions: "Answer in one word.")
        try await first.respond(to: "Name a color.", options: GenerationOptions(sampling: .greedy, maximumResponseTokens: 4))
        let model = SystemLanguageModel(runner: try runner())
        let restored = LanguageModelSession(model: model, transcript: first.transcript)
        #expect(restored.transcript == first.transcript)
        let count = try await model.tokenCount(for: restored.transcript)
        #expect(count > 10)
        #expect(count == (try runner().promptTokenCount(for: Transcript(entries: first.transcript).messages)))
    }

    @Test func toolsRunAndTheirCallsAreRecorded() async throws {
        let session = LanguageModelSession(runner: try runner(), tools: [SessionLookup()], instructions: "Use tools to answer.")
        var options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 60)
        options.toolCallingMode = .required
        let reply = try await session.respond(to: "How many people live in Lyon?", generating: SessionCity.self, options: options)
        #expect((0...40).contains(reply.content.population))
        let calls = session.transcript.compactMap { entry -> Transcript.ToolCalls? in
            if case .toolCalls(let calls) = entry { return calls } else { return nil }
        }
        let outputs = session.transcript.compactMap { entry -> Transcript.ToolOutput? in
            if case .toolOutput(let output) = entry { return output } else { return nil }
        }
        #expect(calls.first?.first?.toolName == "SessionLookup")
        #expect(outputs.first?.id == calls.first?.first?.id)
        #expect(outputs.first?.segments.first?.description.hasSuffix("has 2 million people.") == true)
    }

    @Test func oneRequestAtATimeAndErrorsAsFoundationModelsNamesThem() async throws {
        let session = LanguageModelSession(runner: try runner())
        let stream = session.streamResponse(to: "Count to one hundred.", options: GenerationOptions(maximumResponseTokens: 40))
        var iterator = stream.makeAsyncIterator()
        _ = try await iterator.next()
        #expect(session.isResponding)
        await #expect {
            try await session.respond(to: "Hello.")
        } throws: { error in
            if case LanguageModelSession.GenerationError.concurrentRequests = error { return true }
            return false
        }
        while try await iterator.next() != nil {}
        #expect(!session.isResponding)

        let absent = SystemLanguageModel(url: URL(fileURLWithPath: "/nonexistent/model.gguf"))
        let missing = LanguageModelSession(model: absent)
        #expect(absent.availability == .unavailable(.modelNotReady))
        await #expect {
            try await missing.respond(to: "Hello.")
        } throws: { error in
            if case LanguageModelSession.GenerationError.assetsUnavailable = error { return true }
            return false
        }
    }

    @Test func samplingModesSetTheSamplerFields() {
        #expect(GenerationOptions(sampling: .greedy, temperature: 0.9).typesetOptions.temperature == 0)
        let topK = GenerationOptions(sampling: .random(top: 40, seed: 7)).typesetOptions
        #expect(topK.topK == 40 && topK.seed == 7 && topK.temperature == 1)
        let nucleus = GenerationOptions(sampling: .random(probabilityThreshold: 0.9), temperature: 0.5).typesetOptions
        #expect(nucleus.topP == 0.9 && nucleus.temperature == 0.5)
        #expect(GenerationOptions(maximumResponseTokens: 12).typesetOptions.maxTokens == 12)
        #expect(GenerationOptions(samplingMode: .greedy, toolCallingMode: .disallowed).typesetOptions.functionCallMode == .disabled)
        #expect(GenerationOptions(toolCallingMode: .required).typesetOptions.functionCallMode == .required)
        #expect(GenerationOptions().typesetOptions == Typeset.GenerationOptions())
    }

    @Test func promptsAndInstructionsBuildFromComponents() {
        let detail: String? = "Its fur is orange."
        let prompt = Prompt {
            "Suggest a name for a cat."
            if let detail { detail }
            for word in ["short", "friendly"] { "It should be \(word)." }
        }
        #expect(prompt.text == "Suggest a name for a cat.\nIts fur is orange.\nIt should be short.\nIt should be friendly.")
        let instructions = Instructions {
            "You are helpful."
            SessionCity(name: "Oslo", population: 1)
        }
        #expect(instructions.text == #"You are helpful.\#n{"name":"Oslo","population":1}"#)
    }

    private func runner() throws -> ModelRunner {
        try #require(sessionRunner, "SmolLM2 did not load from \(TestModels.smolLM2Path)")
    }
}

/// Counts the changes an observation reported.
private final class ObservedChanges: @unchecked Sendable {
    private let lock = NSLock()
    private var changes = 0
    func record() { lock.withLock { changes += 1 } }
    var count: Int { lock.withLock { changes } }
}
