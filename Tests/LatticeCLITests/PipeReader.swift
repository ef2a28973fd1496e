import Foundation

/// Reads a pipe on a thread of its own with blocking reads until its end,
/// handing each chunk to `onData`. Used instead of `FileHandle.readabilityHandler`:
/// on Linux, libdispatch's read sources behind it can crash the process when
/// several are set up and torn down at once (swift-corelibs-libdispatch #949,
/// a crash in `_dispatch_event_loop_drain`, once in this suite); a blocking
/// read registers nothing with libdispatch.
enum PipeReader {
    static func start(_ handle: FileHandle, _ onData: @escaping @Sendable (Data) -> Void) {
        let thread = Thread {
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                onData(data)
            }
        }
        thread.start()
    }
}
