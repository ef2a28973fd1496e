import ArgumentParser
import Foundation
import Lattice

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor", abstract: "Explain why a device is not seen or not syncing.",
        discussion: """
            Checks that a node runs on this store, that mDNS works (D-Bus and avahi-daemon on Linux), that an interface can carry multicast, and, for every trusted or discovered device, what the node observed: not seen on the network, another container, not trusted on either side, a protocol version mismatch, a clock ahead by more than the skew bound, or the last connection error.
            Devices this one does not sync with by design (not trusted here, another container) are listed as notes. Exit codes: 0 nothing wrong found; 69 a problem was found (each is printed with what to do).
            Example: lattice doctor
            """)
    @OptionGroup var options: GlobalOptions

    struct Finding {
        enum Kind: String { case ok, note, problem }
        var subject: String
        var kind: Kind
        var detail: String

        init(subject: String, ok: Bool, detail: String) {
            self.init(subject: subject, kind: ok ? .ok : .problem, detail: detail)
        }

        init(subject: String, kind: Kind, detail: String) {
            self.subject = subject
            self.kind = kind
            self.detail = detail
        }
    }

    func run() throws {
        let container = try options.openContainer()
        let status = NodeStatus.read(store: container.directory)
        var findings: [Finding] = []
        if let status {
            findings.append(Finding(subject: "node", ok: true, detail: "pid \(status.pid)\(status.listeningPort.map { ", listening on port \($0)" } ?? "")"))
        } else {
            findings.append(Finding(subject: "node", ok: false, detail: "no node runs on this store: start one with `lattice serve`; without it nothing syncs"))
        }
        findings.append(mdnsFinding(status))
        findings.append(Self.multicastFinding())
        if let watch = status?.commitWatch {
            // Polling works, with a delay: worth knowing, not a failure.
            findings.append(Finding(subject: "commit watch", kind: watch == "wake-up socket" ? .ok : .note, detail: watch == "wake-up socket"
                ? "a wake-up socket: other processes' commits and trust changes reach the node at once"
                : "\(watch); other processes' commits and trust changes reach the node within that delay"))
        }
        if let strangers = status?.strangers, let summary = PeersCommand.summary(strangers) {
            findings.append(Finding(subject: "refusals", kind: .note, detail: summary))
        }
        for hold in status?.assetsOverQuota ?? [] {
            let quota = try library { try container.assetQuota() }
            findings.append(Finding(subject: "assets", kind: .note, detail: "the quota on content written outside this account (\(AssetQuota.describe(quota.perSource)) per writer, \(AssetQuota.describe(quota.total)) in all) keeps \(Output.count(hold.assets, "asset")) (\(AssetQuota.describe(hold.bytes))) of \(hold.source) from being fetched; `lattice asset fetch` gets them anyway, `lattice serve --asset-quota-per-writer SIZE --asset-quota SIZE` raises it"))
        }
        for row in try PeerRow.all(container) {
            let subject = "\(row.name ?? "device") \(row.deviceID)"
            guard let problem = Self.problem(row, status: status, ourID: container.deviceID) else {
                findings.append(Finding(subject: subject, ok: true, detail: "syncing (connected\(row.address.map { " at \($0)" } ?? ""))"))
                continue
            }
            // Devices this one does not sync with (not trusted, another container) are
            // facts about the LAN, not problems, unless they are trusted here.
            findings.append(Finding(subject: subject, kind: row.trusted && status != nil ? .problem : .note, detail: problem))
        }
        let problems = findings.filter { $0.kind == .problem }.count
        Output.emit(DoctorOutput(device: container.deviceID, problems: problems, findings: findings.map {
            .init(subject: $0.subject, ok: $0.kind != .problem, kind: $0.kind.rawValue, detail: $0.detail)
        }), json: options.json)
        if problems > 0 { Foundation.exit(ExitStatus.unavailable.rawValue) }
    }

    private func mdnsFinding(_ status: NodeStatus?) -> Finding {
        if let discovery = status?.discovery {
            switch discovery.state {
            case "running":
                return Finding(subject: "mDNS", ok: true, detail: "advertising\(discovery.advertisedAs.map { " as \($0)" } ?? ""); \(discovery.devices.count) other device(s) seen")
            default:
                return Finding(subject: "mDNS", ok: false, detail: discovery.problem ?? "discovery does not work")
            }
        }
        if status != nil {
            return Finding(subject: "mDNS", ok: true, detail: "off in the running node (--no-mdns): only --peer addresses and incoming connections sync")
        }
        #if os(Linux)
        // No node to ask: look at what avahi's library needs.
        guard FileManager.default.fileExists(atPath: "/run/dbus/system_bus_socket") else {
            return Finding(subject: "mDNS", ok: false, detail: "no system D-Bus (/run/dbus/system_bus_socket is missing), which avahi-daemon needs: start dbus and avahi-daemon (e.g. `service dbus start && service avahi-daemon start`)")
        }
        guard let pid = (try? String(contentsOfFile: "/run/avahi-daemon/pid", encoding: .utf8)).flatMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }),
              kill(pid, 0) == 0 || errno == EPERM else {
            return Finding(subject: "mDNS", ok: false, detail: "avahi-daemon is not running: start it (e.g. `service avahi-daemon start`, package avahi-daemon)")
        }
        return Finding(subject: "mDNS", ok: true, detail: "D-Bus and avahi-daemon run")
        #else
        return Finding(subject: "mDNS", ok: true, detail: "the system's mDNS responder is used")
        #endif
    }

    /// mDNS needs an interface that is up, not loopback, multicast-capable, with an IPv4 address.
    static func multicastFinding() -> Finding {
        var names = Set<String>()
        var list: UnsafeMutablePointer<ifaddrs>?
        if getifaddrs(&list) == 0 {
            var cursor = list
            while let entry = cursor?.pointee {
                let flags = Int32(entry.ifa_flags)
                if flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0, flags & Int32(IFF_MULTICAST) != 0,
                   entry.ifa_addr?.pointee.sa_family == sa_family_t(AF_INET) {
                    names.insert(String(decoding: UnsafeRawBufferPointer(start: entry.ifa_name, count: strlen(entry.ifa_name)), as: UTF8.self))
                }
                cursor = entry.ifa_next
            }
            freeifaddrs(list)
        }
        guard !names.isEmpty else {
            return Finding(subject: "multicast", ok: false, detail: "no interface is up with multicast and an IPv4 address, so mDNS cannot reach the LAN: connect to the network, or use --peer HOST:PORT")
        }
        return Finding(subject: "multicast", ok: true, detail: "interface(s) \(names.sorted().joined(separator: ", "))")
    }

    /// What keeps `row` from syncing, with what to do; nil when it syncs.
    static func problem(_ row: PeerRow, status: NodeStatus?, ourID: String) -> String? {
        if row.refusedWrites > 0 {
            return "sent \(row.refusedWrites) batch(es) of writes that their writers did not sign, refused whole (last: \(row.lastRefusedWrite ?? "?")): it is faulty or hostile; if it is not yours any more, `lattice untrust \(row.deviceID)`"
        }
        if row.connected {
            if !row.trusted {
                return "not trusted here: it syncs the public database only; if it is yours, run `lattice trust \(row.deviceID)` (and on it, `lattice trust \(ourID)`)"
            }
            if let refused = row.live?.refusedRecords, refused > 0 {
                return "sent \(refused) record(s) this node refused (last: \(row.live?.lastRefusal ?? "?")): writes their writers had no right to make"
            }
            if row.live?.clockSkew == true {
                return "its clock is ahead of this device's by more than the skew bound: its newest records wait until the clocks agree; check both clocks (NTP)"
            }
            return nil
        }
        guard status != nil else { return "unknown while no node runs here" }
        if let problem = row.discoveryProblem { return problem }
        if !row.trusted { return "not trusted here: if it is yours, run `lattice trust \(row.deviceID)` (and on it, `lattice trust \(ourID)`)" }
        if let error = row.live?.lastError {
            if row.live?.lastErrorCause == .notTrustedByPeer { return "it does not trust this device: on it, run `lattice trust \(ourID)`" }
            return "not connected; last error: \(error)"
        }
        if !row.discovered {
            let mdns = status?.discovery?.state == "running" ? "mDNS does not see it" : "mDNS is not working here"
            return "not seen on the network (\(mdns)): is its node running (`lattice serve`) on this LAN? Where multicast does not pass, give its address with --peer HOST:PORT"
        }
        if let dialError = row.dialError {
            return "seen on the network but this node cannot connect to it (\(dialError)): is a firewall in the way, or does its node listen on another address (--listen)?"
        }
        return "seen on the network but not connected yet (it may be starting; if this lasts, check a firewall on its port)"
    }
}

/// What `doctor` prints.
struct DoctorOutput: CommandOutput {
    struct Finding: Encodable {
        var subject: String
        var ok: Bool
        var kind: String
        var detail: String
    }

    var device: String
    var problems: Int
    var findings: [Finding]

    /// A line per finding, labelled by its kind, then the count of problems.
    var text: String {
        typealias Kind = DoctorCommand.Finding.Kind
        let labels = [Kind.ok.rawValue: "ok     ", Kind.note.rawValue: "note   ", Kind.problem.rawValue: "PROBLEM"]
        return (findings.map { "\(labels[$0.kind] ?? $0.kind) \($0.subject): \($0.detail)" } + [problems == 0 ? "no problem found" : "\(problems) problem(s) found"])
            .joined(separator: "\n")
    }
}
