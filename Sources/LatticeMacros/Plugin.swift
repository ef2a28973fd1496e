import SwiftCompilerPlugin
import SwiftSyntaxMacros

@main
struct LatticeMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [ModelMacro.self, PersistedPropertyMacro.self, MarkerMacro.self]
}
