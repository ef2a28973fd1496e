import Foundation
import Lattice

/// The model the typed-model figures insert and fetch, and its raw-record twin.
@Model package final class BenchMovie {
    package var title: String = ""
    package var year: Int = 0
    package var rating: Double = 0
    package var genre: String = ""

    package init(title: String, year: Int, rating: Double, genre: String) {
        self.title = title
        self.year = year
        self.rating = rating
        self.genre = genre
    }
}

package enum ModelWorkload {
    static let genres = ["animation", "drama", "comedy", "noir"]

    /// Object `i`'s values: ratings spread over 0..<1000, so `rating >= 900` matches a tenth.
    package static func row(_ i: Int) -> (title: String, year: Int, rating: Double, genre: String) {
        ("Movie \(i)", 1950 + i % 75, Double((i &* 7919) % 1000), genres[i % genres.count])
    }

    package static func object(_ i: Int) -> BenchMovie {
        let values = row(i)
        return BenchMovie(title: values.title, year: values.year, rating: values.rating, genre: values.genre)
    }

    /// The same values as a raw record.
    package static func record(_ i: Int) -> Record {
        let values = row(i)
        var record = Record(recordType: "BenchMovie", recordName: UUID().uuidString)
        record["title"] = .string(values.title)
        record["year"] = .int64(Int64(values.year))
        record["rating"] = .double(values.rating)
        record["genre"] = .string(values.genre)
        return record
    }

    /// The page both sides fetch: ratings from 900 up, in rating order, 50 of them.
    package static let pageQuery = Query(recordType: "BenchMovie", predicate: .condition(QueryCondition(.field("rating"), .greaterThanOrEquals, .double(900))),
                                        sortDescriptors: [QuerySort(.field("rating"))])

    package static var pageDescriptor: FetchDescriptor<BenchMovie> {
        var descriptor = FetchDescriptor<BenchMovie>(predicate: #Predicate { $0.rating >= 900 }, sortBy: [SortDescriptor(\.rating)])
        descriptor.fetchLimit = 50
        return descriptor
    }
}
