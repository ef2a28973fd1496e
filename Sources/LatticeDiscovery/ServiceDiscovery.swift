import CDNSSD
import Foundation

/// Advertises one service and browses for others of its type through the
/// DNS-SD API: every instance is resolved (port, TXT record) and its host's
/// addresses queried, and reported as `found`/`lost` events. When the daemon
/// is missing or dies, it reports `unavailable` once and tries again by itself.
///
/// All DNS-SD calls and callbacks happen on one serial queue; events are
/// delivered there, in order.
package final class ServiceDiscovery: @unchecked Sendable {
    /// The service this process offers.
    package struct Advertisement: Sendable, Hashable {
        package var name: String
        package var port: Int
        package var txt: [String: String]

        package init(name: String, port: Int, txt: [String: String]) {
            self.name = name
            self.port = port
            self.txt = txt
        }
    }

    package let serviceType: String
    package let advertisement: Advertisement?
    /// How long to wait before trying the daemon again.
    package let retryInterval: Double

    private let queue = DispatchQueue(label: "lattice.discovery")
    private let onEvent: @Sendable (DiscoveryEvent) -> Void
    // Touched on `queue` only.
    private var operations: [ObjectIdentifier: ServiceOperation] = [:]
    private var table = ServiceTable()
    private var resolving: [ServiceTable.Key: ServiceOperation] = [:]
    private var waitingToResolve: [ServiceTable.Key] = []
    private var resolveFailures: [ServiceTable.Key: Int] = [:]
    private var addressQueries: [ServiceTable.Key: [ServiceOperation]] = [:]
    private var running = false
    private var failed = false
    private var retry: DispatchWorkItem?
    /// Entered per open reference, left once it is deallocated.
    private let releasing = DispatchGroup()

    /// - Parameters:
    ///   - serviceType: like `_lattice._tcp`.
    ///   - advertisement: the service to register, or nil to only browse.
    package init(serviceType: String, advertisement: Advertisement?, retryInterval: Double = 2, onEvent: @escaping @Sendable (DiscoveryEvent) -> Void) {
        self.serviceType = serviceType
        self.advertisement = advertisement
        self.retryInterval = retryInterval
        self.onEvent = onEvent
    }

    /// Registers and browses. Without a daemon it reports `unavailable` and keeps trying.
    package func start() {
        // Avahi's library prints a warning on stderr at its first call unless this is set.
        setenv("AVAHI_COMPAT_NOWARN", "1", 1)
        #if os(Linux)
        _ = avahiZeroedAllocations
        #endif
        queue.async {
            guard !self.running else { return }
            self.running = true
            self.connect()
        }
    }

    /// Withdraws the advertisement (other hosts see it go within about a second) and
    /// stops browsing; returns once the daemon has been told, or after a second.
    package func stop() {
        queue.sync {
            running = false
            retry?.cancel()
            teardown()
        }
        // References are released by their sources' cancel handlers: wait for them, or a
        // process that exits next would leave its advertisement behind.
        _ = releasing.wait(timeout: .now() + 1)
    }

    deinit {
        for operation in operations.values { operation.cancel() }
    }

    // MARK: On the queue

    private func connect() {
        do {
            if let advertisement { try register(advertisement) }
            try browse()
            if failed {
                failed = false
                onEvent(.available)
            }
        } catch {
            fail(error)
        }
    }

    /// Everything the daemon said is void; try again later.
    private func fail(_ error: DiscoveryError) {
        teardown()
        if !failed {
            failed = true
            onEvent(.unavailable(error))
        }
        guard running else { return }
        // Several references fail at once when the daemon goes: one retry, or the next
        // round would register twice (and the daemon would rename the second "name #2").
        retry?.cancel()
        let retry = DispatchWorkItem { [weak self] in
            guard let self, self.running else { return }
            self.connect()
        }
        self.retry = retry
        queue.asyncAfter(deadline: .now() + retryInterval, execute: retry)
    }

    private func teardown() {
        for operation in operations.values { operation.cancel() }
        operations.removeAll()
        resolving.removeAll()
        waitingToResolve.removeAll()
        resolveFailures.removeAll()
        addressQueries.removeAll()
        for event in table.removeAll() { onEvent(event) }
    }

    private func register(_ advertisement: Advertisement) throws(DiscoveryError) {
        let txt = try TXTRecord.encode(advertisement.txt)
        let operation = ServiceOperation(owner: self, key: nil)
        let code = txt.withUnsafeBytes { bytes in
            lattice_DNSServiceRegister(
                &operation.reference, 0, 0, advertisement.name, serviceType, nil, nil,
                UInt16(advertisement.port).bigEndian, UInt16(bytes.count), bytes.baseAddress, registerReply, operation.context)
        }
        try start(operation, code, "registration")
    }

    private func browse() throws(DiscoveryError) {
        let operation = ServiceOperation(owner: self, key: nil)
        let code = lattice_DNSServiceBrowse(&operation.reference, 0, 0, serviceType, nil, browseReply, operation.context)
        try start(operation, code, "browsing")
    }

    /// At most this many resolves run at once (each holds a D-Bus connection and a
    /// thread in Avahi's library); the others wait their turn, new instances first.
    static let maximumResolves = 8

    /// Resolves `key` now if a slot is free, else when one is.
    private func requestResolve(_ key: ServiceTable.Key) {
        guard table.contains(key), resolving[key] == nil, addressQueries[key] == nil, !waitingToResolve.contains(key) else { return }
        if resolving.count < Self.maximumResolves {
            resolve(key)
        } else if resolveFailures[key] == nil {
            waitingToResolve.insert(key, at: 0)
        } else {
            waitingToResolve.append(key)
        }
    }

    private func resolveNextWaiting() {
        while resolving.count < Self.maximumResolves, !waitingToResolve.isEmpty {
            let key = waitingToResolve.removeFirst()
            if table.contains(key), resolving[key] == nil { resolve(key) }
        }
    }

    private func resolve(_ key: ServiceTable.Key) {
        let operation = ServiceOperation(owner: self, key: key)
        let code = lattice_DNSServiceResolve(&operation.reference, 0, key.interfaceIndex, key.name, serviceType, "local", resolveReply, operation.context)
        do {
            try start(operation, code, "resolving \(key.name)")
            resolving[key] = operation
        } catch where error.daemonIsMissing {
            fail(error)
        } catch {
            // One instance the daemon will not resolve now (a flood, a limit): only it waits.
            resolveFailed(key)
        }
    }

    /// An instance that did not resolve is tried again later, backing off (2 s doubling
    /// to a minute), so instances that never answer cannot keep the others waiting.
    private func resolveFailed(_ key: ServiceTable.Key) {
        let failures = resolveFailures[key, default: 0] + 1
        resolveFailures[key] = failures
        let delay = min(60, retryInterval * Double(1 << min(failures - 1, 5)))
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, self.running else { return }
            self.requestResolve(key)
        }
        resolveNextWaiting()
    }

    /// Asks for the host's A and AAAA records, briefly: the queries close half a second
    /// after the first answer (the others come with it), or after `addressQueryLimit`.
    /// Each reference holds a D-Bus connection and a thread in Avahi's library, so none
    /// stays open longer than it must.
    private func queryAddresses(_ key: ServiceTable.Key, host: String) {
        for operation in addressQueries.removeValue(forKey: key) ?? [] { forget(operation) }
        var started: [ServiceOperation] = []
        for type in [DNSRecordType.a, DNSRecordType.aaaa] {
            let operation = ServiceOperation(owner: self, key: key)
            let code = lattice_DNSServiceQueryRecord(&operation.reference, 0, key.interfaceIndex, host, type, 1, queryReply, operation.context)
            do {
                try start(operation, code, "looking up \(host)")
                started.append(operation)
            } catch where error.daemonIsMissing {
                return fail(error)
            } catch {
                for operation in started { forget(operation) }
                return resolveFailed(key)
            }
        }
        addressQueries[key] = started
        let ids = started.map(ObjectIdentifier.init)
        queue.asyncAfter(deadline: .now() + Self.addressQueryLimit) { [weak self] in self?.endAddressQueries(key, ids) }
    }

    static let addressQueryLimit = 5.0

    /// Closes the address queries `ids` of `key` if they still run; with no address
    /// found, the instance is resolved again later.
    private func endAddressQueries(_ key: ServiceTable.Key, _ ids: [ObjectIdentifier]) {
        guard let running = addressQueries[key], running.map(ObjectIdentifier.init) == ids else { return }
        addressQueries[key] = nil
        for operation in running { forget(operation) }
        guard !table.isAnnounced(key) else { return }
        queue.asyncAfter(deadline: .now() + retryInterval) { [weak self] in
            guard let self, self.running else { return }
            self.requestResolve(key)
        }
    }

    private func start(_ operation: ServiceOperation, _ code: DNSServiceErrorType, _ action: String) throws(DiscoveryError) {
        guard code == 0, let reference = operation.reference else {
            operation.cancel()
            throw DiscoveryError.from(code: code, doing: action)
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: lattice_DNSServiceRefSockFD(reference), queue: queue)
        source.setEventHandler { [weak self, weak operation] in
            guard let self, let operation, let reference = operation.reference else { return }
            let result = lattice_DNSServiceProcessResult(reference)
            guard result != 0 else { return }
            let error = DiscoveryError.from(code: result, doing: "reading the daemon's answers")
            if let key = operation.key, !error.daemonIsMissing {
                // A resolve or lookup of one instance failed: only it is tried again.
                self.forgetLookups(of: key)
                self.resolveFailed(key)
            } else {
                self.fail(error)
            }
        }
        // The reference (and its socket) goes only once the source is done with it, which
        // is also after any callback under way returns: a callback may cancel its own operation.
        releasing.enter()
        source.setCancelHandler { [releasing] in
            lattice_DNSServiceRefDeallocate(reference)
            releasing.leave()
        }
        operation.source = source
        operations[ObjectIdentifier(operation)] = operation
        source.resume()
    }

    private func forgetLookups(of key: ServiceTable.Key) {
        if let operation = resolving.removeValue(forKey: key) { forget(operation) }
        for operation in addressQueries.removeValue(forKey: key) ?? [] { forget(operation) }
    }

    private func forget(_ operation: ServiceOperation) {
        operation.cancel()
        operations.removeValue(forKey: ObjectIdentifier(operation))
    }

    // MARK: Callbacks (on the queue, inside DNSServiceProcessResult)

    fileprivate func registered(_ code: DNSServiceErrorType, name: String) {
        guard code == 0 else { return fail(DiscoveryError.from(code: code, doing: "registration")) }
        onEvent(.registered(name: name))
    }

    fileprivate func browsed(_ code: DNSServiceErrorType, flags: DNSServiceFlags, interface: UInt32, name: String) {
        guard code == 0 else { return fail(DiscoveryError.from(code: code, doing: "browsing")) }
        let key = ServiceTable.Key(name: name, interfaceIndex: interface)
        if flags & DNSFlag.add != 0 {
            // The resolve may take a while (the other side still probes its name): it stays pending.
            if table.browsed(key) { requestResolve(key) }
        } else {
            let (gone, event) = table.removed(key)
            guard gone else { return }
            waitingToResolve.removeAll { $0 == key }
            resolveFailures[key] = nil
            forgetLookups(of: key)
            resolveNextWaiting()
            if let event { onEvent(event) }
        }
    }

    fileprivate func resolved(_ operation: ServiceOperation, _ code: DNSServiceErrorType, host: String, port: UInt16, txt: [UInt8]) {
        guard let key = operation.key, table.contains(key) else { return }
        resolving.removeValue(forKey: key)
        forget(operation)
        // Resolving timed out (the service went quiet, or never answers): later, while it is browsed.
        guard code == 0 else { return resolveFailed(key) }
        resolveFailures[key] = nil
        resolveNextWaiting()
        if let event = table.resolved(key, host: host, port: Int(UInt16(bigEndian: port)), txt: TXTRecord.decode(txt)) { onEvent(event) }
        queryAddresses(key, host: host)
    }

    fileprivate func answered(_ operation: ServiceOperation, _ code: DNSServiceErrorType, flags: DNSServiceFlags, type: UInt16, data: [UInt8]) {
        guard let key = operation.key, code == 0 else { return }
        guard let address = Self.address(type: type, data: data, interface: key.interfaceIndex) else { return }
        if let event = table.address(key, address, added: flags & DNSFlag.add != 0) { onEvent(event) }
        if let running = addressQueries[key], !running.isEmpty {
            let ids = running.map(ObjectIdentifier.init)
            queue.asyncAfter(deadline: .now() + 0.5) { [weak self] in self?.endAddressQueries(key, ids) }
        }
    }

    /// An A or AAAA answer as text; a link-local IPv6 address gets `%interface`, without which it cannot be dialed.
    static func address(type: UInt16, data: [UInt8], interface: UInt32) -> String? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch (type, data.count) {
        case (DNSRecordType.a, 4):
            guard inet_ntop(AF_INET, data, &text, socklen_t(text.count)) != nil else { return nil }
            return text.nulTerminatedString
        case (DNSRecordType.aaaa, 16):
            guard inet_ntop(AF_INET6, data, &text, socklen_t(text.count)) != nil else { return nil }
            let address = text.nulTerminatedString
            guard data[0] == 0xFE, data[1] & 0xC0 == 0x80 else { return address }
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            guard interface != 0, if_indextoname(interface, &name) != nil else { return nil }
            return "\(address)%\(name.nulTerminatedString)"
        default:
            return nil
        }
    }
}

private enum DNSFlag {
    static let add: DNSServiceFlags = 0x2
}

enum DNSRecordType {
    static let a: UInt16 = 1
    static let aaaa: UInt16 = 28
}

/// One DNS-SD reference and the read source that feeds its answers in; its
/// address is the context the C callbacks get back.
final class ServiceOperation {
    var reference: DNSServiceRef?
    var source: DispatchSourceRead?
    weak var owner: ServiceDiscovery?
    let key: ServiceTable.Key?

    init(owner: ServiceDiscovery, key: ServiceTable.Key?) {
        self.owner = owner
        self.key = key
    }

    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ context: UnsafeMutableRawPointer?) -> ServiceOperation? {
        context.map { Unmanaged<ServiceOperation>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Stops answers; the reference is deallocated by the source's cancel handler, never
    /// inside a callback of its own.
    func cancel() {
        guard let reference else { return }
        self.reference = nil
        if let source {
            source.cancel()
            self.source = nil
        } else {
            lattice_DNSServiceRefDeallocate(reference)
        }
    }
}

private func string(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

private let registerReply: DNSServiceRegisterReply = { _, _, code, name, _, _, context in
    guard let operation = ServiceOperation.from(context) else { return }
    operation.owner?.registered(code, name: string(name))
}

private let browseReply: DNSServiceBrowseReply = { _, flags, interface, code, name, _, _, context in
    guard let operation = ServiceOperation.from(context) else { return }
    operation.owner?.browsed(code, flags: flags, interface: interface, name: string(name))
}

private let resolveReply: DNSServiceResolveReply = { _, _, _, code, _, host, port, length, txt, context in
    guard let operation = ServiceOperation.from(context) else { return }
    let bytes = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
    operation.owner?.resolved(operation, code, host: string(host), port: port, txt: bytes)
}

private let queryReply: DNSServiceQueryRecordReply = { _, flags, _, code, _, type, _, length, data, _, context in
    guard let operation = ServiceOperation.from(context) else { return }
    let bytes = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
    operation.owner?.answered(operation, code, flags: flags, type: type, data: bytes)
}

private extension Array where Element == CChar {
    var nulTerminatedString: String {
        String(decoding: prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

#if os(Linux)
/// Avahi's compatibility library leaves the callback pointers of a new reference
/// uninitialised (`sdref_new` allocates it with `malloc`) and, when the daemon goes
/// away, calls the first one that is not NULL — garbage, for a resolve or a record
/// query: a segfault. With every Avahi allocation zeroed, those pointers are NULL and
/// its failure path reaches the right callback. Memory still comes from and returns to
/// the C library, so allocations made before this are freed correctly.
private let avahiZeroedAllocations: Bool = {
    let allocator = UnsafeMutablePointer<AvahiAllocator>.allocate(capacity: 1) // kept for the process's life, as Avahi requires
    allocator.initialize(to: AvahiAllocator(
        malloc: { size in calloc(1, size) },
        free: { pointer in free(pointer) },
        realloc: { pointer, size in realloc(pointer, size) },
        calloc: { count, size in calloc(count, size) }))
    _ = lattice_avahi_set_allocator(allocator)
    return true
}()
#endif
