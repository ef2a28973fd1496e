import Foundation
import Testing

/// Runs the built `lattice` binary, as a user's shell would.
struct CLI {
    let root: URL

    init() {
        root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-cli-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { root.appendingPathComponent(name).path }

    static var binary: URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug"),
        ]
        for directory in candidates where FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent("lattice").path) {
            return directory.appendingPathComponent("lattice")
        }
        return candidates.last!.appendingPathComponent("lattice")
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:]
        }

        var lines: [[String: Any]] {
            stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        }
    }

    /// Runs `lattice ARGS` with `--store` set to the named store (unless `store` is nil).
    @discardableResult
    /// `wrapper` runs the binary through another command (`faketime TIME`).
    func run(_ arguments: [String], store: String? = "a", input: String? = nil, environment: [String: String] = [:], wrapper: [String] = []) throws -> Result {
        let process = Process()
        let lattice = arguments + (store.map { ["--store", path($0)] } ?? [])
        if let command = wrapper.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = Array(wrapper.dropFirst()) + [CLI.binary.path] + lattice
        } else {
            process.executableURL = CLI.binary
            process.arguments = lattice
        }
        var env = ProcessInfo.processInfo.environment
        env["LATTICE_STORE"] = nil
        env["XDG_DATA_HOME"] = path("xdg")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        if let input {
            let pipe = Pipe()
            process.standardInput = pipe
            try process.run()
            pipe.fileHandleForWriting.write(Data(input.utf8))
            try pipe.fileHandleForWriting.close()
        } else {
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Runs and expects success.
    @discardableResult
    func ok(_ arguments: [String], store: String? = "a", input: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> Result {
        let result = try run(arguments, store: store, input: input)
        #expect(result.status == 0, "lattice \(arguments.joined(separator: " ")) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// Snapshot of a store's records as `query --json` sees them, for "unchanged" checks.
    func snapshot(_ store: String = "a", type: String = "Movie", zone: String = "Movies") throws -> String {
        try run(["query", type, "--zone", zone, "--json", "--limit", "1000"], store: store).stdout
    }

    func cleanup() { try? FileManager.default.removeItem(at: root) }
}
