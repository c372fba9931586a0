import ProxyCore
import ProxyServer

/// A GET to a loopback HTTP server that closes the connection after its answer (the inspector does).
enum LoopbackHTTP {
    static func exchange(host: String, port: Int, request: [UInt8]) -> Result<(Int, String), Failure> {
        let response: [UInt8]
        switch LoopbackClient.exchange(host: host, port: port, request: request) {
        case .success(let bytes): response = bytes
        case .failure(let error): return .failure(Failure(error.description))
        }
        // Read with the proxy's own codec; the body is the rest (the inspector closes after it).
        var parser = HTTPHeadParser()
        guard let length = try? parser.headLength(response[...]),
            let head = try? parser.parseResponse(Array(response[..<length]))
        else { return .failure(Failure("not an HTTP response")) }
        return .success((head.status, String(decoding: response[length...], as: UTF8.self)))
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }
}
