import Foundation
import LatticeCrypto
import LatticeDiscovery
import NIOConcurrencyHelpers

/// Pairing offers on the LAN by mDNS: `lattice pair` advertises
/// `_lattice-pair._tcp` while its code lives, with the container and the
/// code's hint (8 bits of its hash) in the TXT record, and `lattice pair
/// CODE` browses for the one offering its code.
enum PairingDiscovery {
    static let serviceType = "_lattice-pair._tcp"

    /// Advertises an offer of `code` on `port`; stop the result when the offer ends.
    static func advertise(code: PairingCode, port: Int, deviceID: String, container: String) -> ServiceDiscovery {
        let discovery = ServiceDiscovery(
            serviceType: serviceType,
            advertisement: ServiceDiscovery.Advertisement(name: deviceID, port: port, txt: ["container": container, "hint": code.hint]),
            onEvent: { _ in })
        discovery.start()
        return discovery
    }

    /// Where a device offers `code` for `container`: its addresses and port,
    /// as soon as one is found; waits at most `timeout` seconds.
    static func find(code: PairingCode, container: String, timeout: Double) throws(LatticeError) -> (addresses: [String], port: Int) {
        let found = NIOLockedValueBox<(addresses: [String], port: Int)?>(nil)
        let unavailable = NIOLockedValueBox<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let discovery = ServiceDiscovery(serviceType: serviceType, advertisement: nil) { event in
            switch event {
            case .found(let service):
                guard service.txt["container"] == container, service.txt["hint"] == code.hint, !service.addresses.isEmpty else { return }
                let first = found.withLockedValue { current -> Bool in
                    guard current == nil else { return false }
                    current = (service.addresses, service.port)
                    return true
                }
                if first { done.signal() }
            case .unavailable(let error):
                unavailable.withLockedValue { $0 = "\(error)" }
                done.signal()
            default: break
            }
        }
        discovery.start()
        _ = done.wait(timeout: .now() + timeout)
        discovery.stop()
        if let offer = found.withLockedValue({ $0 }) { return offer }
        if let why = unavailable.withLockedValue({ $0 }) {
            throw LatticeError(.networkUnavailable, "cannot look for the other device by mDNS (\(why)); give its address with --peer HOST:PORT as its screen shows")
        }
        throw LatticeError(.networkUnavailable, "no device on this network offers that code (mDNS found none in \(Int(timeout)) s): check the code, or give --peer HOST:PORT as the other screen shows")
    }
}
