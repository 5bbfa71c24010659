import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// A case of a `@Generable` enumeration.
struct EnumerationCase {
    struct Value {
        /// The label in the case's declaration, if any.
        var label: String?
        /// The property name in the generated object.
        var property: String
        var type: PropertyType
    }

    var name: String
    /// The string a case without values is generated as: its `String` raw value or its name.
    var value: String
    var values: [Value]

    /// The enumeration's cases, or `nil` after diagnosing one that cannot be generated.
    static func all(in enumeration: EnumDeclSyntax, diagnostics: DiagnosticSink) -> [EnumerationCase]? {
        var cases: [EnumerationCase] = []
        var failed = false
        for member in enumeration.memberBlock.members {
            guard let declaration = member.decl.as(EnumCaseDeclSyntax.self) else { continue }
            for element in declaration.elements {
                let name = element.name.trimmedDescription
                var value = name
                if let raw = element.rawValue?.value.as(StringLiteralExprSyntax.self), let text = raw.representedLiteralValue {
                    value = text
                }
                var values: [Value] = []
                let parameters = element.parameterClause?.parameters ?? []
                for (index, parameter) in parameters.enumerated() {
                    let label = parameter.firstName.flatMap { $0.tokenKind == .wildcard ? nil : $0.text }
                    let property = label ?? (parameters.count == 1 ? "value" : "_\(index)")
                    switch PropertyType.parse(parameter.type) {
                    case .success(let type): values.append(Value(label: label, property: property, type: type))
                    case .failure(let unsupported):
                        diagnostics.error(parameter.type, "case '\(name)' cannot be generated: \(unsupported.reason)", id: "unsupportedType")
                        failed = true
                    }
                }
                if values.contains(where: { $0.property == "type" }) {
                    diagnostics.error(element, "case '\(name)' has a value labelled 'type', which names the case in the generated object; rename it",
                        id: "reservedLabel")
                    failed = true
                }
                cases.append(EnumerationCase(name: name, value: value, values: values))
            }
        }
        if cases.isEmpty {
            diagnostics.error(enumeration.name, "a @Generable enumeration needs at least one case", id: "noCases")
            return nil
        }
        return failed ? nil : cases
    }
}

struct EnumerationExpansion {
    let typeName: String
    let access: String
    let description: String
    let cases: [EnumerationCase]

    private var hasValues: Bool { !cases.allSatisfy(\.values.isEmpty) }

    /// The members the conformance's extension holds; like a structure's, they name no type
    /// of an associated value (the case's declaration supplies it by inference).
    var conformanceMembers: String { hasValues ? taggedConformanceMembers : stringConformanceMembers }

    /// The schema, declared in the enumeration's body where the values' types resolve as
    /// written.
    var typeMembers: String { hasValues ? taggedSchema : stringSchema }

    /// Cases without values: one of the strings.
    private var stringSchema: String {
        let choices = cases.map { StructureExpansion.literal($0.value) }.joined(separator: ", ")
        return """
            \(access)static var generationSchema: Typeset.GenerationSchema {
                Typeset.GenerationSchema(type: Self.self, description: \(description), anyOf: [\(choices)])
            }
            """
    }

    private var stringConformanceMembers: String {
        let decoding = cases.map { "    case \(StructureExpansion.literal($0.value)): self = .\($0.name)" }.joined(separator: "\n")
        let encoding = cases.map { "    case .\($0.name): return Typeset.GeneratedContent(kind: .string(\(StructureExpansion.literal($0.value))))" }
            .joined(separator: "\n")
        return """
            \(access)init(_ content: Typeset.GeneratedContent) throws {
                let value = try content._caseName(of: \(StructureExpansion.literal(typeName)))
                switch value {
            \(decoding)
                default: throw Typeset.GeneratedContentError.unknownCase(value, type: \(StructureExpansion.literal(typeName)), pointer: "")
                }
            }

            \(access)var generatedContent: Typeset.GeneratedContent {
                switch self {
            \(encoding)
                }
            }
            """
    }

    /// Cases with values: objects tagged by `"type"`.
    private var taggedSchema: String {
        let schemaCases = cases.map { enumerationCase in
            let properties = enumerationCase.values.map { value in
                var arguments = "name: \(StructureExpansion.literal(value.property)), type: \(value.type.unwrapped.text).self"
                if value.type.isOptional { arguments += ", isOptional: true" }
                return "Typeset.GenerationSchema.Property(\(arguments))"
            }.joined(separator: ", ")
            return "            Typeset.GenerationSchema.TaggedCase(name: \(StructureExpansion.literal(enumerationCase.value)), properties: [\(properties)]),"
        }.joined(separator: "\n")
        return """
            \(access)static var generationSchema: Typeset.GenerationSchema {
                Typeset.GenerationSchema._building(Self.self) {
                    Typeset.GenerationSchema(type: Self.self, description: \(description), taggedCases: [
            \(schemaCases)
                    ])
                }
            }
            """
    }

    private var taggedConformanceMembers: String {
        let decoding = cases.map { enumerationCase in
            let name = StructureExpansion.literal(enumerationCase.value)
            guard !enumerationCase.values.isEmpty else { return "    case \(name): self = .\(enumerationCase.name)" }
            let arguments = enumerationCase.values.map { value in
                let read = "try content.\(value.type.isOptional ? "_optionalValue" : "value")(forProperty: \(StructureExpansion.literal(value.property)))"
                return value.label.map { "\($0): \(read)" } ?? read
            }.joined(separator: ", ")
            return "    case \(name): self = .\(enumerationCase.name)(\(arguments))"
        }.joined(separator: "\n")
        let encoding = cases.map { enumerationCase in
            let tag = "\"type\": \(StructureExpansion.literal(enumerationCase.value))"
            guard !enumerationCase.values.isEmpty else {
                return "    case .\(enumerationCase.name): return Typeset.GeneratedContent(properties: [\(tag)])"
            }
            let bindings = enumerationCase.values.indices.map { "let value\($0)" }.joined(separator: ", ")
            let members = enumerationCase.values.enumerated().map { index, value in
                "\(StructureExpansion.literal(value.property)): value\(index)"
            }.joined(separator: ", ")
            return "    case .\(enumerationCase.name)(\(bindings)): return Typeset.GeneratedContent(properties: [\(tag), \(members)])"
        }.joined(separator: "\n")
        return """
            \(access)init(_ content: Typeset.GeneratedContent) throws {
                try content._requireComplete()
                let value = try content.value(String.self, forProperty: "type")
                switch value {
            \(decoding)
                default: throw Typeset.GeneratedContentError.unknownCase(value, type: \(StructureExpansion.literal(typeName)), pointer: "/type")
                }
            }

            \(access)var generatedContent: Typeset.GeneratedContent {
                switch self {
            \(encoding)
                }
            }
            """
    }
}
