import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// A stored property of a `@Generable` structure, as the expansion needs it.
struct StoredProperty {
    var name: String
    var type: PropertyType
    /// Source text of `@Guide(description:)`, or `"nil"`.
    var description: String
    /// Source text of each guide, regex literals already turned into `.pattern("…")`.
    var guides: [String]

    /// The stored properties of a structure's or an actor's body, in declaration order, or `nil`
    /// after diagnosing one that cannot be generated. An actor's must be constants: its
    /// `generatedContent` reads them without the actor's isolation.
    static func all(in body: MemberBlockSyntax, isActor: Bool, diagnostics: DiagnosticSink) -> [StoredProperty]? {
        var properties: [StoredProperty] = []
        var failed = false
        func fail(_ node: some SyntaxProtocol, _ message: String, id: String) {
            diagnostics.error(node, message, id: id)
            failed = true
        }
        for member in body.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            if variable.modifiers.contains(where: { [.keyword(.static), .keyword(.class)].contains($0.name.tokenKind) }) { continue }
            let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
            let guide = variable.attributes.lazy.compactMap { $0.as(AttributeSyntax.self) }
                .first { $0.attributeName.trimmedDescription == "Guide" }
            for binding in variable.bindings {
                if let accessors = binding.accessorBlock, Self.isComputed(accessors) { continue }
                guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else {
                    fail(binding.pattern, "@Generable needs one name per stored property; split this declaration", id: "patternBinding")
                    continue
                }
                let name = identifier.identifier.trimmedDescription
                guard let annotation = binding.typeAnnotation?.type ?? Self.sharedAnnotation(of: binding, in: variable) else {
                    fail(binding.pattern, "'\(name)' needs a type annotation: @Generable reads each property's type", id: "missingType")
                    continue
                }
                if isActor, !isLet {
                    fail(binding.pattern, "'\(name)' is a 'var' of an actor: make it a 'let', which the value can be read from without the actor's isolation",
                         id: "actorVariable")
                    continue
                }
                if isLet, binding.initializer != nil {
                    fail(binding, "'\(name)' is a constant with an initial value, so it cannot be generated; make it a 'var' or leave it out of the type",
                         id: "initializedConstant")
                    continue
                }
                let type: PropertyType
                switch PropertyType.parse(annotation) {
                case .success(let parsed): type = parsed
                case .failure(let unsupported):
                    fail(annotation, "'\(name)' cannot be generated: \(unsupported.reason)", id: "unsupportedType")
                    continue
                }
                var description = "nil"
                var guides: [String] = []
                if let guide {
                    guard let read = GuideArguments.read(guide, for: type, property: name, diagnostics: diagnostics) else {
                        failed = true
                        continue
                    }
                    description = read.description
                    guides = read.guides
                }
                properties.append(StoredProperty(name: name, type: type, description: description, guides: guides))
            }
        }
        return failed ? nil : properties
    }

    /// Whether the accessors compute the value (observers alone keep a stored property).
    static func isComputed(_ accessors: AccessorBlockSyntax) -> Bool {
        switch accessors.accessors {
        case .getter: return true
        case .accessors(let list):
            return list.contains { [.keyword(.get), .keyword(.set), .keyword(._read), .keyword(._modify)].contains($0.accessorSpecifier.tokenKind) }
        }
    }

    /// `var a, b: Int` gives `a` the type written after `b`.
    static func sharedAnnotation(of binding: PatternBindingSyntax, in variable: VariableDeclSyntax) -> TypeSyntax? {
        guard binding.initializer == nil, let index = variable.bindings.firstIndex(where: { $0.id == binding.id }) else { return nil }
        return variable.bindings[index...].first { $0.typeAnnotation != nil }?.typeAnnotation?.type
    }
}

/// A property's type, as far as guides and optionality are concerned.
indirect enum PropertyType {
    case string
    case integer(String)
    case floatingPoint(String)
    case boolean
    case array(element: PropertyType, text: String)
    case optional(wrapped: PropertyType)
    /// Another generable type (a nested `@Generable` type, `Decimal` counts as a number).
    case other(String)

    /// The type as Swift source.
    var text: String {
        switch self {
        case .string: return "String"
        case .boolean: return "Bool"
        case .integer(let name), .floatingPoint(let name), .other(let name): return name
        case .array(_, let text): return text
        case .optional(let wrapped): return "Optional<\(wrapped.text)>"
        }
    }

    var isOptional: Bool {
        if case .optional = self { return true }
        return false
    }

    /// The type without its optionality.
    var unwrapped: PropertyType {
        if case .optional(let wrapped) = self { return wrapped }
        return self
    }

    static let integerNames: Set<String> = ["Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64"]
    static let floatingPointNames: Set<String> = ["Double", "Float", "Decimal"]

    static func parse(_ syntax: TypeSyntax) -> Result<PropertyType, Unsupported> {
        if let optional = syntax.as(OptionalTypeSyntax.self) {
            return parse(optional.wrappedType).flatMap(optional(_:))
        }
        if syntax.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
            return .failure(Unsupported("implicitly unwrapped optionals are not generable; use '?'"))
        }
        if let array = syntax.as(ArrayTypeSyntax.self) {
            return parse(array.element).map { .array(element: $0, text: "[\($0.text)]") }
        }
        if syntax.is(DictionaryTypeSyntax.self) {
            return .failure(Unsupported("dictionaries are not generable; use an array of a @Generable structure"))
        }
        if syntax.is(TupleTypeSyntax.self) || syntax.is(FunctionTypeSyntax.self) {
            return .failure(Unsupported("tuples and functions are not generable; use a @Generable structure"))
        }
        if syntax.is(SomeOrAnyTypeSyntax.self) || syntax.is(CompositionTypeSyntax.self) {
            return .failure(Unsupported("existential and opaque types are not generable; use a concrete @Generable type"))
        }
        if let identifier = syntax.as(IdentifierTypeSyntax.self), let arguments = identifier.genericArgumentClause?.arguments {
            let name = identifier.name.text
            if name == "Optional" || name == "Array", arguments.count == 1, case .type(let argument) = arguments.first?.argument {
                return parse(argument).flatMap { name == "Optional" ? optional($0) : .success(.array(element: $0, text: "[\($0.text)]")) }
            }
            if name == "Dictionary" || name == "Set" {
                return .failure(Unsupported("\(name == "Set" ? "sets" : "dictionaries") are not generable; use an array"))
            }
        }
        let text = syntax.trimmedDescription
        let base = text.hasPrefix("Swift.") ? String(text.dropFirst(6)) : (text.hasPrefix("Foundation.") ? String(text.dropFirst(11)) : text)
        switch base {
        case "String": return .success(.string)
        case "Bool": return .success(.boolean)
        case _ where integerNames.contains(base): return .success(.integer(base))
        case _ where floatingPointNames.contains(base): return .success(.floatingPoint(base))
        default: return .success(.other(text))
        }
    }

    private static func optional(_ wrapped: PropertyType) -> Result<PropertyType, Unsupported> {
        wrapped.isOptional ? .failure(Unsupported("nested optionals are not generable")) : .success(.optional(wrapped: wrapped))
    }
}

struct Unsupported: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

// MARK: - Expansion

struct StructureExpansion {
    let typeName: String
    let access: String
    let description: String
    let properties: [StoredProperty]
    /// An actor's initializer must be in its body (an extension's would have to delegate), and
    /// its `generatedContent` is `nonisolated`.
    var isActor = false

    /// The members the conformance's extension holds: they name no property's type (the
    /// property's declaration supplies it by inference), because an extension of a nested
    /// type does not see the types declared beside it.
    var conformanceMembers: String {
        isActor ? "" : valueMembers
    }

    /// `init(_:)` from content and `generatedContent`.
    private var valueMembers: String {
        let assignments = properties.map { property in
            let read = property.type.isOptional ? "_optionalValue" : "value"
            return "    self.\(Self.identifier(property.name)) = try content.\(read)(forProperty: \(Self.literal(property.name)))"
        }.joined(separator: "\n")
        let contents = properties.isEmpty ? ":" : properties.map { "\(Self.literal($0.name)): self.\(Self.identifier($0.name))" }.joined(separator: ", ")
        return """
            \(access)init(_ content: Typeset.GeneratedContent) throws {
                try content._requireComplete()
            \(assignments)
            }

            \(access)\(isActor ? "nonisolated " : "")var generatedContent: Typeset.GeneratedContent {
                Typeset.GeneratedContent(properties: [\(contents)])
            }
            """
    }

    /// The members declared in the type's body, where its properties' types are named as
    /// the user wrote them and resolve as they do there.
    var typeMembers: String {
        let schemaProperties = properties.map { property in
            let unwrapped = property.type.unwrapped
            var arguments = "name: \(Self.literal(property.name)), description: \(property.description), type: \(unwrapped.text).self"
            if property.type.isOptional { arguments += ", isOptional: true" }
            if !property.guides.isEmpty { arguments += ", guides: [\(property.guides.joined(separator: ", "))]" }
            return "            Typeset.GenerationSchema.Property(\(arguments)),"
        }.joined(separator: "\n")
        let partialProperties = properties.map { property in
            "    \(access)var \(Self.identifier(property.name)): Typeset._PartiallyGenerated<\(property.type.text)>?"
        }.joined(separator: "\n")
        let partialAssignments = properties.map { property in
            "        self.\(Self.identifier(property.name)) = try? content.value(Typeset._PartiallyGenerated<\(property.type.text)>.self, forProperty: \(Self.literal(property.name)))"
        }.joined(separator: "\n")
        return (isActor ? valueMembers + "\n\n" : "") + """
            \(access)static var generationSchema: Typeset.GenerationSchema {
                Typeset.GenerationSchema._building(Self.self) {
                    Typeset.GenerationSchema(type: Self.self, description: \(description), properties: [
            \(schemaProperties)
                    ])
                }
            }

            /// `\(typeName)` as far as it has been generated: every property is `nil` until it starts.
            \(access)struct PartiallyGenerated: Typeset.ConvertibleFromGeneratedContent, Sendable {
            \(partialProperties)

                \(access)init(_ content: Typeset.GeneratedContent) throws {
                    _ = try content.properties()
            \(partialAssignments)
                }
            }
            """
    }

    /// `text` as a Swift string literal.
    static func literal(_ text: String) -> String {
        StringLiteralExprSyntax(content: text).trimmedDescription
    }

    /// A property name as written in a member access (keywords need backquotes).
    static func identifier(_ name: String) -> String {
        name.hasPrefix("`") ? name : (_keywords.contains(name) ? "`\(name)`" : name)
    }

    static let _keywords: Set<String> = ["default", "class", "struct", "enum", "protocol", "func", "var", "let", "if", "else",
                                         "for", "while", "return", "switch", "case", "in", "import", "init", "self", "Self",
                                         "static", "public", "private", "internal", "extension", "operator", "repeat", "do",
                                         "catch", "throw", "throws", "try", "is", "as", "nil", "true", "false", "where", "break",
                                         "continue", "fallthrough", "guard", "defer", "inout", "subscript", "typealias",
                                         "associatedtype", "deinit", "fileprivate", "rethrows", "super", "Any"]
}
