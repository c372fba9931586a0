import BrowserEngines

/// A GET to a loopback HTTP server (the inspector): its status and its body as text.
enum LoopbackHTTP {
    static func exchange(host: String, port: Int, request: [UInt8]) -> Result<(Int, String), Failure> {
        switch LoopbackClient.exchange(host: host, port: port, request: request) {
        case .success(let answer): return .success((answer.status, String(decoding: answer.body, as: UTF8.self)))
        case .failure(let error): return .failure(Failure(error.description))
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ d: String) { description = d }
    }
}
