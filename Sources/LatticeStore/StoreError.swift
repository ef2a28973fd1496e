/// Why the store refused or failed an operation.
package enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The directory exists but holds no Lattice store.
    case notAStore(path: String)
    case noStore(path: String)
    /// The database file is damaged or from an incompatible build.
    case corrupt(path: String, reason: String)
    case io(path: String, reason: String)
    /// The store's directory or key file is not this user's alone.
    case insecure(path: String, reason: String)
    case zoneNotFound(String)
    case changeTokenExpired(String)
    /// A read of history that reaches back past what is kept (collected, deleted, or kept off then).
    case historyUnavailable(String)

    package var description: String {
        switch self {
        case .notAStore(let path): return "\(path) is not a Lattice store (no lattice.sqlite); choose an empty directory or run `lattice init`"
        case .noStore(let path): return "no Lattice store at \(path); run `lattice init` or pass --store"
        case .corrupt(let path, let reason): return "store at \(path) cannot be read: \(reason)"
        case .io(let path, let reason), .insecure(let path, let reason): return "\(path): \(reason)"
        case .zoneNotFound(let zone): return "zone \(zone) does not exist"
        case .changeTokenExpired(let why): return "change token expired: \(why); fetch all records again"
        case .historyUnavailable(let why): return "history unavailable: \(why)"
        }
    }
}
