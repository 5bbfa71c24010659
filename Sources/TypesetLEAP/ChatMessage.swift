import Foundation

/// One message of a LEAP conversation: a role, its content as parts, an assistant's reasoning
/// and function calls. A class, as LEAP's Kotlin data class is bridged to Swift; Typeset's
/// own ``Typeset/ChatMessage`` is what conversations hold.
public final class ChatMessage: @unchecked Sendable, Equatable, CustomStringConvertible {
    /// Who wrote a message.
    public enum Role: Sendable, Hashable, CaseIterable {
        case system, user, assistant, tool

        /// The role's name in chat-completions JSON (`"system"`, `"user"`, …).
        public var type: String {
            switch self {
            case .system: "system"
            case .user: "user"
            case .assistant: "assistant"
            case .tool: "tool"
            }
        }
    }

    public let role: Role
    /// The message's content, part by part (Typeset's models read and write text).
    public let content: [ChatMessageContent]
    /// An assistant's reasoning (the text between `<think>` and `</think>`), if it thought.
    public let reasoningContent: String?
    /// The functions an assistant message calls.
    public let functionCalls: [LeapFunctionCall]?
    /// The identifier of the call a `tool` message answers, when the message came from Typeset.
    let toolCallID: String?

    public init(role: Role, content: [ChatMessageContent], reasoningContent: String? = nil, functionCalls: [LeapFunctionCall]? = nil) {
        self.role = role
        self.content = content
        self.reasoningContent = reasoningContent
        self.functionCalls = functionCalls
        toolCallID = nil
    }

    /// A message whose content is one part.
    public convenience init(role: Role, content: ChatMessageContent) {
        self.init(role: role, content: [content])
    }

    /// A message whose content is one text.
    public convenience init(role: Role, textContent: String) {
        self.init(role: role, content: [.text(textContent)])
    }

    /// Typeset's message as LEAP's.
    init(_ message: Typeset.ChatMessage) {
        role = switch message.role {
        case .system: .system
        case .user: .user
        case .assistant: .assistant
        case .tool: .tool
        }
        content = message.content.isEmpty && !message.functionCalls.isEmpty ? [] : [.text(message.content)]
        reasoningContent = message.reasoning
        functionCalls = message.functionCalls.isEmpty ? nil : message.functionCalls.map(LeapFunctionCall.init)
        toolCallID = message.toolCallID
    }

    /// The message as Typeset holds it: its text parts joined, its calls as Typeset's. A part
    /// that is not text (an image, audio) has no place in a text model's prompt: it is refused.
    func typesetMessage() throws(ContentError) -> Typeset.ChatMessage {
        var text = ""
        for part in content {
            guard let piece = part.textValue else { throw ContentError(kind: part.kind) }
            text += piece
        }
        let role: Typeset.ChatMessage.Role = switch role {
        case .system: .system
        case .user: .user
        case .assistant: .assistant
        case .tool: .tool
        }
        return Typeset.ChatMessage(
            role: role, content: text, reasoning: reasoningContent, functionCalls: functionCalls?.map(\.call) ?? [],
            toolCallID: toolCallID)
    }

    /// A message part Typeset cannot give a text model.
    struct ContentError: Error, CustomStringConvertible {
        let kind: String
        var description: String { "a message has \(kind) content; Typeset's models read text only" }
    }

    public static func == (left: ChatMessage, right: ChatMessage) -> Bool {
        left.role == right.role && left.content == right.content && left.reasoningContent == right.reasoningContent
            && left.functionCalls == right.functionCalls
    }

    public var description: String {
        "ChatMessage(role=\(role.type), content=\(content), reasoningContent=\(reasoningContent ?? "null"))"
    }
}

/// One part of a message's content, as LEAP's sealed class bridges it: ``Text``, ``Image``
/// or ``Audio``, switched over with `onEnum(of:)`.
public class ChatMessageContent: @unchecked Sendable, Equatable, CustomStringConvertible {
    fileprivate init() {}

    /// A text part.
    public final class Text: ChatMessageContent, @unchecked Sendable {
        public let text: String
        public init(text: String) {
            self.text = text
            super.init()
        }
    }

    /// An image (JPEG bytes). Typeset's models do not see images: a message holding one is
    /// refused when it is sent.
    public final class Image: ChatMessageContent, @unchecked Sendable {
        public let jpegByteArray: Data
        public init(jpegByteArray: Data) {
            self.jpegByteArray = jpegByteArray
            super.init()
        }
    }

    /// Audio (WAV bytes). Typeset's models do not hear: a message holding audio is refused
    /// when it is sent.
    public final class Audio: ChatMessageContent, @unchecked Sendable {
        public let data: Data
        public init(data: Data) {
            self.data = data
            super.init()
        }
    }

    /// A text part (what `[.text("…")]` builds).
    public static func text(_ text: String) -> ChatMessageContent { Text(text: text) }
    /// An image part from JPEG bytes.
    public static func fromJPEGData(_ data: Data) -> ChatMessageContent { Image(jpegByteArray: data) }
    /// An audio part from WAV bytes.
    public static func fromWAVData(_ data: Data) -> ChatMessageContent { Audio(data: data) }

    /// The part's text, when it is text.
    var textValue: String? { (self as? Text)?.text }

    /// What kind of part this is, for messages.
    var kind: String {
        switch self {
        case is Text: "text"
        case is Image: "image"
        default: "audio"
        }
    }

    public static func == (left: ChatMessageContent, right: ChatMessageContent) -> Bool {
        switch (left, right) {
        case let (left as Text, right as Text): left.text == right.text
        case let (left as Image, right as Image): left.jpegByteArray == right.jpegByteArray
        case let (left as Audio, right as Audio): left.data == right.data
        default: false
        }
    }

    public var description: String {
        switch self {
        case let part as Text: "Text(text=\(part.text))"
        case let part as Image: "Image(\(part.jpegByteArray.count) bytes)"
        case let part as Audio: "Audio(\(part.data.count) bytes)"
        default: "ChatMessageContent"
        }
    }
}

/// The kinds of ``ChatMessageContent``, to switch over exhaustively.
public enum ChatMessageContentCase: Sendable {
    case text(ChatMessageContent.Text)
    case image(ChatMessageContent.Image)
    case audio(ChatMessageContent.Audio)
}

/// `part` as an enumeration to switch over (the function SKIE writes for LEAP's sealed classes).
public func onEnum(of part: ChatMessageContent) -> ChatMessageContentCase {
    switch part {
    case let text as ChatMessageContent.Text: .text(text)
    case let image as ChatMessageContent.Image: .image(image)
    case let audio as ChatMessageContent.Audio: .audio(audio)
    default: preconditionFailure("ChatMessageContent has no subclasses but Text, Image and Audio")
    }
}

/// A call the model made to a registered function: its name, and its arguments as JSON read
/// into Swift values (`String`, `Int`, `Double`, `Bool`, arrays, dictionaries, `nil` for null).
public struct LeapFunctionCall: @unchecked Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let arguments: [String: Any?]
    /// The call as Typeset made it (its identifier, its arguments as JSON).
    let call: FunctionCall

    public init(name: String, arguments: [String: Any?]) {
        self.name = name
        self.arguments = arguments
        let members = arguments.keys.sorted().map { ($0, JSONValue(swiftValue: arguments[$0] ?? nil)) }
        call = FunctionCall(id: "call_" + UUID().uuidString.prefix(8).lowercased(), name: name, arguments: .object(members))
    }

    init(_ call: FunctionCall) {
        name = call.name
        var arguments: [String: Any?] = [:]
        for (key, value) in call.arguments.members ?? [] { arguments[key] = value.swiftValue }
        self.arguments = arguments
        self.call = call
    }

    public static func == (left: LeapFunctionCall, right: LeapFunctionCall) -> Bool {
        left.name == right.name && left.call.arguments == right.call.arguments
    }

    public var description: String { "LeapFunctionCall(name=\(name), arguments=\(call.arguments.compactText))" }
}

extension JSONValue {
    /// The value as the Swift values LEAP's calls hold: `nil` for null, `Bool`, `Int` for an
    /// integer that fits, else `Double`, `String`, `[Any?]`, `[String: Any?]`.
    var swiftValue: Any? {
        switch self {
        case .null: return nil
        case .bool(let flag): return flag
        case .number(let text): return Int(text) ?? Double(text)
        case .string(let text): return text
        case .array(let items): return items.map(\.swiftValue)
        case .object(let members):
            var dictionary: [String: Any?] = [:]
            for (key, value) in members { dictionary[key] = value.swiftValue }
            return dictionary
        }
    }

    /// A Swift value (as ``swiftValue`` gives them, or `NSNull`, other integer and floating
    /// types, `NSNumber`) as JSON; what has no JSON form becomes its description as a string.
    init(swiftValue value: Any?) {
        switch value {
        case nil, is NSNull: self = .null
        case let flag as Bool: self = .bool(flag)
        case let integer as any BinaryInteger: self = .number(String(describing: integer))
        case let number as Double: self = number.isFinite ? .number(numberText(number)) : .null
        case let number as Float: self = number.isFinite ? .number(numberText(number)) : .null
        case let text as String: self = .string(text)
        case let items as [Any?]: self = .array(items.map { JSONValue(swiftValue: $0) })
        case let dictionary as [String: Any?]:
            self = .object(dictionary.keys.sorted().map { ($0, JSONValue(swiftValue: dictionary[$0] ?? nil)) })
        case let dictionary as [String: Any]:
            self = .object(dictionary.keys.sorted().map { ($0, JSONValue(swiftValue: dictionary[$0])) })
        default: self = .string(String(describing: value!))
        }
    }
}
