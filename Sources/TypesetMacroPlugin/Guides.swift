import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// The arguments of a `@Guide` attribute, checked against the property's type.
struct GuideArguments {
    var description: String
    var guides: [String]

    /// Reads `attribute`; `nil` after diagnosing a guide that does not fit `type`.
    static func read(
        _ attribute: AttributeSyntax, for type: PropertyType, property: String, context: some MacroExpansionContext
    ) -> GuideArguments? {
        var result = GuideArguments(description: "nil", guides: [])
        guard case .argumentList(let arguments) = attribute.arguments else { return result }
        var failed = false
        for argument in arguments {
            if argument.label?.text == "description" {
                result.description = argument.expression.trimmedDescription
                continue
            }
            if let regex = argument.expression.as(RegexLiteralExprSyntax.self) {
                guard case .string = type.unwrapped else {
                    context.diagnose(Diagnostic(node: argument, message: Message.error(
                        "a regex guide applies to String properties; '\(property)' is \(type.text)", id: "guideMismatch")))
                    failed = true
                    continue
                }
                result.guides.append(".pattern(\(StructureExpansion.literal(regex.regex.text)))")
                continue
            }
            if let problem = check(argument.expression, against: type.unwrapped) {
                context.diagnose(Diagnostic(node: argument, message: Message.error(
                    "\(problem); '\(property)' is \(type.text)", id: "guideMismatch")))
                failed = true
                continue
            }
            result.guides.append(argument.expression.trimmedDescription)
        }
        return failed ? nil : result
    }

    static let numericGuides: Set<String> = ["range", "minimum", "maximum"]
    static let stringGuides: Set<String> = ["anyOf", "constant", "pattern"]
    static let arrayGuides: Set<String> = ["count", "minimumCount", "maximumCount", "element"]

    /// Why the guide `expression` does not fit `type`, or `nil` when it does.
    static func check(_ expression: ExprSyntax, against type: PropertyType) -> String? {
        guard let call = expression.as(FunctionCallExprSyntax.self),
              let member = call.calledExpression.as(MemberAccessExprSyntax.self), member.base == nil
        else { return nil }   // not a literal guide spelling: the compiler checks it in the expansion
        let name = member.declName.baseName.text
        switch type {
        case .integer, .floatingPoint:
            return numericGuides.contains(name) ? nil : "'.\(name)' does not apply to numbers"
        case .string:
            return stringGuides.contains(name) ? nil : "'.\(name)' does not apply to strings"
        case .array(let element, _):
            guard arrayGuides.contains(name) else { return "'.\(name)' does not apply to arrays (guide the elements with '.element(…)')" }
            if name == "element", let inner = call.arguments.first?.expression {
                if let regex = inner.as(RegexLiteralExprSyntax.self) { _ = regex; return "use '.element(.pattern(\"…\"))' for array elements" }
                return check(inner, against: element.unwrapped).map { "in '.element': \($0)" }
            }
            return nil
        case .boolean:
            return "guides do not apply to Bool"
        case .other(let typeName) where typeName == "Decimal":
            return numericGuides.contains(name) ? nil : "'.\(name)' does not apply to numbers"
        case .other:
            return "guides apply to strings, numbers and arrays; describe a nested @Generable type's constraints on its own properties"
        case .optional(let wrapped):
            return check(expression, against: wrapped)
        }
    }
}
