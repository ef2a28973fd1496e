import Foundation
import Lattice
import Workload

// The typed-model layer against the raw record API, in one run:
// insert 100,000 objects in batches of 1,000, then fetch a filtered, sorted
// page of 50. Prints one JSON line per figure (seconds).
//   swift run -c release lattice-model-figures [records]

let total = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let batch = 1_000

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

func report(_ name: String, _ value: Double) {
    print(#"{"figure":"\#(name)","records":\#(total),"seconds":\#(String(format: "%.4f", value))}"#)
}

let root = FileManager.default.temporaryDirectory.appendingPathComponent("lattice-model-figures-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: root) }

// The raw record API.
do {
    let container = try Container(identifier: "com.example.bench", directory: root.appendingPathComponent("raw"))
    let database = container.privateCloudDatabase
    let insert = try seconds {
        for start in stride(from: 0, to: total, by: batch) {
            let records = (start..<min(total, start + batch)).map(ModelWorkload.record)
            _ = try database.modifyRecords(saving: records, deleting: [], savePolicy: .changedKeys)
        }
    }
    report("raw insert", insert)
    try container.addIndex([.queryable, .sortable], field: "rating", of: "BenchMovie")
    let query = ModelWorkload.pageQuery
    var pages: [Double] = []
    for _ in 0..<21 {
        pages.append(try seconds {
            let page = try database.records(matching: query, resultsLimit: 50).matchResults
            precondition(page.count == 50)
        })
    }
    report("raw fetch page of 50", median(pages))
}

// The same through models.
do {
    let container = try await ModelContainer(for: BenchMovie.self, configuration: ModelConfiguration(
        "com.example.bench", directory: root.appendingPathComponent("models"), sync: .none))
    let insert = try seconds {
        for start in stride(from: 0, to: total, by: batch) {
            let context = ModelContext(container)
            for i in start..<min(total, start + batch) { context.insert(ModelWorkload.object(i)) }
            try context.save()
        }
    }
    report("model insert", insert)
    try container.store.addIndex([.queryable, .sortable], field: "rating", of: "BenchMovie")
    let descriptor = ModelWorkload.pageDescriptor
    var pages: [Double] = []
    for _ in 0..<21 {
        pages.append(try seconds {
            let page = try ModelContext(container).fetch(descriptor)
            precondition(page.count == 50)
        })
    }
    report("model fetch page of 50", median(pages))
    await container.close()
}
