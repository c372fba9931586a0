import CookieKit

/// Which pages a browser audit visits: the start page, then same-site links (the start page's registrable domain)
/// in an order drawn from a seed, so that two runs with one seed visit the same pages of an unchanged site. Links
/// are taken as the pages offer them: each page's new links are shuffled (SplitMix64 from the seed) and queued
/// behind the ones already waiting.
public struct PageSample: Sendable {
    public let start: RequestURL
    public let limit: Int
    private var state: UInt64
    private var queued: Set<String> = []
    private var waiting: [String] = []
    private let site: String

    /// `start`: the page as given (its query kept).
    public init(start: String, limit: Int, seed: UInt64, suffixes: PublicSuffixList) {
        let url = RequestURL(start) ?? RequestURL(scheme: "http", host: "invalid", path: "/")
        self.start = url
        self.limit = limit
        state = seed
        site = suffixes.registrableDomain(of: url.host) ?? url.host
        let first = Self.normalised(start)
        queued.insert(first)
        waiting.append(first)
        self.suffixes = suffixes
    }

    private let suffixes: PublicSuffixList

    /// The links found on a visited page: those of the site (http or https, the start's registrable domain, the
    /// fragment dropped; a query kept: another page), not queued before, in the seed's order.
    public mutating func found(_ links: [String]) {
        var new: [String] = []
        for link in links {
            guard let url = RequestURL(link), url.scheme == "http" || url.scheme == "https",
                (suffixes.registrableDomain(of: url.host) ?? url.host) == site
            else { continue }
            let key = Self.normalised(link)
            if queued.insert(key).inserted { new.append(key) }
        }
        // Shuffled from a sorted list: the page's own order of links does not change the draw.
        new.sort()
        for i in stride(from: new.count - 1, to: 0, by: -1) {
            let j = Int(next() % UInt64(i + 1))
            new.swapAt(i, j)
        }
        waiting += new
    }

    /// The next page to visit, nil when `limit` pages were given or none is left.
    public mutating func next(visited: Int) -> String? {
        guard visited < limit, !waiting.isEmpty else { return nil }
        return waiting.removeFirst()
    }

    /// A URL without its fragment (the same document).
    static func normalised(_ url: String) -> String {
        url.firstIndex(of: "#").map { String(url[..<$0]) } ?? url
    }

    /// SplitMix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators", 2014).
    private mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
