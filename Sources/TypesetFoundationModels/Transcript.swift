import Foundation

/// A session's history as Foundation Models records it: instructions, prompts, tool calls,
/// tool outputs and responses, in order.
///
/// A value (`LanguageModelSession.transcript` is a snapshot) and a random-access collection
/// of ``Entry``. A session restored with `LanguageModelSession(transcript:)` continues from it.
public struct Transcript: Sendable, Equatable, RandomAccessCollection {
    private var entries: [Entry]

    public init(entries: some Sequence<Entry> = []) { self.entries = Array(entries) }

    public var startIndex: Int { entries.startIndex }
    public var endIndex: Int { entries.endIndex }
    public subscript(index: Int) -> Entry { entries[index] }

    mutating func append(contentsOf new: some Sequence<Entry>) { entries.append(contentsOf: new) }

    /// One step of a session.
    public enum Entry: Sendable, Identifiable, Equatable, CustomStringConvertible {
        case instructions(Instructions)
        case prompt(Prompt)
        case toolCalls(ToolCalls)
        case toolOutput(ToolOutput)
        case response(Response)
        /// What a reasoning model thought before its response (OS 27).
        case reasoning(Reasoning)

        public var id: String {
            switch self {
            case .instructions(let entry): return entry.id
            case .prompt(let entry): return entry.id
            case .toolCalls(let entry): return entry.id
            case .toolOutput(let entry): return entry.id
            case .response(let entry): return entry.id
            case .reasoning(let entry): return entry.id
            }
        }

        public var description: String {
            switch self {
            case .instructions(let entry): return "instructions: \(Segment.text(of: entry.segments))"
            case .prompt(let entry): return "prompt: \(Segment.text(of: entry.segments))"
            case .toolCalls(let entry): return "tool calls: " + entry.map { "\($0.toolName)(\($0.arguments.jsonString))" }.joined(separator: ", ")
            case .toolOutput(let entry): return "\(entry.toolName) output: \(Segment.text(of: entry.segments))"
            case .response(let entry): return "response: \(Segment.text(of: entry.segments))"
            case .reasoning(let entry): return "reasoning: \(Segment.text(of: entry.segments))"
            }
        }
    }

    /// Part of an entry's content: text, or a generated value.
    public enum Segment: Sendable, Identifiable, Equatable, CustomStringConvertible {
        case text(TextSegment)
        case structure(StructuredSegment)

        public var id: String {
            switch self {
            case .text(let segment): return segment.id
            case .structure(let segment): return segment.id
            }
        }

        public var description: String {
            switch self {
            case .text(let segment): return segment.content
            case .structure(let segment): return segment.content.jsonString
            }
        }

        /// The segments' text, one after another (values as JSON).
        static func text(of segments: [Segment]) -> String { segments.map(\.description).joined() }
    }

    public struct TextSegment: Sendable, Identifiable, Equatable {
        public var id: String
        public var content: String

        public init(id: String = UUID().uuidString, content: String) {
            self.id = id
            self.content = content
        }
    }

    public struct StructuredSegment: Sendable, Identifiable, Equatable {
        public var id: String
        /// The name of the type or schema the value was generated for.
        public var source: String
        public var content: GeneratedContent

        public init(id: String = UUID().uuidString, source: String, content: GeneratedContent) {
            self.id = id
            self.source = source
            self.content = content
        }
    }

    /// The session's instructions and the tools it offered.
    public struct Instructions: Sendable, Identifiable, Equatable {
        public var id: String
        public var segments: [Segment]
        public var toolDefinitions: [ToolDefinition]

        public init(id: String = UUID().uuidString, segments: [Segment], toolDefinitions: [ToolDefinition]) {
            self.id = id
            self.segments = segments
            self.toolDefinitions = toolDefinitions
        }
    }

    /// A tool as the model was told about it.
    public struct ToolDefinition: Sendable, Equatable {
        public var name: String
        public var description: String
        /// The arguments' schema.
        public var parameters: GenerationSchema

        public init(name: String, description: String, parameters: GenerationSchema) {
            self.name = name
            self.description = description
            self.parameters = parameters
        }

        public init(tool: some Tool) {
            self.init(name: tool.name, description: tool.description, parameters: tool.parameters)
        }
    }

    /// A request, with the options and the response format it was made with.
    public struct Prompt: Sendable, Identifiable, Equatable {
        public var id: String
        public var segments: [Segment]
        public var options: GenerationOptions
        public var responseFormat: ResponseFormat?

        public init(id: String = UUID().uuidString, segments: [Segment], options: GenerationOptions = GenerationOptions(),
                    responseFormat: ResponseFormat? = nil) {
            self.id = id
            self.segments = segments
            self.options = options
            self.responseFormat = responseFormat
        }
    }

    /// The type or schema a response was held to.
    public struct ResponseFormat: Sendable, Equatable, CustomStringConvertible {
        /// The type's or schema's name.
        public let name: String
        let schema: GenerationSchema

        public init<Content: Generable>(type: Content.Type) {
            self.init(schema: Content.generationSchema)
        }

        public init(schema: GenerationSchema) {
            self.schema = schema
            name = schema.jsonSchema["title"].flatMap { if case .string(let title) = $0 { title } else { nil } } ?? "schema"
        }

        public var description: String { name }
    }

    /// The tool calls of one reply.
    public struct ToolCalls: Sendable, Identifiable, Equatable, RandomAccessCollection {
        public var id: String
        private var calls: [ToolCall]

        public init(id: String = UUID().uuidString, _ calls: some Sequence<ToolCall>) {
            self.id = id
            self.calls = Array(calls)
        }

        public var startIndex: Int { calls.startIndex }
        public var endIndex: Int { calls.endIndex }
        public subscript(position: Int) -> ToolCall { calls[position] }
    }

    public struct ToolCall: Sendable, Identifiable, Equatable {
        /// The call's identifier, which the ``ToolOutput`` answering it repeats.
        public var id: String
        public var toolName: String
        public var arguments: GeneratedContent

        public init(id: String, toolName: String, arguments: GeneratedContent) {
            self.id = id
            self.toolName = toolName
            self.arguments = arguments
        }
    }

    /// What a tool returned; `id` is the call's.
    public struct ToolOutput: Sendable, Identifiable, Equatable {
        public var id: String
        public var toolName: String
        public var segments: [Segment]

        public init(id: String, toolName: String, segments: [Segment]) {
            self.id = id
            self.toolName = toolName
            self.segments = segments
        }
    }

    /// A model's reasoning before its response (OS 27).
    public struct Reasoning: Sendable, Identifiable, Equatable {
        public var id: String
        public var segments: [Segment]

        public init(id: String = UUID().uuidString, segments: [Segment]) {
            self.id = id
            self.segments = segments
        }
    }

    /// A reply.
    public struct Response: Sendable, Identifiable, Equatable {
        public var id: String
        /// Always empty: Typeset has no assets to name.
        public var assetIDs: [String]
        public var segments: [Segment]

        public init(id: String = UUID().uuidString, assetIDs: [String], segments: [Segment]) {
            self.id = id
            self.assetIDs = assetIDs
            self.segments = segments
        }
    }
}

// MARK: - Transcripts and chat messages

extension Transcript {
    /// The transcript as chat messages (how a restored session continues from it).
    var messages: [ChatMessage] {
        var reasoning: String?
        return entries.flatMap { entry -> [ChatMessage] in
            switch entry {
            case .instructions(let instructions): return [.system(Segment.text(of: instructions.segments))]
            case .prompt(let prompt): return [.user(Segment.text(of: prompt.segments))]
            case .toolCalls(let calls):
                return [.assistant("", functionCalls: calls.map { FunctionCall(id: $0.id, name: $0.toolName, arguments: $0.arguments.jsonValue) })]
            case .toolOutput(let output):
                return [ChatMessage(role: .tool, content: Segment.text(of: output.segments), toolCallID: output.id, name: output.toolName)]
            case .reasoning(let entry):
                // The next assistant message's reasoning.
                reasoning = Segment.text(of: entry.segments)
                return []
            case .response(let response):
                defer { reasoning = nil }
                return [ChatMessage(role: .assistant, content: Segment.text(of: response.segments), reasoning: reasoning)]
            }
        }
    }
}
