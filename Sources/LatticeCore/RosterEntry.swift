@_spi(Tools) import LatticeCrypto

/// One signed change to an account's roster: a member adds a device, removes
/// one, or says how far it held a removed device's writes when it learnt of
/// the removal. Entries form a graph: each names the roster's heads its
/// author knew (`parents`), so every replica orders them the same way
/// (`AccountRoster.state`).
package struct RosterEntry: Hashable, Sendable {
    package enum Action: Hashable, Sendable {
        /// The subject joins the account, under a name people see.
        case add(name: String)
        /// The subject leaves the account; its writes stamped after
        /// `writesUpTo` (its latest write the author held) are refused.
        case remove(writesUpTo: HLCTimestamp)
        /// The author held the removed subject's writes up to `writesUpTo`
        /// when the removal reached it (writes the subject made before it
        /// learnt of its removal, relayed to a member that had not either):
        /// they stay accepted everywhere, so every member keeps one state.
        case held(writesUpTo: HLCTimestamp)
    }

    package static let keyLength = WriteBlock.publicKeyLength
    package static let hashLength = ContentHasher.length
    /// A roster of `AccountRoster.maximumEntries` stays well under a message's megabyte.
    package static let maximumParents = 8
    package static let maximumNameBytes = 64

    /// The founder's public key: the account's identity.
    package let account: [UInt8]
    package let author: [UInt8]
    package let subject: [UInt8]
    package let action: Action
    /// The author's wall clock when it signed, in milliseconds since 1970 (shown, never trusted for order).
    package let time: UInt64
    package let parents: [[UInt8]]
    package let signature: [UInt8]
    /// BLAKE2b-256 of the entry's bytes: how other entries name it.
    package let hash: [UInt8]

    /// `text` cut to a name an entry can hold: one line, at most `maximumNameBytes` of UTF-8.
    package static func name(fitting text: String) -> String {
        var name = ""
        for character in text.prefix(while: { !$0.isNewline }) {
            guard name.utf8.count + String(character).utf8.count <= maximumNameBytes else { break }
            name.append(character)
        }
        return name
    }

    /// Signs a new entry as `identity`.
    package init(account: [UInt8], subject: [UInt8], action: Action, time: UInt64, parents: [[UInt8]], by identity: Identity) throws {
        let content = Self.content(account: account, author: identity.publicKey, subject: subject, action: action, time: time, parents: parents)
        try self.init(content: content, signature: try identity.sign(Self.signedMessage(content)))
    }

    /// Reads one entry (its content, then the signature) and checks the signature.
    package init(bytes: [UInt8]) throws(RosterError) {
        guard bytes.count > WriteBlock.signatureLength else { throw .malformed("an entry of \(bytes.count) bytes") }
        try self.init(content: Array(bytes.dropLast(WriteBlock.signatureLength)), signature: Array(bytes.suffix(WriteBlock.signatureLength)))
    }

    /// Reads the content `content(...)` wrote, as strictly as it writes it, and checks `signature` over it.
    private init(content: [UInt8], signature: [UInt8]) throws(RosterError) {
        var reader = BinaryReader(content)
        do {
            guard try reader.byte() == 1 else { throw RosterError.malformed("an entry of an unknown version") }
            account = Array(try reader.raw(Self.keyLength))
            author = Array(try reader.raw(Self.keyLength))
            subject = Array(try reader.raw(Self.keyLength))
            switch try reader.byte() {
            case 1:
                let name = try reader.string()
                guard name.utf8.count <= Self.maximumNameBytes, !name.contains(where: \.isNewline) else {
                    throw RosterError.malformed("a device name over \(Self.maximumNameBytes) bytes or lines")
                }
                action = .add(name: name)
            case 2: action = .remove(writesUpTo: HLCTimestamp(rawValue: try reader.fixed64()))
            case 3: action = .held(writesUpTo: HLCTimestamp(rawValue: try reader.fixed64()))
            case let kind: throw RosterError.malformed("an entry of unknown kind \(kind)")
            }
            time = try reader.fixed64()
            parents = try (0..<reader.count(below: Self.maximumParents + 1, "parents")).map { _ in Array(try reader.raw(Self.hashLength)) }
            guard reader.isAtEnd else { throw RosterError.malformed("bytes after an entry") }
        } catch let error as RosterError {
            throw error
        } catch {
            throw .malformed("\(error)")
        }
        guard Identity.verify(signature, of: Self.signedMessage(content), publicKey: author) else {
            throw .badSignature
        }
        self.signature = signature
        bytes = content + signature
        do { hash = try ContentHasher.hash(bytes) } catch { throw .malformed("\(error)") }
    }

    /// The entry as stored and sent: its content, then the signature.
    package let bytes: [UInt8]

    private static func content(account: [UInt8], author: [UInt8], subject: [UInt8], action: Action, time: UInt64, parents: [[UInt8]]) -> [UInt8] {
        var writer = BinaryWriter()
        writer.byte(1)
        writer.raw(account)
        writer.raw(author)
        writer.raw(subject)
        switch action {
        case .add(let name):
            writer.byte(1)
            writer.string(name)
        case .remove(let time):
            writer.byte(2)
            writer.fixed64(time.rawValue)
        case .held(let time):
            writer.byte(3)
            writer.fixed64(time.rawValue)
        }
        writer.fixed64(time)
        writer.varint(parents.count)
        for parent in parents { writer.raw(parent) }
        return writer.bytes
    }

    /// Signatures over roster entries cannot be replayed as anything else signed with the key.
    private static func signedMessage(_ content: [UInt8]) -> [UInt8] { Array("lattice roster entry".utf8) + content }
}

/// Why a roster or one of its entries was refused.
package enum RosterError: Error, Hashable, Sendable, CustomStringConvertible {
    case malformed(String)
    case badSignature
    case otherAccount
    case tooLarge(Int)
    case unknownAuthor
    /// A removal of a device no entry added.
    case unknownSubject

    package var description: String {
        switch self {
        case .malformed(let why): return "a malformed roster entry: \(why)"
        case .badSignature: return "a roster entry whose signature does not hold"
        case .otherAccount: return "a roster entry of another account"
        case .tooLarge(let count):
            return "the account's roster is full (\(count) entries, or a device's \(AccountRoster.maximumEntriesPerAuthor)): remove devices (`lattice account remove`), which frees their share"
        case .unknownAuthor: return "a roster entry signed by a device no entry added"
        case .unknownSubject: return "a roster entry removing a device no entry added"
        }
    }
}
