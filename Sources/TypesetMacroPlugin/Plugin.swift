import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin behind `@Generable` and `@Guide` (declared in the Typeset module).
@main
struct TypesetMacroPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [GenerableMacro.self, GuideMacro.self]
}
