import Foundation
import Lattice

// The library's side of Benchmarks/web/bench.py: the page query that the
// benchmark sends over HTTP and through the CLI, run in-process on the same
// store (opened beside the running node, as any process may). Prints one JSON
// line: milliseconds per query, p50 and p99 of RUNS (default 500) after 50 to warm up.
//   lattice-web-figures STORE [RUNS]

let arguments = CommandLine.arguments
guard arguments.count > 1 else {
    FileHandle.standardError.write(Data("usage: lattice-web-figures STORE [RUNS]\n".utf8))
    exit(2)
}
let runs = arguments.count > 2 ? Int(arguments[2]) ?? 500 : 500
let container = try Container(identifier: "default", directory: URL(fileURLWithPath: arguments[1]))
let database = container.privateCloudDatabase
// The same page as the benchmark's HTTP request: rating >= 500, by rating descending, 50 records.
let query = Query(recordType: "Movie", predicate: try PredicateParser.parse("rating >= 500"), sortDescriptors: [QuerySort(QueryKey(name: "rating"), ascending: false)])
let zone = Zone.ID(zoneName: "Movies")
var times: [Double] = []
for index in 0..<(runs + 50) {
    let start = DispatchTime.now().uptimeNanoseconds
    let page = try database.records(matching: query, inZoneWith: zone, resultsLimit: 50)
    let took = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    precondition(page.matchResults.count == 50, "the page has \(page.matchResults.count) records, not 50")
    if index >= 50 { times.append(took) }
}
times.sort()
print(#"{"figure":"library query","p50_ms":\#(String(format: "%.3f", times[times.count / 2])),"p99_ms":\#(String(format: "%.3f", times[times.count * 99 / 100])),"runs":\#(runs)}"#)
