import Foundation
@_spi(Tools) import LatticeCrypto
import LatticeStore

/// A token that opens a node's HTTP surface (`lattice serve --http`), as
/// CloudKit's API tokens open its Web Services. The store keeps its name,
/// when it was made and a hash; the secret itself is shown once, when made.
public struct HTTPToken: Codable, Hashable, Sendable {
    /// The name it was created under, unique in the store.
    public var name: String
    /// Milliseconds since 1970.
    public var createdAt: Int64
    /// The secret's first characters, so people can tell tokens apart.
    public var hint: String
    /// BLAKE2b of the secret, hex.
    var hash: String
}

extension Container {
    static let httpTokensSetting = "http.tokens"
    /// Every token starts so, that secret scanners and people recognize one.
    public static let httpTokenPrefix = "lattice_"

    /// The tokens that open this store's HTTP surface (secrets not included).
    public func httpTokens() throws(LatticeError) -> [HTTPToken] {
        try LatticeError.wrap {
            guard let text = try store.read({ try $0.setting(Self.httpTokensSetting) }) else { return [] }
            guard let tokens = try? JSONDecoder().decode([HTTPToken].self, from: Data(text.utf8)) else {
                throw LatticeError(.badDatabase, "the store's HTTP tokens (setting \(Self.httpTokensSetting)) are not readable; `lattice http token revoke --all` clears them")
            }
            return tokens
        }
    }

    /// Makes a token named `name` and returns its secret, which is not kept:
    /// a lost one is revoked and replaced. A name in use is invalidArguments.
    public func createHTTPToken(named name: String) throws(LatticeError) -> (token: HTTPToken, secret: String) {
        try RecordValidation.checkIdentifier(name, what: "token name")
        let bytes = try LatticeError.wrap { try AccessToken.randomBytes(32) }
        let secret = Self.httpTokenPrefix + Base64URL.encode(bytes)
        let token = HTTPToken(name: name, createdAt: Int64(Date().timeIntervalSince1970 * 1000),
                              hint: String(secret.prefix(Self.httpTokenPrefix.count + 4)), hash: Self.hex(AccessToken.hash(secret)))
        try updateHTTPTokens { tokens throws(LatticeError) in
            guard !tokens.contains(where: { $0.name == name }) else {
                throw LatticeError(.invalidArguments, "a token named \(name) exists; revoke it first or choose another name")
            }
            tokens.append(token)
        }
        return (token, secret)
    }

    /// Revokes the token named `name` (every token when nil); returns those revoked.
    @discardableResult
    public func revokeHTTPTokens(named name: String?) throws(LatticeError) -> [HTTPToken] {
        var revoked: [HTTPToken] = []
        try updateHTTPTokens(discardingUnreadable: name == nil) { tokens throws(LatticeError) in
            revoked = tokens.filter { name == nil || $0.name == name }
            if let name, revoked.isEmpty { throw LatticeError(.unknownItem, "no token is named \(name) (see `lattice http token list`)") }
            tokens.removeAll { name == nil || $0.name == name }
        }
        return revoked
    }

    /// The token a request presents, if it is one of this store's.
    public func httpToken(matching secret: String) throws(LatticeError) -> HTTPToken? {
        httpToken(matching: secret, among: try httpTokens())
    }

    /// The token of `tokens` that `secret` is: every hash is compared, each
    /// in constant time, so the time taken tells nothing of how close a guess was.
    public func httpToken(matching secret: String, among tokens: [HTTPToken]) -> HTTPToken? {
        let presented = AccessToken.hash(secret)
        var match: HTTPToken?
        for token in tokens where AccessToken.equal(Self.bytes(hex: token.hash), presented) { match = token }
        return match
    }

    /// `discardingUnreadable`: a setting that does not read as tokens is replaced (revoking all), else it is an error.
    private func updateHTTPTokens(discardingUnreadable: Bool = false, _ change: (inout [HTTPToken]) throws(LatticeError) -> Void) throws(LatticeError) {
        try LatticeError.wrap {
            try store.write { transaction in
                var tokens: [HTTPToken] = []
                if let text = try transaction.setting(Self.httpTokensSetting) {
                    if let read = try? JSONDecoder().decode([HTTPToken].self, from: Data(text.utf8)) {
                        tokens = read
                    } else if !discardingUnreadable {
                        throw LatticeError(.badDatabase, "the store's HTTP tokens (setting \(Self.httpTokensSetting)) are not readable; `lattice http token revoke --all` clears them")
                    }
                }
                try change(&tokens)
                let data = try JSONEncoder().encode(tokens)
                try transaction.setSetting(Self.httpTokensSetting, to: String(decoding: data, as: UTF8.self))
            }
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return [] }
        return stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) }
    }
}
