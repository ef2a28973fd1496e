import Foundation
import Lattice
import NIOHTTP1

/// A failed request as CloudKit Web Services answers it: an HTTP status and
/// `{"uuid","serverErrorCode","reason"}`.
struct WebError: Error, Sendable {
    /// CloudKit Web Services' codes, with the status each comes with.
    enum Code: String, Sendable {
        case badRequest = "BAD_REQUEST"
        case authenticationRequired = "AUTHENTICATION_REQUIRED"
        case authenticationFailed = "AUTHENTICATION_FAILED"
        case accessDenied = "ACCESS_DENIED"
        case notFound = "NOT_FOUND"
        case zoneNotFound = "ZONE_NOT_FOUND"
        case conflict = "CONFLICT"
        case exists = "EXISTS"
        case atomicError = "ATOMIC_ERROR"
        case changeTokenExpired = "CHANGE_TOKEN_EXPIRED"
        case limitExceeded = "LIMIT_EXCEEDED"
        case requestTimeout = "REQUEST_TIMEOUT"
        case throttled = "THROTTLED"
        case tryAgainLater = "TRY_AGAIN_LATER"
        case internalError = "INTERNAL_ERROR"

        var status: HTTPResponseStatus {
            switch self {
            case .badRequest, .atomicError, .changeTokenExpired: return .badRequest
            case .authenticationRequired, .authenticationFailed: return .unauthorized
            case .accessDenied: return .forbidden
            case .notFound, .zoneNotFound: return .notFound
            case .conflict, .exists: return .conflict
            case .limitExceeded: return .payloadTooLarge
            case .requestTimeout: return .requestTimeout
            case .throttled: return .tooManyRequests
            case .tryAgainLater: return .serviceUnavailable
            case .internalError: return .internalServerError
            }
        }
    }

    struct Body: Codable, Sendable {
        var uuid: String
        var serverErrorCode: String
        var reason: String
    }

    var code: Code
    var reason: String

    init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// The library's error as Web Services names it.
    init(_ error: LatticeError) {
        self.init(Self.code(of: error.code), error.message)
    }

    var status: HTTPResponseStatus { code.status }
    var body: Body { Body(uuid: UUID().uuidString, serverErrorCode: code.rawValue, reason: reason) }

    static func code(of code: LatticeError.Code) -> Code {
        switch code {
        case .unknownItem: return .notFound
        case .zoneNotFound: return .zoneNotFound
        case .serverRecordChanged: return .conflict
        case .permissionFailure: return .accessDenied
        case .limitExceeded: return .limitExceeded
        case .invalidArguments, .assetFileNotFound, .partialFailure, .badContainer: return .badRequest
        case .batchRequestFailed: return .atomicError
        case .changeTokenExpired: return .changeTokenExpired
        case .networkUnavailable: return .tryAgainLater
        case .badDatabase, .internalError, .incompatibleVersion: return .internalError
        }
    }

    static func badRequest(_ reason: String) -> WebError { WebError(.badRequest, reason) }

    /// Any error as a request's: the library's by its code, anything else INTERNAL_ERROR.
    static func from(_ error: any Error) -> WebError {
        if let error = error as? WebError { return error }
        if let error = error as? LatticeError { return WebError(error) }
        return WebError(.internalError, "\(error)")
    }
}

/// A record an operation could not write, or a lookup did not find, as a
/// results list carries it: `{"recordName","serverErrorCode","reason","uuid"}`.
struct RecordError: Encodable, Sendable {
    var recordName: String
    var serverErrorCode: String
    var reason: String
    var uuid = UUID().uuidString
    /// The record as stored, for a CONFLICT: what to merge with before saving again.
    var serverRecord: WebServicesRecord?

    init(recordName: String, _ error: LatticeError, serverRecord: WebServicesRecord? = nil) {
        self.recordName = recordName
        serverErrorCode = WebError.code(of: error.code).rawValue
        reason = error.message
        self.serverRecord = serverRecord
    }
}

extension DatabaseScope {
    /// A database as Web Services' paths name it: `private`, `shared` or `public`.
    init(webName: String) throws {
        switch webName {
        case "private": self = .private
        case "shared": self = .shared
        case "public": self = .public
        default: throw WebError.badRequest("database \"\(webName)\" is none of private, shared, public")
        }
    }
}
