/// A column an index can read: a field's indexed values, or the record's name.
package enum IndexColumn: Hashable, Sendable {
    case field(String)
    case recordName
}

/// The part of a query's filter that indexes can check. It is never narrower
/// than the predicate: every record the predicate matches passes it, so the
/// predicate, checked again on each candidate, has the last word.
package indirect enum IndexFilter: Hashable, Sendable {
    package enum Comparison: String, Hashable, Sendable {
        case equals = "=", lessThan = "<", lessThanOrEquals = "<=", greaterThan = ">", greaterThanOrEquals = ">="
    }

    case compare(IndexColumn, Comparison, FieldValue)
    case oneOf(IndexColumn, [FieldValue])
    /// Text beginning with the prefix (by UTF-8 bytes).
    case prefix(IndexColumn, String)
    /// A searchable field holding all (or any) of the tokens.
    case tokens(field: String, tokens: [String], all: Bool)
    /// A list field with all (or any) of the values among its members.
    case members(field: String, values: [FieldValue], all: Bool)
    /// A list field with a text member beginning with the prefix.
    case memberPrefix(field: String, prefix: String)
    /// A location field inside one of the boxes.
    case within(field: String, boxes: [GeoBox])
    case and([IndexFilter])
    case or([IndexFilter])

    /// The filter without its conditions on record names, which the
    /// public database's stored names do not hold as apps write them
    /// (`PublicRecordName`): weaker, so the engine's own check decides.
    package var withoutRecordNames: IndexFilter? {
        switch self {
        case .compare(.recordName, _, _), .oneOf(.recordName, _), .prefix(.recordName, _): return nil
        case .compare, .oneOf, .prefix, .tokens, .members, .memberPrefix, .within: return self
        case .and(let parts):
            let kept = parts.compactMap(\.withoutRecordNames)
            return kept.isEmpty ? nil : kept.count == 1 ? kept[0] : .and(kept)
        case .or(let parts):
            let kept = parts.compactMap(\.withoutRecordNames)
            return kept.count < parts.count ? nil : .or(kept)
        }
    }

    /// How many conditions the filter holds.
    package var conditionCount: Int {
        switch self {
        case .compare, .oneOf, .prefix, .tokens, .members, .memberPrefix, .within: return 1
        case .and(let parts), .or(let parts): return parts.reduce(0) { $0 + $1.conditionCount }
        }
    }

    /// The fields whose indexes this filter reads.
    package var fields: Set<String> {
        switch self {
        case .compare(.field(let name), _, _), .oneOf(.field(let name), _), .prefix(.field(let name), _), .tokens(let name, _, _),
             .members(let name, _, _), .memberPrefix(let name, _), .within(let name, _):
            return [name]
        case .compare, .oneOf, .prefix: return []
        case .and(let parts), .or(let parts): return parts.reduce(into: Set()) { $0.formUnion($1.fields) }
        }
    }
}

/// How a query reads the store: which rows it reads as candidates, in which
/// order, and when it may stop. Made by `QueryPlanner` from the query and the
/// schema's indexes; the store turns it into SQL.
package struct QueryPlan: Hashable, Sendable {
    package enum Order: Hashable, Sendable {
        /// Candidates in no useful order: all of them are read, then sorted.
        case none
        case recordName(ascending: Bool)
        /// By an indexed field, records without a value last.
        case field(String, ascending: Bool)
    }

    /// What indexes check before a record is read; nil when they check nothing.
    package var filter: IndexFilter?
    package var order: Order
    /// Candidates arrive in exactly the query's order, so reading stops once
    /// the page is full. Otherwise they arrive grouped by the first sort key
    /// (reading stops after the group that fills the page) or in no order.
    package var orderIsComplete: Bool
    /// A field whose index would let this query read fewer rows, with the kind it needs.
    package struct Suggestion: Hashable, Sendable {
        package var field: String
        package var kind: IndexKinds
    }

    package var suggestions: [Suggestion]

    /// Whether the type's index table is read (else the records table is).
    package var readsTypeIndex: Bool {
        if case .field = order { return true }
        return !(filter?.fields.isEmpty ?? true)
    }

    /// One line for `query --explain`.
    package var summary: String {
        let filterPart = filter.map { filter -> String in
            let fields = filter.fields.sorted()
            return fields.isEmpty ? "record names narrowed by the filter" : "the index on \(fields.joined(separator: ", ")) narrows the candidates"
        }
        switch order {
        case .field(let field, let ascending):
            let how = orderIsComplete ? "stops when the page is full" : "stops after the first sort key's group that fills the page"
            return ["index walk in the order of \(field) (\(ascending ? "ascending" : "descending"))", filterPart, how].compactMap { $0 }.joined(separator: "; ")
        case .recordName(let ascending):
            let how = orderIsComplete ? "stops when the page is full" : "stops after the record name group that fills the page"
            return ["walk by record name (\(ascending ? "ascending" : "descending"))", filterPart, how].compactMap { $0 }.joined(separator: "; ")
        case .none:
            if let filterPart { return "\(filterPart); every candidate is read and sorted" }
            return "scan: every record of the type is read, filtered and sorted"
        }
    }
}

/// Chooses how to run a query from the indexes the schema has.
package enum QueryPlanner {
    package static func plan(_ engine: QueryEngine, schema: Schema) -> QueryPlan {
        let kinds = { (field: String) in schema.indexKinds(field, of: engine.recordType) }
        var filter = translate(engine.predicate, schema: schema, recordType: engine.recordType)
        // SQLite refuses expressions nested 1,000 deep; a filter that large
        // is checked record by record instead.
        if let large = filter, large.conditionCount > maximumPushedConditions { filter = nil }
        var order = QueryPlan.Order.none
        var suggestions: [QueryPlan.Suggestion] = []
        if let first = engine.sorts.first {
            switch first.key {
            case .recordName:
                order = .recordName(ascending: first.ascending)
            case .field(let name) where first.relativeLocation == nil:
                // Only a sortable index orders as the engine does: SQLite orders
                // blobs and reference names by bytes, the engine otherwise. The
                // field's type is checked too, as kinds from a peer are not.
                let type = schema.field(name, of: engine.recordType)?.type
                if kinds(name).contains(.sortable), let type, IndexKinds.sortable.refusal(for: type) == nil {
                    order = .field(name, ascending: first.ascending)
                } else if let type, IndexKinds.sortable.refusal(for: type) == nil {
                    // Only an index the field can have: none for a field not defined, a list or a location.
                    suggestions.append(QueryPlan.Suggestion(field: name, kind: .sortable))
                }
            default:
                break
            }
        } else {
            order = .recordName(ascending: true)
        }
        let covered = filter?.fields ?? []
        for (field, kind) in wanted(engine.predicate, schema: schema, recordType: engine.recordType) where !covered.contains(field) && !suggestions.contains(where: { $0.field == field }) && !kinds(field).contains(kind) {
            suggestions.append(QueryPlan.Suggestion(field: field, kind: kind))
        }
        // Record names are unique, so sort keys after one are never consulted.
        let complete: Bool
        switch order {
        case .none: complete = false
        case .recordName: complete = true
        case .field: complete = engine.sorts.count == 1
        }
        return QueryPlan(filter: filter, order: order, orderIsComplete: complete, suggestions: suggestions)
    }

    /// The weakest index filter implied by `predicate` (nil: nothing to narrow by).
    static func translate(_ predicate: QueryPredicate, schema: Schema, recordType: String) -> IndexFilter? {
        switch predicate {
        case .all, .not:
            return nil
        case .condition(let condition):
            return translate(condition, schema: schema, recordType: recordType)
        case .and(let parts):
            let translated = parts.compactMap { translate($0, schema: schema, recordType: recordType) }
            if translated.count <= 1 { return translated.first }
            return .and(translated)
        case .or(let parts):
            var translated: [IndexFilter] = []
            for part in parts {
                // One operand that no index narrows lets any record through.
                guard let filter = translate(part, schema: schema, recordType: recordType) else { return nil }
                translated.append(filter)
            }
            return translated.count == 1 ? translated[0] : .or(translated)
        }
    }

    private static func translate(_ condition: QueryCondition, schema: Schema, recordType: String) -> IndexFilter? {
        let column: IndexColumn
        switch condition.key {
        case .recordName: column = .recordName
        case .field(let name):
            if condition.comparator == .containsAllTokens || condition.comparator == .containsAnyTokens {
                guard schema.indexKinds(name, of: recordType).contains(.searchable), case .string(let text) = condition.value else { return nil }
                // Distinct by bytes, as the token index and the engine tell tokens apart.
                let tokens = Set(Tokenizer.tokens(text).map { Array($0.utf8) }).map { String(decoding: $0, as: UTF8.self) }.sorted()
                guard !tokens.isEmpty, tokens.count <= maximumPushedValues else { return nil }
                return .tokens(field: name, tokens: tokens, all: condition.comparator == .containsAllTokens)
            }
            switch schema.indexStructure(name, of: recordType) {
            case .column?: column = .field(name)
            case .members?: return translateMembers(condition, field: name)
            case .location?: return translateNear(condition, field: name)
            case nil: return nil
            }
        default: return nil
        }
        switch condition.comparator {
        case .equals: return isIndexable(condition.value) ? .compare(column, .equals, condition.value) : nil
        case .lessThan: return isOrderable(condition.value) ? .compare(column, .lessThan, condition.value) : nil
        case .lessThanOrEquals: return isOrderable(condition.value) ? .compare(column, .lessThanOrEquals, condition.value) : nil
        case .greaterThan: return isOrderable(condition.value) ? .compare(column, .greaterThan, condition.value) : nil
        case .greaterThanOrEquals: return isOrderable(condition.value) ? .compare(column, .greaterThanOrEquals, condition.value) : nil
        case .beginsWith:
            guard case .string(let prefix) = condition.value else { return nil }
            return .prefix(column, prefix)
        case .in:
            guard case .list(let items) = condition.value, items.count <= maximumPushedValues, items.allSatisfy(isIndexable) else { return nil }
            return .oneOf(column, items)
        default:
            // Negations match records without the field; tokens over every field have no index.
            return nil
        }
    }

    /// A list condition as the member index checks it. An empty list of
    /// values is not narrowed: LIST_CONTAINS_ALL of none matches every
    /// record with the field, empty lists too, which have no members.
    private static func translateMembers(_ condition: QueryCondition, field: String) -> IndexFilter? {
        let values: [FieldValue]
        switch condition.comparator {
        case .listContains: values = [condition.value]
        case .listContainsAny, .listContainsAll:
            guard case .list(let items) = condition.value else { return nil }
            values = items
        case .listMemberBeginsWith:
            guard case .string(let prefix) = condition.value else { return nil }
            return .memberPrefix(field: field, prefix: prefix)
        default:
            return nil
        }
        guard !values.isEmpty, values.count <= maximumPushedValues, values.allSatisfy(isIndexable) else { return nil }
        return .members(field: field, values: values, all: condition.comparator == .listContainsAll)
    }

    private static func translateNear(_ condition: QueryCondition, field: String) -> IndexFilter? {
        guard condition.comparator == .near, case .location(let center) = condition.value, let distance = condition.distance,
              let boxes = GeoBounds.boxes(around: center, within: distance) else { return nil }
        return .within(field: field, boxes: boxes)
    }

    /// Filters with more conditions are checked record by record.
    static let maximumPushedConditions = 100

    /// Longer IN lists and token lists are checked record by record: SQLite
    /// binds at most 32,766 values per statement.
    static let maximumPushedValues = 500

    /// Values an index compares exactly as the query engine does.
    package static func isIndexable(_ value: FieldValue) -> Bool {
        switch value {
        case .string, .int64, .double, .bool, .date, .bytes, .reference: return true
        case .asset, .location, .list: return false
        }
    }

    package static func isOrderable(_ value: FieldValue) -> Bool {
        switch value {
        case .string, .int64, .double, .bool, .date: return true
        default: return false
        }
    }

    /// The fields the predicate filters on, with the index kind that would
    /// serve each: only where the field's type takes that index and the
    /// index serves the comparator (a list's members, a location's box, a
    /// scalar's column), so the suggested command works and helps.
    private static func wanted(_ predicate: QueryPredicate, schema: Schema, recordType: String) -> [(String, IndexKinds)] {
        switch predicate {
        case .all: return []
        case .condition(let condition):
            guard case .field(let name) = condition.key, let type = schema.field(name, of: recordType)?.type else { return [] }
            let kind: IndexKinds
            let fits: Bool
            switch condition.comparator {
            case .containsAllTokens, .containsAnyTokens:
                (kind, fits) = (.searchable, true)
            case .listContains, .listContainsAny, .listContainsAll, .listMemberBeginsWith:
                (kind, fits) = (.queryable, type.isList)
            case .near:
                (kind, fits) = (.queryable, type == FieldType(.location))
            case .equals, .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals, .beginsWith, .in:
                (kind, fits) = (.queryable, !type.isList && type.element != .location)
            default:
                return []
            }
            return fits && kind.refusal(for: type) == nil ? [(name, kind)] : []
        case .and(let parts), .or(let parts): return parts.flatMap { wanted($0, schema: schema, recordType: recordType) }
        case .not: return []
        }
    }
}
