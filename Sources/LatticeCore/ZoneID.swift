/// Which of a container's three databases something lives in.
public enum DatabaseScope: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case `private` = 1
    case shared = 2
    case `public` = 3

    public var description: String {
        switch self {
        case .private: return "private"
        case .shared: return "shared"
        case .public: return "public"
        }
    }

    /// The scope called `name` (`private`, `shared` or `public`, in any case); nil for another name.
    public init?(name: String) {
        guard let scope = DatabaseScope.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = scope
    }
}

/// A zone's identity within a database, as `CKRecordZone.ID`.
public struct ZoneID: Hashable, Sendable, CustomStringConvertible {
    /// CloudKit's name for the zone every database has and nobody can delete.
    public static let defaultZoneName = "_defaultZone"
    /// CloudKit's placeholder for "the current user".
    public static let defaultOwnerName = "__defaultOwner__"

    /// The zone's name; `defaultZoneName` for the database's default zone.
    public var zoneName: String
    /// The owning account: in the shared database its account ID; `defaultOwnerName` means
    /// the current user.
    public var ownerName: String

    /// A zone ID; the owner defaults to the current user.
    public init(zoneName: String, ownerName: String = ZoneID.defaultOwnerName) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    /// The current user's default zone (`defaultZoneName`).
    public static let `default` = ZoneID(zoneName: defaultZoneName)

    /// Whether this is a default zone (`defaultZoneName`), whoever owns it.
    public var isDefault: Bool { zoneName == ZoneID.defaultZoneName }

    public var description: String {
        ownerName == ZoneID.defaultOwnerName ? zoneName : "\(zoneName):\(ownerName)"
    }
}

/// A zone's place in a store: its database and its ID.
public struct ZoneKey: Hashable, Sendable, CustomStringConvertible {
    /// The database the zone is in.
    public var scope: DatabaseScope
    /// The zone's ID within that database.
    public var zoneID: ZoneID

    /// The zone `zoneID` of the database `scope`.
    public init(scope: DatabaseScope, zoneID: ZoneID) {
        self.scope = scope
        self.zoneID = zoneID
    }

    public var description: String { "\(scope)/\(zoneID)" }
}
