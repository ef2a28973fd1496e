#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A reference from one record to another record of the same zone.
public struct RecordReference: Hashable, Sendable {
    /// What happens to the referencing record when the target is deleted.
    public enum Action: UInt8, Sendable, CaseIterable {
        /// Nothing: the reference dangles.
        case none = 0
        /// The referencing record is deleted with its target (cascade).
        case deleteSelf = 1
    }

    /// The target record's name, in the referencing record's zone.
    public var recordName: String
    /// What deleting the target does to the referencing record.
    public var action: Action

    /// A reference to `recordName`; by default it dangles when the target is deleted.
    public init(recordName: String, action: Action = .none) {
        self.recordName = recordName
        self.action = action
    }
}

/// A file stored in the store by content: the record keeps only its hash and size.
public struct AssetReference: Hashable, Sendable {
    /// The content's hash: the root of its hash tree (`AssetOutline` in LatticeCrypto).
    public var hash: [UInt8]
    /// The content's length in bytes.
    public var size: Int64

    /// The reference to content of `size` bytes whose hash-tree root is `hash`.
    public init(hash: [UInt8], size: Int64) {
        self.hash = hash
        self.size = size
    }

    /// `hash` in lowercase hex, two digits a byte.
    public var hexHash: String {
        hash.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}

/// A point on Earth, as CLLocation carries it in CloudKit.
public struct Location: Hashable, Sendable {
    /// Degrees north of the equator, -90 to 90.
    public var latitude: Double
    /// Degrees east of Greenwich, -180 to 180.
    public var longitude: Double
    /// Meters above sea level, as CLLocation gives it; nil when not known.
    public var altitude: Double?

    /// A point, taken as given: `isValid` says whether a record may hold it.
    public init(latitude: Double, longitude: Double, altitude: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
    }

    /// Whether a record may hold it: latitude within ±90, longitude within ±180, a finite altitude.
    public var isValid: Bool { Limits.accepts(location: self) }

    /// Great-circle distance in meters (haversine on a sphere of Earth's mean radius).
    public func distance(to other: Location) -> Double {
        let radius = 6_371_008.8
        let toRadians = Double.pi / 180
        let dLat = (other.latitude - latitude) * toRadians
        let dLon = (other.longitude - longitude) * toRadians
        let a = sin(dLat / 2) * sin(dLat / 2)
            + cos(latitude * toRadians) * cos(other.latitude * toRadians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * radius * asin(min(1, a.squareRoot()))
    }
}

/// The value of one field. Lists are homogeneous and never nested.
public enum FieldValue: Hashable, Sendable {
    case string(String)
    case int64(Int64)
    case double(Double)
    case bool(Bool)
    /// Milliseconds since 1970-01-01T00:00:00Z.
    case date(Int64)
    case bytes([UInt8])
    case reference(RecordReference)
    case asset(AssetReference)
    case location(Location)
    case list([FieldValue])

    /// The value's field type; an empty list reads as a list of strings.
    public var type: FieldType {
        switch self {
        case .string: return FieldType(.string)
        case .int64: return FieldType(.int64)
        case .double: return FieldType(.double)
        case .bool: return FieldType(.bool)
        case .date: return FieldType(.date)
        case .bytes: return FieldType(.bytes)
        case .reference: return FieldType(.reference)
        case .asset: return FieldType(.asset)
        case .location: return FieldType(.location)
        case .list(let items):
            return FieldType(items.first?.type.element ?? .string, isList: true)
        }
    }

    /// Bytes this value counts for against the record size limit.
    public var approximateSize: Int {
        switch self {
        case .string(let text): return text.utf8.count
        case .int64, .double, .date: return 8
        case .bool: return 1
        case .bytes(let bytes): return bytes.count
        case .reference(let reference): return reference.recordName.utf8.count + 1
        case .asset: return 40
        case .location: return 24
        case .list(let items): return items.reduce(0) { $0 + $1.approximateSize }
        }
    }
}

/// A field's type: one of the element types, or a list of one.
public struct FieldType: Hashable, Sendable, CustomStringConvertible {
    /// The type of a single value; its raw value is the low bits of `code`.
    public enum Element: UInt8, Sendable, CaseIterable {
        case string = 1, int64, double, bool, date, bytes, reference, asset, location
    }

    /// The type of the value, or of each member when `isList`.
    public var element: Element
    /// Whether the field holds a list of `element` values rather than one.
    public var isList: Bool

    /// The type `element`, or a list of it.
    public init(_ element: Element, isList: Bool = false) {
        self.element = element
        self.isList = isList
    }

    /// CloudKit Web Services' name: `STRING`, `INT64`, `TIMESTAMP`, `STRING_LIST`, …
    public var description: String {
        let base: String
        switch element {
        case .string: base = "STRING"
        case .int64: base = "INT64"
        case .double: base = "DOUBLE"
        case .bool: base = "BOOLEAN"
        case .date: base = "TIMESTAMP"
        case .bytes: base = "BYTES"
        case .reference: base = "REFERENCE"
        case .asset: base = "ASSETID"
        case .location: base = "LOCATION"
        }
        return isList ? base + "_LIST" : base
    }

    /// Parses a CloudKit Web Services type name (`STRING`, `TIMESTAMP_LIST`, …); nil for an unknown one.
    public init?(webServicesName name: String) {
        let isList = name.hasSuffix("_LIST")
        let base = isList ? String(name.dropLast(5)) : name
        guard let element = Element.allCases.first(where: { FieldType($0).description == base }) else { return nil }
        self.init(element, isList: isList)
    }

    /// One byte: the element in the low bits, the list flag in bit 4.
    public var code: UInt8 { element.rawValue | (isList ? 0x10 : 0) }

    /// Decodes a `code` byte; nil for an unknown element or any of bits 5 to 7 set.
    public init?(code: UInt8) {
        guard let element = Element(rawValue: code & 0x0F), code & 0xE0 == 0 else { return nil }
        self.init(element, isList: code & 0x10 != 0)
    }
}

