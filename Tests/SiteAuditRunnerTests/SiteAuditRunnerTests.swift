import ExchangeFacts
import SiteAudit
import Testing

@testable import SiteAuditRunner

/// The site audit's run, its recorder and its progress view, without a browser (the run itself is tested end to end
/// in SiteAuditEndToEndTests).
@Suite struct SiteAuditRunnerTests {
    /// The URL a recorded line is keyed by, as the page's report reads it back: the default port left out, an IPv6
    /// host in brackets, the target as requested.
    @Test(arguments: [
        ("http", "shop.test", 80, "/", "http://shop.test/"),
        ("https", "shop.test", 443, "/cart?id=1", "https://shop.test/cart?id=1"),
        ("http", "shop.test", 8080, "/a", "http://shop.test:8080/a"),
        ("https", "shop.test", 80, "/", "https://shop.test:80/"),
        ("http", "::1", 3000, "/", "http://[::1]:3000/"),
        ("https", "2001:db8::1", 443, "/x", "https://[2001:db8::1]/x"),
    ])
    func theRecordersURLIsThePagesURL(scheme: String, host: String, port: Int, target: String, url: String) {
        let context = ExchangeContext(
            requestID: 1, clientAddress: "127.0.0.1", method: "GET", scheme: scheme, host: host, port: port,
            target: target, status: 200)
        #expect(LineRecorder.url(context) == url)
    }

    /// A progress line names the pass and the consent state, then the page of the pages, or the message instead.
    @Test(arguments: [
        ("", ConsentState.none, 2, 10, "https://shop.test/a", nil, "[none] page 2/10: https://shop.test/a"),
        ("rules", ConsentState.accept, 1, 3, "https://shop.test/", nil, "[rules-accept] page 1/3: https://shop.test/"),
        ("", ConsentState.reject, 0, 5, "", "the browser ended", "[reject] the browser ended"),
    ])
    func aProgressLineSaysWhereTheAuditIs(
        pass: String, state: ConsentState, page: Int, pages: Int, url: String, message: String?, line: String
    ) {
        let step = SiteAuditRun.Progress(pass: pass, state: state, page: page, pages: pages, url: url, message: message)
        #expect(step.line == line)
    }
}
