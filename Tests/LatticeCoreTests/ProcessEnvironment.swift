#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum ProcessEnvironment {
    static func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
