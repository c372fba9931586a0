import CBenchSupport
import CookieFoundation
import CookieKit
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// cookie-bench: cookie-core throughput on realistic Set-Cookie headers, beside Foundation's HTTPCookie
// parser on the same headers, in one run. Figures are per core (one thread, thread CPU time).

let corpus: [String] = [
    "Bin-Auth-Token=3f9a0c1e7b2d4a6f8e0c1b3d5f7a9c2e; Path=/; Domain=bin.example.com; Max-Age=604800; HttpOnly",
    "sessionid=k2j3h4g5f6d7s8a9; expires=Tue, 14 Dec 2027 10:18:14 GMT; HttpOnly; Max-Age=1209600; Path=/; SameSite=Lax",
    "csrftoken=Zq8kT1n2V9xYb4Lm6Pq0Rs3Tu5Vw7Xy9; expires=Wed, 08 Dec 2027 10:18:14 GMT; Max-Age=31449600; Path=/; SameSite=Lax; Secure",
    "NID=511=eX4mPlEvAlUe0123456789abcdefghijklmnopqrstuvwxyz; expires=Fri, 02-Jun-2027 10:18:14 GMT; path=/; domain=.google.com; HttpOnly",
    "_ga=GA1.2.1234567890.1623233894; Domain=.example.com; Path=/; Expires=Fri, 09 Jun 2028 10:18:14 GMT",
    "__Host-session=abc123; Path=/; Secure; HttpOnly; SameSite=Strict",
    "__Secure-3PSID=g.a000lQhrk2e; Domain=.google.com; Path=/; Secure; HttpOnly; Priority=HIGH; SameSite=none",
    "JSESSIONID=0123456789ABCDEF0123456789ABCDEF; Path=/app; HttpOnly",
    "PHPSESSID=r2t5uvadnq1o6cl6k3s3j2ts2b; path=/",
    "AWSALB=kN3w1Ua8N0hR0Fv8l0f9e6n2X3b5Z7c9D1e3F5g7H9i1J3k5L7m9; Expires=Tue, 07 Dec 2027 10:18:14 GMT; Path=/",
    "consent=YES+cb.20210609-10-p0.en+FX+123; Domain=.example.org; Path=/; Expires=Sun, 10 Jan 2027 10:18:14 GMT; SameSite=Lax",
    "lang=en-US; Path=/; Max-Age=31536000",
    "cf_clearance=Wq1e2r3t4y5u6i7o8p9-1623233894-0-150; path=/; expires=Thu, 09-Jun-22 10:18:14 GMT; domain=.example.net; HttpOnly; Secure; SameSite=None; Partitioned",
    "remember_user_token=W1sxMjM0NV0sIiQyYSQxMSRhYmMiLCIxNjIzMjMzODk0LjAiXQ%3D%3D--0123456789abcdef; path=/; expires=Wed, 23 Jun 2027 10:18:14 GMT; secure; HttpOnly; SameSite=Lax",
    "tracking=\"quoted value\"; Path=/",
    "empty=; Max-Age=0; Path=/",
]

func threadCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

struct Figure {
    var name: String
    /// Median of the repetitions.
    var perSecond: Double
    var best: Double
    var worst: Double
    var allocationsPerOp: Double?
}

/// Runs `body` (which processes `opsPerCall` cookies) for `repetitions` slices of `seconds` thread CPU time
/// each, and reports the median, best and worst slice (this machine's speed varies from run to run).
func measure(
    _ name: String, opsPerCall: Int, seconds: Double = 0.3, repetitions: Int = 7, countAllocations: Bool = true,
    _ body: () -> Void
) -> Figure {
    for _ in 0..<50 { body() }  // warm-up
    var rates: [Double] = []
    var allocations = 0.0
    for _ in 0..<repetitions {
        let a0 = CBenchSupport_allocationCount()
        let t0 = threadCPU()
        var calls = 0
        var t = t0
        repeat {
            for _ in 0..<20 { body() }
            calls += 20
            t = threadCPU()
        } while t - t0 < seconds
        let a1 = CBenchSupport_allocationCount()
        let ops = Double(calls * opsPerCall)
        rates.append(ops / (t - t0))
        allocations = Double(a1 - a0) / ops
    }
    rates.sort()
    return Figure(
        name: name, perSecond: rates[rates.count / 2], best: rates.last!, worst: rates.first!,
        allocationsPerOp: countAllocations ? allocations : nil)
}

// The headers as they sit in a response buffer: the proxy parses from slices of such a buffer.
var buffer: [UInt8] = []
var ranges: [Range<Int>] = []
for line in corpus {
    buffer += Array("Set-Cookie: ".utf8)
    let start = buffer.count
    buffer += Array(line.utf8)
    ranges.append(start..<buffer.count)
    buffer += [0x0D, 0x0A]
}
let n = corpus.count
var sink = 0
var output: [UInt8] = []
output.reserveCapacity(buffer.count * 2)

// `cookie-bench --round-trips N`: exactly N parse + serialise round trips and nothing else, for instruction
// counting with `valgrind --tool=callgrind` (repeatable on this noisy machine, unlike wall or CPU time).
if let i = CommandLine.arguments.firstIndex(of: "--round-trips"), i + 1 < CommandLine.arguments.count,
    let count = Int(CommandLine.arguments[i + 1])
{
    var done = 0
    while done < count {
        output.removeAll(keepingCapacity: true)
        for r in ranges where done < count {
            let c = SetCookie(buffer[r])
            output.append(contentsOf: c.bytes)
            done += 1
        }
        sink &+= output.count
    }
    print("\(count) round trips, checksum \(sink)")
    exit(0)
}

var figures: [Figure] = []

figures.append(
    measure("parse (from response buffer)", opsPerCall: n) {
        for r in ranges {
            let c = SetCookie(buffer[r])
            sink &+= c.attributeCount
        }
    })

figures.append(
    measure("parse + serialise (untouched)", opsPerCall: n) {
        output.removeAll(keepingCapacity: true)
        for r in ranges {
            let c = SetCookie(buffer[r])
            output.append(contentsOf: c.bytes)
        }
        sink &+= output.count
    })

figures.append(
    measure("parse + user-agent view", opsPerCall: n) {
        for r in ranges {
            let c = SetCookie(buffer[r])
            sink &+= c.attributes.secure ? 1 : 0
        }
    })

figures.append(
    measure("parse + edit (Domain dot, Secure) + serialise", opsPerCall: n) {
        output.removeAll(keepingCapacity: true)
        for r in ranges {
            var c = SetCookie(buffer[r])
            if let d = c.attributes.domain, !d.isEmpty { try? c.set(.domain, to: "." + d) }
            c.setFlag(.secure, true)
            output.append(contentsOf: c.bytes)
        }
        sink &+= output.count
    })

let url = RequestURL("https://www.example.com/app/page")!
let now = Int64(time(nil))
let hosts = (0..<50).map { "h\($0).example.com" }
let jarCookies = (0..<500).map { i in SetCookie("c\(i)=value\(i); Path=/; Domain=example.com; Max-Age=3600") }
figures.append(
    measure("jar insert (500 cookies, 50 hosts)", opsPerCall: 500, seconds: 1.0) {
        var jar = CookieJar(clock: { now })
        for (i, c) in jarCookies.enumerated() {
            jar.receive(c, from: RequestURL(scheme: "https", host: hosts[i % 50], path: "/"))
        }
        sink &+= jar.count
    })
var lookupJar = CookieJar(clock: { now })
for i in 0..<30 { lookupJar.receive(SetCookie("k\(i)=v\(i); Path=/"), from: url) }
for i in 0..<20 { lookupJar.receive(SetCookie("d\(i)=v\(i); Domain=example.com; Path=/app"), from: url) }
figures.append(
    measure("jar Cookie header (50 matching)", opsPerCall: 1) {
        sink &+= lookupJar.cookieHeader(for: url).utf8.count
    })

let foundationURL = URL(string: "https://www.example.com/")!
let foundationFields = corpus.map { ["Set-Cookie": $0] }
let foundation = measure("Foundation HTTPCookie.cookies(withResponseHeaderFields:for:)", opsPerCall: n) {
    for fields in foundationFields {
        sink &+= HTTPCookie.cookies(withResponseHeaderFields: fields, for: foundationURL).count
    }
}
figures.append(foundation)

func format(_ x: Double) -> String {
    if x >= 1e6 { return String(format: "%.2f M", x / 1e6) }
    if x >= 1e3 { return String(format: "%.1f k", x / 1e3) }
    return String(format: "%.0f", x)
}

print("cookie-bench: \(n) realistic Set-Cookie headers, one thread, per core (thread CPU time)")
print("")
print("| operation | cookies/s per core (median) | best – worst of 7 | vs Foundation parse | allocations per cookie |")
print("|---|---:|---:|---:|---:|")
for f in figures {
    let ratio = f.perSecond / foundation.perSecond
    let allocs = f.allocationsPerOp.map { String(format: "%.2f", $0) } ?? "-"
    let unit = f.name.hasPrefix("jar Cookie header") ? " lookups/s" : ""
    print(
        "| \(f.name) | \(format(f.perSecond))\(unit) | \(format(f.best)) – \(format(f.worst)) | \(String(format: "%.1f×", ratio)) | \(allocs) |"
    )
}
print("")
print("goal: parse + serialise ≥ 3 M/s per core, ≥ 20× Foundation, ≤ 2 allocations per untouched cookie")
if sink == 42 { print("") }  // keep results alive
