import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model`: a class's stored `var`s become the fields of a record type.
///
/// It adds the backing the runtime keeps per object, an initializer the
/// runtime makes objects with (every property takes its default), an `init()`
/// when the class declares none, and the property list the schema is built
/// from; each stored property gets `@_PersistedProperty`, which routes it
/// through the backing.
public struct ModelMacro: MemberMacro, MemberAttributeMacro, ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax, providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self) else {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: node, message: ModelDiagnostic.notAClass)])
        }
        let access = accessPrefix(of: declaration)
        var members: [DeclSyntax] = [
            "\(raw: access)var _$backing = Lattice.ModelBacking()",
            "\(raw: access)required init(_$backing backing: Lattice.ModelBacking) { _$backing = backing }",
        ]
        let declaresInit = declaration.memberBlock.members.contains { $0.decl.is(InitializerDeclSyntax.self) }
        if !declaresInit { members.append("\(raw: access)init() {}") }
        return members
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol, in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard declaration.is(ClassDeclSyntax.self), let property = member.as(VariableDeclSyntax.self) else { return [] }
        try StoredProperty.refuseUnstorable(property)
        guard let stored = StoredProperty(property) else { return [] }
        if stored.isTransient || stored.hasAttribute("_PersistedProperty") { return [] }
        return ["@Lattice._PersistedProperty"]
    }

    public static func expansion(
        of node: AttributeSyntax, attachedTo declaration: some DeclGroupSyntax, providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax], in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else { return [] }
        let typeName = classDecl.name.trimmed.text
        var entries: [String] = []
        for member in classDecl.memberBlock.members {
            guard let property = member.decl.as(VariableDeclSyntax.self), let stored = StoredProperty(property), !stored.isTransient else { continue }
            entries.append("            .property(\\\(typeName).\(stored.name), name: \"\(stored.fieldName)\"\(stored.options))")
        }
        let access = accessPrefix(of: declaration)
        let body = entries.isEmpty ? "[]" : "[\n" + entries.joined(separator: ",\n") + "\n        ]"
        let decl: DeclSyntax = """
            extension \(type.trimmed): Lattice.PersistentModel {
                \(raw: access)static var _$properties: [Lattice.ModelProperty<\(raw: typeName)>] {
                    \(raw: body)
                }
            }
            """
        return [decl.cast(ExtensionDeclSyntax.self)]
    }

    /// `public ` for a public or open class, so the members that satisfy the protocol are visible where the class is.
    static func accessPrefix(of declaration: some DeclGroupSyntax) -> String {
        let modifiers = declaration.modifiers.map(\.name.tokenKind)
        if modifiers.contains(.keyword(.public)) || modifiers.contains(.keyword(.open)) { return "public " }
        if modifiers.contains(.keyword(.package)) { return "package " }
        return ""
    }
}

/// A `var` of a model that the runtime stores: one binding, no accessors of its own, not static or lazy.
struct StoredProperty {
    let declaration: VariableDeclSyntax
    let binding: PatternBindingSyntax
    let name: String

    init?(_ declaration: VariableDeclSyntax) {
        guard declaration.bindingSpecifier.tokenKind == .keyword(.var), declaration.bindings.count == 1,
              let binding = declaration.bindings.first, binding.accessorBlock == nil,
              let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { return nil }
        let excluded: [Keyword] = [.static, .class, .lazy]
        guard !declaration.modifiers.contains(where: { modifier in excluded.contains { modifier.name.tokenKind == .keyword($0) } }) else { return nil }
        self.declaration = declaration
        self.binding = binding
        name = pattern.identifier.trimmed.text.filter { $0 != "`" }
    }

    /// A `var` that would hold data but that the macro cannot route through
    /// the store (observers, several bindings) is an error, not silently left out.
    static func refuseUnstorable(_ declaration: VariableDeclSyntax) throws {
        guard declaration.bindingSpecifier.tokenKind == .keyword(.var),
              !declaration.modifiers.contains(where: { [.keyword(.static), .keyword(.class)].contains($0.name.tokenKind) }),
              !declaration.attributes.contains(where: { $0.as(AttributeSyntax.self)?.attributeName.trimmedDescription.hasSuffix("Transient") == true })
        else { return }
        if declaration.bindings.count > 1 {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: declaration, message: ModelDiagnostic.severalBindings)])
        }
        if case .accessors(let accessors)? = declaration.bindings.first?.accessorBlock?.accessors,
           accessors.contains(where: { [.keyword(.willSet), .keyword(.didSet)].contains($0.accessorSpecifier.tokenKind) }) {
            throw DiagnosticsError(diagnostics: [Diagnostic(node: declaration, message: ModelDiagnostic.observers)])
        }
    }

    func attribute(_ name: String) -> AttributeSyntax? {
        for element in declaration.attributes {
            guard let attribute = element.as(AttributeSyntax.self) else { continue }
            let written = attribute.attributeName.trimmedDescription
            if written == name || written == "Lattice.\(name)" { return attribute }
        }
        return nil
    }

    func hasAttribute(_ name: String) -> Bool { attribute(name) != nil }

    var isTransient: Bool { hasAttribute("Transient") }

    /// The record field's name: `@Attribute(originalName:)` or the property's.
    var fieldName: String {
        guard let arguments = attribute("Attribute")?.arguments?.as(LabeledExprListSyntax.self) else { return name }
        for argument in arguments where argument.label?.text == "originalName" {
            if let literal = argument.expression.as(StringLiteralExprSyntax.self), literal.segments.count == 1,
               let segment = literal.segments.first?.as(StringSegmentSyntax.self) {
                return segment.content.text
            }
        }
        return name
    }

    /// The arguments after the key path and name: `unique: true`, `relationship: .init(...)`.
    var options: String {
        var parts: [String] = []
        if let arguments = attribute("Attribute")?.arguments?.as(LabeledExprListSyntax.self),
           arguments.contains(where: { $0.label == nil && $0.expression.trimmedDescription.hasSuffix("unique") }) {
            parts.append("unique: true")
        }
        let preserves = attribute("Attribute")?.arguments?.as(LabeledExprListSyntax.self)?
            .contains(where: { $0.label == nil && $0.expression.trimmedDescription.hasSuffix("preserveValueOnDeletion") }) ?? false
        if let relationship = attribute("Relationship") {
            let arguments = relationship.arguments?.as(LabeledExprListSyntax.self).map { list in
                list.filter { ["deleteRule", "inverse"].contains($0.label?.text ?? "") }
                    .map { "\($0.label!.text): \($0.expression.trimmedDescription)" }
            } ?? []
            parts.append("relationship: .init(\(arguments.joined(separator: ", ")))")
        }
        if preserves { parts.append("preservesValueOnDeletion: true") }
        return parts.map { ", " + $0 }.joined()
    }
}

enum ModelDiagnostic: String, DiagnosticMessage {
    case notAClass
    case needsDefault
    case needsType
    case severalBindings
    case observers

    var message: String {
        switch self {
        case .notAClass: return "@Model applies to a class: objects are shared by reference, as SwiftData's are"
        case .needsDefault: return "a model property needs a default value or an optional type (`var title: String = \"\"`): a record written by another version of the app may lack the field"
        case .needsType: return "write the property's type (`var title: String = \"\"`): the macro routes it through the store"
        case .severalBindings: return "declare one model property per `var`: each is routed through the store"
        case .observers: return "a model property cannot have willSet or didSet: mark it @Transient, or observe changes through the container's changes()"
        }
    }

    var diagnosticID: MessageID { MessageID(domain: "LatticeMacros", id: rawValue) }
    var severity: DiagnosticSeverity { .error }
}
