import Foundation
import LatticeStore
import NIOConcurrencyHelpers
import NIOCore

extension SyncNode {
    /// How the node hears of commits by other processes, trust changes included.
    public enum CommitWatch: Sendable, Hashable {
        /// A wake-up socket in the store: at once.
        case wakeUpSocket
        /// No wake-up socket (the reason says why): the node polls the store.
        case polling(every: TimeAmount, reason: String)
    }

    /// Watches the store through a wake-up socket, or else polls it.
    func watchCommits() {
        var reason = "turned off in the configuration"
        if configuration.usesWakeUpSocket {
            do {
                let watcher = try CommitWatcher(store: container.directory) { [weak self] in self?.localCommit() }
                state.withLockedValue {
                    $0.runtime.watcher = watcher
                    $0.status.commitWatch = "wake-up socket"
                }
                return
            } catch {
                reason = "\(error)"
            }
        }
        let interval = TimeAmount(configuration.pollInterval)
        logger.warning("no wake-up socket: commits and trust changes by other processes are noticed by polling the store every \(interval.nanoseconds / 1_000_000) ms", metadata: ["reason": "\(reason)"])
        let last = NIOLockedValueBox(pollMark())
        // Store reads: on the thread pool, not the event loop.
        let poller = group.next().scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
            guard let node = self else { return }
            node.threadPool.submit { [weak node] _ in
                guard let self = node else { return }
                let mark = self.pollMark()
                guard last.withLockedValue({ last in defer { last = mark }; return last != mark }) else { return }
                self.localCommit()
            }
        }
        state.withLockedValue {
            $0.runtime.poller = poller
            $0.status.commitWatch = "polling every \(interval.nanoseconds / 1_000_000) ms: \(reason)"
        }
    }

    /// What changes when another process commits: the change sequence, or trust.
    private func pollMark() -> [String] {
        let sequence = (try? container.store.currentSequence()).map { "\($0)" } ?? "?"
        let trusted = ((try? container.peers()) ?? []).filter(\.trusted).map(\.deviceID).sorted()
        return [sequence] + trusted
    }

    /// Counts a connection turned away; untrusted devices reach the store's
    /// peers (so a person can trust one by its ID) at most once a minute.
    func noteStranger(_ reason: StrangerLog.Reason, address: String, deviceID: String? = nil) {
        let save = state.withLockedValue { state -> Bool in
            let save = state.strangers.note(reason, address: address, deviceID: deviceID, wallClock: RecordStore.systemWallClock(), at: .now())
            state.status.strangers = state.strangers.log
            return save
        }
        if save { threadPool.submit { [weak self] _ in self?.saveStrangers() } }
    }

    /// Whether a refusal gets its own `refused` event: at most 5 in 10 seconds.
    /// Every refusal is counted in `status.strangers` whatever this says.
    func announcesRefusal() -> Bool { state.withLockedValue { $0.strangers.announcesRefusal(at: .now()) } }

    /// Writes the recent untrusted devices to the store's peers, in one transaction.
    func saveStrangers() {
        let devices = state.withLockedValue { $0.strangers.takeUnsaved(at: .now()) }
        guard !devices.isEmpty else { return }
        do {
            try container.store.write { transaction in
                for device in devices.reversed() {
                    try transaction.upsertPeer(device.deviceID, name: nil, trusted: nil, address: device.address, lastSeen: device.last)
                }
            }
        } catch {
            logger.warning("cannot record untrusted devices in the store: \(error)")
        }
    }
}
