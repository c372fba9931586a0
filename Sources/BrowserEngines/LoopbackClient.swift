import HTTPHeads
import ProxyPlatform

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP/1.1 request to a loopback server (the inspector, a browser's WebDriver): its answer's status and body.
/// The answer ends at its Content-Length, or where the server closes (a server that keeps the connection open
/// after a sized answer is not waited for); each wait for more is at most `milliseconds`.
public enum LoopbackClient {
    public static func exchange(host: String, port: Int, request: [UInt8], milliseconds: Int = 10_000) -> Result<
        (status: Int, body: ArraySlice<UInt8>), SocketError
    > {
        let fd: Int32
        switch Descriptors.connect(host: host, port: port, milliseconds: 5000) {
        case .success(let connected): fd = connected
        case .failure(let error): return .failure(error)
        }
        defer { Sys.close(fd) }
        if let error = Descriptors.sendAll(fd, request) { return .failure(error) }
        var response: [UInt8] = []
        // Read with the proxy's own codec: the head, then its Content-Length (when it has one).
        var parser = HTTPHeadParser()
        var head: (status: Int, end: Int, length: Int?)? = nil
        func answer() -> Result<(status: Int, body: ArraySlice<UInt8>), SocketError> {
            guard let head else { return .failure(SocketError(errno: EPROTO, text: "not an HTTP response")) }
            let end = head.length.map { min(response.count, head.end + $0) } ?? response.count
            return .success((head.status, response[head.end..<end]))
        }
        while true {
            if let h = head, let length = h.length, response.count >= h.end + length { return answer() }
            switch Descriptors.receive(fd, maximum: 65536) {
            case .bytes(let bytes):
                response += bytes
                if head == nil, let end = try? parser.headLength(response[...]) {
                    guard let parsed = try? parser.parseResponse(Array(response[..<end])) else { return answer() }
                    let length = parsed.head.values(.contentLength).first.flatMap { Int($0) }
                    head = (parsed.status, end, length)
                }
            case .closed: return answer()
            case .failed(let error): return .failure(error)
            case .none:
                guard Descriptors.waitReadable(fd, milliseconds: milliseconds) else {
                    return .failure(SocketError(errno: Sys.EAGAIN, text: "no answer in time"))
                }
            }
        }
    }
}
