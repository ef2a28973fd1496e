import Foundation
@_spi(Tools) import LatticeCrypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store's secrets (the identity key, the database, the wake-up sockets)
/// are the user's alone: these checks refuse a directory or key file that
/// another user owns or can reach, as ssh does for `~/.ssh`.
package enum PrivateFiles {
    /// Refuses `path` unless it is a directory (not a symbolic link) owned by
    /// this user with no access for group or others. With `fix`, a directory
    /// of ours that others can reach is set to 0700 instead: for a directory
    /// that holds nothing secret yet, or one Lattice made itself.
    package static func checkDirectory(_ path: String, what: String, fix: Bool) throws {
        let info = try ownStatus(path, what: what, type: S_IFDIR, notOfType: "is not a plain directory (a symbolic link or a file); remove it or choose another store")
        let mode = info.st_mode & 0o777
        guard mode & 0o077 != 0 else { return }
        if fix, chmod(path, 0o700) == 0 { return }
        throw StoreError.insecure(
            path: path,
            reason: "\(what) is open to other users (mode \(octal(mode))), so its secret key may have been read; if you are sure it was not, run `chmod 700 \(path)`")
    }

    /// The bytes of a key file, refused unless it is a regular file (not a
    /// symbolic link) of this user's with mode 0600 or stricter. The checks
    /// look at the file opened, not at the path again. The caller wipes the bytes.
    package static func readKeyFile(_ path: String, what: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ELOOP { throw StoreError.insecure(path: path, reason: "\(what) is not a regular file (a symbolic link)") }
            throw StoreError.io(path: path, reason: "cannot read \(what) (\(systemError()))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw StoreError.io(path: path, reason: "cannot read \(what) (\(systemError()))") }
        try check(info, path: path, what: what, type: S_IFREG, notOfType: "is not a regular file (a directory or a device)")
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw StoreError.insecure(
                path: path,
                reason: "\(what) is readable or writable by other users (mode \(octal(mode))), so the device's secret key may have leaked; "
                    + "if you are sure it did not, run `chmod 600 \(path)`, else start a new store and trust the new device ID")
        }
        // A key file is small; anything larger is not one.
        var bytes = [UInt8](repeating: 0, count: 4096)
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                Sodium.wipe(&bytes)
                throw StoreError.io(path: path, reason: "cannot read \(what) (\(systemError()))")
            }
            if n == 0 { break }
            count += n
        }
        let content = Array(bytes[0..<count])
        Sodium.wipe(&bytes)
        return content
    }

    /// Writes `data` to `path` atomically: into a new file that only this
    /// user can read, under a random name no one can prepare, then renamed
    /// over `path`.
    package static func writeAtomically(_ data: Data, to path: String) throws {
        try writeAtomically([UInt8](data), to: path)
    }

    /// The same for bytes; `durable` waits until the file and its name are on
    /// disk (`fsync`), for what must survive a crash whole.
    package static func writeAtomically(_ data: [UInt8], to path: String, durable: Bool = false) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let temporary = "\(directory)/.\(name).\(UInt64.random(in: 0...UInt64.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(path: temporary, reason: "cannot create (\(systemError()))") }
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
        if failure == 0, durable, fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            throw StoreError.io(path: path, reason: "cannot write (\(systemError(failure)))")
        }
        if durable {
            let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directoryFD >= 0 {
                _ = fsync(directoryFD)
                close(directoryFD)
            }
        }
    }

    /// The file's status (not following a symbolic link), refused unless it is of `type` and this user's.
    private static func ownStatus(_ path: String, what: String, type: mode_t, notOfType: String) throws -> stat {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw StoreError.io(path: path, reason: "cannot read \(what) (\(systemError()))") }
        try check(info, path: path, what: what, type: type, notOfType: notOfType)
        return info
    }

    private static func check(_ info: stat, path: String, what: String, type: mode_t, notOfType: String) throws {
        guard info.st_mode & S_IFMT == type else { throw StoreError.insecure(path: path, reason: "\(what) \(notOfType)") }
        guard info.st_uid == geteuid() else {
            throw StoreError.insecure(
                path: path,
                reason: "\(what) belongs to user \(info.st_uid), not to you (user \(geteuid())); a store is used only by the user who owns it")
        }
    }

    private static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }

    private static func systemError(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }
}
