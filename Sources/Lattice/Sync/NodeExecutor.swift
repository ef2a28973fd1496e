import Dispatch

/// Where a node's own tasks (its dial loops) run: a serial dispatch queue, not
/// Swift's cooperative pool. The pool has one thread per core; an app (or a
/// test) that blocks them for a while would otherwise stall the node's dialing
/// too, and sync would wait on work that has nothing to do with it.
@available(macOS 15.0, *)
final class NodeExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = NodeExecutor()

    private let queue = DispatchQueue(label: "lattice.node.tasks")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

enum NodeTask {
    /// Starts `operation` on the node's executor where the platform has task
    /// executors (Linux; macOS 15), else on the cooperative pool.
    static func start(_ operation: sending @escaping @isolated(any) () async -> Void) -> Task<Void, Never> {
        if #available(macOS 15.0, *) {
            return Task(executorPreference: NodeExecutor.shared, operation: operation)
        }
        return Task(operation: operation)
    }
}
