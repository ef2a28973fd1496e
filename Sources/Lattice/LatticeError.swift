@_spi(Tools) import LatticeCore
import LatticeStore

/// The one error type of the library, with CloudKit's codes (`CKError.Code`)
/// and a message that says what went wrong and what to do.
public struct LatticeError: Error, CustomStringConvertible, Sendable {
    public enum Code: String, Sendable, CaseIterable {
        case internalError, partialFailure, networkUnavailable, badContainer, permissionFailure
        case unknownItem, invalidArguments, serverRecordChanged, assetFileNotFound, incompatibleVersion
        case changeTokenExpired, batchRequestFailed, badDatabase, zoneNotFound, limitExceeded
    }

    public var code: Code
    public var message: String
    /// For serverRecordChanged: the record as it is now in the store.
    public var serverRecord: Record?
    /// For partialFailure: the error of each item that failed, by record or zone name.
    public var partialErrors: [String: LatticeError]

    public init(_ code: Code, _ message: String, serverRecord: Record? = nil, partialErrors: [String: LatticeError] = [:]) {
        self.code = code
        self.message = message
        self.serverRecord = serverRecord
        self.partialErrors = partialErrors
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// Translates errors of the layers below into the public type.
    static func wrap<T>(_ body: () throws -> T) throws(LatticeError) -> T {
        do { return try body() } catch let error as LatticeError {
            throw error
        } catch let error as StoreError {
            switch error {
            case .zoneNotFound: throw LatticeError(.zoneNotFound, error.description)
            case .changeTokenExpired, .historyUnavailable: throw LatticeError(.changeTokenExpired, error.description)
            case .notAStore, .noStore: throw LatticeError(.badContainer, error.description)
            case .corrupt: throw LatticeError(.badDatabase, error.description)
            case .io: throw LatticeError(.internalError, error.description)
            case .insecure: throw LatticeError(.permissionFailure, error.description)
            }
        } catch let error as ReplicaError {
            switch error {
            case .zoneNotFound: throw LatticeError(.zoneNotFound, error.description)
            case .unknownRecord, .indexTargetMissing: throw LatticeError(.unknownItem, error.description)
            case .recordTypeMismatch, .schema, .index: throw LatticeError(.invalidArguments, error.description)
            case .permission: throw LatticeError(.permissionFailure, error.description)
            }
        } catch let error as ChangeSetError {
            throw LatticeError(.invalidArguments, error.description)
        } catch let error as WriteProofError {
            throw LatticeError(.permissionFailure, "refused: \(error.description); nothing of it was applied")
        } catch {
            throw LatticeError(.internalError, "\(error)")
        }
    }
}
