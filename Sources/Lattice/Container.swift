import Foundation
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore

/// A container, as `CKContainer`: one replica directory per container and device.
public final class Container: Sendable {
    public let containerIdentifier: String
    let store: RecordStore

    /// Turns off the check of received writes against their writers'
    /// signatures, to measure its cost (`Benchmarks/`); never for real use.
    @_spi(Benchmarks) public func skipWriteChecks() { store.checksWrites = false }
    /// Runs `body` with commits that do not wait for the disk (as `lattice batch`
    /// commits): benchmarks that build long histories.
    @_spi(Benchmarks) public func withoutDurableCommits<T>(_ body: () throws -> T) rethrows -> T {
        store.durableCommits = false
        defer { store.durableCommits = true }
        return try body()
    }
    /// Plays a modified client (tests only): writes and takes what the write rights refuse.
    @_spi(Testing) public func ignoreWriteRights() { store.ignoresWriteRights = true }

    /// Opens (creating if needed) the container's replica in `directory`, or in
    /// the default location `$XDG_DATA_HOME/lattice/<identifier>`.
    public convenience init(identifier: String, directory: URL? = nil, create: Bool = true) throws(LatticeError) {
        try self.init(identifier: identifier, directory: directory, create: create, forOneCommand: false)
    }

    /// With `forOneCommand`, for a process that runs one short command (a
    /// `lattice` call): reads share the writer's connection, so it opens one
    /// SQLite connection instead of two.
    /// For a command that leaves the store open as it exits: empties the
    /// write-ahead log if it grew past a megabyte (the next process to open the
    /// store alone would read it whole), else leaves it for the next writer.
    /// Not while a node runs on the store: it keeps the store open (no one
    /// will read the log whole), and emptying the log then copied a log its
    /// readers kept growing, holding the node's writes up (1.5 s under load).
    @_spi(CommandLine) public func emptyLargeLog() throws(LatticeError) {
        guard !NodeStatus.nodeRuns(store: directory) else { return }
        _ = try LatticeError.wrap { try store.truncateLog(ifLargerThan: 1 << 20) }
    }

    @_spi(CommandLine) public init(identifier: String, directory: URL? = nil, create: Bool = true, forOneCommand: Bool) throws(LatticeError) {
        guard !identifier.isEmpty, !identifier.contains("/") else {
            throw LatticeError(.badContainer, "container identifier \"\(identifier)\" must be non-empty and contain no '/'")
        }
        containerIdentifier = identifier
        let location = directory ?? Container.defaultDirectory(for: identifier)
        store = try LatticeError.wrap { try RecordStore(directory: location, create: create, readsOnWriterConnection: forOneCommand) }
    }

    /// `$XDG_DATA_HOME/lattice/<identifier>`, else `~/.local/share/lattice/<identifier>`.
    public static func defaultDirectory(for identifier: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            base = URL(fileURLWithPath: xdg)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share")
        }
        return base.appendingPathComponent("lattice").appendingPathComponent(identifier)
    }

    public var directory: URL { store.directory }

    /// This device's ID, derived from its Ed25519 public key, in the form people compare.
    public var deviceID: String { store.identity.deviceID.description }

    /// The replica ID this device stamps its writes with.
    public var replicaID: ReplicaID { store.replica }

    /// A name people give this device (`lattice init --name`), if any.
    public func deviceName() throws(LatticeError) -> String? {
        try LatticeError.wrap { try store.read { try $0.setting("deviceName") } }
    }

    public func setDeviceName(_ name: String) throws(LatticeError) {
        try LatticeError.wrap { try store.write { try $0.setSetting("deviceName", to: name) } }
    }

    /// The last commit's sequence number; it moves with every commit of any process.
    public func commitSequence() throws(LatticeError) -> UInt64 {
        try LatticeError.wrap { try store.currentSequence() }
    }

    public func database(with scope: DatabaseScope) -> Database { Database(container: self, scope: scope) }
    public var privateCloudDatabase: Database { database(with: .private) }
    public var sharedCloudDatabase: Database { database(with: .shared) }
    public var publicCloudDatabase: Database { database(with: .public) }

    // MARK: Schema

    public func schema() throws(LatticeError) -> Schema {
        try LatticeError.wrap { try store.read { try $0.schema() } }
    }

    /// Moves the container to production: from now on unknown record types and
    /// fields are rejected, here and on every replica this reaches.
    public func deploySchema() throws(LatticeError) {
        try LatticeError.wrap { try store.write { _ = try $0.deploySchema() } }
    }

    /// Adds index kinds to a field, as CloudKit's schema does: queryable and
    /// sortable fields are filtered and sorted through an SQLite index,
    /// searchable string fields answer token searches from a token index.
    /// Every record of the type is indexed now, and every later write and
    /// merge keeps the index current. The index travels with the schema to
    /// the other replicas. Returns the kinds that were new.
    @discardableResult
    public func addIndex(_ kinds: IndexKinds, field: String, of recordType: String) throws(LatticeError) -> IndexKinds {
        try RecordValidation.checkIdentifier(recordType, what: "record type")
        try RecordValidation.checkIdentifier(field, what: "field name")
        return try LatticeError.wrap { try store.write { try $0.addIndex(kinds, field: field, of: recordType) } }
    }

    /// Removes index kinds from a field on this device; queries return the
    /// same records, read without that index. Removal is local: it is not
    /// sent to other replicas (each keeps the indexes it was given), and a
    /// peer's schema that carries the kinds does not bring them back here;
    /// `addIndex` does. Returns the kinds the field had and no longer has.
    @discardableResult
    public func removeIndex(_ kinds: IndexKinds, field: String, of recordType: String) throws(LatticeError) -> IndexKinds {
        try RecordValidation.checkIdentifier(recordType, what: "record type")
        try RecordValidation.checkIdentifier(field, what: "field name")
        return try LatticeError.wrap { try store.write { try $0.removeIndex(kinds, field: field, of: recordType) } }
    }

    /// Declares record types and fields ahead of their first records, as a
    /// model container does for its models: nothing is written when the schema has them.
    func declare(recordTypes: [String], fields: [(recordType: String, field: String, type: FieldType)]) throws(LatticeError) {
        let current = try schema()
        let complete = recordTypes.allSatisfy(current.recordTypes.contains) && fields.allSatisfy { current.field($0.field, of: $0.recordType)?.type == $0.type }
        if complete { return }
        try LatticeError.wrap { _ = try store.write { try $0.declare(recordTypes: recordTypes, fields: fields) } }
    }

    // MARK: Change sets

    /// Every zone of every database that this store knows, deleted ones included.
    public func allZoneKeys() throws(LatticeError) -> [ZoneKey] {
        try LatticeError.wrap {
            try store.read { snapshot in try DatabaseScope.allCases.flatMap { try snapshot.zones(in: $0).map(\.key) } }
        }
    }

    /// What this store holds of a zone: everything up to this vector.
    public func vector(for zone: ZoneKey) throws(LatticeError) -> VersionVector {
        try LatticeError.wrap { try store.read { try $0.syncState(of: zone)?.vector ?? VersionVector() } }
    }

    /// Streams the change set of what this store has of `zone` that `vector` lacks.
    @discardableResult
    public func writeChangeSet(for zone: ZoneKey, since vector: VersionVector, to sink: @escaping ([UInt8]) throws -> Void) throws(LatticeError) -> (records: Int, bytes: Int) {
        try LatticeError.wrap { try store.writeChangeSet(for: zone, since: vector, to: sink) }
    }

    public func changeSet(for zone: ZoneKey, since vector: VersionVector) throws(LatticeError) -> [UInt8] {
        try LatticeError.wrap { try store.changeSet(for: zone, since: vector) }
    }

    /// Applies change sets from another replica, all or nothing: a damaged one
    /// fails with invalidArguments and changes nothing. With
    /// `expectedChangeSets`, another number of change sets fails the same way.
    @discardableResult
    public func apply<Source: ByteSource>(changeSetsFrom source: Source, expectedChangeSets: Int? = nil) throws(LatticeError) -> ApplySummary {
        try LatticeError.wrap { try store.apply(from: source, expectedChangeSets: expectedChangeSets) }
    }

    @discardableResult
    public func apply(changeSet bytes: [UInt8]) throws(LatticeError) -> ApplySummary {
        try apply(changeSetsFrom: ArrayByteSource(bytes))
    }

    /// Drops anti-entropy history; change tokens from before now expire.
    public func compact() throws(LatticeError) {
        try LatticeError.wrap { try store.write { try $0.compact() } }
    }

    // MARK: Assets

    /// Copies a file into the store under its content hash, for an asset field.
    public func importAsset(fileAt url: URL) throws(LatticeError) -> FieldValue {
        try LatticeError.wrap {
            let reference = try AssetFiles.importFile(at: url, into: store.directory)
            try store.write { try $0.registerAsset(reference) }
            return .asset(reference)
        }
    }

    /// Where an asset's content is on disk, if the store has it.
    public func fileURL(for asset: AssetReference) -> URL? {
        let url = AssetFiles.path(for: asset, in: store.directory)
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }
}
