import Logging
import ServiceLifecycle

/// Runs a node as a swift-service-lifecycle service: started, then stopped
/// cleanly on graceful shutdown, with each event handed on as it comes.
struct NodeService: Service {
    let node: SyncNode
    let onEvent: @Sendable (SyncNode.Event) -> Void

    func run() async throws {
        try await node.start()
        let events = Task { [node, onEvent] in for await event in node.events { onEvent(event) } }
        try? await gracefulShutdown()
        await node.stop()
        await events.value
    }
}

extension SyncNode {
    /// Runs the node until the process gets SIGINT or SIGTERM, handing each
    /// of its events to `onEvent`, then stops it cleanly (connections
    /// closed, the status file left saying so): what `lattice serve` does.
    /// `alongside`: services that run in the same group and get its graceful
    /// shutdown at the same signal (the HTTP surface, say).
    public func runUntilSignalled(alongside others: [any Service] = [], onEvent: @escaping @Sendable (Event) -> Void) async throws(LatticeError) {
        let service = NodeService(node: self, onEvent: onEvent)
        let services = [ServiceGroupConfiguration.ServiceConfiguration(service: service)] + others.map { .init(service: $0) }
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as LatticeError {
            throw error
        } catch {
            throw LatticeError(.internalError, "the node stopped: \(error)")
        }
    }
}

/// Logging for command-line tools that run a node.
public enum LatticeLogging {
    /// Sets swift-log's process-wide handler to standard error at `level`
    /// ("trace" … "critical"; anything else is "warning") and returns a
    /// logger for the node. Call it once, before any node starts.
    public static func standardError(level: String) -> Logger {
        let level = Logger.Level(rawValue: level.lowercased()) ?? .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: "lattice")
        logger.logLevel = level
        return logger
    }
}
