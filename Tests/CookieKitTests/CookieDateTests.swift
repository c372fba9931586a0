import CookieKit
import Testing

@Suite struct CookieDateTests {
    /// RFC 6265bis §5.1.1, real-world Expires spellings → RFC 3339 (nil: the algorithm fails).
    @Test(
        arguments: [
            ("Wed, 09 Jun 2021 10:18:14 GMT", "2021-06-09T10:18:14Z"),
            ("Wed, 09-Jun-2021 10:18:14 GMT", "2021-06-09T10:18:14Z"),
            ("Wednesday, 09-Jun-21 10:18:14 GMT", "2021-06-09T10:18:14Z"),
            ("Wed Jun  9 10:18:14 2021", "2021-06-09T10:18:14Z"),
            ("9 jun 2021 10:18:14", "2021-06-09T10:18:14Z"),
            ("Thu, 01 Jan 1970 00:00:00 GMT", "1970-01-01T00:00:00Z"),
            ("Thu, 01 Jan 70 00:00:00 GMT", "1970-01-01T00:00:00Z"),
            ("Fri, 01 Jan 69 00:00:00 GMT", "2069-01-01T00:00:00Z"),
            ("Sat, 29 Feb 2020 23:59:59 GMT", "2020-02-29T23:59:59Z"),
            ("1 Jan 1601 0:0:0", "1601-01-01T00:00:00Z"),
            ("Tue, 31 Dec 9999 23:59:59 GMT", "9999-12-31T23:59:59Z"),
            ("10:18:14 2021 June 9th", "2021-06-09T10:18:14Z"),
            ("Sun, 29 Feb 2021 10:18:14 GMT", nil),  // no such date
            ("Wed, 32 Jun 2021 10:18:14 GMT", nil),
            ("Wed, 09 Jun 2021 24:00:00 GMT", nil),
            ("Wed, 09 Jun 2021 10:60:00 GMT", nil),
            ("Wed, 09 Jun 1600 10:18:14 GMT", nil),
            ("Wed, 09 Jun 2021", nil),  // no time
            ("Wed, 09 2021 10:18:14 GMT", nil),  // no month
            ("Wed, 09 Jun 10:18:14 GMT", nil),  // no year (09 is taken as day)
            ("Wed, 09 Jun 12021 10:18:14 GMT", nil),
            ("", nil),
            ("0", nil),
        ] as [(String, String?)])
    func parsesCookieDates(_ input: String, _ expected: String?) {
        #expect(CookieDate.parse(input).map { CookieDate.rfc3339($0) } == expected)
    }

    @Test(
        arguments: [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"), (1_623_233_894, "Wed, 09 Jun 2021 10:18:14 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"), (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        ] as [(Int64, String)])
    func writesIMFFixdateThatParsesBack(_ seconds: Int64, _ text: String) {
        #expect(CookieDate.imfFixdate(seconds) == text)
        #expect(CookieDate.parse(text) == seconds)
    }

    @Test func civilDateConversionRoundTripsOverFourCenturies() {
        var day: Int64 = -150_000
        while day < 150_000 {
            let (y, m, d) = CookieDate.civilFromDays(day)
            #expect(CookieDate.daysFromCivil(year: y, month: m, day: d) == day)
            day += 97
        }
    }
}
