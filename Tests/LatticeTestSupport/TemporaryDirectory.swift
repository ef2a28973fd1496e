import Foundation

/// A fresh directory under the system temp dir (created on first use by
/// whoever writes there), removed with everything in it when this goes away:
/// the tests' one temporary-store helper.
package final class TemporaryDirectory: @unchecked Sendable {
    package let url: URL

    package init(_ prefix: String = "lattice-test") {
        url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    }

    /// A path inside it.
    package func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
