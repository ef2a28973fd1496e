import Foundation
@_spi(Tools) import LatticeCore

/// A malformed predicate: where, and what was expected there.
public struct PredicateSyntaxError: Error, Equatable, CustomStringConvertible {
    /// 1-based column in the predicate text.
    public var column: Int
    public var expected: String
    public var found: String

    public var description: String { "predicate error at column \(column): expected \(expected), found \(found)" }
}

/// The `--where` language, close to NSPredicate:
///
/// ```
/// rating >= 4 AND (title BEGINSWITH "Toy" OR director == "Lasseter")
/// NOT genre IN ["horror", "thriller"]      tags CONTAINS "pixar"
/// tags CONTAINSANY ["a", "b"]              tags CONTAINSALL ["a", "b"]
/// tags ANYBEGINSWITH "pix"                 title TOKENS "toy story"    title ANYTOKENS "up coco"
/// self CONTAINS "toy"                      place NEAR (37.3, -122.0) WITHIN 5000
/// released > @2020-01-01T00:00:00Z          recordName == "m1"
/// ```
/// Values: "strings" or 'strings', integers, decimals, true/false, @ISO-8601
/// dates, [lists]. Keywords are case-insensitive.
public struct PredicateParser {
    enum Token: Equatable {
        case word(String), string(String), number(String), date(String)
        case op(String), open, close, openBracket, closeBracket, comma, end
    }

    private var tokens: [(token: Token, column: Int)] = []
    private var index = 0
    /// Parentheses and NOTs open so far: bounded, so a hostile predicate gets an error, not a stack overflow.
    private var depth = 0
    static let maximumDepth = 100

    public static func parse(_ text: String) throws -> QueryPredicate {
        var parser = PredicateParser()
        parser.tokens = try tokenize(text)
        let predicate = try parser.parseOr()
        guard parser.current.token == .end else { throw parser.error(expected: "AND, OR or the end") }
        return predicate
    }

    private var current: (token: Token, column: Int) { tokens[index] }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func error(expected: String) -> PredicateSyntaxError {
        PredicateSyntaxError(column: current.column, expected: expected, found: describe(current.token))
    }

    private func describe(_ token: Token) -> String {
        switch token {
        case .word(let word): return "'\(word)'"
        case .string(let text): return "\"\(text)\""
        case .number(let text), .date(let text): return "'\(text)'"
        case .op(let op): return "'\(op)'"
        case .open: return "'('"
        case .close: return "')'"
        case .openBracket: return "'['"
        case .closeBracket: return "']'"
        case .comma: return "','"
        case .end: return "the end of the predicate"
        }
    }

    private func isKeyword(_ keyword: String) -> Bool {
        if case .word(let word) = current.token { return word.uppercased() == keyword }
        return false
    }

    private mutating func parseOr() throws -> QueryPredicate {
        var parts = [try parseAnd()]
        while isKeyword("OR") || current.token == .op("||") {
            advance()
            parts.append(try parseAnd())
        }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func parseAnd() throws -> QueryPredicate {
        var parts = [try parseUnary()]
        while isKeyword("AND") || current.token == .op("&&") {
            advance()
            parts.append(try parseUnary())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func parseUnary() throws -> QueryPredicate {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw error(expected: "at most \(Self.maximumDepth) nested parentheses and NOTs") }
        if isKeyword("NOT") || current.token == .op("!") {
            advance()
            return .not(try parseUnary())
        }
        if current.token == .open {
            advance()
            let inner = try parseOr()
            guard current.token == .close else { throw error(expected: "')'") }
            advance()
            return inner
        }
        if isKeyword("TRUEPREDICATE") {
            advance()
            return .all
        }
        return try parseComparison()
    }

    private mutating func parseComparison() throws -> QueryPredicate {
        guard case .word(let name) = current.token, !["AND", "OR", "NOT"].contains(name.uppercased()) else {
            throw error(expected: "a field name, NOT or '('")
        }
        advance()
        let key = QueryKey(name: name)
        let comparator: QueryComparator
        switch current.token {
        case .op("=="), .op("="): comparator = .equals
        case .op("!="), .op("<>"): comparator = .notEquals
        case .op("<"): comparator = .lessThan
        case .op("<="): comparator = .lessThanOrEquals
        case .op(">"): comparator = .greaterThan
        case .op(">="): comparator = .greaterThanOrEquals
        case .word(let word):
            switch word.uppercased() {
            case "BEGINSWITH": comparator = .beginsWith
            case "IN": comparator = .in
            case "CONTAINS": comparator = key == .allTokens ? .containsAllTokens : .listContains
            case "CONTAINSANY": comparator = .listContainsAny
            case "CONTAINSALL": comparator = .listContainsAll
            case "ANYBEGINSWITH": comparator = .listMemberBeginsWith
            case "TOKENS": comparator = .containsAllTokens
            case "ANYTOKENS": comparator = .containsAnyTokens
            case "NEAR": comparator = .near
            default: throw error(expected: "a comparison (==, !=, <, <=, >, >=, BEGINSWITH, IN, CONTAINS, CONTAINSANY, CONTAINSALL, ANYBEGINSWITH, TOKENS, ANYTOKENS, NEAR)")
            }
        default:
            throw error(expected: "a comparison (==, !=, <, <=, >, >=, BEGINSWITH, IN, CONTAINS, NEAR, …)")
        }
        advance()
        if comparator == .near {
            let center = try parseLocation()
            guard isKeyword("WITHIN") else { throw error(expected: "WITHIN followed by a distance in meters") }
            advance()
            guard case .number(let text) = current.token, let meters = Double(text), meters >= 0, meters.isFinite else {
                throw error(expected: "a distance in meters (a number, 0 or more)")
            }
            advance()
            return .condition(QueryCondition(key, .near, .location(center), distance: meters))
        }
        let value = try parseValue()
        let condition = QueryCondition(key, comparator, value)
        if let problem = condition.validationError() {
            throw PredicateSyntaxError(column: tokens[index - 1].column, expected: "a value that fits: \(problem)", found: describe(tokens[index - 1].token))
        }
        return .condition(condition)
    }

    private mutating func parseLocation() throws -> Location {
        guard current.token == .open else { throw error(expected: "'(' starting (latitude, longitude)") }
        advance()
        var numbers: [Double] = []
        while true {
            guard case .number(let text) = current.token, let number = Double(text) else { throw error(expected: "a number") }
            numbers.append(number)
            advance()
            if current.token == .comma { advance(); continue }
            break
        }
        guard current.token == .close else { throw error(expected: "')' after latitude, longitude[, altitude]") }
        guard (2...3).contains(numbers.count) else {
            throw error(expected: "(latitude, longitude[, altitude]): 2 or 3 numbers, not \(numbers.count)")
        }
        let location = Location(latitude: numbers[0], longitude: numbers[1], altitude: numbers.count == 3 ? numbers[2] : nil)
        // As a saved location must be: a center off the Earth would silently match nothing.
        guard location.isValid else {
            throw error(expected: "a latitude within ±90 and a longitude within ±180 (and a finite altitude)")
        }
        advance()
        return location
    }

    private mutating func parseValue() throws -> FieldValue {
        switch current.token {
        case .string(let text):
            advance()
            return .string(text)
        case .number(let text):
            advance()
            if let integer = Int64(text) { return .int64(integer) }
            if let number = Double(text) { return .double(number) }
            index -= 1
            throw error(expected: "a number")
        case .date(let text):
            guard let milliseconds = ISO8601Milliseconds.parse(text) else { throw error(expected: "an ISO 8601 date after @") }
            advance()
            return .date(milliseconds)
        case .word(let word) where ["TRUE", "FALSE", "YES", "NO"].contains(word.uppercased()):
            advance()
            return .bool(["TRUE", "YES"].contains(word.uppercased()))
        case .openBracket, .open:
            let closing: Token = current.token == .open ? .close : .closeBracket
            advance()
            var items: [FieldValue] = []
            if current.token != closing {
                while true {
                    items.append(try parseValue())
                    if current.token == .comma { advance(); continue }
                    break
                }
            }
            guard current.token == closing else { throw error(expected: closing == .close ? "')' or ','" : "']' or ','") }
            advance()
            return .list(items)
        default:
            throw error(expected: "a value (\"text\", a number, true/false, @date or [list])")
        }
    }

    static func tokenize(_ text: String) throws -> [(token: Token, column: Int)] {
        let characters = Array(text)
        var tokens: [(Token, Int)] = []
        var position = 0
        while position < characters.count {
            let character = characters[position]
            let column = position + 1
            if character.isWhitespace { position += 1; continue }
            switch character {
            case "(": tokens.append((.open, column)); position += 1
            case ")": tokens.append((.close, column)); position += 1
            case "[", "{": tokens.append((.openBracket, column)); position += 1
            case "]", "}": tokens.append((.closeBracket, column)); position += 1
            case ",": tokens.append((.comma, column)); position += 1
            case "\"", "'":
                var value = ""
                position += 1
                var closed = false
                while position < characters.count {
                    let next = characters[position]
                    if next == "\\", position + 1 < characters.count {
                        value.append(characters[position + 1])
                        position += 2
                        continue
                    }
                    if next == character { closed = true; position += 1; break }
                    value.append(next)
                    position += 1
                }
                guard closed else { throw PredicateSyntaxError(column: column, expected: "a closing \(character)", found: "the end of the predicate") }
                tokens.append((.string(value), column))
            case "@":
                var value = ""
                position += 1
                // A date ends where a list or a group does: `[@2021-06-01T12:00:00Z]`.
                while position < characters.count, !characters[position].isWhitespace, !")],".contains(characters[position]) {
                    value.append(characters[position])
                    position += 1
                }
                tokens.append((.date(value), column))
            case "=", "!", "<", ">", "&", "|":
                var op = String(character)
                if position + 1 < characters.count, ["=", ">", "&", "|"].contains(characters[position + 1]) {
                    op.append(characters[position + 1])
                }
                guard ["==", "=", "!=", "<>", "<", "<=", ">", ">=", "&&", "||", "!"].contains(op) else {
                    throw PredicateSyntaxError(column: column, expected: "an operator", found: "'\(op)'")
                }
                tokens.append((.op(op), column))
                position += op.count
            default:
                let nextIsDigit = position + 1 < characters.count && characters[position + 1].isNumber
                if character.isNumber || ((character == "-" || character == "+" || character == ".") && nextIsDigit) {
                    var value = String(character)
                    position += 1
                    // Digits, a point, an exponent with its sign: what the CLI prints (1e-300) reads back.
                    while position < characters.count {
                        let next = characters[position]
                        let exponentSign = (next == "-" || next == "+") && (value.last == "e" || value.last == "E")
                        guard next.isNumber || next == "." || next == "e" || next == "E" || exponentSign else { break }
                        value.append(next)
                        position += 1
                    }
                    tokens.append((.number(value), column))
                } else if character.isLetter || character == "_" {
                    var value = ""
                    while position < characters.count, characters[position].isLetter || characters[position].isNumber || characters[position] == "_" {
                        value.append(characters[position])
                        position += 1
                    }
                    tokens.append((.word(value), column))
                } else {
                    throw PredicateSyntaxError(column: column, expected: "a field, value or operator", found: "'\(character)'")
                }
            }
        }
        tokens.append((.end, characters.count + 1))
        return tokens
    }
}

extension QuerySort {
    /// A sort key as the CLI and the console take it: `FIELD` or `+FIELD`
    /// (ascending), `-FIELD` (descending); nil when it names no field.
    public init?(parsing key: String) {
        let descending = key.hasPrefix("-")
        let name = descending || key.hasPrefix("+") ? String(key.dropFirst()) : key
        guard !name.isEmpty else { return nil }
        self.init(QueryKey(name: name), ascending: !descending)
    }
}
