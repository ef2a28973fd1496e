import Foundation
import Lattice
import LatticeTestSupport
import Testing

/// A model container on a fresh store in a temporary directory, without a sync node.
func openContainer(_ types: [any PersistentModel.Type], in directory: TemporaryDirectory, name: String) async throws -> ModelContainer {
    try await ModelContainer(for: types, configuration: ModelConfiguration("com.example.models", directory: directory.url.appendingPathComponent(name), sync: .none))
}

/// Sends each side what the other lacks, by change sets, as a sync session would.
func exchange(_ a: ModelContainer, _ b: ModelContainer) throws {
    try send(a, to: b)
    try send(b, to: a)
}

func send(_ from: ModelContainer, to: ModelContainer) throws {
    for zone in try from.store.allZoneKeys() {
        _ = try to.store.apply(changeSet: from.store.changeSet(for: zone, since: to.store.vector(for: zone)))
    }
}

/// Expects `body` to fail with `code`.
func expectError<T>(_ code: LatticeError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    do {
        _ = try body()
        Issue.record("expected \(code), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as LatticeError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

var seedModels: [any PersistentModel.Type] { [Movie.self, Review.self, Todo.self, Tag.self, Category.self, Bill.self] }
