import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// Routes one stored property of a model through the object's backing: the
/// value lives in a private peer (`_title`), reads of relationships resolve
/// through the context, and writes are recorded as changed fields.
public struct PersistedPropertyMacro: AccessorMacro, PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self), let property = StoredProperty(variable) else { return [] }
        let storage = "_\(property.name)"
        return [
            """
            @storageRestrictions(initializes: \(raw: storage))
            init(initialValue) { \(raw: storage) = initialValue }
            """,
            "get { _$backing._get(self, \(raw: storage), \"\(raw: property.fieldName)\") }",
            "set { _$backing._set(self, &\(raw: storage), newValue, \"\(raw: property.fieldName)\") }",
        ]
    }

    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self), let property = StoredProperty(variable) else { return [] }
        guard let type = property.binding.typeAnnotation?.type.trimmed else {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: variable, message: ModelDiagnostic.needsType)])
        }
        let initial: String
        if let value = property.binding.initializer?.value {
            initial = value.trimmedDescription
        } else if type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) || type.trimmedDescription.hasPrefix("Optional<") {
            initial = "nil"
        } else {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: variable, message: ModelDiagnostic.needsDefault)])
        }
        return ["@Lattice.Transient private var _\(raw: property.name): \(type) = \(raw: initial)"]
    }
}

/// `@Attribute`, `@Relationship`, `@Transient`: marks that `@Model` reads; they add nothing themselves.
public struct MarkerMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] { [] }
}
