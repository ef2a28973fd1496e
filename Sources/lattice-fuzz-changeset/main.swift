// The change-set fuzzer (see LatticeFuzzing.ChangeSetFuzzTarget).
//
// Built with libFuzzer (scripts/fuzz.sh):
//   swift build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -DLIBFUZZER --product lattice-fuzz-changeset
//   lattice-fuzz-changeset [libFuzzer options] CORPUS_DIR...
// Built normally, the same binary replays inputs or runs a seeded mutation loop:
//   lattice-fuzz-changeset replay FILE_OR_DIR...
//   lattice-fuzz-changeset mutate --seed S --runs N FILE_OR_DIR...
//   lattice-fuzz-changeset make-corpus DIR
import Foundation
import LatticeFuzzing

let workDirectory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("lattice-fuzz-\(getpid())")
// Global because libFuzzer's callback is a C function pointer and captures nothing.
// Unsafe only in name: the callback, replay and the mutation loop all run inputs
// one at a time on the main thread (libFuzzer's -jobs and -fork use processes).
nonisolated(unsafe) let target = try! ChangeSetFuzzTarget(directory: workDirectory)

#if LIBFUZZER
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in
    target.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
exit(status)
#else
exit(FuzzCommand.main(Array(CommandLine.arguments.dropFirst()), target: target))
#endif
