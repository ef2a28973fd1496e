import Foundation

/// What can go wrong with discovery, with what a user can do about it.
package struct DiscoveryError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        /// No system D-Bus: Avahi's library reaches the daemon through it.
        case noSystemBus
        /// The bus runs but no avahi-daemon (or mDNSResponder) answers.
        case noDaemon
        /// The daemon refused a call (the DNS-SD error code is in the message).
        case refused
        case badTXTRecord
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    /// Nothing answers at all (rather than one call refused): all of discovery waits for the daemon.
    package var daemonIsMissing: Bool { code == .noSystemBus || code == .noDaemon }

    /// Where the system bus listens: `DBUS_SYSTEM_BUS_ADDRESS` (`unix:path=…`) if set, as D-Bus reads it.
    static var systemBusSocket: String {
        if let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"],
           let path = address.split(separator: ";").first?.split(separator: ",").first(where: { $0.hasPrefix("unix:path=") }) {
            return String(path.dropFirst("unix:path=".count))
        }
        return "/run/dbus/system_bus_socket"
    }

    /// The error for a DNS-SD return code; `kDNSServiceErr_Unknown` is how Avahi's
    /// library says that the bus or the daemon is missing, so tell them apart here.
    static func from(code: Int32, doing action: String) -> DiscoveryError {
        #if os(Linux)
        // What the loader of Avahi's library (Sources/CDNSSD/shim.h) answers when it is not installed.
        if code == -65563, dlopen("libdns_sd.so.1", RTLD_LAZY) == nil {
            return DiscoveryError(.noDaemon, "mDNS discovery is off: Avahi's DNS-SD library (libdns_sd.so.1, package libavahi-compat-libdnssd1) is not installed; install it, or use --peer HOST:PORT")
        }
        #endif
        guard code == -65537 else {
            return DiscoveryError(.refused, "mDNS \(action) failed with DNS-SD error \(code)")
        }
        #if os(Linux)
        if !FileManager.default.fileExists(atPath: systemBusSocket) {
            return DiscoveryError(.noSystemBus, "mDNS discovery is off: no system D-Bus (\(systemBusSocket) is missing), which avahi-daemon needs; start dbus and avahi-daemon (e.g. `service dbus start && service avahi-daemon start`), or use --peer HOST:PORT")
        }
        return DiscoveryError(.noDaemon, "mDNS discovery is off: avahi-daemon is not running; start it (e.g. `service avahi-daemon start`, package avahi-daemon), or use --peer HOST:PORT")
        #else
        return DiscoveryError(.noDaemon, "mDNS discovery is off: the mDNS daemon does not answer (DNS-SD error \(code)); use --peer HOST:PORT")
        #endif
    }
}
