@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// Relaying at the cost of one link per commit. A commit applied from peer
/// S is streamed by S itself to every device S has a session with (its
/// `neighbors`), so this side does not stream it again to those: their
/// streams here skip it, if they had sent everything before it. A skipped
/// commit is only as safe as S's stream to the peer, so the stream tells
/// the peer no cursor past it (`relayCap`: after a restart the peer's
/// resume point still lies before it), and when S's session with the peer
/// or with this side ends (`coverRelays` without S), this side asks the
/// peer what it holds and streams again from before the skip whatever the
/// peer lacks.
extension SyncSession {
    /// Whether this session relays: both sides say so, and both grant each
    /// other the account's databases (a device that does not trust this one
    /// back grants the public database alone; the two sides then agree it does not relay).
    package var relaying: Bool { localHello.relays && peerHello?.relays == true && streams.isAccount && !comparing }

    /// Local commits happened. With `changes` (the store's sequence and the
    /// sources of the commits since the last call), a stream that had sent
    /// everything before them skips commits that came from this session's
    /// peer or from devices streaming to it themselves (`coverRelays`);
    /// every other stream re-opens from its cursor.
    package mutating func localCommit(zones: [ZoneKey], roster: [UInt8]?, changes: LocalChanges?) -> [Action] {
        guard !closed, peerHello != nil else { return [] }
        var actions: [Action] = []
        var reopened = false
        if let roster, roster != toldRoster {
            // What the peer was told lacks: the new entries, in pieces.
            let pieces = AccountRoster.newPieces(from: toldRoster, to: roster) ?? []
            toldRoster = roster
            actions.append(contentsOf: pieces.map { .send(.roster($0)) })
            reopened = true
        }
        let relayed = relayedSources(changes)
        if let sequence = changes?.sequence { seenSequence = sequence }
        for zone in zones where streamsTo(zone) && outgoing[zone] == nil {
            addOutgoing(zone, cursor: .start, peerVector: VersionVector(), peerZoneState: nil)
            reopened = true
        }
        var confirm = Set<String>()
        for zone in order {
            guard var stream = outgoing[zone] else { continue }
            // A cursor past the end of the store's history (a store restored from an older copy) is no place to skip from.
            if let relayed, !stream.dirty, producing != zone, stream.cursor >= .end(of: relayed.after), stream.cursor <= .end(of: relayed.upTo),
               !repairs.contains(where: { $0.zone == zone }) {
                let others = relayed.sources.subtracting([peerDevice ?? ""])
                if !others.isEmpty {
                    if stream.relayCap == nil { stream.relayCap = stream.cursor }
                    stream.relaySources.formUnion(others)
                }
                stream.cursor = .end(of: relayed.upTo)
            } else if !stream.dirty || producing == zone {
                stream.dirty = true
                reopened = true
                // Its next batch claims the whole zone: the commits it skipped must
                // be in the peer's hands first, so it asks what the peer holds and
                // goes again from before them (`receiveHolds`) before producing.
                if stream.relayCap != nil, !stream.relaySources.isEmpty, producing != zone {
                    stream.awaitingHolds = true
                    confirm.formUnion(stream.relaySources)
                }
            }
            outgoing[zone] = stream
        }
        if !confirm.isEmpty { actions += askHolds(for: confirm) }
        guard reopened else { return actions }
        if producing != nil { producingRecheck = true }
        sentCaughtUp = false
        reportedQuiescent = false
        return actions + pump()
    }

    /// The commits `changes` brings, when every one came from this
    /// session's peer or from a device that streams to it: the sequences
    /// after which and up to which they lie, and their sources. Nil when a
    /// commit is local or of unknown source, or nothing is known.
    private func relayedSources(_ changes: LocalChanges?) -> (after: UInt64, upTo: UInt64, sources: Set<String>)? {
        guard relaying || peerDevice != nil, let changes, let now = changes.sequence, let seen = seenSequence, now >= seen else { return nil }
        var sources = Set<String>()
        var sequence = seen
        while sequence < now {
            sequence += 1
            guard let source = changes.sources[sequence], source == peerDevice || (relaying && coveringSources.contains(source)) else { return nil }
            sources.insert(source)
        }
        return (seen, now, sources)
    }

    /// The devices that said they stream to this session's peer themselves
    /// (their `neighbors` list it), all of them. A device no longer among
    /// them takes its relays with it: streams that skipped commits from it
    /// go again, from before the first skip, once the peer says what it holds.
    package mutating func coverRelays(from sources: Set<String>) -> [Action] {
        guard !closed else { return [] }
        let lost = coveringSources.subtracting(sources)
        coveringSources = sources
        return relaysLost(lost)
    }

    /// Streams that relied on `sources` go again once the peer says what it holds.
    package mutating func relaysLost(_ sources: Set<String>) -> [Action] {
        guard !closed, peerHello != nil, !sources.isEmpty else { return [] }
        let affected = outgoing.values.contains { !$0.relaySources.isDisjoint(with: sources) }
        guard affected else { return [] }
        return askHolds(for: sources)
    }

    /// Asks the peer what it holds (once at a time); streams that relied on `sources` go again on the answer.
    mutating func askHolds(for sources: Set<String>) -> [Action] {
        lostRelays.formUnion(sources)
        guard !awaitingHolds else { return [] }
        awaitingHolds = true
        return [.send(.holdsRequest)]
    }

    /// Tells the peer the devices this side has sessions with, when it relays too.
    package mutating func tellNeighbors(_ devices: [DeviceID]) -> [Action] {
        guard !closed, relaying else { return [] }
        return [.send(.neighbors(Array(devices.prefix(SyncMessage.maximumNeighbors))))]
    }

    mutating func receiveNeighbors(_ devices: [DeviceID]) -> [Action] {
        // A peer that thinks this session relays when this side does not (trust changing under it) is not acted on.
        guard relaying else { return [] }
        return [.event(.neighbors(Set(devices.map(\.description))))]
    }

    mutating func receiveHoldsRequest() -> [Action] {
        guard relaying else { return close(.forbidden("only a relaying device of this account may ask what this one holds (\(access))")) }
        guard !answeringHolds else { return close(.unexpected("a holds request before the last one was answered")) }
        answeringHolds = true
        return [.answerHolds]
    }

    /// The store read what this side holds (`answerHolds`): the peer may build its claims on it.
    package mutating func holdingsRead(_ zones: [ZoneAdvert]) -> [Action] {
        guard !closed, answeringHolds else { return [] }
        answeringHolds = false
        let told = zones.filter { access.allows($0.zone) }.map { ZoneAdvert(zone: $0.zone, zoneState: $0.zoneState, vector: $0.vector, resume: nil) }
        for advert in told { toldVectors[advert.zone, default: VersionVector()].join(advert.vector) }
        return [.send(.holds(told))]
    }

    /// The peer said what it holds: each stream that skipped relays of a
    /// lost source starts again from before its first skip, and sends what
    /// the peer lacks of it.
    mutating func receiveHolds(_ zones: [ZoneAdvert]) -> [Action] {
        guard awaitingHolds else { return close(.unexpected("a holds message nothing asked for")) }
        awaitingHolds = false
        let lost = lostRelays
        lostRelays = []
        for advert in zones { outgoing[advert.zone]?.peerVector.join(advert.vector) }
        var reopened = false
        for zone in order {
            guard var stream = outgoing[zone] else { continue }
            if stream.awaitingHolds {
                stream.awaitingHolds = false
                reopened = true
            }
            if stream.relayCap != nil, !stream.relaySources.isDisjoint(with: lost) {
                stream.rewindAfterProduce = true
                if producing != zone { settleRewind(&stream) }
                reopened = true
            }
            outgoing[zone] = stream
        }
        // What the peer holds is what tombstone collection waits for (a relayed commit brings no acknowledgement).
        let holds = zones.filter { access.allows($0.zone) }.map { Action.event(.peerHolds(zone: $0.zone, vector: $0.vector)) }
        guard reopened else { return holds }
        sentCaughtUp = false
        reportedQuiescent = false
        return holds + pump()
    }

    /// Asks a relaying peer what it holds (`holdsRequest`): a commit it took
    /// from another device's stream reaches this side with no acknowledgement,
    /// and tombstone collection waits for one. The answer comes as `peerHolds` events.
    package mutating func requestHolds() -> [Action] {
        guard !closed, peerHello != nil, relaying else { return [] }
        return askHolds(for: [])
    }

    /// After a batch (or a holds answer): a rewind asked for goes back to the
    /// cap; a rewound stream that reached the end again drops its cap.
    mutating func settleRewind(_ stream: inout Outgoing) {
        if stream.rewindAfterProduce {
            stream.rewindAfterProduce = false
            stream.cursor = min(stream.cursor, stream.relayCap ?? stream.cursor)
            stream.rewinding = true
            stream.dirty = true
        } else if stream.rewinding, !stream.dirty {
            stream.rewinding = false
            stream.relayCap = nil
            stream.relaySources = []
        }
    }
}
