import Foundation
import LatticeStore
import Testing
#if canImport(Glibc)
import Glibc
@_spi(Tools) import LatticeCrypto
#endif

/// The store keeps its secrets: a directory or key file others can reach, or
/// that another user owns, is refused; what Lattice writes is private.
@Suite struct PrivateFilesTests {
    let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-private-\(UUID().uuidString)")

    func mode(_ path: String) -> mode_t {
        var info = stat()
        _ = stat(path, &info)
        return info.st_mode & 0o777
    }

    func insecureReason(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let StoreError.insecure(_, reason) {
            return reason
        } catch {
            return "unexpected error: \(error)"
        }
    }

    @Test func anEmptyDirectoryOthersCanReadIsMadePrivateForANewStore() throws {
        let directory = root.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o755)
        let store = try RecordStore(directory: directory)
        #expect(mode(directory.path) == 0o700)
        #expect(mode(directory.appendingPathComponent(RecordStore.identityFileName).path) == 0o600)
        _ = store
    }

    @Test func aStoreOthersCanReadIsRefusedUntilTheUserSaysSo() throws {
        let directory = root.appendingPathComponent("open")
        let id = try RecordStore(directory: directory).identity.deviceID
        chmod(directory.path, 0o755)
        let reason = insecureReason { _ = try RecordStore(directory: directory) }
        #expect(reason?.contains("open to other users (mode 0755)") == true, "\(reason ?? "opened")")
        #expect(reason?.contains("chmod 700 \(directory.path)") == true)
        #expect(mode(directory.path) == 0o755) // refused, not silently changed
        chmod(directory.path, 0o700)
        #expect(try RecordStore(directory: directory).identity.deviceID == id)
    }

    @Test func anIdentityKeyOthersCanReadIsRefused() throws {
        let directory = root.appendingPathComponent("key")
        _ = try RecordStore(directory: directory)
        let key = directory.appendingPathComponent(RecordStore.identityFileName).path
        chmod(key, 0o644)
        let reason = insecureReason { _ = try RecordStore(directory: directory) }
        #expect(reason?.contains("mode 0644") == true, "\(reason ?? "opened")")
        #expect(reason?.contains("chmod 600 \(key)") == true)
        chmod(key, 0o600)
        _ = try RecordStore(directory: directory)
    }

    @Test func theKeyFileReadsBackInAnyHexCaseAndADamagedOneIsRefused() throws {
        let directory = root.appendingPathComponent("hex")
        let id = try RecordStore(directory: directory).identity.deviceID
        let key = directory.appendingPathComponent(RecordStore.identityFileName).path
        let text = try String(contentsOfFile: key, encoding: .utf8)
        #expect(text.count == 65 && text.hasSuffix("\n"))
        try PrivateFiles.writeAtomically(Data(("  " + text.uppercased() + "\n").utf8), to: key)
        #expect(try RecordStore(directory: directory).identity.deviceID == id)
        try PrivateFiles.writeAtomically(Data(text.dropFirst().utf8), to: key)
        #expect(throws: StoreError.self) { _ = try RecordStore(directory: directory) }
        try PrivateFiles.writeAtomically(Data(("g" + text.dropFirst()).utf8), to: key)
        #expect(throws: StoreError.self) { _ = try RecordStore(directory: directory) }
    }

    @Test func anIdentityKeyThatIsASymbolicLinkIsRefused() throws {
        let directory = root.appendingPathComponent("link")
        _ = try RecordStore(directory: directory)
        let key = directory.appendingPathComponent(RecordStore.identityFileName).path
        let elsewhere = root.appendingPathComponent("elsewhere.key").path
        #expect(rename(key, elsewhere) == 0)
        #expect(symlink(elsewhere, key) == 0)
        let reason = insecureReason { _ = try RecordStore(directory: directory) }
        #expect(reason?.contains("not a regular file") == true, "\(reason ?? "opened")")
    }

    /// Needs root, to give the store to another user (CI runs as root).
    @Test(.enabled(if: geteuid() == 0)) func aStoreOwnedByAnotherUserIsRefused() throws {
        let directory = root.appendingPathComponent("theirs")
        _ = try RecordStore(directory: directory)
        #expect(chown(directory.path, 65534, 65534) == 0)
        let reason = insecureReason { _ = try RecordStore(directory: directory) }
        #expect(reason?.contains("belongs to user 65534") == true, "\(reason ?? "opened")")
    }

    @Test func aWakeUpDirectoryThatIsASymbolicLinkIsRefused() throws {
        let directory = root.appendingPathComponent("wake")
        _ = try RecordStore(directory: directory)
        let target = root.appendingPathComponent("wake-target")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("wake"))
        #expect(symlink(target.path, directory.appendingPathComponent("wake").path) == 0)
        let reason = insecureReason { _ = try CommitWatcher(store: directory) {} }
        #expect(reason?.contains("wake-up directory is not a plain directory") == true, "\(reason ?? "opened")")
    }

    @Test func anAtomicWriteIsPrivateAndLeavesNoTemporaryFile() throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let path = root.appendingPathComponent("status.json").path
        try PrivateFiles.writeAtomically(Data("one".utf8), to: path)
        try PrivateFiles.writeAtomically(Data("two".utf8), to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "two")
        #expect(mode(path) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["status.json"])
    }
}
