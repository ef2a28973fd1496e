@_spi(Tools) import LatticeCore

/// A digest item as an item list carries it: the key and a short hash.
@_spi(Tools) public struct ShortDigestItem: Hashable, Sendable {
    /// The record name's bytes; empty for the zone's own state.
    public var key: [UInt8]
    /// The first `DigestFingerprint.shortLength` bytes of the item's hash.
    public var hash: [UInt8]

    /// An item as an item list carries it.
    public init(key: [UInt8], hash: [UInt8]) {
        self.key = key
        self.hash = hash
    }

    /// The short form of `item`: its key and `shortHash`.
    public init(_ item: DigestItem) { self.init(key: item.key, hash: item.shortHash) }
}

/// One range of a reconciliation message. Ranges of a zone follow each other:
/// each starts where the one before ended (the first at the empty key), and
/// ends at `upper` (nil: the end of the key space).
@_spi(Tools) public struct ReconcileRange: Hashable, Sendable {
    /// What the sender says of a range: it matched, its fingerprint, its items, or an answer to items.
    public enum Content: Hashable, Sendable {
        /// Nothing to do here: the range matched.
        case skip
        /// The sender's fingerprint and count of the range.
        case fingerprint(DigestFingerprint, count: Int)
        /// The sender's items of the range, all of them.
        case items([ShortDigestItem])
        /// The answer to `items`: the sender's items the list did not hold
        /// alike, and for each listed item whether the sender holds it alike.
        case answer(items: [ShortDigestItem], held: [Bool])
    }

    /// Where the range ends, exclusive; nil for the end of the key space.
    public var upper: [UInt8]?
    /// What the sender says of the range.
    public var content: Content

    /// A range ending at `upper`, with what the sender says of it.
    public init(upper: [UInt8]?, content: Content) {
        self.upper = upper
        self.content = content
    }
}

/// One zone's ranges in a reconciliation message.
@_spi(Tools) public struct ReconcileZone: Hashable, Sendable {
    /// The zone the ranges cut up.
    public var zone: ZoneKey
    /// The zone's ranges in key order, the last reaching the end of the key space.
    public var ranges: [ReconcileRange]

    /// The part of a message about `zone`.
    public init(zone: ZoneKey, ranges: [ReconcileRange]) {
        self.zone = zone
        self.ranges = ranges
    }
}

/// A round of range-based set reconciliation (as Negentropy does it): the
/// zones not yet settled, each cut into ranges. A zone missing from a reply
/// is settled.
@_spi(Tools) public struct ReconcileMessage: Hashable, Sendable {
    /// The zones not yet settled, each with its ranges; empty once all are.
    public var zones: [ReconcileZone]

    /// A message about `zones`; with none, every zone is settled.
    public init(zones: [ReconcileZone]) { self.zones = zones }

    /// Whether it names no zone: every zone settled (a beginner's empty reply ends the reconciliation).
    public var isEmpty: Bool { zones.isEmpty }
}

/// A record (or the zone's state, key empty) the two sides hold differently,
/// as the side that began the reconciliation sees it.
public struct DigestDifference: Hashable, Sendable {
    /// The zone the record (or the zone's own state) belongs to.
    public var zone: ZoneKey
    /// The record name's bytes; empty for the zone's own state.
    public var key: [UInt8]
    /// This side's short hash, nil when it lacks the record.
    public var here: [UInt8]?
    /// The peer's, nil when the peer lacks it.
    public var there: [UInt8]?

    /// A difference as noted: `here` or `there` nil for the side that lacks the item.
    public init(zone: ZoneKey, key: [UInt8], here: [UInt8]?, there: [UInt8]?) {
        self.zone = zone
        self.key = key
        self.here = here
        self.there = there
    }

    /// The record's name, or nil for the zone's state.
    public var recordName: String? { key.isEmpty ? nil : String(decoding: key, as: UTF8.self) }
}

/// One side of a reconciliation, as a value: the side that begins it sends
/// `opening`, and each side answers the other's messages with `reply(to:)`
/// until the beginner's reply is empty. Each round halves the problem by a
/// factor of `fanout`: ranges that differ are cut into `fanout` parts by
/// count, and a range of at most `listThreshold` items is sent whole. The
/// beginner learns every difference (`differences`); the other side answers.
@_spi(Tools) public struct Reconciler: Sendable {
    /// How many parts, by count, a range that differs is cut into for the next round.
    public static let fanout = 16
    /// Ranges of at most this many items are sent as item lists rather than cut again.
    public static let listThreshold = 32
    /// Items an honest item list holds (the threshold, with room for the
    /// other side's set having grown meanwhile): a longer one is refused.
    public static let maximumListed = 4096
    /// Ranges one zone of a received message may hold; a message with more is malformed.
    public static let maximumRanges = 1 << 16
    /// About how many bytes of ranges a reply holds: past it, what is left of
    /// a zone goes back as one fingerprint, cut again in the next round (a
    /// message stays well under the 1 MiB maximum however much differs).
    public static let replyBudget = 768 * 1024

    /// Rounds a reconciliation may take before it is deemed not to end (an
    /// honest one takes about log16 of the zone's size, plus a few when
    /// replies hit the budget).
    public static let maximumRounds = 64
    /// Differences one reconciliation collects at most.
    public static let maximumDifferences = 1_000_000

    /// Whether this side began the reconciliation: only the beginner notes differences.
    public let initiator: Bool
    /// The differences noted so far, in the order found; empty on the answering side.
    public private(set) var differences: [DigestDifference] = []
    /// Keys already noted, per zone: a range opened again notes nothing twice.
    private var noted: Set<NotedKey> = []
    /// The zones the beginner asked about: a reply about another is refused.
    private var opened: Set<ZoneKey> = []
    /// The item lists the beginner sent, by zone and range: an answer's
    /// `held` bits refer to them, not to what the store holds by then.
    private var sentLists: [ListKey: [ShortDigestItem]] = [:]
    /// Messages this side has replied to; past `maximumRounds`, `reply(to:source:)` throws.
    public private(set) var rounds = 0

    private struct NotedKey: Hashable {
        var zone: ZoneKey
        var key: [UInt8]
    }

    private struct ListKey: Hashable {
        var zone: ZoneKey
        var range: DigestRange
    }

    /// A side with no zone opened: `false` for the answering side (a beginner uses `init(opening:)`).
    public init(initiator: Bool) { self.initiator = initiator }

    /// The beginner, with the zones of its opening.
    public init(opening: ReconcileMessage) {
        self.init(initiator: true)
        opened = Set(opening.zones.map(\.zone))
    }

    /// The first message: each zone's whole fingerprint.
    public static func opening(zones: [ZoneKey], source: some DigestSource) throws -> ReconcileMessage {
        try ReconcileMessage(zones: zones.map { zone in
            let sum = try source.digestSum(of: zone, in: .all)
            return ReconcileZone(zone: zone, ranges: [ReconcileRange(upper: nil, content: .fingerprint(sum.fingerprint, count: sum.count))])
        })
    }

    /// The reply to a message from the other side. For the beginner, an
    /// empty reply means the reconciliation is over.
    public mutating func reply(to message: ReconcileMessage, source: some DigestSource) throws -> ReconcileMessage {
        rounds += 1
        guard rounds <= Self.maximumRounds else { throw ProtocolError.limitExceeded("a reconciliation past \(Self.maximumRounds) rounds: the peer's answers do not converge") }
        var out: [ReconcileZone] = []
        var budget = Self.replyBudget
        for zone in message.zones {
            if initiator, !opened.contains(zone.zone) { throw ProtocolError.unexpected("an answer about zone \(zone.zone), which this side did not ask about") }
            budget -= 48 // the zone's key and counts
            let ranges = try reply(to: zone, source: source, budget: &budget)
            if !ranges.isEmpty { out.append(ReconcileZone(zone: zone.zone, ranges: ranges)) }
        }
        return ReconcileMessage(zones: out)
    }

    private mutating func reply(to zone: ReconcileZone, source: some DigestSource, budget: inout Int) throws -> [ReconcileRange] {
        var out: [ReconcileRange] = []
        var lower: [UInt8] = []
        var settled = true
        func add(_ range: ReconcileRange) {
            budget -= Self.estimatedSize(range)
            if case .skip = range.content, let last = out.last, case .skip = last.content {
                out[out.count - 1].upper = range.upper
            } else {
                out.append(range)
            }
            if range.content != .skip { settled = false }
        }
        /// This side's parts of a range, or its items when there are few: the range is cut again.
        func split(_ range: DigestRange, _ mine: DigestSum) throws {
            if mine.count <= Self.listThreshold {
                let items = try source.digestItems(of: zone.zone, in: range).map(ShortDigestItem.init)
                if initiator { sentLists[ListKey(zone: zone.zone, range: range)] = items }
                add(ReconcileRange(upper: range.upper, content: .items(items)))
            } else {
                for part in try source.digestParts(of: zone.zone, in: range, parts: Self.fanout) {
                    add(ReconcileRange(upper: part.upper, content: .fingerprint(part.sum.fingerprint, count: part.sum.count)))
                }
            }
        }
        guard zone.ranges.last?.upper == nil else { throw ProtocolError.malformed("a zone's reconciliation ranges stop short of the end of the key space") }
        for incoming in zone.ranges {
            let range = DigestRange(lower: lower, upper: incoming.upper)
            defer { lower = incoming.upper ?? [] }
            if budget <= 0 {
                // Over the budget: the rest of the zone as one fingerprint, cut again next round
                // (ranges it covers that had settled match again; nothing is noted twice).
                let rest = try source.digestSum(of: zone.zone, in: DigestRange(lower: lower, upper: nil))
                add(ReconcileRange(upper: nil, content: .fingerprint(rest.fingerprint, count: rest.count)))
                break
            }
            switch incoming.content {
            case .skip:
                add(ReconcileRange(upper: incoming.upper, content: .skip))
            case .fingerprint(let theirs, let count):
                let mine = try source.digestSum(of: zone.zone, in: range)
                if mine.count == count, mine.fingerprint == theirs {
                    add(ReconcileRange(upper: incoming.upper, content: .skip))
                } else {
                    try split(range, mine)
                }
            case .items(let listed):
                let theirs = listed.filter { range.contains($0.key) }
                let mine = try source.digestSum(of: zone.zone, in: range)
                // Many here against their few: cut this side's part instead of listing it all.
                if mine.count > Self.listThreshold {
                    try split(range, mine)
                    continue
                }
                let items = try source.digestItems(of: zone.zone, in: range).map(ShortDigestItem.init)
                let theirsByKey = Dictionary(theirs.map { ($0.key, $0.hash) }, uniquingKeysWith: { first, _ in first })
                let mineByKey = Dictionary(items.map { ($0.key, $0.hash) }, uniquingKeysWith: { first, _ in first })
                if initiator {
                    try note(zone.zone, mine: mineByKey, theirs: theirsByKey)
                    add(ReconcileRange(upper: incoming.upper, content: .skip))
                } else {
                    let unlike = items.filter { theirsByKey[$0.key] != $0.hash }
                    let held = listed.map { mineByKey[$0.key] == $0.hash }
                    add(ReconcileRange(upper: incoming.upper, content: .answer(items: unlike, held: held)))
                }
            case .answer(let answered, let held):
                guard initiator else { throw ProtocolError.unexpected("an answer to an item list this side never sent") }
                // The list this side sent for the range: `held` is about it, whatever the store holds by now.
                guard let sent = sentLists.removeValue(forKey: ListKey(zone: zone.zone, range: range)), sent.count == held.count else {
                    throw ProtocolError.unexpected("an answer to an item list this side never sent for that range")
                }
                var mineByKey: [[UInt8]: [UInt8]] = [:]
                for item in sent { mineByKey[item.key] = item.hash }
                var theirsByKey = Dictionary(answered.filter { range.contains($0.key) }.map { ($0.key, $0.hash) }, uniquingKeysWith: { first, _ in first })
                // Listed items they hold alike are alike; the rest they lack or hold otherwise.
                for (offset, item) in sent.enumerated() where held[offset] { theirsByKey[item.key] = item.hash }
                try note(zone.zone, mine: mineByKey, theirs: theirsByKey)
                add(ReconcileRange(upper: incoming.upper, content: .skip))
            }
        }
        return settled ? [] : out
    }

    /// About the bytes a range takes on the wire.
    static func estimatedSize(_ range: ReconcileRange) -> Int {
        let bound = (range.upper?.count ?? 0) + 3
        switch range.content {
        case .skip: return bound
        case .fingerprint: return bound + DigestFingerprint.length + 4
        case .items(let items): return bound + items.reduce(2) { $0 + $1.key.count + DigestFingerprint.shortLength + 2 }
        case .answer(let items, let held): return bound + held.count / 8 + items.reduce(4) { $0 + $1.key.count + DigestFingerprint.shortLength + 2 }
        }
    }

    private mutating func note(_ zone: ZoneKey, mine: [[UInt8]: [UInt8]], theirs: [[UInt8]: [UInt8]]) throws {
        for key in Set(mine.keys).union(theirs.keys).sorted(by: digestKeyPrecedes) where mine[key] != theirs[key] {
            guard noted.insert(NotedKey(zone: zone, key: key)).inserted else { continue }
            guard differences.count < Self.maximumDifferences else {
                throw ProtocolError.limitExceeded("more than \(Self.maximumDifferences) differences in one comparison")
            }
            differences.append(DigestDifference(zone: zone, key: key, here: mine[key], there: theirs[key]))
        }
    }
}
