import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's secrets (the identity key, the database, the wake-up sockets)
/// are the user's alone: these checks refuse a directory or key file that
/// another user owns or can reach, as ssh does for `~/.ssh`.
public enum PrivateFiles {
    /// Refuses `path` unless it is a directory (not a symbolic link) owned by
    /// this user with no access for group or others. With `fix`, a directory
    /// of ours that others can reach is set to 0700 instead: for a directory
    /// that holds nothing secret yet, or one Lattice made itself.
    public static func checkDirectory(_ path: String, what: String, fix: Bool) throws {
        let info = try ownStatus(path, what: what, type: S_IFDIR, notOfType: "is not a plain directory (a symbolic link or a file); remove it or choose another store")
        let mode = info.st_mode & 0o777
        guard mode & 0o077 != 0 else { return }
        if fix, chmod(path, 0o700) == 0 { return }
        throw StoreError.insecure(
            path: path,
            reason: "\(what) is open to other users (mode \(octal(mode))), so its secret key may have been read; if you are sure it was not, run `chmod 700 \(path)`")
    }

    /// Refuses a key file that is not a regular file of this user's with mode 0600 or stricter.
    public static func checkKeyFile(_ path: String, what: String) throws {
        let info = try ownStatus(path, what: what, type: S_IFREG, notOfType: "is not a regular file (a symbolic link or a directory)")
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw StoreError.insecure(
                path: path,
                reason: "\(what) is readable or writable by other users (mode \(octal(mode))), so the device's secret key may have leaked; "
                    + "if you are sure it did not, run `chmod 600 \(path)`, else start a new store and trust the new device ID")
        }
    }

    /// Writes `data` to `path` atomically: into a new file that only this
    /// user can read, under a random name no one can prepare, then renamed
    /// over `path`.
    public static func writeAtomically(_ data: Data, to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let temporary = "\(directory)/.\(name).\(UInt64.random(in: 0...UInt64.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(path: temporary, reason: "cannot create (\(String(cString: strerror(errno))))") }
        var failure: Int32 = 0
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        close(fd)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw StoreError.io(path: path, reason: "cannot write (\(String(cString: strerror(failure))))")
        }
    }

    /// The file's status (not following a symbolic link), refused unless it is of `type` and this user's.
    private static func ownStatus(_ path: String, what: String, type: mode_t, notOfType: String) throws -> stat {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw StoreError.io(path: path, reason: "cannot read \(what) (\(String(cString: strerror(errno))))") }
        guard info.st_mode & S_IFMT == type else { throw StoreError.insecure(path: path, reason: "\(what) \(notOfType)") }
        guard info.st_uid == geteuid() else {
            throw StoreError.insecure(
                path: path,
                reason: "\(what) belongs to user \(info.st_uid), not to you (user \(geteuid())); a store is used only by the user who owns it")
        }
        return info
    }

    private static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}
