import CookieKit
import JSONStream

/// A consent state a browser audit visits the pages in, each in a fresh profile: no interaction with the banner,
/// its reject button clicked, its accept button clicked.
public enum ConsentState: String, Sendable, CaseIterable {
    case none, reject, accept

    /// The button the state clicks (none for `none`).
    public var button: ConsentButtons.Choice? {
        switch self {
        case .none: nil
        case .reject: .reject
        case .accept: .accept
        }
    }
}

/// Where consent banners put their accept and reject buttons: the ids and classes of the common consent platforms'
/// default banners, then the buttons' accessible names in the languages of the sites audited most. The user's own
/// selector (`--accept`, `--reject`) replaces all of them. The page is asked by a script (``findScript``) that
/// returns how it found the button; the click is then checked (``verifyScript``).
public enum ConsentButtons {
    public enum Choice: String, Sendable { case accept, reject }

    /// A platform's buttons, and where the markup was seen.
    public struct Platform: Sendable {
        public var name: String
        public var accept: String
        public var reject: String
        public var seen: String
    }

    /// The platforms, each by the selectors its default banner renders (the platform's banner markup as served,
    /// and its documentation for styling that banner).
    public static let platforms: [Platform] = [
        Platform(
            name: "OneTrust", accept: "#onetrust-accept-btn-handler", reject: "#onetrust-reject-all-handler",
            seen: "OneTrust's banner (otBannerSdk.js) markup; its CSS customisation guide names both ids"),
        Platform(
            name: "Cookiebot", accept: "#CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll",
            reject: "#CybotCookiebotDialogBodyButtonDecline",
            seen: "Cookiebot's dialog (consent.cookiebot.com/uc.js) markup"),
        Platform(
            name: "Didomi", accept: "#didomi-notice-agree-button", reject: "#didomi-notice-disagree-button",
            seen: "Didomi's notice markup; its developer docs' CSS selectors"),
        Platform(
            name: "Usercentrics", accept: "[data-testid=\"uc-accept-all-button\"]",
            reject: "[data-testid=\"uc-deny-all-button\"]", seen: "Usercentrics CMP v2 banner markup"),
        Platform(
            name: "CookieYes", accept: ".cky-btn-accept", reject: ".cky-btn-reject",
            seen: "CookieYes banner markup (its custom CSS guide)"),
        Platform(
            name: "Complianz", accept: ".cmplz-accept", reject: ".cmplz-deny",
            seen: "Complianz (WordPress plugin) banner markup"),
        Platform(
            name: "Google Funding Choices", accept: ".fc-cta-consent", reject: ".fc-cta-do-not-consent",
            seen: "Google's Privacy & messaging (Funding Choices) dialog markup"),
        Platform(
            name: "Osano", accept: ".osano-cm-accept-all", reject: ".osano-cm-denyAll",
            seen: "Osano Cookie Consent banner markup"),
        Platform(
            name: "Cookie Notice (dFactory)", accept: "#cn-accept-cookie", reject: "#cn-refuse-cookie",
            seen: "Cookie Notice & Compliance for GDPR (WordPress plugin) markup"),
        Platform(
            name: "iubenda", accept: ".iubenda-cs-accept-btn", reject: ".iubenda-cs-reject-btn",
            seen: "iubenda Cookie Solution banner markup"),
    ]

    /// Accessible names of accept buttons (compared whole, case and spacing ignored), English first.
    public static let acceptNames = [
        "accept all", "accept all cookies", "allow all", "allow all cookies", "accept cookies", "accept", "i agree",
        "agree", "got it", "alle akzeptieren", "alle cookies akzeptieren", "akzeptieren", "zustimmen",
        "tout accepter", "accepter", "accepter et fermer", "aceptar todo", "aceptar todas", "aceptar",
        "accetta tutto", "accetta tutti", "accetta", "alles accepteren", "accepteren", "aceitar tudo", "aceitar",
    ]

    /// Accessible names of reject buttons.
    public static let rejectNames = [
        "reject all", "reject all cookies", "reject", "decline", "decline all", "deny", "deny all", "refuse all",
        "only necessary", "necessary only", "only necessary cookies", "use necessary cookies only",
        "alle ablehnen", "ablehnen", "nur notwendige", "nur notwendige cookies", "tout refuser", "refuser",
        "continuer sans accepter", "rechazar todo", "rechazar todas", "rechazar", "rifiuta tutto", "rifiuta",
        "alles weigeren", "weigeren", "rejeitar tudo", "rejeitar",
    ]

    /// A script for the page that finds the `choice` button (by the user's `selector` alone, else the platforms',
    /// then the names), remembers it and its banner for ``clickScript`` and ``verifyScript``, and returns a JSON string:
    /// `{"found":true,"how":"…"}` or `{"found":false,"looked":"…"}`.
    public static func findScript(_ choice: Choice, selector: String?) -> String {
        // The user's selector alone when given: one that matches nothing is reported, not silently replaced.
        let selectors = selector.map { [$0] } ?? platforms.map { choice == .accept ? $0.accept : $0.reject }
        let names = selector != nil ? [] : choice == .accept ? acceptNames : rejectNames
        return """
            (() => {
              const visible = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
                return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
              const selectors = \(jsArray(selectors));
              const names = \(jsArray(names));
              let button = null, how = '';
              for (const s of selectors) {
                let e = null; try { e = document.querySelector(s); } catch (_) {}
                if (e && visible(e)) { button = e; how = 'selector ' + s; break; }
              }
              if (!button) {
                const norm = t => (t || '').replace(/\\s+/g, ' ').trim().toLowerCase();
                const all = [...document.querySelectorAll('button, a, [role=button], input[type=button], input[type=submit]')];
                for (const n of names) {
                  const e = all.find(e => visible(e) && (norm(e.innerText || e.value) === n || norm(e.getAttribute('aria-label')) === n));
                  if (e) { button = e; how = 'name "' + n + '"'; break; }
                }
              }
              if (!button) return JSON.stringify({found: false, looked: selectors.length + ' selectors and ' + names.length + ' names'});
              const banner = button.closest('[role=dialog], [role=alertdialog], [aria-modal=true], [id*=consent i], [class*=consent i], [id*=cookie i], [class*=cookie i], [id*=banner i], [class*=banner i]') || button;
              let storage = ''; try { storage = JSON.stringify(Object.entries(localStorage)); } catch (_) {}
              window.__cookieProxyConsent = {button, banner, cookie: document.cookie, storage};
              return JSON.stringify({found: true, how});
            })()
            """
    }

    /// Clicks the button ``findScript`` found.
    public static let clickScript =
        "(() => { const c = window.__cookieProxyConsent; if (c) c.button.click(); return !!c; })()"

    /// Whether the click took: a JSON string `{"taken":true,"sign":"…"}` when the banner is gone or hidden, or the
    /// page's cookies or local storage changed; `{"taken":false}` otherwise. (A navigation after the click, which
    /// some banners do, leaves no remembered banner: the caller then compares the browser's cookie store.)
    public static let verifyScript = """
        (() => {
          const c = window.__cookieProxyConsent;
          if (!c) return JSON.stringify({taken: false, sign: 'the page was replaced'});
          const b = c.banner;
          const hidden = !b.isConnected || !(b.getBoundingClientRect().width > 0) || getComputedStyle(b).visibility === 'hidden' || getComputedStyle(b).display === 'none';
          if (hidden) return JSON.stringify({taken: true, sign: 'the banner is gone'});
          if (document.cookie !== c.cookie) return JSON.stringify({taken: true, sign: 'the page cookies changed'});
          let storage = ''; try { storage = JSON.stringify(Object.entries(localStorage)); } catch (_) {}
          if (storage !== c.storage) return JSON.stringify({taken: true, sign: 'local storage changed'});
          return JSON.stringify({taken: false});
        })()
        """

    /// The page's text (the proxy's own answer, when it could not reach the site, says why in its first line).
    public static let bodyTextScript = "document.body ? document.body.innerText.slice(0, 500) : ''"

    /// The links of the page (absolute URLs), for ``PageSample``.
    public static let linksScript = "JSON.stringify([...document.links].map(a => a.href))"

    static func jsArray(_ strings: [String]) -> String {
        var out: [UInt8] = []
        JSONValue.array(strings.map { .string($0) }).write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
