/// What a history entry says a write did to a record (DESIGN §4, history).
@_spi(Tools) public enum HistoryKind: UInt8, Sendable, CaseIterable {
    /// The record came to exist (a new incarnation where none was live).
    case insert = 0
    /// Fields of a live record changed, or a concurrent write arrived and lost.
    case update = 1
    /// The record was deleted; its fields' last values are kept.
    case delete = 2
    /// A new incarnation replaced a live one (a delete and a creation merged in together).
    case replace = 3
}

/// One field's part in a history entry: the write, and what it replaced.
@_spi(Tools) public struct HistoryFieldChange: Hashable, Sendable {
    /// The field written.
    public var field: String
    /// The write's stamp: its writer is the entry's author.
    public var stamp: Stamp
    /// The field's value on this device before the write (nil: absent).
    public var oldValue: FieldValue?
    /// The write removed the field (or deleted the record).
    public var removed: Bool
    /// A concurrent write that arrived here and lost to the value held: it
    /// shows as a conflict and changed no value.
    public var lost: Bool
    /// After the write the field has conflicting values.
    public var conflicted: Bool

    /// A field's part in an entry: the write, the value it replaced here, and what became of it.
    public init(field: String, stamp: Stamp, oldValue: FieldValue?, removed: Bool = false, lost: Bool = false, conflicted: Bool = false) {
        self.field = field
        self.stamp = stamp
        self.oldValue = oldValue
        self.removed = removed
        self.lost = lost
        self.conflicted = conflicted
    }
}

/// How history sees one stored state of a record: the changes since the
/// previous one, by writer, and how to take them back.
package enum HistoryDiff {
    /// One writer's part of a stored change.
    package struct Part: Sendable {
        package var author: ReplicaID
        package var kind: HistoryKind
        package var changes: [HistoryFieldChange]
        /// For an insert or a replace: the creating write. Its writer commit is the one that
        /// creates; the writer's later commits in the part update what it made.
        package var creation: Stamp?

        package init(author: ReplicaID, kind: HistoryKind, changes: [HistoryFieldChange], creation: Stamp? = nil) {
            self.author = author
            self.kind = kind
            self.changes = changes
            self.creation = creation
        }
    }

    /// The changes from `previous` to `state`, one part per writer (the
    /// creating or deleting writer's first). Empty when a reader would see no
    /// change (a tombstone merged over nothing, a vector joined).
    package static func parts(previous: RecordState?, state: RecordState) -> [Part] {
        let wasAlive = previous?.isAlive ?? false
        guard state.isAlive else {
            guard wasAlive, let previous, let deleted = state.deleted else { return [] }
            let changes = previous.fields.map { HistoryFieldChange(field: $0.name, stamp: deleted, oldValue: $0.value, removed: true) }
            return [Part(author: deleted.replica, kind: .delete, changes: changes)]
        }
        let newIncarnation = !wasAlive || previous!.causalLength != state.causalLength
        let creator = state.created.replica
        // A replaced incarnation's fields all go back with the creating write (read
        // backwards, it restores them whole); other writes, the creator's later
        // commits included, then restore nothing.
        let replacing = newIncarnation && wasAlive
        var changes: [HistoryFieldChange] = []
        changes.reserveCapacity(state.fields.count)
        func add(_ change: HistoryFieldChange) { changes.append(change) }
        func replaced(_ register: FieldRegister) -> HistoryFieldChange {
            HistoryFieldChange(field: register.name, stamp: state.created, oldValue: register.value, removed: true)
        }
        let old = wasAlive ? previous!.fields : []
        var i = 0
        for register in state.fields {
            while i < old.count, old[i].name < register.name {
                if replacing { add(replaced(old[i])) }
                i += 1
            }
            let before = i < old.count && old[i].name == register.name ? old[i] : nil
            if before != nil { i += 1 }
            if newIncarnation || before?.stamp != register.stamp {
                let restores = !replacing || register.stamp == state.created
                if replacing, !restores, let before { add(replaced(before)) }
                add(HistoryFieldChange(
                    field: register.name, stamp: register.stamp, oldValue: restores ? before?.value : nil,
                    removed: register.value == nil, conflicted: register.hasLosers))
            }
            if register.hasLosers {
                var known = Set((before?.losers ?? []).map(\.stamp))
                if let before { known.insert(before.stamp) }
                for loser in register.losers where !known.contains(loser.stamp) {
                    add(HistoryFieldChange(field: register.name, stamp: loser.stamp, oldValue: nil, lost: true, conflicted: true))
                }
            }
        }
        if replacing { for register in old[i...] { add(replaced(register)) } }
        // Most stores hold one writer's changes: no grouping then.
        if let first = changes.first?.stamp.replica, changes.allSatisfy({ $0.stamp.replica == first }) {
            if newIncarnation, first == creator { return [Part(author: creator, kind: wasAlive ? .replace : .insert, changes: changes, creation: state.created)] }
            if !newIncarnation { return [Part(author: first, kind: .update, changes: changes)] }
        }
        var byAuthor: [ReplicaID: [HistoryFieldChange]] = [:]
        for change in changes { byAuthor[change.stamp.replica, default: []].append(change) }
        var parts: [Part] = []
        if newIncarnation {
            parts.append(Part(author: creator, kind: wasAlive ? .replace : .insert, changes: byAuthor.removeValue(forKey: creator) ?? [], creation: state.created))
        }
        for (author, list) in byAuthor.sorted(by: { $0.key < $1.key }) { parts.append(Part(author: author, kind: .update, changes: list)) }
        return parts
    }

    /// The fields before an entry, given the fields after it (nil: the record
    /// did not exist): history read backwards, newest entry first.
    package static func undo(kind: HistoryKind, changes: [HistoryFieldChange], from after: [String: FieldValue]?) -> [String: FieldValue]? {
        undo(kind: kind, from: after) { put in
            for change in changes where !change.lost { put(change.field, change.oldValue) }
        }
    }

    /// `undo` of the replaced values `changes` hands to `put` (lost writes
    /// left out): an update puts them back over what came after, a delete or
    /// a replace rebuilds the fields from them alone, an insert leaves none.
    package static func undo(
        kind: HistoryKind, from after: [String: FieldValue]?, changes: ((String, FieldValue?) -> Void) throws -> Void
    ) rethrows -> [String: FieldValue]? {
        if kind == .insert { return nil }
        var fields = kind == .update ? after ?? [:] : [:]
        try changes { field, old in
            if kind == .update { fields[field] = old } else if let old { fields[field] = old }
        }
        return fields
    }
}

/// History changes as the store keeps them: one blob per entry. Each change
/// is its field's name (by its number in the store's table of names) and flags, then, unless it is plain (written with the
/// entry's commit as stamp over no value, as most of an insert's are), its
/// stamp time as a distance from the entry's commit (its author is the
/// entry's) and the value it replaced.
package enum HistoryChangeCodec {
    private static let removedFlag: UInt8 = 1, lostFlag: UInt8 = 2, conflictedFlag: UInt8 = 4, plainFlag: UInt8 = 8

    package static func encode(_ changes: [HistoryFieldChange], commit: HLCTimestamp, name: (String) throws -> Int) rethrows -> [UInt8] {
        var writer = BinaryWriter(capacity: changes.count * 8 + 2)
        writer.varint(changes.count)
        for change in changes {
            writer.varint(try name(change.field))
            let plain = change.stamp.time == commit && change.oldValue == nil
            writer.byte((change.removed ? removedFlag : 0) | (change.lost ? lostFlag : 0) | (change.conflicted ? conflictedFlag : 0) | (plain ? plainFlag : 0))
            guard !plain else { continue }
            // Zig-zag: a write's stamp follows its commit's, but an unmarked write of an old block is named by itself.
            let delta = Int64(bitPattern: change.stamp.time.rawValue &- commit.rawValue)
            writer.varint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            ValueCodec.encode(change.oldValue, into: &writer)
        }
        return writer.bytes
    }

    /// The changes of a record created whole by the write at `stamp` of the
    /// entry's `commit`, as `encode` writes them, built from the field names alone.
    package static func encodeCreation(_ fields: [String], stamp: HLCTimestamp, commit: HLCTimestamp, name: (String) throws -> Int) rethrows -> [UInt8] {
        var writer = BinaryWriter(capacity: fields.count * 4 + 2)
        writer.varint(fields.count)
        let delta = Int64(bitPattern: stamp.rawValue &- commit.rawValue)
        for field in fields {
            writer.varint(try name(field))
            guard delta != 0 else {
                writer.byte(plainFlag)
                continue
            }
            writer.byte(0)
            writer.varint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
            ValueCodec.encode(nil, into: &writer)
        }
        return writer.bytes
    }

    /// One change's stamp time (as a distance from the commit) and replaced value, after its name and flags.
    private static func body(_ flags: UInt8, from reader: inout BinaryReader) throws -> (delta: Int64, old: FieldValue?) {
        guard flags & plainFlag == 0 else { return (0, nil) }
        let zigzag = try reader.varint()
        return (Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1), try ValueCodec.decode(from: &reader))
    }

    /// `HistoryDiff.undo` of an entry as stored, without building its changes:
    /// a record read as of a point reads thousands of entries.
    package static func undo(_ bytes: [UInt8], kind: HistoryKind, from after: [String: FieldValue]?, names: [String]) throws -> [String: FieldValue]? {
        try HistoryDiff.undo(kind: kind, from: after) { put in
            guard kind != .insert else { return }
            var reader = BinaryReader(bytes)
            for _ in 0..<(try reader.count(below: 1 << 20, "history changes")) {
                let field = try name(from: &reader, names)
                let flags = try reader.byte()
                let old = try body(flags, from: &reader).old
                if flags & lostFlag == 0 { put(field, old) }
            }
        }
    }

    private static func name(from reader: inout BinaryReader, _ names: [String]) throws -> String {
        let index = try reader.varint()
        guard index < UInt64(names.count) else { throw BinaryDecodingError.malformed("a history change names field \(index) of \(names.count)", offset: reader.offset) }
        return names[Int(index)]
    }

    package static func decode(_ bytes: [UInt8], author: ReplicaID, commit: HLCTimestamp, names: [String]) throws -> [HistoryFieldChange] {
        var reader = BinaryReader(bytes)
        var changes: [HistoryFieldChange] = []
        for _ in 0..<(try reader.count(below: 1 << 20, "history changes")) {
            let field = try name(from: &reader, names)
            let flags = try reader.byte()
            let (delta, old) = try body(flags, from: &reader)
            changes.append(HistoryFieldChange(
                field: field, stamp: Stamp(time: HLCTimestamp(rawValue: commit.rawValue &+ UInt64(bitPattern: delta)), replica: author),
                oldValue: old, removed: flags & removedFlag != 0, lost: flags & lostFlag != 0, conflicted: flags & conflictedFlag != 0))
        }
        return changes
    }
}

extension RecordState {
    /// The live fields' values by name (a removed field is absent).
    package var liveFieldValues: [String: FieldValue] {
        var values: [String: FieldValue] = [:]
        for register in fields { if let value = register.value { values[register.name] = value } }
        return values
    }
}
