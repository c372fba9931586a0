import CookieKit

/// A cookie name's events: what each Set-Cookie did with it and what each request made of it, repeats counted.
extension ClientCookies {
    /// One name's events, changed in place (a repeat counted into it is no dictionary update).
    final class Timeline {
        var events: [Event] = []
        var touched: UInt64 = 0
    }

    static func describe(_ c: StoredCookie) -> String {
        var parts = [c.hostOnly ? "host-only \(c.domain)" : "domain .\(c.domain)", "path \(c.path)"]
        if c.secureOnly { parts.append("Secure") }
        if c.httpOnly { parts.append("HttpOnly") }
        parts.append("SameSite=\(c.sameSite)")
        if c.partitioned { parts.append("Partitioned") }
        if let key = c.partitionKey { parts.append("partition \(key)") }
        parts.append(c.expiry.map { "expires \(CookieDate.rfc3339(milliseconds: $0))" } ?? "session")
        return parts.joined(separator: ", ")
    }

    /// Counts one more of the latest event of a name's timeline (the latest, or the one before it when the two
    /// alternate, as a response's line and a request's verdict do).
    mutating func bump(_ t: Timeline, _ r: Request, times: Int, expiry: Int64?) -> Bool {
        let n = t.events.count
        guard n > 0, t.touched > 0 else { return false }
        tick += 1
        t.touched = tick
        let k = n >= 2 && t.events[n - 1].kind.isRequest ? n - 2 : n - 1
        guard !t.events[k].kind.isRequest else { return false }
        t.events[k].count += times
        t.events[k].lastRequestID = r.id
        t.events[k].lastTime = r.time
        if t.events[k].kind == .stored { t.events[k].expiry = expiry }
        return true
    }

    /// Adds an event to its name's timeline (counted into the last one when it repeats it); returns it as kept,
    /// and the timeline.
    @discardableResult
    mutating func append(_ e: Event, name: String) -> (Event, Timeline) {
        tick += 1
        let t: Timeline
        if let found = timelineStorage[name] {
            t = found
        } else {
            if timelineStorage.count >= Self.namesPerClient,
                let oldest = timelineStorage.min(by: { $0.value.touched < $1.value.touched })
            {
                // Let go: a shortcut still holding it sees `touched` 0 and counts nothing into it.
                oldest.value.touched = 0
                timelineStorage[oldest.key] = nil
            }
            t = Timeline()
            timelineStorage[name] = t
        }
        t.touched = tick
        let n = t.events.count
        if n > 0 {
            // The last event, or the one before it when the two alternate (a refreshed cookie and its sending).
            let candidates = n >= 2 ? [n - 1, n - 2] : [n - 1]
            if let k = candidates.first(where: { t.events[$0].repeats(e) }),
                k == n - 1 || t.events[n - 1].kind.isRequest != e.kind.isRequest
            {
                t.events[k].count += e.count
                t.events[k].lastRequestID = e.requestID
                t.events[k].lastTime = e.time
                t.events[k].expiry = e.expiry
                if case .stored = e.why { t.events[k].why = e.why }
                return (t.events[k], t)
            }
            // Oldest out a quarter at a time, so that a long timeline is not shifted for every event.
            if n >= Self.eventsPerCookie { t.events.removeFirst(Self.eventsPerCookie / 4) }
        }
        t.events.append(e)
        return (e, t)
    }
}
