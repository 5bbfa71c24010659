import Foundation
import Synchronization
import Testing
@testable import TypesetFoundationModels
import TypesetTestSupport

/// A model written against Foundation Models' OS 27 protocol without Typeset's engine: its
/// executor answers from a script, so the session's side of the protocol (transcripts sent,
/// events read, tools run, capabilities checked) is tested on its own.
struct ScriptedModel: LanguageModel {
    /// What the executor answers, given the transcript it receives.
    let script: @Sendable (LanguageModelExecutorGenerationRequest) -> [LanguageModelExecutorGenerationChannel.Event]
    var capabilities: LanguageModelCapabilities = LanguageModelCapabilities([.toolCalling, .reasoning])
    let requests = Requests()

    final class Requests: Sendable {
        let received = Mutex<[LanguageModelExecutorGenerationRequest]>([])
    }

    var executorConfiguration: Executor.Configuration { Executor.Configuration(name: "scripted") }

    struct Executor: LanguageModelExecutor {
        struct Configuration: Hashable, Sendable { let name: String }
        init(configuration: Configuration) throws {}

        func respond(
            to request: LanguageModelExecutorGenerationRequest, model: ScriptedModel, streamingInto channel: LanguageModelExecutorGenerationChannel
        ) async throws {
            model.requests.received.withLock { $0.append(request) }
            for event in model.script(request) { await channel.send(event) }
        }
    }
}

/// Looks a city's weather up (the scripted model's tool).
struct WeatherTool: Tool {
    let description = "The weather in a city."
    @Generable struct Arguments { var city: String }
    func call(arguments: Arguments) async throws -> String { "\(arguments.city): 21 °C, sunny" }
}

private let protocolRunner: ModelRunner? = try? ModelRunner(
    url: URL(fileURLWithPath: TestModels.smolLM2Path), options: ModelRunner.Options(contextLength: 2048))

@Suite struct LanguageModelProtocolTests {
    /// The session sends the whole transcript with each request, reads the reasoning, the tool
    /// calls and the text the executor streams, runs the tool and asks again with its output.
    @Test func aSessionDrivesAnyModelsExecutor() async throws {
        let model = ScriptedModel { request in
            let outputs = request.transcript.compactMap { entry -> String? in
                if case .toolOutput(let output) = entry { return output.segments.map(\.description).joined() }
                return nil
            }
            if let output = outputs.last {
                return [
                    .reasoning(action: .appendText("The tool answered.", tokenCount: 4)),
                    .response(action: .appendText("It is ", tokenCount: 2)),
                    .response(action: .appendText(output, tokenCount: 5)),
                    .response(action: .updateUsage(input: .init(totalTokenCount: 40, cachedTokenCount: 30), output: .init(totalTokenCount: 11, reasoningTokenCount: 4))),
                ]
            }
            return [
                .toolCalls(action: .toolCall(id: "call_1", name: "WeatherTool", action: .appendArguments(#"{"city":"#, tokenCount: 3))),
                .toolCalls(action: .toolCall(id: "call_1", name: "WeatherTool", action: .appendArguments(#""Lyon"}"#, tokenCount: 3))),
                .toolCalls(action: .updateUsage(input: .init(totalTokenCount: 20, cachedTokenCount: 0), output: .init(totalTokenCount: 6, reasoningTokenCount: 0))),
            ]
        }
        let session = LanguageModelSession(model: model, tools: [WeatherTool()], instructions: "Use the tool.")
        let response = try await session.respond(to: "Weather in Lyon?")
        #expect(response.content == "It is Lyon: 21 °C, sunny")
        #expect(response.usage == LanguageModelSession.Usage(input: .init(totalTokenCount: 60, cachedTokenCount: 30), output: .init(totalTokenCount: 17, reasoningTokenCount: 4)))
        #expect(session.usage == response.usage)
        let kinds = session.transcript.map { entry -> String in
            switch entry {
            case .instructions: "instructions"
            case .prompt: "prompt"
            case .toolCalls(let calls): "calls \(calls.map { "\($0.toolName)\($0.arguments.jsonString)" })"
            case .toolOutput(let output): "output \(output.id)"
            case .reasoning: "reasoning"
            case .response: "response"
            }
        }
        #expect(kinds == ["instructions", "prompt", #"calls ["WeatherTool{\"city\":\"Lyon\"}"]"#, "output call_1", "reasoning", "response"])
        let requests = model.requests.received.withLock { $0 }
        #expect(requests.count == 2)
        #expect(requests[0].transcript.count == 2 && requests[1].transcript.count == 4)
        #expect(requests.allSatisfy { $0.enabledToolDefinitions.map(\.name) == ["WeatherTool"] })
    }

    /// A request that needs what the model does not declare is refused before its executor runs.
    @Test func capabilitiesAreChecked() async throws {
        let model = ScriptedModel(script: { _ in [.response(action: .appendText("{}", tokenCount: 1))] }, capabilities: LanguageModelCapabilities([]))
        await #expect {
            try await LanguageModelSession(model: model).respond(to: "A city.", generating: String.self)
        } throws: { error in
            if case LanguageModelError.unsupportedCapability(let reason) = error { return reason.capability == .guidedGeneration }
            return false
        }
        #expect(model.requests.received.withLock { $0.isEmpty })
        #expect(!model.capabilities.contains(.toolCalling) && SystemLanguageModel.default.capabilities.contains(.guidedGeneration))
    }

    /// Typeset's executor diffs each transcript onto its KV cache: the second request's prompt
    /// is computed only past what the first left in the cache, and the usage says how much
    /// came from it.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func typesetsExecutorReusesTheCacheAcrossRequests() async throws {
        let runner = try #require(protocolRunner)
        let session = LanguageModelSession(runner: runner, instructions: "Answer in a few words.")
        let options = GenerationOptions(sampling: .greedy, maximumResponseTokens: 12)
        let first = try await session.respond(to: "Name a color.", options: options)
        #expect(first.usage.input.totalTokenCount > 10 && first.usage.output.totalTokenCount > 0)
        let second = try await session.respond(to: "Name another one.", options: options)
        // Everything of the first request's prompt and most of its reply came from the cache.
        #expect(second.usage.input.cachedTokenCount >= first.usage.input.totalTokenCount)
        #expect(second.usage.input.cachedTokenCount < second.usage.input.totalTokenCount)
        #expect(session.usage.input.totalTokenCount == first.usage.input.totalTokenCount + second.usage.input.totalTokenCount)
        // A transcript changed at its start is computed again from the change.
        var edited = Array(session.transcript)
        edited[0] = .instructions(.init(segments: [.text(.init(content: "Answer in French."))], toolDefinitions: []))
        let third = try await LanguageModelSession(model: SystemLanguageModel(runner: runner), transcript: Transcript(entries: edited))
            .respond(to: "And a third?", options: options)
        #expect(third.usage.input.cachedTokenCount < 8)
    }

    /// Typeset's executor, driven as Foundation Models drives it: a request, a channel, events.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func typesetsExecutorStreamsIntoAChannel() async throws {
        let model = SystemLanguageModel(runner: try #require(protocolRunner))
        let executor = try SystemLanguageModel.Executor(configuration: model.executorConfiguration)
        let transcript = Transcript(entries: [.prompt(.init(segments: [.text(.init(content: "Say hello."))]))])
        let request = LanguageModelExecutorGenerationRequest(
            id: UUID(), transcript: transcript, enabledTools: [], generationOptions: GenerationOptions(sampling: .greedy, maximumResponseTokens: 8),
            contextOptions: ContextOptions())
        let channel = LanguageModelExecutorGenerationChannel()
        let producer = Task {
            defer { channel.finish() }
            try await executor.respond(to: request, model: model, streamingInto: channel)
        }
        var text = "", usage: LanguageModelExecutorGenerationChannel.Usage?
        for await event in channel {
            if case .response(let action) = event.kind {
                switch action.kind {
                case .appendText(let piece, _, _): text += piece
                case .updateUsage(let total): usage = total
                default: break
                }
            }
        }
        try await producer.value
        #expect(!text.isEmpty)
        #expect((usage?.output.totalTokenCount ?? 0) > 0 && (usage?.output.totalTokenCount ?? 9) <= 8)
    }
}
