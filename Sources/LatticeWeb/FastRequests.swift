import Lattice

/// `records/modify` read without `JSONDecoder` where the fast JSON reader is
/// sure of the text: a request carries up to 400 records, and `JSONDecoder`
/// took most of its time. Anything unexpected (a key CloudKit does not
/// define, a value of another type) gives nil, and `JSONDecoder` reads the
/// request instead, with its precise errors: the result is the same either
/// way (`FastRequestTests`).
extension ModifyRequest {
    static func fast(_ body: [UInt8]) -> ModifyRequest? {
        guard let parsed = body.withUnsafeBytes({ WebServicesValue.fastParsed($0) }), case .object(let members) = parsed,
              Set(members.keys).isSubset(of: ["operations", "zoneID", "atomic", "desiredKeys", "numbersAsStrings"]),
              case .array(let items)? = members["operations"] else { return nil }
        var operations: [Operation] = []
        operations.reserveCapacity(items.count)
        for item in items {
            guard let operation = Operation.fast(item) else { return nil }
            operations.append(operation)
        }
        guard let zoneID = FastRead.zoneID(members["zoneID"]), let atomic = FastRead.bool(members["atomic"]),
              let desiredKeys = FastRead.strings(members["desiredKeys"]), let numbersAsStrings = FastRead.bool(members["numbersAsStrings"]) else { return nil }
        return ModifyRequest(operations: operations, zoneID: zoneID, atomic: atomic, desiredKeys: desiredKeys, numbersAsStrings: numbersAsStrings)
    }
}

extension ModifyRequest.Operation {
    static func fast(_ value: WebServicesValue) -> Self? {
        guard case .object(let members) = value, Set(members.keys).isSubset(of: ["operationType", "record", "desiredKeys"]),
              case .string(let type)? = members["operationType"], let record = RecordInput.fast(members["record"]),
              let desiredKeys = FastRead.strings(members["desiredKeys"]) else { return nil }
        return Self(operationType: type, record: record, desiredKeys: desiredKeys)
    }
}

extension RecordInput {
    static func fast(_ value: WebServicesValue?) -> RecordInput? {
        guard case .object(let members)? = value, Set(members.keys).isSubset(of: keys) else { return nil }
        // Keys CloudKit defines but a write does not use must still be what JSONDecoder would skip: leave those to it.
        guard members["created"] == nil, members["modified"] == nil, members["deleted"] == nil, members["parent"] == nil,
              members["share"] == nil, members["pluginFields"] == nil else { return nil }
        guard let name = FastRead.string(members["recordName"]), let type = FastRead.string(members["recordType"]),
              let tag = FastRead.string(members["recordChangeTag"]), let zoneID = FastRead.zoneID(members["zoneID"]) else { return nil }
        var fields: [String: WebServicesField]?
        switch members["fields"] {
        case nil, .null?: fields = nil
        case .object(let fieldMembers)?:
            var read: [String: WebServicesField] = [:]
            read.reserveCapacity(fieldMembers.count)
            for (fieldName, member) in fieldMembers {
                guard case .object(let field) = member, Set(field.keys).isSubset(of: ["value", "type"]), let value = field["value"] else { return nil }
                switch field["type"] {
                case nil, .null?: read[fieldName] = WebServicesField(value: value, type: nil)
                case .string(let type)?: read[fieldName] = WebServicesField(value: value, type: type)
                default: return nil
                }
            }
            fields = read
        default: return nil
        }
        return RecordInput(recordName: name, recordType: type, recordChangeTag: tag, fields: fields, zoneID: zoneID)
    }
}

/// Optional members as `JSONDecoder` reads them: absent or null is nil
/// (`.some(nil)`), the right type its value, any other type a failure (nil).
enum FastRead {
    static func string(_ value: WebServicesValue?) -> String?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .string(let text)?: return .some(text)
        default: return nil
        }
    }

    static func bool(_ value: WebServicesValue?) -> Bool?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .bool(let flag)?: return .some(flag)
        default: return nil
        }
    }

    static func strings(_ value: WebServicesValue?) -> [String]?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .array(let items)?:
            var texts: [String] = []
            for item in items {
                guard case .string(let text) = item else { return nil }
                texts.append(text)
            }
            return .some(texts)
        default: return nil
        }
    }

    static func zoneID(_ value: WebServicesValue?) -> WebServicesZoneID?? {
        switch value {
        case nil, .null?: return .some(nil)
        case .object(let members)?:
            guard Set(members.keys).isSubset(of: ["zoneName", "ownerRecordName", "ownerName", "zoneType"]), case .string(let name)? = members["zoneName"],
                  let owner = string(members["ownerName"]), let recordOwner = string(members["ownerRecordName"]), let zoneType = string(members["zoneType"]) else { return nil }
            _ = zoneType
            return .some(WebServicesZoneID(Zone.ID(zoneName: name, ownerName: owner ?? recordOwner ?? Zone.ID.defaultOwnerName)))
        default: return nil
        }
    }
}
