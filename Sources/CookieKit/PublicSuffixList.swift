import HTTPGrammar

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The Public Suffix List (https://publicsuffix.org/list/ format), used to refuse cookies whose Domain is a
/// public suffix (RFC 6265bis §5.7 step 9) and to find a host's registrable domain. Includes the implicit
/// `*` rule: a top-level domain that is not listed (such as `test`) is itself a public suffix.
/// Rules in Unicode are stored as A-labels (Punycode, RFC 3492) so they match hosts as they travel.
public struct PublicSuffixList: Sendable {
    private var rules: Set<String> = []
    private var wildcards: Set<String> = []  // "*.ck" stored as "ck"
    private var exceptions: Set<String> = []  // "!www.ck" stored as "www.ck"

    /// Where Debian's `publicsuffix` package puts the list.
    public static let systemPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// Parses the list's text format: one rule per line (its first whitespace-delimited token), `//` comments.
    /// Works on bytes; the list has about 10,000 lines and is read at every start.
    public init(text: String) {
        var copy = text
        copy.withUTF8 { b in
            var lineStart = 0
            for i in 0...b.count where i == b.count || b[i] == 0x0A || b[i] == 0x0D {
                var start = lineStart
                lineStart = i + 1
                while start < i && (b[start] == 0x20 || b[start] == 0x09) { start += 1 }
                var end = start
                while end < i && b[end] != 0x20 && b[end] != 0x09 { end += 1 }
                guard end > start, !(end - start >= 2 && b[start] == 0x2F && b[start + 1] == 0x2F) else { continue }
                let token = UnsafeBufferPointer(rebasing: b[start..<end])
                let rule: String
                if token.allSatisfy({ $0 < 0x80 }) {
                    rule = ByteClass.lowercasedString(token)
                } else {
                    rule = Punycode.toASCII(String(decoding: token, as: UTF8.self).lowercased())
                }
                if rule.hasPrefix("!") {
                    exceptions.insert(String(rule.dropFirst()))
                } else if rule.hasPrefix("*.") {
                    wildcards.insert(String(rule.dropFirst(2)))
                } else {
                    rules.insert(rule)
                }
            }
        }
    }

    /// Reads the list from a file.
    public init(contentsOfFile path: String) throws(LoadError) {
        guard let file = fopen(path, "r") else { throw LoadError(path: path, reason: String(cString: strerror(errno))) }
        defer { fclose(file) }
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            data.append(contentsOf: chunk[0..<n])
        }
        self.init(text: String(decoding: data, as: UTF8.self))
        if rules.isEmpty { throw LoadError(path: path, reason: "no rules in the file") }
    }

    /// Where the list is looked for, in order: Debian's `publicsuffix` package, then under Homebrew's prefixes
    /// (Apple silicon, then Intel).
    public static let searchPaths = [
        systemPath, "/opt/homebrew/share/publicsuffix/public_suffix_list.dat",
        "/usr/local/share/publicsuffix/public_suffix_list.dat",
    ]

    /// Where the list in use came from.
    public enum Source: Sendable, Equatable, CustomStringConvertible {
        case file(String)
        /// The copy compiled into the package (``shippedVersion``): no list was found on this machine.
        case shipped

        public var description: String {
            switch self {
            case .file(let path): path
            case .shipped: "the copy built into cookie-proxy (version \(PublicSuffixList.shippedVersion))"
            }
        }
    }

    /// The file `--psl` named; set once at start-up, before the list's first use and before other threads exist.
    nonisolated(unsafe) private static var requestedPath: String?

    /// Use the list in `path` instead of looking for one (read now, so a bad file is an error at once). Call before
    /// the list's first use.
    public static func use(file path: String) throws(LoadError) {
        _ = try PublicSuffixList(contentsOfFile: path)
        requestedPath = path
    }

    /// The list in use and where it came from: the file ``use(file:)`` named, else the first of ``searchPaths``
    /// that reads, else the copy built in. Read once.
    public static let current: (list: PublicSuffixList, source: Source) = {
        if let path = requestedPath, let list = try? PublicSuffixList(contentsOfFile: path) {
            return (list, .file(path))
        }
        for path in searchPaths {
            if let list = try? PublicSuffixList(contentsOfFile: path) { return (list, .file(path)) }
        }
        return (PublicSuffixList(text: shippedText), .shipped)
    }()

    /// The list in use (``current``).
    public static var system: PublicSuffixList { current.list }

    /// A failure to read the list.
    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String {
            "cannot read the Public Suffix List at \(path): \(reason)"
        }
    }

    /// The public suffix of a (lowercased, A-label) domain, by the list's algorithm.
    public func publicSuffix(of domain: String) -> String {
        // Start of each label, left to right; suffixes are substrings from those positions.
        var starts = [domain.startIndex]
        var index = domain.startIndex
        while let dot = domain[index...].firstIndex(of: ".") {
            index = domain.index(after: dot)
            starts.append(index)
        }
        let labelCount = starts.count
        var best = 1  // implicit "*" rule: the last label
        for i in 0..<labelCount {
            let suffix = String(domain[starts[i]...])
            if exceptions.contains(suffix) {
                return i + 1 < labelCount ? String(domain[starts[i + 1]...]) : ""
            }
            let length = labelCount - i
            if length > best {
                if rules.contains(suffix) {
                    best = length
                } else if i + 1 < labelCount, wildcards.contains(String(domain[starts[i + 1]...])) {
                    best = length
                }
            }
        }
        return String(domain[starts[labelCount - best]...])
    }

    /// Whether `domain` is itself a public suffix.
    public func isPublicSuffix(_ domain: String) -> Bool {
        publicSuffix(of: domain) == domain
    }

    /// The registrable domain (public suffix plus one label), or nil if `host` is a public suffix or an IP.
    public func registrableDomain(of host: String) -> String? {
        if looksLikeIPAddress(host) { return nil }
        let suffix = publicSuffix(of: host)
        guard host.count > suffix.count else { return nil }
        let head = host.dropLast(suffix.count + 1)
        let label = head.split(separator: ".").last ?? Substring(head)
        return label + "." + suffix
    }
}

/// Punycode (RFC 3492) and IDNA ToASCII for labels, enough to put Unicode list rules and hosts in A-label form.
public enum Punycode {
    /// Each non-ASCII label becomes `xn--` + its Punycode encoding; ASCII labels are unchanged.
    public static func toASCII(_ domain: String) -> String {
        guard domain.utf8.contains(where: { $0 >= 0x80 }) else { return domain }
        return domain.split(separator: ".", omittingEmptySubsequences: false).map { label -> String in
            guard label.utf8.contains(where: { $0 >= 0x80 }), let encoded = encode(String(label)) else {
                return String(label)
            }
            return "xn--" + encoded
        }.joined(separator: ".")
    }

    /// RFC 3492 §6.3 encoding of one label.
    public static func encode(_ input: String) -> String? {
        let base = 36
        let tMin = 1
        let tMax = 26
        let skew = 38
        let damp = 700
        let scalars = input.unicodeScalars.map { Int($0.value) }
        var output = scalars.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = 0x80
        var delta = 0
        var bias = 72
        func digit(_ d: Int) -> Character {
            Character(Unicode.Scalar(UInt8(d < 26 ? d + 97 : d + 22)))
        }
        func adapt(_ delta: Int, _ numPoints: Int, _ first: Bool) -> Int {
            var delta = first ? delta / damp : delta / 2
            delta += delta / numPoints
            var k = 0
            while delta > ((base - tMin) * tMax) / 2 {
                delta /= base - tMin
                k += base
            }
            return k + (base - tMin + 1) * delta / (delta + skew)
        }
        while handled < scalars.count {
            guard let m = scalars.filter({ $0 >= n }).min() else { return nil }
            delta += (m - n) * (handled + 1)
            n = m
            for c in scalars {
                if c < n { delta += 1 }
                if c == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return String(output)
    }
}
