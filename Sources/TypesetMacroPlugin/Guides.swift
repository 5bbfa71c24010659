import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// The arguments of a `@Guide` attribute, checked against the property's type.
struct GuideArguments {
    var description: String
    var guides: [String]

    /// Reads `attribute`; `nil` after diagnosing a guide that does not fit `type`.
    static func read(
        _ attribute: AttributeSyntax, for type: PropertyType, property: String, diagnostics: DiagnosticSink
    ) -> GuideArguments? {
        var result = GuideArguments(description: "nil", guides: [])
        guard case .argumentList(let arguments) = attribute.arguments else { return result }
        var failed = false
        for (index, argument) in arguments.enumerated() {
            // `description:`, or LEAP's unlabelled `@Guide("…")`: a string literal first.
            if argument.label?.text == "description" || (index == 0 && argument.label == nil && argument.expression.is(StringLiteralExprSyntax.self)) {
                result.description = argument.expression.trimmedDescription
                continue
            }
            if let regex = argument.expression.as(RegexLiteralExprSyntax.self) {
                guard case .string = type.unwrapped else {
                    diagnostics.error(argument, "a regex guide applies to String properties; '\(property)' is \(type.text)", id: "guideMismatch")
                    failed = true
                    continue
                }
                result.guides.append(".pattern(\(StructureExpansion.literal(wholeMatch(regex.regex.text))))")
                continue
            }
            if let name = guideName(argument.expression), !allGuides.contains(name) {
                diagnostics.error(argument, "'.\(name)' is not a guide; the guides are .range, .minimum, .maximum, .anyOf, .constant, .pattern, .count, .minimumCount, .maximumCount and .element", id: "unknownGuide")
                failed = true
                continue
            }
            if let problem = check(argument.expression, against: type.unwrapped) {
                diagnostics.error(argument, "\(problem); '\(property)' is \(type.text)", id: "guideMismatch")
                failed = true
                continue
            }
            result.guides.append(RegexLiteralsAsText().rewrite(argument.expression).trimmedDescription)
        }
        return failed ? nil : result
    }

    /// Turns `.pattern(/[A-Z]{2}[0-9]{6}/)`, as Foundation Models spells it, into
    /// `.pattern("^(?:[A-Z]{2}[0-9]{6})$")`: a `Regex` does not expose its text at run time, so
    /// the macro reads it from the literal.
    final class RegexLiteralsAsText: SyntaxRewriter {
        override func visit(_ node: RegexLiteralExprSyntax) -> ExprSyntax {
            ExprSyntax(StringLiteralExprSyntax(content: GuideArguments.wholeMatch(node.regex.text))).with(\.leadingTrivia, node.leadingTrivia)
                .with(\.trailingTrivia, node.trailingTrivia)
        }
    }

    /// A Swift regex literal's text as a JSON Schema pattern with the same meaning for a whole
    /// value: a regex guides the whole string (as `wholeMatch` reads it), while a JSON Schema
    /// pattern matches anywhere unless anchored, so the text is anchored unless it already is.
    static func wholeMatch(_ text: String) -> String {
        if text.hasPrefix("^"), text.hasSuffix("$"), !text.hasSuffix("\\$") { return text }
        return "^(?:\(text))$"
    }

    static let numericGuides: Set<String> = ["range", "minimum", "maximum"]
    static let stringGuides: Set<String> = ["anyOf", "constant", "pattern"]
    static let arrayGuides: Set<String> = ["count", "minimumCount", "maximumCount", "element"]
    static let allGuides = numericGuides.union(stringGuides).union(arrayGuides)

    /// The name of the guide `expression` spells (`range` for `.range(1...5)`), or `nil` when it
    /// is not a literal guide spelling.
    static func guideName(_ expression: ExprSyntax) -> String? {
        guard let call = expression.as(FunctionCallExprSyntax.self),
              let member = call.calledExpression.as(MemberAccessExprSyntax.self), member.base == nil
        else { return nil }
        return member.declName.baseName.text
    }

    /// Why the guide `expression` does not fit `type`, or `nil` when it does (or is no guide the
    /// macro knows: the compiler reports those).
    static func check(_ expression: ExprSyntax, against type: PropertyType) -> String? {
        guard let name = guideName(expression), let call = expression.as(FunctionCallExprSyntax.self)
        else { return nil }   // not a literal guide spelling: the compiler checks it in the expansion
        guard allGuides.contains(name) else { return nil }
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
