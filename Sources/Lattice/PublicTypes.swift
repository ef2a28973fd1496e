@_spi(Tools) import LatticeProtocol
import LatticeTransport
@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto
import LatticeStore

// The engine's types an app meets through `import Lattice`: values, identities,
// queries, schema, conflicts and change sets. The rest of the engine (the
// merge, the change-set codec, the planner, the store) stays in its modules
// with `package` access; tools outside the package (the benchmarks) reach what
// they drive through `@_spi(Tools) import LatticeCore` and its siblings.

/// A field's value: String, Int64, Double, Bool, Date (ms), Bytes, Reference, Asset, Location, or a list of one of these.
public typealias FieldValue = LatticeCore.FieldValue
/// A field's type, as the schema holds it.
public typealias FieldType = LatticeCore.FieldType
/// A reference to a record of the same zone, with CloudKit's `none` or `deleteSelf` action.
public typealias RecordReference = LatticeCore.RecordReference
/// An asset: a file's content hash and size.
public typealias AssetReference = LatticeCore.AssetReference
/// A latitude, a longitude and an optional altitude.
public typealias Location = LatticeCore.Location
/// A zone's ID, as `CKRecordZone.ID`.
public typealias ZoneID = LatticeCore.ZoneID
/// A zone of one of the three databases.
public typealias ZoneKey = LatticeCore.ZoneKey
/// `.private`, `.shared` or `.public`.
public typealias DatabaseScope = LatticeCore.DatabaseScope
/// A share participant's permission, as `CKShare.ParticipantPermission`: read-only, read-write, or removed.
public typealias SharePermission = LatticeCore.SharePermission
/// A share another account's device offered this account (`Container.shareInvitations`).
public typealias ShareInvitation = LatticeStore.ShareInvitation
/// Asset content held and missing per source (`Container.assetUsage`).
public typealias AssetUsageReport = LatticeStore.AssetUsageReport
public typealias AssetUsage = LatticeStore.AssetUsage
/// Who made this device hold an asset: this account, another account, or a writer of unknown account.
public typealias AssetSource = LatticeStore.AssetSource
/// An asset records here reference, and whether its content is here (`Container.assetEntries`).
public typealias AssetEntry = LatticeStore.AssetEntry
/// What comparing zones with a peer found (`SyncNode.compare`), and what it cost.
public typealias ZoneComparison = LatticeTransport.ReconcileOutcome
/// A record (or a zone's own state) two devices hold differently.
public typealias DigestDifference = LatticeProtocol.DigestDifference
/// A query's filter, as `NSPredicate` in `CKQuery`.
public typealias QueryPredicate = LatticeCore.QueryPredicate
public typealias QueryCondition = LatticeCore.QueryCondition
public typealias QueryComparator = LatticeCore.QueryComparator
public typealias QueryKey = LatticeCore.QueryKey
public typealias QuerySort = LatticeCore.QuerySort
/// The writer of a field: the first 128 bits of its device's ID.
public typealias ReplicaID = LatticeCore.ReplicaID
/// A losing value of concurrent writes to one field.
public typealias FieldConflict = LatticeCore.FieldConflict
/// A write's hybrid-logical-clock time and writer.
public typealias Stamp = LatticeCore.Stamp
public typealias HLCTimestamp = LatticeCore.HLCTimestamp
/// The record types, fields and indexes of a container.
public typealias Schema = LatticeCore.Schema
public typealias SchemaField = LatticeCore.SchemaField
/// CloudKit's index kinds: queryable, sortable, searchable.
public typealias IndexKinds = LatticeCore.IndexKinds
/// What a replica has seen of each writer, per zone: what a change set is computed since.
public typealias VersionVector = LatticeCore.VersionVector
/// What applying change sets did.
public typealias ApplySummary = LatticeCore.ApplySummary
/// Where change-set bytes are read from, for `Container.apply(changeSetsFrom:)`.
public typealias ByteSource = LatticeCore.ByteSource
/// A pairing code (`7KQ2-M9XD`): what `invite` shows and `join` takes.
public typealias PairingCode = LatticeCrypto.PairingCode
