import CAtomics

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// A lock and an atomic counter of the package's own. Swift's Synchronization module (Mutex, Atomic) needs macOS 15;
// these need only POSIX threads and C11 atomics, so the package builds for macOS 13, and Linux runs the same code.

/// A value guarded by a POSIX mutex: touched only inside ``withLock(_:)``. `@unchecked`: the mutex is what makes it
/// safe, which the compiler cannot see (Swift's own `Mutex` is the same promise).
public final class Locked<State>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var state: State

    public init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Inlinable, so that each use is specialised to its state and closure (no generic call per lock).
    @inlinable
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}

/// An integer (64 bits) updated atomically (relaxed: counters and flags that order nothing else). `@unchecked`: the
/// value is touched only through C11 atomics (CAtomics), which the compiler cannot see.
public final class AtomicCounter: @unchecked Sendable {
    @usableFromInline let value: UnsafeMutablePointer<Int64>

    public init(_ initial: Int = 0) {
        value = .allocate(capacity: 1)
        value.initialize(to: Int64(initial))
    }

    deinit { value.deallocate() }

    /// Adds `delta`; the new value.
    @discardableResult
    public func add(_ delta: Int) -> Int { Int(CAtomics_add(value, Int64(delta))) }

    @discardableResult
    public func subtract(_ delta: Int) -> Int { Int(CAtomics_add(value, -Int64(delta))) }

    public func load() -> Int { Int(CAtomics_load(value)) }

    public func store(_ newValue: Int) { CAtomics_store(value, Int64(newValue)) }
}
