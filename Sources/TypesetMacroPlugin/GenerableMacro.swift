import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Generable`: adds the `Generable` conformance to a structure or an enumeration.
///
/// The expansion is one extension (so a structure keeps its memberwise initializer) holding
/// `generationSchema` (built at run time from each property's type and guides, so guides may
/// use any constant expression), `init(_:)` from `GeneratedContent`, `generatedContent` and,
/// for structures, `PartiallyGenerated`.
public struct GenerableMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol, conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        let description = Self.argument("description", of: node)
        let access = Self.accessModifier(of: declaration)
        let typeName = type.trimmedDescription
        let conformance = protocols.isEmpty ? "" : ": Typeset.Generable"
        let members: String
        if let structure = declaration.as(StructDeclSyntax.self) {
            guard let properties = StoredProperty.all(in: structure, context: context) else { return [] }
            members = StructureExpansion(typeName: typeName, access: access, description: description, properties: properties).members
        } else if let enumeration = declaration.as(EnumDeclSyntax.self) {
            guard let cases = EnumerationCase.all(in: enumeration, context: context) else { return [] }
            members = EnumerationExpansion(typeName: typeName, access: access, description: description, cases: cases).members
        } else {
            context.diagnose(Diagnostic(node: node, message: Message.error(
                "@Generable applies to structures and enumerations",
                id: "unsupportedDeclaration")))
            return []
        }
        let extensionDecl: DeclSyntax = "extension \(raw: typeName)\(raw: conformance) {\n\(raw: members)\n}"
        return [extensionDecl.cast(ExtensionDeclSyntax.self)]
    }

    /// The source text of the argument labelled `label`, or `"nil"`.
    static func argument(_ label: String, of node: AttributeSyntax) -> String {
        guard case .argumentList(let arguments) = node.arguments,
              let argument = arguments.first(where: { $0.label?.text == label })
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
            context.diagnose(Diagnostic(node: node, message: Message.error(
                "@Guide applies to stored properties of @Generable types", id: "guideOnNonProperty")))
        }
        return []
    }
}

// MARK: - Diagnostics

struct Message: DiagnosticMessage {
    let message: String
    let diagnosticID: MessageID
    let severity: DiagnosticSeverity

    static func error(_ message: String, id: String) -> Message {
        Message(message: message, diagnosticID: MessageID(domain: "Typeset", id: id), severity: .error)
    }
}
