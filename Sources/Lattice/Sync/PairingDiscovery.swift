import Foundation
@_spi(Tools) import LatticeCrypto
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

    /// An offer of the code's hint seen on the LAN.
    struct Offer: Hashable {
        var addresses: [String]
        var port: Int
    }

    /// How long the browse goes on after a first offer: others with the same
    /// hint (a second device offering, or one pretending to) are seen by then.
    static let settleSeconds = 1.5

    /// Where devices offer `code`'s hint for `container`: every offer seen
    /// by `settleSeconds` after the first, in the order found; waits at most
    /// `timeout` seconds for a first one.
    static func find(code: PairingCode, container: String, timeout: Double) throws(LatticeError) -> [Offer] {
        let found = NIOLockedValueBox<[Offer]>([])
        let unavailable = NIOLockedValueBox<String?>(nil)
        let first = DispatchSemaphore(value: 0)
        let discovery = ServiceDiscovery(serviceType: serviceType, advertisement: nil) { event in
            switch event {
            case .found(let service):
                guard service.txt["container"] == container, service.txt["hint"] == code.hint, !service.addresses.isEmpty else { return }
                let offer = Offer(addresses: service.addresses, port: service.port)
                let isFirst = found.withLockedValue { offers -> Bool in
                    guard !offers.contains(offer) else { return false }
                    offers.append(offer)
                    return offers.count == 1
                }
                if isFirst { first.signal() }
            case .unavailable(let error):
                unavailable.withLockedValue { $0 = "\(error)" }
                first.signal()
            default: break
            }
        }
        discovery.start()
        if first.wait(timeout: .now() + timeout) == .success, unavailable.withLockedValue({ $0 }) == nil {
            Thread.sleep(forTimeInterval: settleSeconds)
        }
        discovery.stop()
        let offers = found.withLockedValue { $0 }
        if !offers.isEmpty { return offers }
        if let why = unavailable.withLockedValue({ $0 }) {
            throw LatticeError(.networkUnavailable, "cannot look for the other device by mDNS (\(why)); give its address with --peer HOST:PORT as its screen shows")
        }
        throw LatticeError(.networkUnavailable, "no device on this network offers that code (mDNS found none in \(Int(timeout)) s): check the code, or give --peer HOST:PORT as the other screen shows")
    }
}
