import Foundation
import GRDB
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import Synchronization

/// One container's replica on disk: SQLite (WAL) through GRDB, plus the
/// device identity and the asset files.
///
/// Safe to share between threads, and several processes may open the same
/// directory at once: every write is an immediate transaction that reads the
/// clock and sequence it advances, so writers serialize through SQLite.
package final class RecordStore: Sendable {
    package static let databaseFileName = "lattice.sqlite"
    package static let identityFileName = "identity.key"

    package let directory: URL
    package let identity: Identity
    /// Off only to measure what checking writes costs (`Benchmarks/`): a
    /// store that applies writes it cannot attribute is open to forgery.
    package nonisolated(unsafe) var checksWrites = true
    /// Whether `write` waits for the disk (a benchmark that builds a long history turns it off).
    package nonisolated(unsafe) var durableCommits = true
    /// Smaller than `WriteBlock.maximumEntries` only in tests that want many blocks.
    package nonisolated(unsafe) var sealedBlockEntries = WriteBlock.maximumEntries
    /// On only in tests, to play a modified client: this store then writes,
    /// and takes, what `WriteRights` refuses (a public record's non-creator edits).
    package nonisolated(unsafe) var ignoresWriteRights = false

    /// The account's members' memberships, for the roster they were read from
    /// (its encoding): a roster's signatures are checked once, not per batch.
    private let ownMembershipsCache = Mutex<(roster: [UInt8], members: [ReplicaID: AccountMembership])?>(nil)

    /// Every member of the account (this device too), by replica, with its membership.
    func ownMemberships(roster encoded: [UInt8]) throws -> [ReplicaID: AccountMembership] {
        if let cached = ownMembershipsCache.withLock({ $0 }), cached.roster == encoded { return cached.members }
        let roster = try AccountRoster(decoding: encoded)
        var members: [ReplicaID: AccountMembership] = [:]
        let state = roster.state
        for key in Set(state.members.keys).union([identity.publicKey]) {
            guard let membership = AccountMembership(of: key, in: roster, state: state) else { continue }
            members[try WriteBlock.replica(of: key)] = membership
        }
        ownMembershipsCache.withLock { $0 = (encoded, members) }
        return members
    }
    package let replica: ReplicaID
    /// Random per store: change tokens from another store are recognized as such.
    package let storeID: [UInt8]
    package let maximumSkewMilliseconds: UInt64
    /// Milliseconds since 1970: the system clock, or a test's.
    let wallClock: @Sendable () -> UInt64
    let pool: DatabasePool

    /// Opens the store in `directory`, creating it when `create` is set and the
    /// directory is missing or empty.
    package init(
        directory: URL, create: Bool = true, maximumSkewMilliseconds: UInt64 = HybridLogicalClock.defaultMaximumSkewMilliseconds,
        wallClock: @escaping @Sendable () -> UInt64 = RecordStore.systemWallClock, readsOnWriterConnection: Bool = false
    ) throws {
        self.directory = directory
        self.readsOnWriterConnection = readsOnWriterConnection
        self.maximumSkewMilliseconds = maximumSkewMilliseconds
        self.wallClock = wallClock
        let fileManager = FileManager.default
        let databasePath = directory.appendingPathComponent(Self.databaseFileName).path
        let identityPath = directory.appendingPathComponent(Self.identityFileName).path
        var isDirectory: ObjCBool = false
        let exists = fileManager.fileExists(atPath: directory.path, isDirectory: &isDirectory)
        if exists && !isDirectory.boolValue { throw StoreError.notAStore(path: directory.path) }
        let hasDatabase = fileManager.fileExists(atPath: databasePath)
        if !hasDatabase {
            guard create else { throw exists ? StoreError.notAStore(path: directory.path) : StoreError.noStore(path: directory.path) }
            let contents = (try? fileManager.contentsOfDirectory(atPath: directory.path)) ?? []
            if exists, !contents.isEmpty { throw StoreError.notAStore(path: directory.path) }
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreError.io(path: directory.path, reason: "cannot create the store directory (\(error.localizedDescription))")
            }
        }
        // An empty directory holds no secret yet: made private, it is fine. A store
        // that others could reach may have lost its key already: the user decides.
        try PrivateFiles.checkDirectory(directory.path, what: "the store directory", fix: !hasDatabase)
        identity = try Self.loadOrCreateIdentity(at: identityPath, create: !hasDatabase)
        let fingerprint = identity.deviceID.digest
        replica = ReplicaID(bytes: fingerprint)

        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            // A large merge dirties pages all over the records' and indexes'
            // B-trees; with SQLite's 2 MiB default the writer spills them to
            // the WAL again and again before its commit. Readers need less.
            try db.execute(sql: "PRAGMA cache_size = \(db.configuration.readonly ? -16_384 : -65_536)")
        }
        do {
            pool = try DatabasePool(path: databasePath, configuration: configuration)
            // A commit is durable when it returns, power loss included: the
            // log is synced at each commit. Set here, not when each connection
            // is prepared: the pool switches its writer to WAL after that, and
            // with it to `synchronous = NORMAL`, which syncs only at checkpoints.
            try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
            try StoreSchema.migrator.migrate(pool)
            storeID = try pool.write { db in
                if let existing = try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM meta WHERE key = 'store_id'")) { return [UInt8](existing) }
                let id = (0..<16).map { _ in UInt8.random(in: 0...255) }
                try db.cachedStatement(sql: "INSERT INTO meta (key, value) VALUES ('store_id', ?)").execute(arguments: [Data(id)])
                return id
            }
        } catch let error as DatabaseError {
            throw StoreError.corrupt(path: databasePath, reason: error.message ?? "\(error)")
        }
    }

    /// The identity in the key file (64 hex digits of the Ed25519 seed), or a
    /// new one written there. The key's bytes pass only through arrays wiped after use.
    private static func loadOrCreateIdentity(at path: String, create: Bool) throws -> Identity {
        if FileManager.default.fileExists(atPath: path) {
            var text = try PrivateFiles.readKeyFile(path, what: "the identity key file")
            defer { Sodium.wipe(&text) }
            guard var seed = seed(fromHex: text) else {
                throw StoreError.corrupt(path: path, reason: "the identity key file is damaged")
            }
            defer { Sodium.wipe(&seed) }
            return try Identity(seed: seed)
        }
        guard create else { throw StoreError.corrupt(path: path, reason: "the identity key file is missing") }
        let identity = try Identity.generate()
        var seed = identity.seed()
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8](repeating: UInt8(ascii: "\n"), count: seed.count * 2 + 1)
        for (index, byte) in seed.enumerated() {
            text[2 * index] = digits[Int(byte >> 4)]
            text[2 * index + 1] = digits[Int(byte & 0x0F)]
        }
        defer {
            Sodium.wipe(&seed)
            Sodium.wipe(&text)
        }
        try PrivateFiles.writeAtomically(text, to: path, durable: true)
        return identity
    }

    /// The seed in a key file's text: 64 hex digits, with whitespace around them.
    static func seed(fromHex text: [UInt8]) -> [UInt8]? {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }),
              last - first + 1 == 2 * Identity.seedLength else { return nil }
        func nibble(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var seed = [UInt8](repeating: 0, count: Identity.seedLength)
        for index in 0..<Identity.seedLength {
            guard let high = nibble(text[first + 2 * index]), let low = nibble(text[first + 2 * index + 1]) else {
                Sodium.wipe(&seed)
                return nil
            }
            seed[index] = high << 4 | low
        }
        return seed
    }

    /// Milliseconds since 1970 by the system's wall clock.
    @Sendable package static func systemWallClock() -> UInt64 { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }

    // MARK: Transactions

    /// Runs `body` in one immediate write transaction; it commits when `body`
    /// returns having changed something, and rolls back when it throws or
    /// changed nothing (a no-op is not a commit). Checkpoints, the clock and
    /// the change sequence are saved with the data.
    @discardableResult
    package func write<T>(_ body: (StoreTransaction) throws -> T) throws -> T {
        try write(durably: durableCommits, body)
    }


    /// A write whose commit does not wait for the disk (`durably` false): for
    /// derived state alone (digests), which a power loss may roll back to
    /// what it was derived from. The log stays in order, so the next durable
    /// commit syncs it too, and nothing durable is ever lost with it.
    @discardableResult
    func write<T>(durably: Bool, _ body: (StoreTransaction) throws -> T) throws -> T {
        var result: T?
        var advanced = false
        try mapDatabaseErrors {
            try Self.$onWriterConnection.withValue(true) {
                try pool.writeWithoutTransaction { db in
                    if !durably { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
                    defer { if !durably { try? db.execute(sql: "PRAGMA synchronous = FULL") } }
                    try db.inTransaction(.immediate) {
                        let transaction = try StoreTransaction(writing: db, store: self)
                        result = try body(transaction)
                        guard try transaction.finish() else { return .rollback }
                        advanced = transaction.advancesSequence || transaction.wakesWatchers
                        return .commit
                    }
                }
            }
        }
        if advanced { CommitSignal.notify(store: directory) }
        return result!
    }

    /// Runs `body` on a consistent snapshot.
    package func read<T>(_ body: (StoreSnapshot) throws -> T) throws -> T {
        try mapDatabaseErrors {
            if readsOnWriterConnection, !Self.onWriterConnection {
                return try Self.$onWriterConnection.withValue(true) {
                    try pool.writeWithoutTransaction { db in
                        var result: T?
                        try db.inTransaction(.deferred) {
                            result = try body(StoreSnapshot(db: db, store: self))
                            return .commit
                        }
                        return result!
                    }
                }
            }
            return try pool.read { db in try body(StoreSnapshot(db: db, store: self)) }
        }
    }

    /// Whether reads run on the writer's connection, in a deferred transaction,
    /// rather than on a reader connection of their own: for a process that runs
    /// one command, which then opens one connection instead of two (half a
    /// millisecond of its start). Reads wait for the process's own writes.
    package let readsOnWriterConnection: Bool

    /// Whether this thread is on the writer's connection already (a read inside
    /// a write goes to a reader: the writer's queue is not reentrant).
    @TaskLocal static var onWriterConnection = false

    func mapDatabaseErrors<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as DatabaseError {
            switch error.resultCode {
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                throw StoreError.corrupt(path: directory.path, reason: error.message ?? "\(error)")
            default:
                throw StoreError.io(path: directory.path, reason: error.message ?? "\(error)")
            }
        }
    }

    /// Moves the write-ahead log into the database and empties it when it
    /// holds more than `bytes`: a process that opens the store while no other
    /// has it open first reads the whole log (25 MB took 8.5 ms), so a command
    /// that leaves the store open at exit (`lattice`) empties a large log
    /// first, unless another process is reading it (then that process keeps
    /// the log's index, and the next one needs no reading of it). Returns
    /// whether it did. Leaves the writer's connection without a busy
    /// timeout: for a process about to exit.
    @discardableResult
    package func truncateLog(ifLargerThan bytes: Int) throws -> Bool {
        let path = directory.appendingPathComponent(Self.databaseFileName + "-wal").path
        // stat, not FileManager's attributes: those look up the owner's name too (the user database, each time).
        var status = stat()
        guard stat(path, &status) == 0, Int(status.st_size) > bytes else { return false }
        return try mapDatabaseErrors {
            try pool.writeWithoutTransaction { db in
                // Without waiting: a running node's readers would hold it up to the 30 s busy timeout, and
                // while a node has the store open the next command needs no reading of the log anyway.
                // For a process about to exit: the connection keeps no busy timeout after this.
                try db.execute(sql: "PRAGMA busy_timeout = 0")
                do {
                    try db.checkpoint(.truncate)
                    return true
                } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                    return false
                }
            }
        }
    }

    /// The last committed change sequence: it moves on every commit by any
    /// process, which is what watchers poll.
    package func currentSequence() throws -> UInt64 {
        try read { try $0.sequence() }
    }
}
