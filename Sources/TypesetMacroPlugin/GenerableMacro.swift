import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Generable`: adds the `Generable` conformance to a structure, an actor or an enumeration.
///
/// The expansion comes in two parts, because names resolve differently in each:
///
/// - members of the type's body: `generationSchema` (built at run time from each property's
///   type and guides, so guides may use any constant expression) and, for structures,
///   `PartiallyGenerated`. They name the properties' types as written, and in the body those
///   names resolve as the user's declarations do — a type nested beside this one included.
/// - an extension adding the conformance, `init(_:)` from `GeneratedContent` and
///   `generatedContent` (for an actor, both in its body, where its initializer must be). An
///   extension keeps a structure's memberwise initializer, but an
///   extension of a nested type does not see the types nested beside it, so these members name
///   no property type: each value's type is inferred from the property it is assigned to.
///
/// The extension's expansion reports every mistake in the declaration (the compiler always
/// expands it, for the conformance; it expands members only when they are looked up); the
/// body's reads the same declaration silently and adds nothing when it has a mistake.
public struct GenerableMacro: ExtensionMacro, MemberMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        let typeName = type.trimmedDescription
        guard let expansion = Expansion(of: node, attachedTo: declaration, typeName: typeName, diagnostics: DiagnosticSink(context: context))
        else { return [] }
        let conformance = protocols.isEmpty ? "" : ": Typeset.Generable"
        let extensionDecl: DeclSyntax = "extension \(raw: typeName)\(raw: conformance) {\n\(raw: expansion.conformanceMembers)\n}"
        return [extensionDecl.cast(ExtensionDeclSyntax.self)]
    }

    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        let typeName = declaration.asProtocol(NamedDeclSyntax.self)?.name.trimmedDescription ?? "Self"
        guard let expansion = Expansion(of: node, attachedTo: declaration, typeName: typeName, diagnostics: DiagnosticSink(context: nil))
        else { return [] }
        return [DeclSyntax(stringLiteral: expansion.typeMembers)]
    }

    /// A structure's or an enumeration's expansion.
    enum Expansion {
        case structure(StructureExpansion)
        case enumeration(EnumerationExpansion)

        /// `nil` after reporting to `diagnostics` why `declaration` cannot be generated.
        init?(of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, typeName: String, diagnostics: DiagnosticSink) {
            let description = GenerableMacro.argument("description", of: node)
            let access = GenerableMacro.accessModifier(of: declaration)
            if let structure = declaration.as(StructDeclSyntax.self) {
                guard let properties = StoredProperty.all(in: structure.memberBlock, isActor: false, diagnostics: diagnostics) else { return nil }
                self = .structure(StructureExpansion(typeName: typeName, access: access, description: description, properties: properties))
            } else if let actor = declaration.as(ActorDeclSyntax.self) {
                guard let properties = StoredProperty.all(in: actor.memberBlock, isActor: true, diagnostics: diagnostics) else { return nil }
                self = .structure(StructureExpansion(
                    typeName: typeName, access: access, description: description, properties: properties, isActor: true))
            } else if let enumeration = declaration.as(EnumDeclSyntax.self) {
                guard let cases = EnumerationCase.all(in: enumeration, diagnostics: diagnostics) else { return nil }
                self = .enumeration(EnumerationExpansion(typeName: typeName, access: access, description: description, cases: cases))
            } else {
                diagnostics.error(node, "@Generable applies to structures, actors and enumerations", id: "unsupportedDeclaration")
                return nil
            }
        }

        var conformanceMembers: String {
            switch self {
            case .structure(let structure): return structure.conformanceMembers
            case .enumeration(let enumeration): return enumeration.conformanceMembers
            }
        }

        var typeMembers: String {
            switch self {
            case .structure(let structure): return structure.typeMembers
            case .enumeration(let enumeration): return enumeration.typeMembers
            }
        }
    }

    /// The source text of the argument labelled `label` (or of an unlabelled first argument,
    /// as `@Generatable("…")` gives its description), or `"nil"`.
    static func argument(_ label: String, of node: AttributeSyntax) -> String {
        guard case .argumentList(let arguments) = node.arguments,
              let argument = arguments.first(where: { $0.label?.text == label }) ?? arguments.first.flatMap({ $0.label == nil ? $0 : nil })
        else { return "nil" }
        return argument.expression.trimmedDescription
    }

    /// `public ` or `package ` when the type is, so the conformance's members are visible where the type is.
    static func accessModifier(of declaration: some DeclGroupSyntax) -> String {
        for modifier in declaration.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }
}

/// `@Guide`: read by `@Generable`; on its own it adds nothing.
public struct GuideMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        if !declaration.is(VariableDeclSyntax.self) {
            DiagnosticSink(context: context).error(node, "@Guide applies to stored properties of @Generable types", id: "guideOnNonProperty")
        }
        return []
    }
}

// MARK: - Diagnostics

/// Where a reading of the declaration reports its mistakes: the compiler, or nowhere (the
/// second of the two expansions reads the same declaration).
struct DiagnosticSink {
    let context: (any MacroExpansionContext)?

    func error(_ node: some SyntaxProtocol, _ message: String, id: String) {
        context?.diagnose(Diagnostic(node: node, message: Message.error(message, id: id)))
    }
}

struct Message: DiagnosticMessage {
    let message: String
    let diagnosticID: MessageID
    let severity: DiagnosticSeverity

    static func error(_ message: String, id: String) -> Message {
        Message(message: message, diagnosticID: MessageID(domain: "Typeset", id: id), severity: .error)
    }
}
