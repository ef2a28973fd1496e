import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes the processes that watch a store when another one commits: each
/// watcher binds a Unix datagram socket in `<store>/wake/`, and every commit
/// that takes a new sequence sends one empty datagram to each. No polling, so
/// a commit by `lattice record save` reaches a running node in microseconds.
/// A datagram lost (a full queue) is harmless: one wake-up covers any number of commits.
enum CommitSignal {
    static let directoryName = "wake"

    static func directory(of store: URL) -> URL { store.appendingPathComponent(directoryName, isDirectory: true) }

    /// Sends a wake-up to every watcher of the store; removes sockets nobody listens on any more.
    static func notify(store: URL) {
        let directory = directory(of: store)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path), !names.isEmpty else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        for name in names where name.hasSuffix(".sock") {
            let path = directory.appendingPathComponent(name).path
            let sent = withSocketAddress(in: directory.path, name: name) { address, length in sendto(fd, "", 0, Int32(MSG_DONTWAIT), address, length) }
            // Only a socket nobody listens on goes: an address that could not be
            // made this time (say, no descriptor left for a long path) is no proof.
            if let sent, sent < 0, errno == ECONNREFUSED || errno == ENOENT {
                unlink(path) // its watcher died without cleaning up
            }
        }
    }

    /// Calls `body` with the address of socket `name` in `directory`. A path
    /// too long for a socket address (about 100 bytes) goes, on Linux, through
    /// the directory's descriptor: `/proc/self/fd/N/name` names the same file.
    static func withSocketAddress<T>(in directory: String, name: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        let path = directory + "/" + name
        if path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) { return withSocketAddress(path, body) }
        #if os(Linux)
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withSocketAddress("/proc/self/fd/\(fd)/\(name)", body)
        #else
        return nil
        #endif
    }

    static func withSocketAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

/// Calls `onCommit` (on its own thread) after commits to the store by any
/// process, until `stop()`. Several wake-ups in a row may arrive as one.
package final class CommitWatcher: @unchecked Sendable {
    private let directory: String
    private let name: String
    private var path: String { directory + "/" + name }
    private let fd: Int32
    private let thread: Thread
    private let stopped = StopFlag()

    /// Set by `stop()`, read by the watcher's thread after each wake-up.
    private final class StopFlag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        /// Sets the flag; returns whether it was already set.
        func set() -> Bool { lock.withLock { defer { value = true }; return value } }
        var isSet: Bool { lock.withLock { value } }
    }

    /// Fails if the socket cannot be made: `wake/` is not the user's own
    /// private directory, or (not on Linux) the store's path is too long for a socket address.
    package init(store: URL, onCommit: @escaping @Sendable () -> Void) throws {
        let directory = CommitSignal.directory(of: store)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        // Anyone who can write here can wake the node, or plant a socket it would send to.
        try PrivateFiles.checkDirectory(directory.path, what: "the store's wake-up directory", fix: true)
        let name = "\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        self.directory = directory.path
        self.name = name
        let path = directory.appendingPathComponent(name).path
        let socketFD = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard socketFD >= 0 else { throw StoreError.io(path: path, reason: "cannot create a wake-up socket (errno \(errno))") }
        let bound = CommitSignal.withSocketAddress(in: directory.path, name: name) { address, length in bind(socketFD, address, length) }
        guard bound == 0 else {
            close(socketFD)
            throw StoreError.io(path: path, reason: bound == nil ? "the store's path is too long for a wake-up socket" : "cannot bind a wake-up socket (errno \(errno))")
        }
        fd = socketFD
        let fd = socketFD
        let stopped = stopped
        thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 16)
            while true {
                let received = recv(fd, &buffer, buffer.count, 0)
                if received < 0 && errno == EINTR { continue }
                if received < 0 { return }
                // Drain what else is queued: one call covers them all.
                while recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) >= 0 {}
                if stopped.isSet { return }
                onCommit()
            }
        }
        thread.name = "lattice-commit-watcher"
        thread.start()
    }

    /// Stops watching and removes the socket.
    package func stop() {
        guard !stopped.set() else { return }
        let fd = fd
        // Wake the thread, which sees the flag and leaves.
        _ = CommitSignal.withSocketAddress(in: directory, name: name) { address, length in sendto(fd, "", 0, 0, address, length) }
        unlink(path)
        // The thread closes nothing: give it a moment to leave recv, then close.
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { close(fd) }
    }

    deinit { stop() }
}
