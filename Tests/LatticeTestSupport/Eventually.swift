import Foundation

/// Waits until `condition` holds, at most `seconds`: a bound for a loaded CI
/// machine running the whole suite at once (it returns as soon as it holds),
/// not a claim about speed.
public func eventually(_ seconds: Double = 60, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try condition()
}
