import LatticeMacros
import SwiftSyntaxMacros
import SwiftSyntaxMacrosTestSupport
import XCTest

/// What `@Model` writes, and what it refuses with a message.
final class ModelMacroTests: XCTestCase {
    let macros: [String: Macro.Type] = [
        "Model": ModelMacro.self, "_PersistedProperty": PersistedPropertyMacro.self,
        "Attribute": MarkerMacro.self, "Relationship": MarkerMacro.self, "Transient": MarkerMacro.self,
        // The macro names its own attributes by module, as the compiler resolves them.
        "Lattice._PersistedProperty": PersistedPropertyMacro.self, "Lattice.Transient": MarkerMacro.self,
    ]

    func testAModelListsItsStoredPropertiesAndMarksThem() {
        assertMacroExpansion(
            """
            @Model final class Tag {
                @Attribute(.unique) var name: String = ""
                var note: String?
                @Attribute(originalName: "hue") var color: String = ""
                @Relationship(deleteRule: .cascade, inverse: \\Todo.tag) var todos: [Todo] = []
                @Transient var cache: Int = 0
                static var count = 0
                var computed: Int { 1 }
            }
            """,
            expandedSource: """
            final class Tag {
                @Lattice._PersistedProperty var name: String = ""
                @Lattice._PersistedProperty
                var note: String?
                @Lattice._PersistedProperty var color: String = ""
                @Lattice._PersistedProperty var todos: [Todo] = []
                var cache: Int = 0
                static var count = 0
                var computed: Int { 1 }

                var _$backing = Lattice.ModelBacking()

                required init(_$backing backing: Lattice.ModelBacking) {
                    _$backing = backing
                }

                init() {
                }
            }

            extension Tag: Lattice.PersistentModel {
                static var _$properties: [Lattice.ModelProperty<Tag>] {
                    [
                        .property(\\Tag.name, name: "name", unique: true),
                        .property(\\Tag.note, name: "note"),
                        .property(\\Tag.color, name: "hue"),
                        .property(\\Tag.todos, name: "todos", relationship: .init(deleteRule: .cascade, inverse: \\Todo.tag))
                    ]
                }
            }
            """,
            macros: macros)
    }

    func testAStoredPropertyGoesThroughTheBacking() {
        assertMacroExpansion(
            """
            final class Tag {
                @_PersistedProperty var name: String = ""
            }
            """,
            expandedSource: """
            final class Tag {
                var name: String {
                    @storageRestrictions(initializes: _name)
                    init(initialValue) {
                        _name = initialValue
                    }
                    get {
                        _$backing._get(self, _name, "name")
                    }
                    set {
                        _$backing._set(self, &_name, newValue, "name")
                    }
                }

                @Lattice.Transient private var _name: String = ""
            }
            """,
            macros: macros)
    }

    func testAPropertyWithoutADefaultIsRefusedWithTheReason() {
        assertMacroExpansion(
            """
            final class Bill {
                @_PersistedProperty var payee: String
            }
            """,
            expandedSource: """
            final class Bill {
                var payee: String {
                    @storageRestrictions(initializes: _payee)
                    init(initialValue) {
                        _payee = initialValue
                    }
                    get {
                        _$backing._get(self, _payee, "payee")
                    }
                    set {
                        _$backing._set(self, &_payee, newValue, "payee")
                    }
                }
            }
            """,
            diagnostics: [DiagnosticSpec(message: #"a model property needs a default value or an optional type (`var title: String = ""`): a record written by another version of the app may lack the field"#, line: 2, column: 5)],
            macros: macros)
    }

    func testAStructIsRefused() {
        assertMacroExpansion(
            "@Model struct Point { var x: Int = 0 }",
            expandedSource: "struct Point { var x: Int = 0 \n}",
            diagnostics: [DiagnosticSpec(message: "@Model applies to a class: objects are shared by reference, as SwiftData's are", line: 1, column: 1)],
            macros: macros)
    }

    func testObserversAndSeveralBindingsAreRefused() {
        assertMacroExpansion(
            """
            @Model final class Note {
                var a = 0, b = 0
                var title: String = "" { didSet { } }
            }
            """,
            expandedSource: """
            final class Note {
                var a = 0, b = 0
                var title: String = "" { didSet { } }

                var _$backing = Lattice.ModelBacking()

                required init(_$backing backing: Lattice.ModelBacking) {
                    _$backing = backing
                }

                init() {
                }
            }

            extension Note: Lattice.PersistentModel {
                static var _$properties: [Lattice.ModelProperty<Note>] {
                    []
                }
            }
            """,
            diagnostics: [
                DiagnosticSpec(message: "declare one model property per `var`: each is routed through the store", line: 2, column: 5),
                DiagnosticSpec(message: "a model property cannot have willSet or didSet: mark it @Transient, or observe changes through the container's changes()", line: 3, column: 5),
            ],
            macros: macros)
    }
}
