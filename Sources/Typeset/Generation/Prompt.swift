// Prompts and instructions as Foundation Models spells them: values built from strings,
// generable values and arrays of them, with result builders for `if`, `for` and
// `#available`. Components are joined by a newline.

/// What a session is asked: text, or anything ``PromptRepresentable`` built with
/// ``PromptBuilder``.
///
/// ```swift
/// let prompt = Prompt {
///     "Suggest a name for a cat."
///     if let color { "Its fur is \(color)." }
/// }
/// ```
public struct Prompt: Sendable {
    /// The prompt's text: its components, one per line.
    public let text: String

    package init(text: String) { self.text = text }

    /// A prompt of `content`'s text.
    public init(_ content: some PromptRepresentable) { self = content.promptRepresentation }

    /// A prompt built from components.
    public init(@PromptBuilder _ content: () throws -> Prompt) rethrows { self = try content() }

    /// A prompt of several components, one per line (empty components are left out).
    init(joining components: [String]) { text = components.filter { !$0.isEmpty }.joined(separator: "\n") }
}

/// What a session is told before the conversation starts (a system prompt): text, or
/// anything ``InstructionsRepresentable`` built with ``InstructionsBuilder``.
public struct Instructions: Sendable {
    /// The instructions' text: its components, one per line.
    public let text: String

    package init(text: String) { self.text = text }

    /// Instructions of `content`'s text.
    public init(_ content: some InstructionsRepresentable) { self = content.instructionsRepresentation }

    /// Instructions built from components.
    public init(@InstructionsBuilder _ content: () throws -> Instructions) rethrows { self = try content() }

    init(joining components: [String]) { text = components.filter { !$0.isEmpty }.joined(separator: "\n") }
}

/// A value that can be (part of) a prompt.
public protocol PromptRepresentable {
    /// The value as a prompt.
    @PromptBuilder var promptRepresentation: Prompt { get }
}

/// A value that can be (part of) instructions.
public protocol InstructionsRepresentable {
    /// The value as instructions.
    @InstructionsBuilder var instructionsRepresentation: Instructions { get }
}

extension Prompt: PromptRepresentable {
    public var promptRepresentation: Prompt { self }
}

extension Instructions: InstructionsRepresentable {
    public var instructionsRepresentation: Instructions { self }
}

extension String {
    /// The text itself.
    public var promptRepresentation: Prompt { Prompt(text: self) }
    /// The text itself.
    public var instructionsRepresentation: Instructions { Instructions(text: self) }
}

extension Array: PromptRepresentable where Element: PromptRepresentable {
    /// The elements, one per line.
    public var promptRepresentation: Prompt { Prompt(joining: map(\.promptRepresentation.text)) }
}

extension Array: InstructionsRepresentable where Element: InstructionsRepresentable {
    /// The elements, one per line.
    public var instructionsRepresentation: Instructions { Instructions(joining: map(\.instructionsRepresentation.text)) }
}

extension ConvertibleToGeneratedContent {
    /// The value as JSON (a string as its text).
    public var promptRepresentation: Prompt { Prompt(text: Self.text(of: generatedContent)) }
    /// The value as JSON (a string as its text).
    public var instructionsRepresentation: Instructions { Instructions(text: Self.text(of: generatedContent)) }

    private static func text(of content: GeneratedContent) -> String {
        if case .string(let text) = content.jsonValue { return text }
        return content.jsonString
    }
}

/// Builds a ``Prompt`` from the lines of a closure: strings, generable values, arrays,
/// `if`/`else`, `switch`, `for` and `if #available`.
@resultBuilder
public enum PromptBuilder {
    public static func buildBlock(_ components: Prompt...) -> Prompt { Prompt(joining: components.map(\.text)) }
    public static func buildExpression(_ expression: Prompt) -> Prompt { expression }
    public static func buildExpression(_ expression: some PromptRepresentable) -> Prompt { expression.promptRepresentation }
    public static func buildArray(_ components: [Prompt]) -> Prompt { Prompt(joining: components.map(\.text)) }
    public static func buildEither(first component: Prompt) -> Prompt { component }
    public static func buildEither(second component: Prompt) -> Prompt { component }
    public static func buildOptional(_ component: Prompt?) -> Prompt { component ?? Prompt(text: "") }
    public static func buildLimitedAvailability(_ component: Prompt) -> Prompt { component }
}

/// Builds ``Instructions`` from the lines of a closure, as ``PromptBuilder`` builds prompts.
@resultBuilder
public enum InstructionsBuilder {
    public static func buildBlock(_ components: Instructions...) -> Instructions { Instructions(joining: components.map(\.text)) }
    public static func buildExpression(_ expression: Instructions) -> Instructions { expression }
    public static func buildExpression(_ expression: some InstructionsRepresentable) -> Instructions {
        expression.instructionsRepresentation
    }
    public static func buildArray(_ components: [Instructions]) -> Instructions { Instructions(joining: components.map(\.text)) }
    public static func buildEither(first component: Instructions) -> Instructions { component }
    public static func buildEither(second component: Instructions) -> Instructions { component }
    public static func buildOptional(_ component: Instructions?) -> Instructions { component ?? Instructions(text: "") }
    public static func buildLimitedAvailability(_ component: Instructions) -> Instructions { component }
}

extension Optional: PromptRepresentable where Wrapped: ConvertibleToGeneratedContent {}
extension Optional: InstructionsRepresentable where Wrapped: ConvertibleToGeneratedContent {}
