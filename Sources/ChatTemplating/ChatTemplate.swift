import Foundation

// MARK: - ChatTemplate

/// A Jinja chat template (a GGUF `tokenizer.chat_template` or a `tokenizer_config.json`
/// `chat_template`), parsed once and rendered many times.
///
/// Rendering matches Python transformers' `apply_chat_template`, which uses
/// `jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)`
/// with the `loopcontrols` extension (`break`/`continue`), a `{% generation %}` block, a
/// `tojson` filter that does not escape HTML or sort keys, and the globals
/// `raise_exception(message)` and `strftime_now(format)`.
///
/// ```swift
/// let template = try ChatTemplate(source)
/// let prompt = try template.render(
///     messages: [["role": "user", "content": "Hello!"]],
///     addGenerationPrompt: true, bosToken: "<s>")
/// ```
///
/// Templates are untrusted input: parsing and rendering never trap, and every render is
/// bounded by ``Limits``.
public struct ChatTemplate: Sendable {
    /// Resource bounds that keep a hostile template from hanging or exhausting memory or stack.
    public struct Limits: Sendable, Equatable {
        /// Maximum UTF-8 bytes of output, and of any single string the template builds.
        /// The template may build at most 16 times this many bytes of strings in total.
        public var maximumOutputLength = 8 * 1024 * 1024
        /// Maximum `for` iterations (including items tested by a loop's `if`) in one render.
        public var maximumLoopIterations = 1_000_000
        /// Maximum nesting of blocks and expressions in the template source.
        public var maximumNestingDepth = 100
        /// Maximum depth of evaluation at render time (nested expressions, blocks and macro
        /// calls together); stops runaway macro recursion before the stack does.
        public var maximumEvaluationDepth = 400
        /// Maximum length of a `range(…)`, as in Jinja's sandbox (`MAX_RANGE`).
        public var maximumRangeLength = 100_000
        /// Maximum items in a list built by `+` or `*`.
        public var maximumCollectionLength = 1_000_000

        public init() {}
    }

    /// The template text as given.
    public let source: String
    /// The limits applied when rendering.
    public var limits: Limits

    private let tree: SyntaxTree

    /// Whether the template reads the `tools` variable (it can describe tools to the model).
    public let mentionsTools: Bool
    /// Whether the template refers to `tool_calls` (it can render assistant tool calls).
    public let mentionsToolCalls: Bool
    /// Every variable name the template reads (context variables, globals and its own locals).
    public let referencedVariables: Set<String>

    /// Parses a template.
    ///
    /// - Throws: ``ChatTemplateError/syntax(message:line:column:)`` for invalid Jinja (including
    ///   an unknown filter or test), ``ChatTemplateError/unsupported(feature:line:column:)`` for
    ///   Jinja features outside this interpreter, ``ChatTemplateError/limitExceeded(message:line:column:)``
    ///   for nesting deeper than ``Limits/maximumNestingDepth``.
    public init(_ source: String, limits: Limits = Limits()) throws(ChatTemplateError) {
        self.source = source
        self.limits = limits
        let maximumNesting = limits.maximumNestingDepth
        let parsed = LargeStack.run { () -> Result<([Node], Set<String>, Set<String>, Set<String>), ChatTemplateError> in
            do throws(ChatTemplateError) {
                let nodes = try TemplateParser.parse(source, maximumNesting: maximumNesting)
                var names = Set<String>()
                var attributes = Set<String>()
                var strings = Set<String>()
                NameCollector.collect(nodes, into: &names, attributes: &attributes, strings: &strings)
                return .success((nodes, names, attributes, strings))
            } catch {
                return .failure(error)
            }
        }
        let (nodes, names, attributes, strings) = try parsed.get()
        self.tree = SyntaxTree(nodes)
        referencedVariables = names
        mentionsTools = names.contains("tools")
        mentionsToolCalls = attributes.contains("tool_calls") || strings.contains("tool_calls")
    }

    /// Renders the template with the given variables.
    ///
    /// - Parameters:
    ///   - context: The template's variables (`messages`, `add_generation_prompt`, …).
    ///   - now: The instant `strftime_now` formats.
    ///   - timeZone: The time zone `strftime_now` formats in (Python uses local time).
    /// - Throws: ``ChatTemplateError/raised(message:)`` when the template calls
    ///   `raise_exception`, or another ``ChatTemplateError`` when evaluation fails.
    public func render(
        _ context: [String: TemplateValue], now: Date = Date(), timeZone: TimeZone = .current
    ) throws(ChatTemplateError) -> String {
        let tree = tree
        let limits = limits
        return try LargeStack.run { () -> Result<String, ChatTemplateError> in
            do throws(ChatTemplateError) {
                let renderer = Renderer(limits: limits, now: now, timeZone: timeZone)
                let scope = Scope(parent: nil)
                for (name, value) in context {
                    scope.set(name, RuntimeValue(value, depth: 0))
                }
                var output = ""
                _ = try renderer.execute(tree.nodes, in: scope, into: &output)
                return .success(output)
            } catch {
                return .failure(error)
            }
        }.get()
    }

    /// Renders a conversation the way transformers' `apply_chat_template(tokenize=False)` does.
    ///
    /// - Parameters:
    ///   - messages: The conversation, as objects with `role` and `content` (and, for tool use,
    ///     `tool_calls` or `tool_call_id`), in OpenAI's shape.
    ///   - tools: JSON schemas of the available tools, or nil (the template then sees `tools` as `none`).
    ///   - addGenerationPrompt: Whether to append the header that starts the assistant's reply.
    ///   - bosToken: The `bos_token` variable.
    ///   - eosToken: The `eos_token` variable.
    ///   - variables: Extra variables such as `enable_thinking` or `date_string`; the
    ///     named parameters take precedence over entries with the same names.
    ///   - now: The instant `strftime_now` formats.
    ///   - timeZone: The time zone `strftime_now` formats in.
    public func render(
        messages: [TemplateValue],
        tools: [TemplateValue]? = nil,
        addGenerationPrompt: Bool,
        bosToken: String = "",
        eosToken: String = "",
        variables: [String: TemplateValue] = [:],
        now: Date = Date(),
        timeZone: TimeZone = .current
    ) throws(ChatTemplateError) -> String {
        var context = variables
        if context["documents"] == nil { context["documents"] = TemplateValue.none }
        context["messages"] = .array(messages)
        context["tools"] = tools.map { .array($0) } ?? TemplateValue.none
        context["add_generation_prompt"] = .boolean(addGenerationPrompt)
        context["bos_token"] = .string(bosToken)
        context["eos_token"] = .string(eosToken)
        return try render(context, now: now, timeZone: timeZone)
    }
}

// MARK: - Stack

/// A parsed template's nodes, freed on the large stack.
///
/// Freeing a tree recurses once per level, like building it: a long filter chain (which the
/// parser does not count as nesting) makes a tree thousands of levels deep, and releasing it
/// on a small stack (a 512 KiB secondary thread) would overflow. The last reference moves the
/// nodes to a `LargeStack` thread and drops them there.
final class SyntaxTree: @unchecked Sendable {
    /// Set once in `init`; emptied only in `deinit`.
    private(set) var nodes: [Node]

    init(_ nodes: [Node]) { self.nodes = nodes }

    deinit {
        guard !nodes.isEmpty else { return }
        let doomed = Doomed(nodes)
        nodes = []
        LargeStack.run { doomed.nodes = [] }
    }

    private final class Doomed: @unchecked Sendable {
        var nodes: [Node]
        init(_ nodes: [Node]) { self.nodes = nodes }
    }
}

/// Runs work on a thread with a known, large stack.
///
/// Parsing and rendering recurse once per nesting level of the template (a few KiB per level
/// in debug builds). Running them on a dedicated 16 MiB stack makes ``ChatTemplate/Limits``
/// sufficient to rule out stack overflow whatever thread the caller is on (secondary threads
/// on Apple platforms have only 512 KiB).
enum LargeStack {
    static let size = 16 << 20

    private final class Box<T>: @unchecked Sendable {
        var value: T?
        let finished = DispatchSemaphore(value: 0)
    }

    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) -> T {
        let box = Box<T>()
        let thread = Thread {
            box.value = work()
            box.finished.signal()
        }
        thread.stackSize = size
        thread.start()
        box.finished.wait()
        guard let value = box.value else {
            // Unreachable: the thread always stores a value before signalling.
            return work()
        }
        return value
    }
}
