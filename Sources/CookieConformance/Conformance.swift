import CookieKit
import Foundation

/// The scenario format of `conformance/` (see its README): each case starts with an empty jar whose
/// clock reads `now`, then `set` steps feed Set-Cookie values and `get` steps compare the Cookie string.
public struct ConformanceSuite: Sendable {
    public var name: String
    public var cases: [ConformanceCase]

    /// Reads a suite file.
    public init(contentsOf path: String) throws {
        // Read with open(2) so that a failure is its errno's text ("No such file or directory"), not Foundation's
        // error domain and code.
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = access(path, R_OK) == 0 ? "cannot be read" : String(cString: strerror(errno))
            throw ConformanceError(description: "cannot read \(path): \(reason)")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ConformanceError(
                description:
                    "\(path): not JSON (\((error as NSError).localizedDescription.trimmingCharacters(in: .punctuationCharacters)))"
            )
        }
        guard let root = parsed as? [String: Any],
            let cases = root["cases"] as? [[String: Any]]
        else { throw ConformanceError(description: "\(path): not a conformance suite (no \"cases\" list)") }
        name = root["suite"] as? String ?? (path as NSString).lastPathComponent
        self.cases = try cases.map { try ConformanceCase(json: $0, file: path) }
    }

    /// Runs every case against ``CookieJar``.
    public func run(suffixes: PublicSuffixList = .system) -> [ConformanceResult] {
        cases.map { $0.run(suffixes: suffixes) }
    }
}

public struct ConformanceError: Error, CustomStringConvertible {
    public let description: String
}

public struct ConformanceCase: Sendable {
    public enum Step: Sendable {
        case set(url: String, channel: CookieJar.Channel, headers: [[UInt8]])
        case get(url: String, channel: CookieJar.Channel, expect: String)
    }
    public var id: String
    public var description: String
    public var now: Int64
    public var steps: [Step]
    /// Run and reported, not counted (the suite and the draft disagree).
    public var informative: Bool

    init(json: [String: Any], file: String) throws {
        id = json["id"] as? String ?? "?"
        description = json["description"] as? String ?? ""
        informative = json["informative"] as? Bool ?? false
        guard let nowString = json["now"] as? String, let now = CookieDate.parseRFC3339(nowString) else {
            throw ConformanceError(description: "\(file): case \(id): missing or bad \"now\"")
        }
        self.now = now
        let id = self.id
        steps = try (json["steps"] as? [[String: Any]] ?? []).map { step in
            let channel: CookieJar.Channel = (step["via"] as? String) == "script" ? .nonHTTP : .http
            if let url = step["set"] as? String {
                // Each JSON string reaches the parser as its UTF-8 bytes (\u00XX escapes become that byte).
                let headers = (step["headers"] as? [String] ?? []).map { Array($0.utf8) }
                return .set(url: url, channel: channel, headers: headers)
            }
            if let url = step["get"] as? String, let expect = step["expect"] as? String {
                return .get(url: url, channel: channel, expect: expect)
            }
            throw ConformanceError(description: "\(file): case \(id): a step is neither set nor get")
        }
    }

    /// Runs the case in a fresh jar.
    public func run(suffixes: PublicSuffixList) -> ConformanceResult {
        let now = self.now
        var jar = CookieJar(publicSuffixes: suffixes, clock: { now })
        var failure: (expected: String, got: String)? = nil
        for step in steps {
            switch step {
            case .set(let url, let channel, let headers):
                guard let u = RequestURL(url) else { continue }
                for header in headers {
                    let setCookie = SetCookie(bytes: header)
                    if channel == .nonHTTP {
                        // document.cookie takes one string and never splits it (HTML §3.1.4).
                        jar.receive(setCookie, from: u, via: .nonHTTP)
                    } else {
                        jar.receive(setCookie, from: u, via: .http)
                    }
                }
            case .get(let url, let channel, let expect):
                guard let u = RequestURL(url) else { continue }
                let got = jar.cookieHeader(for: u, via: channel)
                if got != expect && failure == nil { failure = (expect, got) }
            }
        }
        return ConformanceResult(
            id: id, description: description, informative: informative, passed: failure == nil,
            expected: failure?.expected, got: failure?.got)
    }
}

public struct ConformanceResult: Sendable {
    public var id: String
    public var description: String
    public var informative: Bool
    public var passed: Bool
    public var expected: String?
    public var got: String?
}
