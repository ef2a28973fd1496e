import ArgumentParser
import Foundation
import Lattice

struct PairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair", abstract: "Pair two devices with a short code: on one, `lattice pair`; on the other, `lattice pair CODE`.",
        discussion: """
            Without CODE: prints a new code alone on the first line of standard output (then, on standard error, the port it listens on), waits until a device joins with it, adds that device to the account (a signed roster entry every device of the account takes on its next sync, so each new device takes one pairing) and exits 0. The code expires after --expires seconds (default 120) and is spent by 3 wrong attempts: exit 69 or 77. The code authenticates a CPace key exchange: a device that does not know it gets one guess per attempt and learns nothing.
            The offer is advertised by mDNS (_lattice-pair._tcp, with 8 bits of a hash of the code so a joiner tries only the device offering its code) unless --no-mdns.
            With CODE: joins the device that offers it, found by mDNS (or at --peer HOST:PORT, as the other screen says): this device takes that device's account and trusts all of its devices. Exit 77 for a wrong code or a device removed from the account, 69 when it cannot be reached or the code expired.
            Both print a six-digit verifier: the two screens show the same one.
            Works whether or not a node runs on this store (a running node takes the new member at once and tells the connected members).
            Example: lattice pair            (on the laptop; prints e.g. 7KQ2-M9XD)
                     lattice pair 7KQ2-M9XD   (on the phone; or with --peer 192.168.1.20:41234)
            """)
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The code the other device printed; omit it to offer one.") var code: String?
    @Option(help: "With CODE: where the other device listens, HOST:PORT.") var peer: String?
    @Option(help: "Without CODE: the port to listen on (default: any free one).") var port: Int = 0
    @Option(help: "Without CODE: the address to listen on.") var listen: String = "0.0.0.0"
    @Option(help: "Without CODE: seconds until the code expires.") var expires: Double = 120
    @Flag(help: "Without CODE: do not advertise the offer by mDNS (the other device then needs --peer).") var noMdns = false
    @Option(help: "With CODE and no --peer: seconds to look for the offer by mDNS.") var search: Double = 10

    func validate() throws {
        if code == nil, peer != nil { throw ValidationError("--peer goes with CODE (the joining device)") }
        if code != nil, noMdns { throw ValidationError("--no-mdns goes with offering a code; a joining device without mDNS gives --peer HOST:PORT") }
        if !(0.1...600).contains(search) { throw ValidationError("--search takes 0.1 to 600 seconds") }
        if !(1...3600).contains(expires) { throw ValidationError("--expires takes 1 to 3600 seconds") }
        if !(0...65535).contains(port) { throw ValidationError("--port takes 0 to 65535") }
    }

    func run() throws {
        let container = try options.openContainer()
        if let code {
            guard let parsed = PairingCode(code) else { throw CLIError.usage("\"\(code)\" is not a pairing code: 8 letters and digits as the other device printed it (XXXX-XXXX)") }
            let paired: PairedDevice
            if let peer {
                let address = try parsePeers([peer])[0]
                paired = try library { try container.join(code: parsed, host: address.host, port: address.port) }
            } else {
                paired = try library { try container.join(code: parsed, searchingFor: search) }
            }
            report(paired, joined: true)
            return
        }
        let offered = try library { try PairingCode.generate() }
        Output.line(offered.description)
        let json = options.json
        let seconds = Int(expires)
        let paired = try library {
            try container.invite(
                code: offered, host: listen, port: port, advertise: !noMdns, lifetimeMilliseconds: UInt64(expires * 1000),
                listening: { port in
                    if !json { Output.standardError("on the other device: lattice pair \(offered)   (or, without mDNS: lattice pair \(offered) --peer THIS-HOST:\(port))  expires in \(seconds) s") }
                    else { Output.standardError("{\"listening\":\(port)}") }
                },
                attemptFailed: { why in Output.standardError("lattice: a pairing attempt failed: \(why)") })
        }
        report(paired, joined: false)
    }

    private func report(_ paired: PairedDevice, joined: Bool) {
        Output.emit(PairOutput(paired: paired.deviceID, name: paired.name, verifier: paired.verifier, accountDevices: paired.accountDevices, joined: joined),
                    json: options.json)
    }
}

/// What `pair` prints once a device has joined.
struct PairOutput: CommandOutput {
    var paired: String
    var name: String
    var verifier: String
    var accountDevices: Int
    /// Whether this device joined (`pair CODE`) rather than offered the code: people are told which.
    var joined: Bool

    enum CodingKeys: String, CodingKey { case paired, name, verifier, accountDevices }

    var text: String {
        let who = name.isEmpty ? paired : "\(name) (\(paired))"
        return "\(joined ? "joined" : "paired with") \(who); the account has \(accountDevices) devices. Verifier \(verifier): the other screen shows the same."
    }
}
