import Foundation
@_spi(Tools) import LatticeCore

/// Turns a `#Predicate` over a model into a Lattice `QueryPredicate`: the
/// comparisons CloudKit queries have (==, !=, <, <=, >, >=, `starts(with:)`,
/// `contains` on a list or on a literal array), combined with &&, || and !.
/// Anything else is an invalidArguments error naming the expression.
struct PredicateCompiler {
    let schema: ModelSchema

    func node(_ expression: Any) throws(LatticeError) -> PredicateNode {
        guard let compilable = expression as? CompilablePredicateExpression else {
            throw LatticeError(.invalidArguments, "a predicate of \(schema.recordType) uses \(Self.describe(expression)), which a Lattice query cannot express: compare stored properties with values, combined with &&, || and !")
        }
        return try compilable.compile(self)
    }

    static func describe(_ expression: Any) -> String {
        let name = String(describing: type(of: expression))
        return name.split(separator: "<").first.map(String.init) ?? name
    }

    /// The condition an expression (the whole predicate, or an operand of &&, || and !) stands for.
    func predicate(_ expression: Any) throws(LatticeError) -> QueryPredicate {
        guard case .predicate(let predicate) = try node(expression) else {
            throw LatticeError(.invalidArguments, "\(Self.describe(expression)) is not a condition: a predicate of \(schema.recordType) compares stored properties with values")
        }
        return predicate
    }

    /// `property op value` or `value op property` (the comparator then turns around).
    func comparison(_ lhs: Any, _ rhs: Any, _ comparator: QueryComparator, flipped: QueryComparator) throws(LatticeError) -> PredicateNode {
        let left = try node(lhs), right = try node(rhs)
        switch (left, right) {
        case (.property(let property), .value(let value)): return .predicate(try condition(property, comparator, value))
        case (.value(let value), .property(let property)): return .predicate(try condition(property, flipped, value))
        default:
            throw LatticeError(.invalidArguments, "a comparison in a predicate of \(schema.recordType) must have a stored property on one side and a value on the other")
        }
    }

    func condition(_ property: AnyModelProperty, _ comparator: QueryComparator, _ value: Any?) throws(LatticeError) -> QueryPredicate {
        guard let operand = try encode(value, for: property) else {
            // Comparing with nil: a nil property is an absent field.
            switch comparator {
            case .equals: return try absent(property)
            case .notEquals: return .not(try absent(property))
            default: throw LatticeError(.invalidArguments, "\(property.name) can only be compared with nil by == and !=")
            }
        }
        let ordering: [QueryComparator] = [.lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals, .beginsWith]
        if ordering.contains(comparator), property.attribute?.isOrdered == false {
            throw LatticeError(.invalidArguments, "\(property.name) is stored as JSON text, whose order is not its values' order: compare it with == or !=")
        }
        return .condition(QueryCondition(.field(property.name), comparator, operand))
    }

    /// The stored form of an operand; nil for nil.
    func encode(_ value: Any?, for property: AnyModelProperty) throws(LatticeError) -> FieldValue? {
        guard let value, !Self.isNil(value) else { return nil }
        switch property.kind {
        case .attribute(let access):
            return try access.encode(value, .none)
        case .relationship:
            throw LatticeError(.invalidArguments, "\(property.name) is a relationship: follow it from the related object instead of querying it")
        case .unsupported(let reason):
            throw LatticeError(.invalidArguments, reason)
        }
    }

    /// The stored form of one element of a list property.
    func encode(element value: Any?, for property: AnyModelProperty) throws(LatticeError) -> FieldValue? {
        guard let value, !Self.isNil(value) else { return nil }
        guard let access = property.attribute else { return try encode(value, for: property) }
        guard let list = try access.encodeList([value], .none), case .list(let items) = list, let item = items.first else {
            throw LatticeError(.invalidArguments, "\(property.name) is not a list holding \(type(of: value)) values")
        }
        return item
    }

    /// "The field is absent": no value of its type lies below the type's least value.
    func absent(_ property: AnyModelProperty) throws(LatticeError) -> QueryPredicate {
        guard let type = property.attribute?.fieldType, !type.isList else {
            throw LatticeError(.invalidArguments, "\(property.name) cannot be compared with nil in a query; compare it with a value")
        }
        let least: FieldValue
        switch type.element {
        case .string: least = .string("")
        case .int64: least = .int64(.min)
        case .date: least = .date(.min)
        case .double: least = .double(-.infinity)
        case .bool: least = .bool(false)
        default: throw LatticeError(.invalidArguments, "\(property.name) cannot be compared with nil in a query; compare it with a value")
        }
        return .not(.condition(QueryCondition(.field(property.name), .greaterThanOrEquals, least)))
    }

    static func isNil(_ value: Any) -> Bool {
        guard let optional = value as? any OptionalModelProperty else { return false }
        return optional.unwrapped == nil
    }
}

/// What one node of a predicate compiles to.
enum PredicateNode {
    case predicate(QueryPredicate)
    case property(AnyModelProperty)
    case value(Any?)
}

/// A Foundation predicate expression that Lattice can compile.
protocol CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode
}

/// The predicate's input (`$0`).
protocol PredicateInputVariable {}
extension PredicateExpressions.Variable: PredicateInputVariable {}

extension PredicateExpressions.KeyPath: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        guard root is PredicateInputVariable else {
            throw LatticeError(.invalidArguments, "a predicate of \(compiler.schema.recordType) reads \(keyPath) through another object: a query compares the object's own properties")
        }
        return .property(try compiler.schema.property(for: keyPath))
    }
}

extension PredicateExpressions.Value: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode { .value(value) }
}

extension PredicateExpressions.NilLiteral: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode { .value(nil) }
}

extension PredicateExpressions.Conjunction: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        .predicate(.and([try compiler.predicate(lhs), try compiler.predicate(rhs)]))
    }
}

extension PredicateExpressions.Disjunction: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        .predicate(.or([try compiler.predicate(lhs), try compiler.predicate(rhs)]))
    }
}

extension PredicateExpressions.Negation: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        .predicate(.not(try compiler.predicate(wrapped)))
    }
}

extension PredicateExpressions.Equal: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        try compiler.comparison(lhs, rhs, .equals, flipped: .equals)
    }
}

extension PredicateExpressions.NotEqual: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        try compiler.comparison(lhs, rhs, .notEquals, flipped: .notEquals)
    }
}

extension PredicateExpressions.Comparison: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        switch op {
        case .lessThan: return try compiler.comparison(lhs, rhs, .lessThan, flipped: .greaterThan)
        case .lessThanOrEqual: return try compiler.comparison(lhs, rhs, .lessThanOrEquals, flipped: .greaterThanOrEquals)
        case .greaterThan: return try compiler.comparison(lhs, rhs, .greaterThan, flipped: .lessThan)
        case .greaterThanOrEqual: return try compiler.comparison(lhs, rhs, .greaterThanOrEquals, flipped: .lessThanOrEquals)
        @unknown default: throw LatticeError(.invalidArguments, "a comparison Lattice does not know")
        }
    }
}

extension PredicateExpressions.SequenceStartsWith: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        guard case .property(let property) = try compiler.node(base), case .value(let prefix) = try compiler.node(self.prefix),
              let text = prefix as? String else {
            throw LatticeError(.invalidArguments, "starts(with:) in a predicate takes a String property and a String value")
        }
        return .predicate(.condition(QueryCondition(.field(property.name), .beginsWith, .string(text))))
    }
}

extension PredicateExpressions.SequenceContains: CompilablePredicateExpression {
    func compile(_ compiler: PredicateCompiler) throws(LatticeError) -> PredicateNode {
        switch (try compiler.node(sequence), try compiler.node(element)) {
        case (.property(let property), .value(let value)):
            // A list property holding a value: LIST_CONTAINS.
            guard let item = try compiler.encode(element: value, for: property) else {
                throw LatticeError(.invalidArguments, "\(property.name) cannot be searched for nil")
            }
            return .predicate(.condition(QueryCondition(.field(property.name), .listContains, item)))
        case (.value(let values), .property(let property)):
            // A property among literal values: IN.
            guard let array = values as? any ArrayModelProperty else {
                throw LatticeError(.invalidArguments, "contains in a predicate takes an array of values")
            }
            var items: [FieldValue] = []
            for item in array.elements {
                if let encoded = try compiler.encode(item, for: property) { items.append(encoded) }
            }
            return .predicate(.condition(QueryCondition(.field(property.name), .in, .list(items))))
        default:
            throw LatticeError(.invalidArguments, "contains in a predicate takes a list property and a value, or an array of values and a property")
        }
    }
}
