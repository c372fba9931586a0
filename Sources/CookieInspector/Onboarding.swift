import HTTPGrammar

/// The pages a device gets at `http://cookie-proxy.local/` through the proxy (as mitmproxy's mitm.it): the CA
/// certificate as PEM, DER and an iOS configuration profile, with the steps per platform. Only the certificate is
/// ever served, never its key; with interception off the page names no CA.
public enum Onboarding {
    public static func page(caName: String?) -> String {
        let head = """
            <!doctype html><html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>cookie-proxy</title>
            <style>body{font:16px/1.5 system-ui,sans-serif;max-width:44rem;margin:2rem auto;padding:0 1rem;color:#222}
            h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}code{background:#f2f2f2;padding:0 .2rem}
            a.button{display:inline-block;margin:.2rem .4rem .2rem 0;padding:.4rem .8rem;border:1px solid #36c;border-radius:4px;text-decoration:none}
            </style></head><body>
            <h1>This device is using cookie-proxy</h1>

            """
        guard let caName else {
            return head
                + "<p>Plain http goes through the proxy. HTTPS interception is off, so there is nothing to install here.</p></body></html>\n"
        }
        let name = escape(caName)
        return head + """
            <p>To let the proxy see and rewrite cookies on https, this device must trust its local certificate
            authority, <b>\(name)</b>. Install it only on devices you use for development: whoever holds its key
            can read this device's https traffic. Remove it when you are done.</p>
            <p><a class="button" href="/ca.mobileconfig">iOS profile</a><a class="button" href="/ca.der">Certificate (DER, .cer)</a><a class="button" href="/ca.pem">Certificate (PEM)</a></p>
            <h2>iPhone and iPad</h2>
            <ol><li>Open this page in Safari and tap <b>iOS profile</b>; allow the download.</li>
            <li>Settings → General → VPN &amp; Device Management → <b>cookie-proxy CA</b> → Install.</li>
            <li>Settings → General → About → Certificate Trust Settings → turn on full trust for <b>\(name)</b>.</li></ol>
            <h2>iOS simulator</h2>
            <p>On the Mac: <code>cookie-proxy ca install --simulator</code>, or drag <b>Certificate (PEM)</b> onto the
            simulator window, then turn on full trust as on a device (step 3).</p>
            <h2>Android</h2>
            <ol><li>Tap <b>Certificate (DER, .cer)</b>.</li>
            <li>Settings → Security → Encryption &amp; credentials → Install a certificate → CA certificate → pick the file.</li>
            <li>Apps trust user CAs only if they opt in (network security config); Chrome does.</li></ol>
            <h2>macOS</h2>
            <p><code>cookie-proxy ca install</code> on that Mac, or open <b>Certificate (PEM)</b> in Keychain Access and set
            it to Always Trust.</p>
            <h2>Linux</h2>
            <p><code>cookie-proxy ca install --nss</code> (Chromium) or <code>sudo cookie-proxy ca install --system</code>
            (curl, Python, the system store).</p>
            <h2>Firefox</h2>
            <p>Settings → Privacy &amp; Security → Certificates → View Certificates → Authorities → Import
            <b>Certificate (PEM)</b>, and tick "Trust this CA to identify websites".</p>
            </body></html>

            """
    }

    /// An iOS configuration profile that installs the CA certificate (payload type `com.apple.security.root`);
    /// its identifiers are derived from the certificate, so the same CA gives the same profile.
    public static func mobileconfig(der: [UInt8], name: String) -> String {
        let payload = uuid(der, seed: 0x6370_6361)
        let profile = uuid(der, seed: 0x6370_7072)
        let escaped = escape(name)
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
                <key>PayloadContent</key>
                <array>
                    <dict>
                        <key>PayloadCertificateFileName</key>
                        <string>cookie-proxy-ca.cer</string>
                        <key>PayloadContent</key>
                        <data>\(Base64.encode(der))</data>
                        <key>PayloadDescription</key>
                        <string>Adds the cookie-proxy local CA as a trusted root</string>
                        <key>PayloadDisplayName</key>
                        <string>\(escaped)</string>
                        <key>PayloadIdentifier</key>
                        <string>local.cookie-proxy.ca.\(payload)</string>
                        <key>PayloadType</key>
                        <string>com.apple.security.root</string>
                        <key>PayloadUUID</key>
                        <string>\(payload)</string>
                        <key>PayloadVersion</key>
                        <integer>1</integer>
                    </dict>
                </array>
                <key>PayloadDescription</key>
                <string>Lets cookie-proxy intercept https on this device (development only)</string>
                <key>PayloadDisplayName</key>
                <string>cookie-proxy CA</string>
                <key>PayloadIdentifier</key>
                <string>local.cookie-proxy.profile.\(profile)</string>
                <key>PayloadRemovalDisallowed</key>
                <false/>
                <key>PayloadType</key>
                <string>Configuration</string>
                <key>PayloadUUID</key>
                <string>\(profile)</string>
                <key>PayloadVersion</key>
                <integer>1</integer>
            </dict>
            </plist>

            """
    }

    static func escape(_ s: String) -> String {
        s.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;").replacingAll("\"", "&quot;")
    }

    /// An RFC 4122 (version 4 layout) UUID from two FNV-1a hashes of `bytes`: stable for one certificate.
    static func uuid(_ bytes: [UInt8], seed: UInt64) -> String {
        func fnv(_ basis: UInt64) -> UInt64 {
            var h = basis
            for b in bytes {
                h ^= UInt64(b)
                h = h &* 0x100_0000_01b3
            }
            return h
        }
        var hi = fnv(0xcbf2_9ce4_8422_2325 ^ seed)
        var lo = fnv(0x8422_2325_cbf2_9ce4 ^ seed)
        hi = (hi & ~0xF000) | 0x4000
        lo = (lo & ~(0xC << 60)) | (0x8 << 60)
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for (i, word) in [hi, lo].enumerated() {
            for k in 0..<16 {
                if (i == 0 && (k == 8 || k == 12)) || (i == 1 && k == 0) || (i == 1 && k == 4) { out.append(0x2D) }
                out.append(hex[Int((word >> UInt64(60 - 4 * k)) & 0xF)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension String {
    func replacingAll(_ target: String, _ replacement: String) -> String {
        split(separator: Substring(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
