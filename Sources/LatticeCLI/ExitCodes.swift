import ArgumentParser
import Foundation
import Lattice

/// The CLI's exit codes, one per kind of failure, stable for scripts (sysexits values).
public enum ExitStatus: Int32, CaseIterable, Sendable {
    case success = 0
    case usage = 64
    case corruptInput = 65
    case notFound = 66
    case unavailable = 69
    case internalError = 70
    case io = 74
    case conflict = 75
    case permission = 77

    var meaning: String {
        switch self {
        case .success: return "success"
        case .usage: return "usage: unknown command or option, malformed argument or predicate"
        case .corruptInput: return "corrupt input: invalid JSON, bundle or value, or a value of the wrong type"
        case .notFound: return "not found: no such store, zone or record"
        case .unavailable: return "network unavailable: a peer cannot be reached, or a sync was cut off"
        case .internalError: return "internal error"
        case .io: return "I/O error reading or writing files or the store"
        case .conflict: return "conflict: the record changed (serverRecordChanged) or the change token expired"
        case .permission: return "permission denied"
        }
    }

    static var helpText: String {
        "EXIT CODES:\n" + allCases.map { "  \($0.rawValue)  \($0.meaning)" }.joined(separator: "\n")
    }
}

/// A failure the CLI reports: one line on stderr (or an error object with --json) and an exit code.
public struct CLIError: Error, CustomStringConvertible {
    public var status: ExitStatus
    public var code: String
    public var message: String

    public init(_ status: ExitStatus, code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public static func usage(_ message: String) -> CLIError { CLIError(.usage, code: "BAD_REQUEST", message) }
    public static func corrupt(_ message: String) -> CLIError { CLIError(.corruptInput, code: "BAD_REQUEST", message) }
    public static func io(_ message: String) -> CLIError { CLIError(.io, code: "INTERNAL_ERROR", message) }

    public var description: String { message }

    /// CloudKit Web Services' serverErrorCode spelling of a library error.
    init(_ error: LatticeError) {
        switch error.code {
        case .unknownItem, .zoneNotFound, .badContainer: self.init(.notFound, code: error.code.webServicesCode, error.message)
        case .serverRecordChanged, .changeTokenExpired: self.init(.conflict, code: error.code.webServicesCode, error.message)
        case .permissionFailure: self.init(.permission, code: error.code.webServicesCode, error.message)
        case .invalidArguments, .limitExceeded, .assetFileNotFound, .batchRequestFailed, .partialFailure:
            self.init(.corruptInput, code: error.code.webServicesCode, error.message)
        case .badDatabase: self.init(.io, code: error.code.webServicesCode, error.message)
        case .networkUnavailable: self.init(.unavailable, code: error.code.webServicesCode, error.message)
        default: self.init(.internalError, code: error.code.webServicesCode, error.message)
        }
    }
}
