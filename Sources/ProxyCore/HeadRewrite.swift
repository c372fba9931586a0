import ExchangeFacts
import HTTPGrammar
import HTTPHeads

/// What the proxy changes in a head it forwards, and nothing else (RFC 9110 §7.6, RFC 9112 §3.2, §6, §9.6):
/// hop-by-hop fields out, framing fields with one reading, the request line and Host for the next hop, `Via`, and
/// the `Connection` the client's side needs. Pure: a parsed head in, an ``OutgoingHead`` out; the rules' hooks run
/// on the result.
enum HeadRewrite {
    /// The head to send upstream for a request that is not a CONNECT.
    static func request(
        _ request: RequestHead, route: RequestRoute, connection: ConnectionOptions, framing: BodyFraming,
        wantsUpgrade: Bool, via: UpstreamHop?, configuration: ProxyConfiguration, clientAddress: String = "",
        storage: consuming OutgoingHead.Storage = OutgoingHead.Storage()
    ) -> OutgoingHead {
        var out = OutgoingHead(request.head, storage: storage)
        // RFC 9112 §3.2.2: to a proxy, the absolute form.
        let absolute = via.flatMap { $0.tunnel ? nil : route.origin.hostFieldValue(defaultPort: 80) } ?? []
        // A reverse route's path replaces its prefix in what goes upstream.
        let target =
            route.routeIndex.map { configuration.routes.upstreamTarget($0, route.target) } ?? route.target
        writeRequestLine(&out, method: request.method, absolute: absolute, target: target)
        removeHopByHop(&out, connection: connection, keepUpgrade: wantsUpgrade)
        // The client's credentials were for this proxy; the next one gets its own, if any. (No line is written
        // before this one: the received head says whether there is any.)
        if out.source.has(.proxyAuthorization) { out.removeAll(.proxyAuthorization) }
        if let via, !via.tunnel, let authorization = via.proxy.authorization {
            out.append(name: "Proxy-Authorization", value: Array(authorization.utf8), known: .proxyAuthorization)
        }
        canonicaliseFraming(&out, framing)
        // RFC 9112 §3.2.2: Host becomes the target URI's authority.
        // (Nothing to change when the route found the one Host field naming the authority already.)
        if let authority = route.authority, !route.hostFieldIsAuthority {
            let defaultPort = route.authorityDefaultPort
            if let index = (0..<out.count).first(where: { out.known(at: $0) == .host }) {
                if !authority.isHostFieldValue(out.valueBytes(at: index), defaultPort: defaultPort) {
                    out.replaceValue(at: index, with: authority.hostFieldValue(defaultPort: defaultPort))
                }
            } else {
                out.append(name: "Host", value: authority.hostFieldValue(defaultPort: defaultPort), known: .host)
            }
        }
        if route.routeIndex != nil && configuration.addForwarded {
            addForwarded(&out, route: route, clientAddress: clientAddress)
        }
        if wantsUpgrade { out.append(name: "Connection", value: upgradeToken, known: .connection) }
        if configuration.addVia { addVia(&out, version: request.version, pseudonym: configuration.viaPseudonym) }
        return out
    }

    /// `X-Forwarded-For`, `-Proto` and `-Host` towards a route's upstream (the de facto fields nginx, Caddy and
    /// http-proxy-middleware set; RFC 7239's `Forwarded` says the same, and fewer frameworks read it). The client's
    /// own are replaced, as Caddy does with no trusted proxies: this proxy is where the client is known.
    static func addForwarded(_ out: inout OutgoingHead, route: RequestRoute, clientAddress: String) {
        for name in ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"] where out.contains(name) {
            out.removeAll(name)
        }
        out.append(name: "X-Forwarded-For", value: clientAddress)
        out.append(name: "X-Forwarded-Proto", value: route.scheme)
        if let named = route.named {
            out.append(
                name: "X-Forwarded-Host", value: named.hostFieldValue(defaultPort: route.scheme == "https" ? 443 : 80))
        }
    }

    /// nginx's `proxy_redirect default` for a reverse route: a redirect to the upstream's own URL would take the
    /// browser off the one origin it is served from (and away from its cookies); it is pointed back at the URL
    /// the client used, the route's prefix in place of the upstream's path. Made only for a response that has one of
    /// those fields: most have none.
    struct Redirects {
        /// `https://api.example/` (the upstream's origin and the route's URL path).
        let from: [UInt8]
        /// `http://app.localhost:5173/api/` (the client's origin and the route's prefix).
        let to: [UInt8]
        /// A relative redirect's side of the same mapping (`/` → `/api/`), when the route's URL has a path: an
        /// absolute-path reference (`Location: /me`, RFC 9110 §10.2.2 allows one) is resolved by the browser against
        /// the URL it used, so an upstream mounted under a prefix would send it off the mount (to the frontend's
        /// route). Nil when the target goes upstream as it came: its paths are the client's already.
        let relative: (from: [UInt8], to: [UInt8])?

        /// `client`: the exchange as the client addressed it (its scheme, and the host and port it named).
        init(_ route: ReverseRoute, client: ExchangeContext) {
            let named = Origin(host: client.host, port: client.port)
            let defaultPort = client.scheme == "https" ? 443 : 80
            let clientOrigin =
                client.scheme + "://" + String(decoding: named.hostFieldValue(defaultPort: defaultPort), as: UTF8.self)
            if let path = route.path {
                from = Array((route.upstreamOrigin + path).utf8)
                to = Array((clientOrigin + route.prefix).utf8)
                relative = path == route.prefix ? nil : (Array(path.utf8), Array(route.prefix.utf8))
            } else {
                from = Array((route.upstreamOrigin + "/").utf8)
                to = Array((clientOrigin + "/").utf8)
                relative = nil
            }
        }

        /// `Location`, `Content-Location`, and the URL of `Refresh` (`5; url=…`) of `out`, when they point at
        /// `route`'s upstream.
        static func rewrite(_ out: inout OutgoingHead, route: ReverseRoute, client: ExchangeContext) {
            var redirects: Redirects? = nil
            for index in 0..<out.count {
                let isRefresh = out.name(at: index, is: "refresh")
                guard isRefresh || out.name(at: index, is: "location") || out.name(at: index, is: "content-location")
                else { continue }
                let value = out.value(at: index)
                var start = 0
                if isRefresh {
                    // `delay; url=URL` (HTML's refresh syntax): the URL after `url=`, any case, maybe quoted.
                    guard let at = urlStart(value) else { continue }
                    start = at
                }
                if redirects == nil { redirects = Redirects(route, client: client) }
                guard let rewritten = redirects!.map(value[start...]) else { continue }
                out.replaceValue(at: index, with: Array(value[..<start]) + rewritten)
            }
        }

        /// The URL with `from` replaced by `to` (scheme and host compared without case), or an absolute path with
        /// the route's path replaced by its prefix (compared exactly); `from` without its last `/` is the upstream's
        /// bare origin (or path), mapped to `to` without its last `/`. Nil when it is not the upstream's.
        func map(_ url: ArraySlice<UInt8>) -> [UInt8]? {
            if let mapped = Self.map(url, from: from, to: to, lowercase: true) { return mapped }
            // `/path`, not `//host/path` (a network-path reference names another host).
            guard let relative, url.first == 0x2F, url.dropFirst().first != 0x2F else { return nil }
            return Self.map(url, from: relative.from, to: relative.to, lowercase: false)
        }

        private static func map(_ url: ArraySlice<UInt8>, from: [UInt8], to: [UInt8], lowercase: Bool) -> [UInt8]? {
            func startsWith(_ prefix: ArraySlice<UInt8>) -> Bool {
                url.count >= prefix.count
                    && zip(url, prefix).allSatisfy { lowercase ? ByteClass.lower($0) == ByteClass.lower($1) : $0 == $1 }
            }
            if startsWith(from[...]) { return to + url.dropFirst(from.count) }
            let bare = from.dropLast()
            if from.last == 0x2F, !bare.isEmpty,
                url.count == bare.count
                    || (url.count > bare.count && [0x3F, 0x23].contains(url[url.startIndex + bare.count])),
                startsWith(bare)
            {
                return Array(to.dropLast()) + url.dropFirst(bare.count)
            }
            return nil
        }

        /// Where the URL of a `Refresh` value starts: after its first `url=` (any case), and a quote if one opens it.
        static func urlStart(_ value: [UInt8]) -> Int? {
            value.withUnsafeBufferPointer { b in
                guard
                    let at = (0..<max(0, b.count - 3)).first(where: { ByteClass.equalsLowercase(b, $0, $0 + 4, "url=") }
                    )
                else { return nil }
                let start = at + 4
                return start < b.count && (b[start] == 0x27 || b[start] == 0x22) ? start + 1 : start
            }
        }
    }

    /// `method SP [http://authority]target SP HTTP/1.1` as `out`'s start line. Its own function: a head captured by
    /// the closures here and then returned was copied whole into the return value.
    static func writeRequestLine(_ out: inout OutgoingHead, method: String, absolute: [UInt8], target: String) {
        var (method, target) = (method, target)
        method.withUTF8 { method in
            target.withUTF8 { target in
                let length = method.count + 1 + (absolute.isEmpty ? 0 : 7 + absolute.count) + target.count + 9
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { line in
                    var at = 0
                    func put(_ bytes: UnsafeBufferPointer<UInt8>) {
                        guard let from = bytes.baseAddress else { return }
                        (line.baseAddress! + at).initialize(from: from, count: bytes.count)
                        at += bytes.count
                    }
                    put(method)
                    line[at] = 0x20
                    at += 1
                    if !absolute.isEmpty {
                        httpSchemePrefix.withUnsafeBufferPointer(put)
                        absolute.withUnsafeBufferPointer(put)
                    }
                    put(target)
                    http11Suffix.withUnsafeBufferPointer(put)
                    out.replaceStartLine(UnsafeBufferPointer(rebasing: line[0..<at]))
                }
            }
        }
    }

    /// A `101 Switching Protocols` the client asked for: relayed with its Connection and Upgrade (they are the
    /// switch), plus `Via`.
    static func switchingProtocols(
        _ response: ResponseHead, configuration: ProxyConfiguration,
        storage: consuming OutgoingHead.Storage = OutgoingHead.Storage()
    ) -> OutgoingHead {
        var out = OutgoingHead(response.head, storage: storage)
        if configuration.addVia { addVia(&out, version: response.version, pseudonym: configuration.viaPseudonym) }
        return out
    }

    /// What the client's side of the connection needs said in a final response's `Connection` field.
    enum ClientConnection {
        /// Nothing: HTTP/1.1 persists by default.
        case persistent
        /// `keep-alive`: an HTTP/1.0 client closes otherwise (RFC 9112 §9.3).
        case keepAlive
        /// `close`: the proxy closes after this response (RFC 9112 §9.6).
        case close
    }

    /// The head to send the client for a final response. `dechunk`: the body goes to an HTTP/1.0 client without
    /// its chunked framing (it is then delimited by the close).
    static func finalResponse(
        _ response: ResponseHead, connection: ConnectionOptions, framing: BodyFraming, dechunk: Bool,
        client: ClientConnection, configuration: ProxyConfiguration,
        storage: consuming OutgoingHead.Storage = OutgoingHead.Storage()
    ) -> OutgoingHead {
        var out = OutgoingHead(response.head, storage: storage)
        removeHopByHop(&out, connection: connection, keepUpgrade: false)
        canonicaliseFraming(&out, framing)
        if framing == .untilClose { out.removeAll(.contentLength) }
        if dechunk { out.removeAll(.transferEncoding) }
        switch client {
        case .persistent: break
        case .keepAlive: out.append(name: "Connection", value: keepAliveToken, known: .connection)
        case .close: out.append(name: "Connection", value: closeToken, known: .connection)
        }
        if configuration.addVia { addVia(&out, version: response.version, pseudonym: configuration.viaPseudonym) }
        return out
    }

    /// Framing fields with exactly one reading on the way out (RFC 9110 §8.6, RFC 9112 §6.1, §6.3): one
    /// Content-Length of plain digits, or one Transfer-Encoding of lowercase codings and no Content-Length. A head
    /// that has them so already (the usual case) is left as it is.
    static func canonicaliseFraming(_ out: inout OutgoingHead, _ framing: BodyFraming) {
        // Judged on the received fields (the proxy removes neither of the two), without touching the output.
        let source = out.source
        guard source.has(.contentLength) || source.has(.transferEncoding) else { return }
        var contentLengths = 0
        var transferEncodings = 0
        var canonical = true
        for field in source.fields {
            switch field.known {
            case .contentLength:
                contentLengths += 1
                canonical = canonical && source.bytes[field.value].allSatisfy(ByteClass.isDigit)
            case .transferEncoding:
                transferEncodings += 1
                canonical = canonical && source.bytes[field.value].elementsEqual(chunkedToken)
            default: break
            }
        }
        if canonical && contentLengths <= 1
            && (transferEncodings == 0 || (transferEncodings == 1 && contentLengths == 0))
        {
            return
        }
        if transferEncodings > 0 {
            // Transfer-Encoding wins (RFC 9112 §6.3 rule 3); its codings are rewritten as one list.
            var codings: [UInt8] = []
            for i in 0..<out.count where out.known(at: i) == .transferEncoding {
                for element in out.valueBytes(at: i).split(separator: 0x2C) {
                    let trimmed = element.drop(while: ByteClass.isWhitespace).reversed().drop(
                        while: ByteClass.isWhitespace
                    )
                    .reversed()
                    guard !trimmed.isEmpty else { continue }
                    if !codings.isEmpty { codings.append(contentsOf: [0x2C, 0x20]) }
                    codings.append(contentsOf: trimmed.map(ByteClass.lower))
                }
            }
            out.removeAll(.contentLength)
            out.removeAll(.transferEncoding)
            out.append(name: "Transfer-Encoding", value: codings, known: .transferEncoding)
        } else if case .contentLength(let n) = framing {
            out.removeAll(.contentLength)
            out.append(name: "Content-Length", value: Array(String(n).utf8), known: .contentLength)
        } else {
            out.removeAll(.contentLength)
            out.append(name: "Content-Length", value: [0x30], known: .contentLength)
        }
    }

    static let chunkedToken = Array("chunked".utf8)

    /// Removes the hop-by-hop fields of RFC 9110 §7.6.1: Connection and the fields it names, Keep-Alive,
    /// Proxy-Connection, TE, Upgrade (kept for an upgrade request), and Transfer-Encoding is kept because
    /// bodies are forwarded in their received framing.
    static func removeHopByHop(_ out: inout OutgoingHead, connection: ConnectionOptions, keepUpgrade: Bool) {
        let named = connection.fieldNames
        // One bit per known field that goes: a received line is judged by its classification alone.
        var hopByHop = hopByHopFields
        if !keepUpgrade { hopByHop |= KnownField.upgrade.bit }
        // Called on a head fresh from its source (no line written yet): a source without any of them has none.
        if named.isEmpty && out.count == out.source.fields.count && out.source.knownFields & hopByHop == 0 {
            return
        }
        var index = out.count - 1
        while index >= 0 {
            if hopByHop & out.known(at: index).bit != 0
                || (!named.isEmpty && named.contains(where: { out.name(at: index, is: $0) }))
            {
                out.remove(at: index)
            }
            index -= 1
        }
    }

    /// `Via` with the protocol the message was received in (RFC 9110 §7.6.3: `1.1`, `1.0`, or `2` for HTTP/2,
    /// which has no minor version).
    static func addVia(_ out: inout OutgoingHead, version: HTTPVersion, pseudonym: String) {
        // The common case without building a string each time.
        if version.minor <= 1 && version.major <= 2 && pseudonym == "cookie-proxy" {
            let value =
                version.major == 2 ? viaCookieProxy2 : version.minor == 1 ? viaCookieProxy11 : viaCookieProxy10
            out.append(name: "Via", value: value, known: .other)
        } else {
            let received = version.major == 1 ? "\(version.major).\(version.minor)" : "\(version.major)"
            out.append(name: "Via", value: Array("\(received) \(pseudonym)".utf8), known: .other)
        }
    }

    static let viaCookieProxy11 = Array("1.1 cookie-proxy".utf8)
    static let viaCookieProxy10 = Array("1.0 cookie-proxy".utf8)
    static let viaCookieProxy2 = Array("2 cookie-proxy".utf8)
    static let http11Suffix = Array(" HTTP/1.1".utf8)
    static let httpSchemePrefix = Array("http://".utf8)
    // Connection values the proxy writes, built once.
    static let upgradeToken = Array("upgrade".utf8)
    static let closeToken = Array("close".utf8)
    static let keepAliveToken = Array("keep-alive".utf8)
    /// Connection, Keep-Alive, Proxy-Connection and TE, one bit each by classification.
    static let hopByHopFields: UInt64 = [KnownField.connection, .keepAlive, .proxyConnection, .te].reduce(0) {
        $0 | $1.bit
    }
}
