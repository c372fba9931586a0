internal import CProxyShims

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Signals taken synchronously: blocked in the calling thread (and the threads it starts afterwards, which inherit
/// the mask), then waited for with a timeout.
public struct BlockedSignals {
    private var set = sigset_t()

    /// Blocks `numbers` in this thread.
    public init(_ numbers: [Int32]) {
        sigemptyset(&set)
        for n in numbers { sigaddset(&set, n) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits up to `milliseconds` for one of them: its number, or 0.
    public mutating func wait(milliseconds: Int) -> Int32 {
        max(0, CProxy_wait_signal(&set, Int32(clamping: milliseconds)))
    }
}
