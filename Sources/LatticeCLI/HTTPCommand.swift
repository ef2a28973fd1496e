import ArgumentParser
import Foundation
import Lattice

/// `lattice http token …`: the tokens that open `serve --http`.
struct HTTPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "http", abstract: "Manage the tokens of the node's HTTP surface (serve --http).",
        subcommands: [Token.self])

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "token", abstract: "Create, list and revoke HTTP tokens.",
            subcommands: [Create.self, List.self, Revoke.self], defaultSubcommand: List.self)
    }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "create", abstract: "Make a token and print its secret (shown this once; the store keeps a hash).",
            discussion: """
                A request presents it as CloudKit's ?ckAPIToken=SECRET or as Authorization: Bearer SECRET.
                Example: curl -H "Authorization: Bearer $(lattice http token create dashboard)" http://127.0.0.1:8080/metrics
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "A name for it (letters, digits, _ and -), unique in the store.") var name: String

        func run() throws {
            let container = try options.openContainer(forOneCommand: true)
            let made = try library { try container.createHTTPToken(named: name) }
            Output.emit(CreatedToken(name: made.token.name, token: made.secret), json: options.json)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the tokens (names, hints and dates; never secrets).", discussion: "Example: lattice http token list")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            let container = try options.openContainer(forOneCommand: true)
            Output.emit(TokenList(tokens: try library { try container.httpTokens() }), json: options.json)
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a token (a running node refuses it within a second).",
            discussion: "Example: lattice http token revoke dashboard")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The token's name.") var name: String?
        @Flag(help: "Revoke every token.") var all = false

        func validate() throws {
            guard (name != nil) != all else { throw ValidationError("name a token to revoke, or give --all") }
        }

        func run() throws {
            let container = try options.openContainer(forOneCommand: true)
            let revoked = try library { try container.revokeHTTPTokens(named: all ? nil : name) }
            Output.emit(TokenList(tokens: revoked, revoked: true), json: options.json)
        }
    }
}

/// What `http token create` prints: the secret, alone on its line for scripts.
struct CreatedToken: CommandOutput {
    var name: String
    var token: String
    var text: String { token }
}

/// What `http token list` and `revoke` print.
struct TokenList: CommandOutput {
    struct Entry: Encodable {
        var name: String
        var hint: String
        var createdAt: Int64
    }

    var tokens: [Entry]
    var revoked: Bool

    init(tokens: [HTTPToken], revoked: Bool = false) {
        self.tokens = tokens.map { Entry(name: $0.name, hint: $0.hint, createdAt: $0.createdAt) }
        self.revoked = revoked
    }

    enum CodingKeys: String, CodingKey { case tokens }

    var text: String {
        tokens.map { token in
            let created = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(token.createdAt) / 1000))
            return revoked ? "revoked \(token.name)" : "\(token.name)\t\(token.hint)…\tcreated \(created)"
        }.joined(separator: "\n")
    }
}
