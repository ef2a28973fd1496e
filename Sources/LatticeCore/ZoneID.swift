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

    public var zoneName: String
    public var ownerName: String

    public init(zoneName: String, ownerName: String = ZoneID.defaultOwnerName) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    public static let `default` = ZoneID(zoneName: defaultZoneName)

    public var isDefault: Bool { zoneName == ZoneID.defaultZoneName }

    public var description: String {
        ownerName == ZoneID.defaultOwnerName ? zoneName : "\(zoneName):\(ownerName)"
    }
}

/// A zone's place in a store: its database and its ID.
public struct ZoneKey: Hashable, Sendable, CustomStringConvertible {
    public var scope: DatabaseScope
    public var zoneID: ZoneID

    public init(scope: DatabaseScope, zoneID: ZoneID) {
        self.scope = scope
        self.zoneID = zoneID
    }

    public var description: String { "\(scope)/\(zoneID)" }
}
