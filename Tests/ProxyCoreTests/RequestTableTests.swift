import ExchangeFacts
import Testing

/// The table observers keep requests in until their responses or ends (``RequestTable``): open addressing by request
/// id, removal by shifting back. Checked against a Dictionary doing the same operations.
struct RequestTableTests {
    /// Inserting and removing ids in any order (consecutive, reversed, a table's size apart so that they share a home
    /// slot, interleaved, and a long seeded random mix with replacements and misses) leaves the table holding
    /// exactly what a Dictionary holds after the same operations.
    typealias Operation = (id: UInt64, insert: Bool)
    static let cases: [(String, [Operation])] = [
        ("in order", put(Array(1...40)) + take(Array(1...40))),
        ("reversed removal", put(Array(1...40)) + take((1...40).reversed())),
        ("one home slot", put([1, 17, 33, 49, 65, 81]) + take([33, 1, 81, 17, 65, 49])),
        ("wrapping the end", put([15, 31, 47, 14, 30]) + take([15, 14, 31, 47, 30])),
        ("misses and replacements", put([3, 3]) + take([4]) + put([19]) + take([3, 3, 19])),
        ("random", randomOperations(count: 20_000, seed: 7)),
    ]

    @Test(arguments: cases)
    func holdsWhatADictionaryHoldsAfterTheSameOperations(_ name: String, _ operations: [Operation]) {
        var table = RequestTable<Int>()
        var model: [UInt64: Int] = [:]
        for (k, operation) in operations.enumerated() {
            if operation.insert {
                #expect(
                    table.insert(k, for: operation.id) == model.updateValue(k, forKey: operation.id), "\(name) \(k)")
            } else {
                #expect(table.remove(operation.id) == model.removeValue(forKey: operation.id), "\(name) \(k)")
            }
            #expect(table.count == model.count, "\(name) \(k)")
        }
        for (id, value) in model { #expect(table.remove(id) == value, "\(name): \(id) is still found") }
        #expect(table.count == 0, "\(name)")
    }

    /// Requests whose ends never come are let go once more than the limit wait: those more than half the limit older
    /// than the newest, at once; the newer ones are still found.
    @Test func entriesPastTheLimitAreLetGoHalfAtATime() {
        var table = RequestTable<UInt64>()
        var letGo: [UInt64] = []
        for id in UInt64(1)...101 {
            table.insert(id, for: id)
            letGo += table.letGo(past: 100, newest: id)
        }
        #expect(letGo.sorted() == Array(1...50))
        #expect(table.count == 51)
        #expect(table.remove(51) == 51 && table.remove(101) == 101 && table.remove(50) == nil)
        #expect(table.letGo(past: 100, newest: 101).isEmpty)
    }

    static func put(_ ids: [Int]) -> [Operation] { ids.map { (UInt64($0), true) } }
    static func take(_ ids: [Int]) -> [Operation] { ids.map { (UInt64($0), false) } }

    /// Ids from a small range, so that inserts replace, removals miss, and runs of neighbours collide.
    static func randomOperations(count: Int, seed: UInt64) -> [Operation] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (id: (state >> 33) % 300, insert: (state >> 20) & 3 != 0)
        }
    }
}
