import Foundation
import ProxyApp

// CookiesPerRoute [--listen HOST:PORT] [--seconds N] [--route [HOST]/PREFIX=URL]...
// Runs the proxy with the routes given (none: a forward proxy) and the observer above; after N seconds (default:
// until killed, printing every 10 s) it stops and prints the Set-Cookie lines it saw per route.
var arguments = Array(CommandLine.arguments.dropFirst())
var listen = "127.0.0.1:8080"
var seconds: Int? = nil
var routes: [String] = []
while !arguments.isEmpty {
    let option = arguments.removeFirst()
    guard let value = arguments.first else {
        FileHandle.standardError.write(Data("\(option) needs a value\n".utf8))
        exit(2)
    }
    arguments.removeFirst()
    switch option {
    case "--listen": listen = value
    case "--seconds": seconds = Int(value)
    case "--route": routes.append(value)
    default:
        FileHandle.standardError.write(Data("unknown option \(option)\n".utf8))
        exit(2)
    }
}

var configuration = ProxyApp.Configuration(home: ProxyApp.Configuration.defaultHome())
guard let address = ProxyApp.Configuration.address(listen) else {
    FileHandle.standardError.write(Data("--listen \(listen) is not HOST:PORT\n".utf8))
    exit(2)
}
configuration.listeners = [.init(host: address.host, port: address.port)]
switch ProxyApp.Configuration.routes(reverse: nil, routes: routes) {
case .success(let parsed): configuration.routes = parsed
case .failure(let error):
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
}
let counter = CookiesPerRoute()
configuration.observers = [counter]

let proxy: RunningProxy
do {
    proxy = try ProxyApp.start(configuration)
} catch {
    FileHandle.standardError.write(Data("cannot start: \(error)\n".utf8))
    exit(1)
}
/// A line on standard output, written at once (a reader waits for the first).
func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

say("listening on \(address.host):\(proxy.listenerPorts[0])")

func show() {
    for (route, lines) in counter.counts.sorted(by: { $0.key < $1.key }) { say("\(route)\t\(lines)") }
}

if let seconds {
    sleep(UInt32(seconds))
    proxy.stop(drain: 1)
    show()
} else {
    while true {
        sleep(10)
        show()
    }
}
