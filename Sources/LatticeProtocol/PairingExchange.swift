@_spi(Tools) import LatticeCore
@_spi(Tools) import LatticeCrypto

/// The messages of `lattice pair`, in order: the joiner's share, the
/// inviter's share and key confirmation, then each side's identity sealed
/// under the exchanged key and signed over it.
package enum PairingMessage: Hashable, Sendable {
    /// Joiner → inviter: a fresh nonce (the session's ID), the container, its CPace share.
    case join(nonce: [UInt8], container: String, share: [UInt8])
    /// Inviter → joiner: its share and its confirmation of the key.
    case accept(share: [UInt8], confirmation: [UInt8])
    /// Joiner → inviter: its confirmation and its sealed introduction.
    case joinerIntroduction(confirmation: [UInt8], sealed: [UInt8])
    /// Inviter → joiner: its sealed introduction.
    case inviterIntroduction(sealed: [UInt8])
    /// Either side: the exchange ends, and why.
    case refused(String)

    package static let nonceLength = 16
    static let magic = Array("LTPR".utf8)
    /// The largest message an inviter takes: anyone on the LAN can send one.
    package static let maximumLength = 64 * 1024
    /// The largest a joiner takes from the device it chose to dial: the
    /// inviter's introduction carries the account's roster, or as much of it
    /// as fits with the joiner's and the inviter's chains and every removal
    /// first (`AccountRoster.encoded(fitting:first:)`); the rest comes in
    /// pieces at the joiner's first sync.
    package static let maximumIntroductionLength = 1 << 20

    package var bytes: [UInt8] {
        var writer = BinaryWriter()
        writer.raw(Self.magic)
        switch self {
        case .join(let nonce, let container, let share):
            writer.byte(1)
            writer.raw(nonce)
            writer.string(container)
            writer.raw(share)
        case .accept(let share, let confirmation):
            writer.byte(2)
            writer.raw(share)
            writer.raw(confirmation)
        case .joinerIntroduction(let confirmation, let sealed):
            writer.byte(3)
            writer.raw(confirmation)
            writer.blob(sealed)
        case .inviterIntroduction(let sealed):
            writer.byte(4)
            writer.blob(sealed)
        case .refused(let reason):
            writer.byte(5)
            writer.string(String(reason.prefix(500)))
        }
        return writer.bytes
    }

    package init(bytes: [UInt8], maximumLength: Int = maximumLength) throws {
        guard bytes.count <= maximumLength, bytes.count >= 5, Array(bytes.prefix(4)) == Self.magic else {
            throw ProtocolError.malformed("not a pairing message")
        }
        var reader = BinaryReader(bytes, from: 4)
        do {
            switch try reader.byte() {
            case 1:
                let nonce = Array(try reader.raw(Self.nonceLength))
                let container = try reader.string()
                self = .join(nonce: nonce, container: container, share: Array(try reader.raw(CPace.messageLength)))
            case 2: self = .accept(share: Array(try reader.raw(CPace.messageLength)), confirmation: Array(try reader.raw(32)))
            case 3: self = .joinerIntroduction(confirmation: Array(try reader.raw(32)), sealed: try reader.blob())
            case 4: self = .inviterIntroduction(sealed: try reader.blob())
            case 5: self = .refused(try reader.string())
            case let kind: throw ProtocolError.malformed("unknown pairing message \(kind)")
            }
        } catch let error as BinaryDecodingError {
            throw ProtocolError.malformed("pairing message: \(error)")
        }
        guard reader.isAtEnd else { throw ProtocolError.malformed("trailing bytes in a pairing message") }
    }
}

/// Who a device is, as it tells the other inside the sealed exchange: its
/// key, a name, and what the account adds (the roster), signed with its
/// identity over the session so it cannot be replayed into another.
package struct PairingIntroduction: Hashable, Sendable {
    package var publicKey: [UInt8]
    package var name: String
    package var extra: [UInt8]
    package var signature: [UInt8]

    static func signedBytes(publicKey: [UInt8], name: String, extra: [UInt8], binding: [UInt8]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.raw("LTPRID".utf8)
        writer.raw(binding)
        writer.raw(publicKey)
        writer.string(name)
        writer.blob(extra)
        return writer.bytes
    }

    init(identity: Identity, name: String, extra: [UInt8], binding: [UInt8]) throws {
        publicKey = identity.publicKey
        self.name = name
        self.extra = extra
        signature = try identity.sign(Self.signedBytes(publicKey: publicKey, name: name, extra: extra, binding: binding))
    }

    var bytes: [UInt8] {
        var writer = BinaryWriter()
        writer.raw(publicKey)
        writer.string(name)
        writer.blob(extra)
        writer.raw(signature)
        return writer.bytes
    }

    init(bytes: [UInt8], binding: [UInt8]) throws {
        var reader = BinaryReader(bytes)
        do {
            publicKey = Array(try reader.raw(WriteBlock.publicKeyLength))
            name = try reader.string()
            extra = try reader.blob()
            signature = Array(try reader.raw(WriteBlock.signatureLength))
        } catch {
            throw ProtocolError.malformed("pairing introduction")
        }
        guard reader.isAtEnd, Identity.verify(signature, of: Self.signedBytes(publicKey: publicKey, name: name, extra: extra, binding: binding), publicKey: publicKey) else {
            throw ProtocolError.malformed("a pairing introduction whose signature does not hold")
        }
    }
}

/// How a pairing ended well: the other device, and the verifier both screens show.
package struct PairingOutcome: Hashable, Sendable {
    package var peer: PairingIntroduction
    package var deviceID: DeviceID
    package var verifier: String
}

/// Why a pairing failed.
package enum PairingFailure: Error, Hashable, Sendable, CustomStringConvertible {
    case wrongCode
    case expired
    case tooManyAttempts
    case containerMismatch(peer: String, local: String)
    case refusedByPeer(String)
    case malformed(String)
    case ownDevice
    /// The inviter will not add this device (a device removed from the account).
    case notAllowed(String)
    /// The offer takes no more attempts at once (its guesses are all in flight).
    case busy
    /// The other side did not finish the exchange in time.
    case timedOut

    package var description: String {
        switch self {
        case .wrongCode: return "the code does not match the one shown on the other device (check it and run `lattice pair CODE` again)"
        case .expired: return "the pairing code expired; run `lattice pair` again on the other device for a new one"
        case .tooManyAttempts: return "too many wrong codes were tried; run `lattice pair` again on the other device for a new one"
        case .containerMismatch(let peer, let local): return "the other device pairs container \"\(peer)\", this one \"\(local)\" (use --container)"
        case .refusedByPeer(let why): return "the other device refused: \(why)"
        case .malformed(let why): return "the other device sent a malformed pairing message (\(why))"
        case .ownDevice: return "the other side is this device itself"
        case .notAllowed(let why): return why
        case .busy: return "another device is pairing with this code now; try again in a few seconds"
        case .timedOut: return "the other device did not finish the pairing in time"
        }
    }
}

/// What a side of the exchange asks its driver to do.
package enum PairingAction: Hashable, Sendable {
    case send(PairingMessage)
    case paired(PairingOutcome)
    case failed(PairingFailure)
}

/// The inviter's side of one exchange (one attempt at the code). Its offer
/// (`PairingOffer`) counts failed attempts and the code's expiry across attempts.
package struct PairingInviter: Sendable {
    private let code: PairingCode
    private let identity: Identity
    private let name: String
    private let container: String
    private let extra: @Sendable (PairingIntroduction) throws -> [UInt8]
    private var keys: PairingKeys?
    private var done = false

    /// Whether this exchange got as far as the key: its confirmation went
    /// out, so the other side could test one guess of the code against it.
    package var exchangedKeys: Bool { keys != nil }

    /// `extra`: what the inviter adds to its introduction once it knows the
    /// joiner (the account's roster with the joiner added); a `PairingFailure`
    /// it throws ends the exchange with that reason.
    package init(code: PairingCode, identity: Identity, name: String, container: String, extra: @escaping @Sendable (PairingIntroduction) throws -> [UInt8] = { _ in [] }) {
        self.code = code
        self.identity = identity
        self.name = name
        self.container = container
        self.extra = extra
    }

    package mutating func receive(_ message: PairingMessage) -> [PairingAction] {
        guard !done else { return [] }
        switch (message, keys) {
        case (.join(let nonce, let peerContainer, let share), nil):
            guard peerContainer == container else { return fail(.containerMismatch(peer: peerContainer, local: container)) }
            do {
                let side = try CPace(code: code, sessionID: nonce + Array(container.utf8), context: "lattice pair", role: .responder)
                let keys = try side.finish(peerMessage: share)
                self.keys = keys
                return [.send(.accept(share: side.message, confirmation: keys.confirmation))]
            } catch {
                return fail(.malformed("\(error)"))
            }
        case (.joinerIntroduction(let confirmation, let sealed), let keys?):
            do {
                try keys.checkPeerConfirmation(confirmation)
            } catch {
                return fail(.wrongCode)
            }
            do {
                let peer = try PairingIntroduction(bytes: try keys.open(sealed, number: 1), binding: keys.binding + [1])
                guard peer.publicKey != identity.publicKey else { return fail(.ownDevice) }
                let mine = try PairingIntroduction(identity: identity, name: name, extra: try extra(peer), binding: keys.binding + [2])
                done = true
                return [
                    .send(.inviterIntroduction(sealed: try keys.seal(mine.bytes, number: 2))),
                    .paired(PairingOutcome(peer: peer, deviceID: try DeviceID(publicKey: peer.publicKey), verifier: keys.verifier)),
                ]
            } catch let failure as PairingFailure {
                return fail(failure)
            } catch {
                return fail(.malformed("\(error)"))
            }
        case (.refused(let why), _):
            done = true
            return [.failed(.refusedByPeer(why))]
        default:
            return fail(.malformed("a pairing message out of order"))
        }
    }

    private mutating func fail(_ failure: PairingFailure) -> [PairingAction] {
        done = true
        return [.send(.refused(failure.description)), .failed(failure)]
    }
}

/// The joiner's side: it starts, with the code a person typed.
package struct PairingJoiner: Sendable {
    private let identity: Identity
    private let name: String
    private let side: CPace
    private var keys: PairingKeys?
    private var done = false
    /// The first message to send.
    package let start: PairingMessage

    package init(code: PairingCode, identity: Identity, name: String, container: String) throws {
        self.identity = identity
        self.name = name
        var nonce = [UInt8](repeating: 0, count: PairingMessage.nonceLength)
        for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255) }
        side = try CPace(code: code, sessionID: nonce + Array(container.utf8), context: "lattice pair", role: .initiator)
        start = .join(nonce: nonce, container: container, share: side.message)
    }

    package mutating func receive(_ message: PairingMessage) -> [PairingAction] {
        guard !done else { return [] }
        switch (message, keys) {
        case (.accept(let share, let confirmation), nil):
            do {
                let keys = try side.finish(peerMessage: share)
                self.keys = keys
                do { try keys.checkPeerConfirmation(confirmation) } catch { return fail(.wrongCode) }
                let mine = try PairingIntroduction(identity: identity, name: name, extra: [], binding: keys.binding + [1])
                return [.send(.joinerIntroduction(confirmation: keys.confirmation, sealed: try keys.seal(mine.bytes, number: 1)))]
            } catch {
                return fail(.malformed("\(error)"))
            }
        case (.inviterIntroduction(let sealed), let keys?):
            do {
                let peer = try PairingIntroduction(bytes: try keys.open(sealed, number: 2), binding: keys.binding + [2])
                guard peer.publicKey != identity.publicKey else { return fail(.ownDevice) }
                done = true
                return [.paired(PairingOutcome(peer: peer, deviceID: try DeviceID(publicKey: peer.publicKey), verifier: keys.verifier))]
            } catch {
                return fail(.malformed("\(error)"))
            }
        case (.refused(let why), _):
            done = true
            // An inviter that says the code is wrong means it: the joiner says so plainly.
            return [.failed(why == PairingFailure.wrongCode.description ? .wrongCode : .refusedByPeer(why))]
        default:
            return fail(.malformed("a pairing message out of order"))
        }
    }

    private mutating func fail(_ failure: PairingFailure) -> [PairingAction] {
        done = true
        return [.send(.refused(failure.description)), .failed(failure)]
    }
}

/// A code on offer: how long it lives and how many wrong attempts it takes
/// before it is spent (each attempt is one guess for a party without it).
package struct PairingOffer: Sendable {
    package static let defaultLifetimeMilliseconds: UInt64 = 120_000
    package static let defaultMaximumFailures = 3
    package let code: PairingCode
    package let expires: UInt64
    package let maximumFailures: Int
    package private(set) var failures = 0

    package init(code: PairingCode, now: UInt64, lifetimeMilliseconds: UInt64 = defaultLifetimeMilliseconds, maximumFailures: Int = defaultMaximumFailures) {
        self.code = code
        expires = now + lifetimeMilliseconds
        self.maximumFailures = maximumFailures
    }

    /// Why a new attempt may not start now, or nil.
    package func refusal(now: UInt64) -> PairingFailure? {
        if now >= expires { return .expired }
        if failures >= maximumFailures { return .tooManyAttempts }
        return nil
    }

    package mutating func recordFailure() { failures += 1 }
}
