@testable import ProxyServer
import Testing

@Suite struct ClosingNotesTests {
    /// Between two looks at most 100 closings are kept to be said one by one; the rest are counted, so that what
    /// is said says how many it left out, and every closing is in the exit counts.
    @Test(arguments: [0, 1, 100, 101, 250])
    func notesPastTheLimitAreCountedNotDropped(_ count: Int) {
        let server = ProxyServer(configuration: ServerConfiguration())
        for i in 0..<count {
            server.noteClosing(
                .headerTimeout,
                ProxyServer.ClosingNote(closing: .headerTimeout, exchange: nil, client: "127.0.0.1", detail: "\(i)"))
        }
        let (notes, leftOut) = server.takeClosingNotes()
        #expect(notes.count == min(count, 100))
        #expect(leftOut == max(0, count - 100))
        #expect(server.closingCounts.first { $0.0 == .headerTimeout }?.1 ?? 0 == count)
        let again = server.takeClosingNotes()
        #expect(again.notes.isEmpty && again.leftOut == 0)
    }
}
