import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A device on the LAN, played by a network namespace joined to this one by a veth pair: the proxy listens on
/// 0.0.0.0 and admits one address of the namespace's two with --allow. Needs root and iproute2's `ip`
/// (scripts/setup.sh installs it; CI runs as root).
@Suite(.serialized, .enabled(if: LAN.available, "needs root and ip(8) for a network namespace"))
struct LANEndToEndTests {
    @Test func anAllowedDeviceIsServedAnotherIsRefusedAndNeitherReachesLoopbackServices() throws {
        let lan = try LAN()
        defer { lan.remove() }
        let logged = ["UPSTREAM_LOG": "1"]
        // A server on the LAN address, and one on loopback only (a dev server, the inspector, a database).
        let onNetwork = try Upstream(environment: logged.merging(["UPSTREAM_BIND": lan.hostAddress]) { $1 })
        let loopbackOnly = try Upstream(environment: logged)
        let access = FileManager.default.temporaryDirectory.appendingPathComponent("cp-lan-access-\(getpid()).log").path
        defer { try? FileManager.default.removeItem(atPath: access) }
        let proxy = try Proxy(
            ["--allow", "\(lan.allowedAddress)/32", "--log", "none", "--access-log", access], listen: "0.0.0.0:0")
        let proxyURL = "http://\(lan.hostAddress):\(proxy.port)"
        let network = "http://\(lan.hostAddress):\(onNetwork.port)"

        // The banner names the address to type on the device and the networks admitted, and warns that the host's
        // own address (the /32 admits only the one device) is outside them.
        let banner = proxy.process.stderr
        #expect(banner.contains("\(lan.hostAddress):\(proxy.port)"), "\(banner)")
        #expect(banner.contains("  admitted:     loopback and \(lan.allowedAddress)/32\n"), "\(banner)")
        #expect(
            banner.contains(
                "  WARNING:      \(lan.hostAddress) is outside every --allow network: a device on its network is refused (403)"
            ),
            "\(banner)")

        let served = try lan.curl(from: lan.allowedAddress, ["-x", proxyURL, "\(network)/path/device"])
        #expect(served.text == "GET /path/device", "\(served.stderr)")

        let outside = try lan.curl(from: lan.otherAddress, ["-x", proxyURL, "\(network)/path/outside"])
        #expect(outside.status == 403, "\(outside.text) \(outside.stderr)")
        #expect(outside.text.contains("client \(lan.otherAddress) is not allowed"), "\(outside.text)")

        let local = try TestSupport.run(
            Paths.which("curl"), ["-sS", "--max-time", "20", "-x", proxy.url, "\(network)/path/loopback-client"])
        #expect(local.text == "GET /path/loopback-client", "\(local.stderr)")

        // The allowed device asks for this machine's loopback services: by address, by name, through CONNECT.
        for target in [
            "http://127.0.0.1:\(loopbackOnly.port)/path/secret", "http://localhost:\(loopbackOnly.port)/path/secret",
            "http://[::1]:\(loopbackOnly.port)/path/secret", "http://0.0.0.0:\(loopbackOnly.port)/path/secret",
        ] {
            let refused = try lan.curl(from: lan.allowedAddress, ["-x", proxyURL, target])
            #expect(refused.status == 403, "\(target): \(refused.text) \(refused.stderr)")
            #expect(refused.text.contains("--allow-loopback-upstream"), "\(target): \(refused.text)")
        }
        let tunnel = try lan.curl(
            from: lan.allowedAddress, ["-p", "-x", proxyURL, "http://127.0.0.1:\(loopbackOnly.port)/path/tunnel"])
        #expect(tunnel.status == 403 || tunnel.stderr.contains("403"), "\(tunnel.text) \(tunnel.stderr)")

        // The onboarding page is the proxy's own, for devices too; its inspector is not, through the proxy or not.
        let onboarding = try lan.curl(from: lan.allowedAddress, ["-x", proxyURL, "http://cookie-proxy.local/"])
        #expect(onboarding.status == 200 && onboarding.text.contains("This device is using cookie-proxy"))
        let ui = try InspectorEndToEndTests.UI(proxy)
        let viaProxy = try lan.curl(from: lan.allowedAddress, ["-x", proxyURL, "\(ui.base)/?token=\(ui.token)"])
        #expect(viaProxy.status == 400 || viaProxy.status == 403, "\(viaProxy)")
        #expect(!viaProxy.text.contains("cookie-proxy inspector"))
        let direct = try lan.curl(from: lan.allowedAddress, ["http://\(lan.hostAddress):\(ui.port)/?token=\(ui.token)"])
        #expect(direct.status == 0, "no HTTP answer at all (curl says 000): \(direct)")
        #expect(!direct.text.contains("cookie-proxy inspector"))

        // Nothing refused was forwarded; what was served, was.
        let networkLog = onNetwork.process.stdout
        #expect(networkLog.contains("REQ GET /path/device\n"))
        #expect(networkLog.contains("REQ GET /path/loopback-client\n"))
        #expect(!networkLog.contains("/path/outside"))
        #expect(!loopbackOnly.process.stdout.contains("REQ "), "\(loopbackOnly.process.stdout)")
        // The client refused at accept has its line in the access log, as every answer does.
        proxy.process.signal(SIGTERM)
        _ = proxy.process.waitForExit(timeout: 20)
        let lines = try String(contentsOfFile: access, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("\(lan.otherAddress) - - [") && $0.contains("\"-\" 403 ") }, "\(lines)")
    }

    @Test func allowLoopbackUpstreamLetsAnAllowedDeviceReachLoopbackServices() throws {
        let lan = try LAN()
        defer { lan.remove() }
        let loopbackOnly = try Upstream()
        let proxy = try Proxy(
            ["--allow", "\(lan.allowedAddress)/32", "--allow-loopback-upstream", "--log", "none"],
            listen: "0.0.0.0:0")
        let served = try lan.curl(
            from: lan.allowedAddress,
            ["-x", "http://\(lan.hostAddress):\(proxy.port)", "http://127.0.0.1:\(loopbackOnly.port)/path/dev"])
        #expect(served.text == "GET /path/dev", "\(served.stderr)")
    }
}

/// A namespace with two addresses on a veth pair whose other end (with `hostAddress`) stays in this namespace.
struct LAN {
    static let ip = "/usr/sbin/ip"
    static var available: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: ip) }

    let namespace: String
    let hostLink: String
    let hostAddress: String
    let allowedAddress: String
    let otherAddress: String

    init() throws {
        let id = Int(getpid()) % 10_000
        let subnet = "10.231.\(Int.random(in: 1...250))"
        namespace = "cp-lan-\(id)"
        hostLink = "cpvh\(id)"
        let deviceLink = "cpvd\(id)"
        hostAddress = "\(subnet).1"
        allowedAddress = "\(subnet).2"
        otherAddress = "\(subnet).3"
        remove()
        let steps: [[String]] = [
            ["netns", "add", namespace],
            ["link", "add", hostLink, "type", "veth", "peer", "name", deviceLink],
            ["link", "set", deviceLink, "netns", namespace],
            ["addr", "add", "\(hostAddress)/24", "dev", hostLink],
            ["link", "set", hostLink, "up"],
            ["netns", "exec", namespace, Self.ip, "addr", "add", "\(allowedAddress)/24", "dev", deviceLink],
            ["netns", "exec", namespace, Self.ip, "addr", "add", "\(otherAddress)/24", "dev", deviceLink],
            ["netns", "exec", namespace, Self.ip, "link", "set", deviceLink, "up"],
            ["netns", "exec", namespace, Self.ip, "link", "set", "lo", "up"],
        ]
        for step in steps {
            let result = try run(Self.ip, step, timeout: 30)
            if result.status != 0 {
                remove()
                throw HarnessError("ip \(step.joined(separator: " ")): \(result.stderr)")
            }
        }
        // IPv4 addresses are usable as soon as the link has carrier.
        for _ in 0..<100 {
            let state = try? String(contentsOfFile: "/sys/class/net/\(hostLink)/operstate", encoding: .utf8)
            if state?.hasPrefix("up") == true { return }
            usleep(50_000)
        }
        remove()
        throw HarnessError("the veth pair \(hostLink) never came up")
    }

    /// curl inside the namespace, from one of its two addresses: the body, and the status curl saw.
    func curl(from address: String, _ arguments: [String]) throws -> (text: String, status: Int, stderr: String) {
        let result = try run(
            Self.ip,
            [
                "netns", "exec", namespace, Paths.which("curl"), "-sS", "--max-time", "20", "--interface", address,
                "-w", "\n%{http_code}",
            ] + arguments)
        let text = result.text
        let cut = text.lastIndex(of: "\n") ?? text.startIndex
        let status = Int(text[cut...].dropFirst()) ?? -1
        return (String(text[..<cut]), status, result.stderr)
    }

    /// Deleting the namespace deletes the veth pair with it; the host end is deleted too in case it was left.
    func remove() {
        _ = try? run(Self.ip, ["netns", "del", namespace], timeout: 30)
        _ = try? run(Self.ip, ["link", "del", hostLink], timeout: 30)
    }
}
