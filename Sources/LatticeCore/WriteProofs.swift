@_spi(Tools) import LatticeCrypto

/// Why a change set's writes were refused: each means a peer (or a relay
/// before it) sent what its writer did not sign. Nothing of the change set is applied.
package enum WriteProofError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A write no block its writer signed accounts for (a forged replica ID, or a stamp taken from another).
    case unproven(stamp: Stamp, what: String)
    /// A write whose content differs from what its writer signed under its stamp.
    case tampered(stamp: Stamp, what: String)
    /// A block whose signature does not hold over the writes shown with it.
    case badSignature(replica: ReplicaID)
    /// Two different writes signed under one stamp (`last` names the stamp's time).
    case twoBlocksOneStamp(replica: ReplicaID, last: HLCTimestamp)
    /// A vector that says a replica's writes are held beyond the latest head it signed.
    case beyondSignedHead(replica: ReplicaID, claimed: HLCTimestamp, head: HLCTimestamp, what: String)
    /// A writer this replica does not accept writes from (removed, or not of the account).
    case writerRefused(replica: ReplicaID, why: String)
    /// A change the zone's rules give nobody the right to make (`WriteRights`).
    case forbidden(String)
    case malformed(String)

    package var description: String {
        switch self {
        case .unproven(let stamp, let what): return "\(what) stamped \(stamp) carries no signature of its writer"
        case .tampered(let stamp, let what): return "\(what) stamped \(stamp) differs from what its writer signed"
        case .badSignature(let replica): return "writes of replica \(replica.description.prefix(8)) do not match the block it signed (a write was changed on the way, or the signature is forged)"
        case .twoBlocksOneStamp(let replica, let last): return "replica \(replica.description.prefix(8)) signed two different writes stamped \(last)"
        case .beyondSignedHead(let replica, let claimed, let head, let what):
            return "\(what) claims writes of replica \(replica.description.prefix(8)) up to \(claimed); it signed up to \(head)"
        case .writerRefused(let replica, let why): return "writes of replica \(replica.description.prefix(8)) are refused: \(why)"
        case .forbidden(let why): return why
        case .malformed(let why): return "malformed proofs: \(why)"
        }
    }
}

/// One block as a change set carries it: whole, with the digests of the
/// writes the change set shows left out (the receiver computes them), or a head.
@_spi(Tools) public struct BlockProof: Sendable {
    /// The block as signed, without entries: a whole block's `entriesHash` is empty, the receiver computes it.
    public var block: WriteBlock
    /// For a whole block: the entries' times, and for each whether the change set shows it.
    public var times: [HLCTimestamp]?
    /// For a whole block, whether the change set shows each entry, in the order of `times`; empty for a head.
    public var shown: [Bool]
    /// The digests of the entries not shown, in order.
    public var supplied: [[UInt8]]
}

/// The proofs frame: a list of blocks of the change set's zone.
enum ProofFrameCodec {
    static func encode(_ blocks: [(block: WriteBlock, shown: Set<HLCTimestamp>)], into writer: inout BinaryWriter) {
        writer.varint(blocks.count)
        for (block, shown) in blocks {
            writer.raw(block.publicKey)
            writer.varint(block.last.rawValue)
            writer.varint(block.count)
            writer.raw(block.signature)
            guard let entries = block.entries else {
                writer.byte(0)
                writer.raw(block.entriesHash)
                continue
            }
            writer.byte(1)
            var previous: UInt64 = 0
            for entry in entries {
                writer.varint(entry.time.rawValue - previous)
                previous = entry.time.rawValue
            }
            var bits = [UInt8](repeating: 0, count: (entries.count + 7) / 8)
            for (index, entry) in entries.enumerated() where shown.contains(entry.time) { bits[index / 8] |= 1 << UInt8(index % 8) }
            writer.raw(bits)
            for entry in entries where !shown.contains(entry.time) { writer.raw(entry.digest) }
        }
    }

    static func decode(_ payload: [UInt8], zone: ZoneKey) throws -> [BlockProof] {
        var reader = BinaryReader(payload)
        var proofs: [BlockProof] = []
        let count = try reader.count(below: payload.count / 100 + 1, "block count")
        for _ in 0..<count {
            let publicKey = Array(try reader.raw(WriteBlock.publicKeyLength))
            let last = HLCTimestamp(rawValue: try reader.varint())
            let entryCount = try reader.count(below: WriteBlock.maximumEntries + 1, "block entry count")
            let signature = Array(try reader.raw(WriteBlock.signatureLength))
            let replica = try WriteBlock.replica(of: publicKey)
            switch try reader.byte() {
            case 0:
                let hash = Array(try reader.raw(WriteDigest.length))
                let block = WriteBlock(zone: zone, publicKey: publicKey, replica: replica, last: last, count: entryCount, entriesHash: hash, signature: signature, entries: nil)
                proofs.append(BlockProof(block: block, times: nil, shown: [], supplied: []))
            case 1:
                var times: [HLCTimestamp] = []
                var previous: UInt64 = 0
                for _ in 0..<entryCount {
                    let (time, overflow) = previous.addingReportingOverflow(try reader.varint())
                    guard !overflow, time <= last.rawValue, times.isEmpty || time > previous else { throw BinaryDecodingError.malformed("block entries out of order", offset: reader.offset) }
                    times.append(HLCTimestamp(rawValue: time))
                    previous = time
                }
                let bits = Array(try reader.raw((entryCount + 7) / 8))
                let shown = (0..<entryCount).map { bits[$0 / 8] & (1 << UInt8($0 % 8)) != 0 }
                var supplied: [[UInt8]] = []
                for isShown in shown where !isShown { supplied.append(Array(try reader.raw(WriteDigest.length))) }
                let block = WriteBlock(zone: zone, publicKey: publicKey, replica: replica, last: last, count: entryCount, entriesHash: [], signature: signature, entries: nil)
                proofs.append(BlockProof(block: block, times: times, shown: shown, supplied: supplied))
            case let other:
                throw BinaryDecodingError.malformed("unknown block form \(other)", offset: reader.offset)
            }
        }
        guard reader.isAtEnd else { throw BinaryDecodingError.malformed("trailing bytes in proofs", offset: reader.offset) }
        return proofs
    }
}

/// The sender's side: gathers, while records are written, the blocks the
/// receiver needs to check them — whole blocks for the writes its vector
/// (`base`) lacks, heads for the vectors the change set carries.
@_spi(Tools) public final class ProofCollector {
    /// `replica`'s block whose `last` is the first at or after `covering` (nil: its latest); nil if none.
    public typealias Lookup = (_ replica: ReplicaID, _ covering: HLCTimestamp?) throws -> WriteBlock?
    private let base: VersionVector
    /// The block of a replica whose `last` is the first at or after a time; with nil, its latest.
    private let lookup: Lookup
    private var shown: [ReplicaID: Set<HLCTimestamp>] = [:]
    private var needed: [ReplicaID: Set<HLCTimestamp>] = [:]
    /// Whether the change set leaves out ghosts of the writes `base` covers (format 5).
    var elides = false
    /// In such a change set, the covered writes live records show: a receiver may see one
    /// incomplete (a relay re-cutting the change set cannot tell), so their digests travel.
    private var unshown: [ReplicaID: Set<HLCTimestamp>] = [:]
    private var vectors = VersionVector()

    /// A collector for a change set to a receiver at `base`, finding the sender's blocks with `lookup`.
    public init(base: VersionVector, lookup: @escaping Lookup) {
        self.base = base
        self.lookup = lookup
    }

    func note(_ state: RecordState) {
        let unshowing = elides && state.isAlive
        if let only = state.onlyStamp { note(only, unshowing) } else { state.forEachPart { stamp, _, _ in note(stamp, unshowing) } }
        if !state.isAlive {
            // A tombstone's type and creation merge by stamp alone: a receiver
            // that saw those writes only in an incarnation that lost (so its
            // vector covers them) can find them shown again here, and needs
            // their blocks though `base` covers them.
            for stamp in [state.typeStamp, state.created] { needed[stamp.replica, default: []].insert(stamp.time) }
        }
        vectors.join(state.vector)
    }

    func note(_ header: ChangeSetHeader) {
        note(header.zoneState.stamp)
        // The zone's state is checked by every receiver that has not seen it
        // (a bundle may reach one the sender did not make it for): its
        // one-entry block always goes.
        needed[header.zoneState.stamp.replica, default: []].insert(header.zoneState.stamp.time)
        vectors.join(header.top)
    }

    /// `unshowing`: a covered write it shows may reach the receiver incomplete (see `unshown`).
    private func note(_ stamp: Stamp, _ unshowing: Bool = false) {
        shown[stamp.replica, default: []].insert(stamp.time)
        if !base.covers(stamp) {
            needed[stamp.replica, default: []].insert(stamp.time)
        } else if unshowing {
            unshown[stamp.replica, default: []].insert(stamp.time)
        }
    }

    /// The blocks to send, each with the times the change set shows.
    func blocks() throws -> [(block: WriteBlock, shown: Set<HLCTimestamp>)] {
        var result: [(block: WriteBlock, shown: Set<HLCTimestamp>)] = []
        var replicas = Set(needed.keys)
        for entry in vectors.entries where entry.time > base[entry.replica] { replicas.insert(entry.replica) }
        for replica in replicas.sorted() {
            var covered = HLCTimestamp.zero
            // One set per replica, not per block: an initial sync sends hundreds of blocks of one writer.
            var shownWhole = shown[replica] ?? []
            if let unshown = unshown[replica] { shownWhole.subtract(unshown) }
            for time in (needed[replica] ?? []).sorted() where time > covered {
                // A block the store cannot find goes unsent: the receiver refuses the write and says why.
                guard let block = try lookup(replica, time), block.entries != nil else { continue }
                result.append((block, shownWhole))
                covered = block.last
            }
            let highest = max(vectors[replica], needed[replica]?.max() ?? .zero)
            if highest > covered, let latest = try lookup(replica, nil), latest.last > covered {
                result.append((latest.head, []))
            }
        }
        return result
    }
}

/// The receiver's side: checks, before a change set commits, that every
/// write it changes the replica with was signed by its writer and that no
/// vector goes beyond a head its replica signed.
final class ProofCheck {
    private let storage: ReplicaStorage
    private let zone: ZoneKey
    private let knowledge: VersionVector
    /// Digests of the writes every record read shows, by stamp.
    private var computed: [Stamp: [UInt8]] = [:]
    /// Writes that changed the replica, with the record that showed them (nil: the zone's incarnation)
    /// and whether the state held here showed them already: each must be proven.
    private var required: [(stamp: Stamp, digest: [UInt8], record: String?, heldHere: Bool)] = []
    /// A format-5 change set's base: writes it covers may arrive without their ghosts,
    /// which a replica that holds them does not need. One that lacks a write the merge
    /// keeps (a change set made for another replica) finds its view incomplete: the
    /// error then says that, not that the writer's signature was forged.
    var elisionBase: VersionVector?
    /// Per replica, the highest entry a changed record's vector holds, and that record:
    /// every vector is within its bound exactly when this is.
    private var highest: [ReplicaID: (time: HLCTimestamp, record: String)] = [:]

    init(storage: ReplicaStorage, zone: ZoneKey, knowledge: VersionVector) {
        self.storage = storage
        self.zone = zone
        self.knowledge = knowledge
    }

    /// Computes the digests of the writes a record read shows; returns them
    /// for `changed` to require if the record changes the replica.
    func received(_ state: RecordState) throws -> [(stamp: Stamp, digest: [UInt8])] {
        let writes = WriteDigest.writes(of: state, in: zone)
        for (stamp, digest) in writes {
            if let other = computed.updateValue(digest, forKey: stamp), other != digest {
                throw WriteProofError.tampered(stamp: stamp, what: "a write shown by two records")
            }
        }
        return writes
    }

    /// A record read (`incoming`, whose writes are `writes`) changed the
    /// replica's `previous` state to `merged`: every write `merged` shows
    /// that `previous` did not show exactly so must be proven.
    func changed(to merged: RecordState, previous: RecordState?, incoming: RecordState, writes: [(stamp: Stamp, digest: [UInt8])]) {
        let name = merged.recordName
        for entry in incoming.vector.entries where entry.time > knowledge[entry.replica] && entry.time > highest[entry.replica]?.time ?? .zero {
            highest[entry.replica] = (entry.time, name)
        }
        /// A write the state held here did not show: one a format-5 base covers may have come incomplete.
        func requireUnheld(_ stamp: Stamp, _ digest: [UInt8]) { required.append((stamp, digest, name, false)) }
        guard let previous else {
            let outcome = merged == incoming ? writes : WriteDigest.writes(of: merged, in: zone)
            for (stamp, digest) in outcome { requireUnheld(stamp, digest) }
            return
        }
        // The merged state's view of each write (its parts and ghosts of it) is the union of the two
        // sources' views, and decoding refuses a ghost of a write its state does not show: so where
        // both sources agree on a write's digest, or only the state held here shows it, the merged
        // view is that digest's, and only the incoming state's digests need computing. Where the two
        // disagree (a lying relay, or a store edited on disk), the merged view is judged itself.
        // That needs each view to hold a part once: a state with a ghost of a part it also shows
        // (which a modified client can sign, and an earlier build's migration left) has the merged
        // state judged whole, every write it shows against the state held here.
        var held: [Stamp: [UInt8]]?
        func before(_ stamp: Stamp) -> [UInt8]? {
            if held == nil { held = Dictionary(WriteDigest.writes(of: previous, in: zone), uniquingKeysWith: { first, _ in first }) }
            return held![stamp]
        }
        if incoming.hasGhostOfShownPart || previous.hasGhostOfShownPart {
            for (stamp, digest) in WriteDigest.writes(of: merged, in: zone) where before(stamp) != digest {
                required.append((stamp, digest, name, before(stamp) != nil))
            }
            return
        }
        let previousStamps = previous.liveStamps
        for stamp in merged.liveStamps.sorted() {
            let incomingDigest = writes.first { $0.stamp == stamp }?.digest
            if previousStamps.contains(stamp) {
                guard let incomingDigest, before(stamp) != incomingDigest else { continue }
                let digest = WriteDigest.record(merged, stamp: stamp, in: zone)
                if before(stamp) != digest { required.append((stamp, digest, name, true)) }
            } else if let incomingDigest, !previous.ghosts.contains(where: { $0.stamp == stamp }) {
                requireUnheld(stamp, incomingDigest)
            } else {
                requireUnheld(stamp, WriteDigest.record(merged, stamp: stamp, in: zone))
            }
        }
    }

    /// The header's zone state is a write the change set shows.
    func header(_ zoneState: ZoneState) {
        computed[zoneState.stamp] = WriteDigest.zone(zoneState, in: zone)
    }

    func zoneChanged(to zoneState: ZoneState) {
        required.append((zoneState.stamp, WriteDigest.zone(zoneState, in: zone), nil, true))
    }

    /// Checks the proofs and, if they hold, stores their blocks. `claim`: the
    /// vector the change set claims, if the replica is about to take it.
    func finish(_ proofs: [BlockProof], claim: VersionVector?) throws {
        /// A removed device's writes after its mark: refused in a block, a write or a vector alike.
        func refuseIfRemoved(_ replica: ReplicaID, at time: HLCTimestamp) throws {
            // A device removed from the account is a stranger now: in the public database its
            // writes are judged as anyone's (`WriteRights`), record by record.
            guard zone.scope != .public else { return }
            if let refusal = storage.refusal(ofWriter: replica, at: time) { throw WriteProofError.writerRefused(replica: replica, why: refusal) }
        }
        var blocks: [WriteBlock] = []
        var heads: [ReplicaID: HLCTimestamp] = [:]
        for proof in proofs {
            let block = try resolve(proof)
            guard block.isSignatureValid else { throw WriteProofError.badSignature(replica: block.replica) }
            try refuseIfRemoved(block.replica, at: block.last)
            if let first = block.firstTime {
                // The blocks it could overlap: those ending within it, and the next one (a later version).
                var stored = try storage.writeBlocks(of: block.replica, in: zone, endingIn: first...block.last, entries: false)
                if let next = try storage.writeBlock(of: block.replica, in: zone, covering: block.last), next.last > block.last { stored.append(next) }
                for other in stored where !block.supersedes(other) {
                    // Not an earlier version of this block: its entries are read to compare.
                    let whole = other.entries != nil ? other : try storage.writeBlocks(of: block.replica, in: zone, endingIn: other.last...other.last, entries: true).first
                    if let whole, let time = block.conflict(with: whole) { throw WriteProofError.twoBlocksOneStamp(replica: block.replica, last: time) }
                }
            }
            heads[block.replica] = max(heads[block.replica] ?? .zero, block.last)
            blocks.append(block)
        }
        let proven = try ChangeSetBlocks(blocks)
        func what(_ record: String?, _ stamp: Stamp) -> String {
            record.map { "record \"\($0)\"" } ?? "the zone's incarnation stamped \(stamp)"
        }
        for (stamp, digest, record, heldHere) in required {
            // Whatever block proves it (one stored before the removal was known, too).
            try refuseIfRemoved(stamp.replica, at: stamp.time)
            var signed = proven.digest(at: stamp)
            if signed == nil { signed = try storage.writeBlock(of: stamp.replica, in: zone, covering: stamp.time)?.digest(at: stamp.time) }
            guard let signed, signed == digest else {
                if !heldHere, let elisionBase, elisionBase.covers(stamp) {
                    // Not a forgery: a change set made for a replica that held this write, which this one lacks.
                    throw ChangeSetError.madeForMoreThanHeld(replica: stamp.replica.description)
                }
                if signed == nil { throw WriteProofError.unproven(stamp: stamp, what: what(record, stamp)) }
                throw WriteProofError.tampered(stamp: stamp, what: what(record, stamp))
            }
        }
        var bounds: [ReplicaID: HLCTimestamp] = [:]
        func bound(_ replica: ReplicaID) throws -> HLCTimestamp {
            if let known = bounds[replica] { return known }
            let stored = try storage.writeBlock(of: replica, in: zone, covering: nil)?.last ?? .zero
            let value = max(knowledge[replica], heads[replica] ?? .zero, stored)
            bounds[replica] = value
            return value
        }
        /// A vector entry (a record's, or the claim's) goes no further than a signed head, nor past a removal's mark.
        func checkVectorEntry(_ replica: ReplicaID, _ time: HLCTimestamp, _ what: @autoclosure () -> String) throws {
            try refuseIfRemoved(replica, at: time)
            let head = try bound(replica)
            guard time <= head else { throw WriteProofError.beyondSignedHead(replica: replica, claimed: time, head: head, what: what()) }
        }
        for (replica, entry) in highest { try checkVectorEntry(replica, entry.time, "record \"\(entry.record)\"") }
        for entry in claim?.entries ?? [] where entry.time > knowledge[entry.replica] {
            try checkVectorEntry(entry.replica, entry.time, "the change set's claim")
        }
        for block in blocks { try storage.storeWriteBlock(block) }
    }

    private func resolve(_ proof: BlockProof) throws -> WriteBlock { try proof.resolved(computed) }
}

/// The whole blocks of one change set, by replica and in order of their
/// first entry: what proves its writes, looked up without a table of every
/// entry (a million writes would hold one in memory).
struct ChangeSetBlocks {
    private struct Replica {
        /// Sorted by first entry.
        var blocks: [WriteBlock] = []
        /// For each block, where its run begins: blocks whose ranges overlap
        /// (each beginning before those ahead of it end) form one run.
        var runStart: [Int] = []
        /// The entries of each run of more than one block, by run start.
        var tables: [Int: [HLCTimestamp: [UInt8]]] = [:]
    }

    private var byReplica: [ReplicaID: Replica] = [:]

    /// Refuses two blocks of the change set that sign two writes under one stamp.
    init(_ blocks: [WriteBlock]) throws {
        var grouped: [ReplicaID: [WriteBlock]] = [:]
        for block in blocks where block.entries?.isEmpty == false { grouped[block.replica, default: []].append(block) }
        for (replica, list) in grouped {
            var held = Replica()
            held.blocks = list.sorted { ($0.firstTime!, $0.last) < ($1.firstTime!, $1.last) }
            held.runStart.reserveCapacity(held.blocks.count)
            // Only a run's blocks can share a stamp: a run of many (never in an honest change set)
            // has its entries compared in one table, so it costs what its entries do.
            func closeRun(_ start: Int, _ end: Int) throws {
                guard end - start > 1 else { return }
                var signed: [HLCTimestamp: [UInt8]] = [:]
                for block in held.blocks[start..<end] {
                    for entry in block.entries! {
                        if let other = signed.updateValue(entry.digest, forKey: entry.time), other != entry.digest {
                            throw WriteProofError.twoBlocksOneStamp(replica: replica, last: entry.time)
                        }
                    }
                }
                held.tables[start] = signed
            }
            var start = 0
            var reach = HLCTimestamp.zero
            for (index, block) in held.blocks.enumerated() {
                if index > 0, block.firstTime! > reach {
                    try closeRun(start, index)
                    start = index
                }
                reach = max(reach, block.last)
                held.runStart.append(start)
            }
            try closeRun(start, held.blocks.count)
            byReplica[replica] = held
        }
    }

    /// The digest a block of the change set signs for the write `stamp`, if one holds it.
    func digest(at stamp: Stamp) -> [UInt8]? {
        guard let held = byReplica[stamp.replica] else { return nil }
        // The last block beginning at or before the stamp: only its run can hold it.
        var low = 0
        var high = held.blocks.count
        while low < high {
            let mid = (low + high) / 2
            if held.blocks[mid].firstTime! <= stamp.time { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return nil }
        if let table = held.tables[held.runStart[low - 1]] { return table[stamp.time] }
        return held.blocks[low - 1].digest(at: stamp.time)
    }
}

extension BlockProof {
    /// The block whole (or the head), with the digests of the writes the
    /// change set shows taken from `computed`. Unchecked: see `isSignatureValid`.
    func resolved(_ computed: [Stamp: [UInt8]]) throws -> WriteBlock {
        guard let times else { return block }
        var block = self.block
        var entries: [WriteBlock.Entry] = []
        entries.reserveCapacity(times.count)
        var supplied = self.supplied.makeIterator()
        for (time, isShown) in zip(times, shown) {
            let stamp = Stamp(time: time, replica: block.replica)
            if isShown {
                guard let digest = computed[stamp] else {
                    throw WriteProofError.malformed("a block says the change set shows the write \(stamp), which no record shows")
                }
                entries.append(WriteBlock.Entry(time: time, digest: digest))
            } else {
                guard let digest = supplied.next() else { throw WriteProofError.malformed("a block lacks digests") }
                entries.append(WriteBlock.Entry(time: time, digest: digest))
            }
        }
        block.entries = entries
        block.entriesHash = WriteBlock.hash(of: entries)
        return block
    }

    /// The blocks of a change set's proofs, resolved against its records and
    /// zone state: what a relay that re-cuts a change set (tests that split
    /// one into parts) gives a `ProofCollector` to prove each part again.
    public static func resolve(_ proofs: [BlockProof], records: [RecordState], header: ChangeSetHeader) throws -> [WriteBlock] {
        var computed: [Stamp: [UInt8]] = [header.zoneState.stamp: WriteDigest.zone(header.zoneState, in: header.zone)]
        for record in records {
            for (stamp, digest) in WriteDigest.writes(of: record, in: header.zone) { computed[stamp] = digest }
        }
        return try proofs.map { try $0.resolved(computed) }
    }
}

extension ProofCollector {
    /// A collector that finds blocks among `blocks` alone.
    public convenience init(base: VersionVector, blocks: [WriteBlock]) {
        let byReplica = Dictionary(grouping: blocks, by: \.replica).mapValues { $0.sorted { $0.last < $1.last } }
        self.init(base: base) { replica, time in
            guard let list = byReplica[replica] else { return nil }
            guard let time else { return list.last }
            return list.first { $0.last >= time && ($0.entries != nil || $0.last == list.last?.last) }
        }
    }
}
