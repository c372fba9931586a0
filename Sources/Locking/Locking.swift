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

/// Integers (64 bits each) updated atomically (relaxed: counters and flags that order nothing else), a row of them
/// in one allocation: a set of counters indexed by small integers (a rule's, a code's) costs one object, and adding
/// to one touches no reference count. `@unchecked`: the values are touched only through C11 atomics (CAtomics),
/// which the compiler cannot see.
public final class AtomicCounters: @unchecked Sendable {
    @usableFromInline let values: UnsafeMutablePointer<Int64>
    public let count: Int

    public init(count: Int, initial: Int = 0) {
        self.count = count
        values = .allocate(capacity: max(count, 1))
        values.initialize(repeating: Int64(initial), count: max(count, 1))
    }

    deinit { values.deallocate() }

    /// Adds `delta` to counter `i`; the new value.
    @inlinable @discardableResult
    public func add(_ i: Int, _ delta: Int) -> Int {
        precondition(i >= 0 && i < count, "counter index out of range")
        return Int(CAtomics_add(values + i, Int64(delta)))
    }

    @inlinable
    public func load(_ i: Int) -> Int {
        precondition(i >= 0 && i < count, "counter index out of range")
        return Int(CAtomics_load(values + i))
    }

    @inlinable
    public func store(_ i: Int, _ newValue: Int) {
        precondition(i >= 0 && i < count, "counter index out of range")
        CAtomics_store(values + i, Int64(newValue))
    }
}

extension AtomicCounters {
    /// The same counters as a value that holds no reference (a loop's hot path adds through it without counting
    /// references): valid only while the object lives, which whoever keeps the view must also keep.
    public var unretained: Unretained { Unretained(values: values, count: count) }

    public struct Unretained {
        @usableFromInline let values: UnsafeMutablePointer<Int64>
        public let count: Int

        /// Adds `delta` to counter `i`.
        @inlinable
        public func add(_ i: Int, _ delta: Int) {
            precondition(i >= 0 && i < count, "counter index out of range")
            CAtomics_add(values + i, Int64(delta))
        }
    }
}

/// One integer updated atomically: a row of one ``AtomicCounters``.
public final class AtomicCounter: Sendable {
    @usableFromInline let row: AtomicCounters

    public init(_ initial: Int = 0) { row = AtomicCounters(count: 1, initial: initial) }

    /// Adds `delta`; the new value.
    @inlinable @discardableResult
    public func add(_ delta: Int) -> Int { Int(CAtomics_add(row.values, Int64(delta))) }

    @inlinable @discardableResult
    public func subtract(_ delta: Int) -> Int { Int(CAtomics_add(row.values, -Int64(delta))) }

    @inlinable
    public func load() -> Int { Int(CAtomics_load(row.values)) }

    @inlinable
    public func store(_ newValue: Int) { CAtomics_store(row.values, Int64(newValue)) }
}
