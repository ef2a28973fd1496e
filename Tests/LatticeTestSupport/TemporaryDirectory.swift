import Foundation

/// A fresh directory under the system temp dir (created on first use by
/// whoever writes there), removed with everything in it when this goes away:
/// the tests' one temporary-store helper.
public final class TemporaryDirectory: @unchecked Sendable {
    public let url: URL

    public init(_ prefix: String = "lattice-test") {
        url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    }

    /// A path inside it.
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
