/// A public record's stored name: the name an app gives it, qualified by the
/// replica that created it (`NAME/REPLICA`, with a `/` no app's name holds).
/// Two devices that create one name in the public database make two
/// records, so no creation, whatever its stamp, takes over a record another
/// device created; apps read and write by the plain name, which
/// `resolve` finds. Names stored by builds
/// before names were qualified stay plain and keep the earlier-creation
/// rule (`WriteRights.publicMerge`).
package enum PublicRecordName {
    /// The stored name of `name` created by `creator`.
    package static func qualified(_ name: String, by creator: ReplicaID) -> String {
        name + "/" + creator.description
    }

    /// The plain name and, for a qualified name, its creator (in the one
    /// spelling `qualified` writes: 32 lowercase hex digits).
    package static func parts(of stored: String) -> (name: Substring, creator: ReplicaID?) {
        guard let slash = stored.lastIndex(of: "/") else { return (stored[...], nil) }
        guard let creator = ReplicaID(canonicalHex: stored[stored.index(after: slash)...]) else { return (stored[...], nil) }
        return (stored[..<slash], creator)
    }

    /// The name an app knows a stored record by.
    package static func plain(_ stored: String) -> String {
        guard stored.utf8.contains(UInt8(ascii: "/")) else { return stored }
        return String(parts(of: stored).name)
    }

    /// The bounds of the stored names qualifying `name` (`name/` up to `name0`, as `0` follows `/`).
    package static func qualifiedRange(of name: String) -> (lower: String, upper: String) {
        (name + "/", name + "0")
    }
}

extension PublicRecordName {
    /// The name references use for the record stored as `stored` in `zone`:
    /// a reference holds an app's (plain) name.
    package static func referenced(_ stored: String, in zone: ZoneKey) -> String {
        zone.scope == .public ? plain(stored) : stored
    }

    /// The stored name a `deleteSelf` reference to `target` in `source`
    /// follows: in the public database, the record of that name its
    /// source's creator made (a cascade deletes only the deleting device's
    /// own records, so it follows its own), plain for a source stored plain
    /// by an earlier build. A tombstone of another creator's record of that
    /// name, or of a plain one sent by a modified client, cascades nothing.
    package static func target(of target: String, fromSource source: String, in zone: ZoneKey) -> String {
        guard zone.scope == .public, let creator = parts(of: source).creator else { return target }
        return qualified(target, by: creator)
    }
}

extension Limits {
    /// A record name as stored and sent: an app's record name, or one
    /// qualified by its creator (`PublicRecordName`).
    package static func isStoredRecordName(_ name: String) -> Bool {
        if isRecordName(name) { return true }
        let parts = PublicRecordName.parts(of: name)
        return parts.creator != nil && isRecordName(String(parts.name))
    }
}

extension PublicRecordName {
    /// The stored name a local read (`writing` false) or write of public
    /// record `name` takes, among `stored` (the names of `name` a replica
    /// holds, in the order it first held them, with their states): the
    /// replica's own record of that name first (`isOwn` of its creator);
    /// for a read, else the live record of that name held first (then any);
    /// for a write, else another creator's live record (which the creator
    /// rule then refuses, as CloudKit refuses it), or a new name qualified
    /// by `writer`. A name already qualified is taken as it is.
    package static func resolve(_ name: String, among stored: [(name: String, state: RecordState?)], writer: ReplicaID, isOwn: (ReplicaID) -> Bool, writing: Bool) -> String {
        guard parts(of: name).creator == nil else { return name }
        for candidate in stored {
            if let creator = parts(of: candidate.name).creator ?? candidate.state?.created.replica, isOwn(creator) { return candidate.name }
        }
        // Another device's deleted record takes no name from this one: a creation of its own is another record.
        if writing { return stored.first { $0.state?.isAlive == true }?.name ?? qualified(name, by: writer) }
        return (stored.first { $0.state?.isAlive == true } ?? stored.first)?.name ?? name
    }
}
