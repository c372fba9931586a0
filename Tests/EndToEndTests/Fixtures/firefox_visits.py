#!/usr/bin/env python3
"""Visits URLs one after another in headless Firefox (Debian's firefox-esr, driven over WebDriver BiDi: no
geckodriver) through a proxy, and prints, as JSON, each page's text: what Firefox's own cookie store sent is what
the test origin's /read page shows.

usage: firefox_visits.py PROXY_PORT URL...
A fresh profile whose proxy is 127.0.0.1:PROXY_PORT for http and https; certificate errors are accepted (the
proxy's CA is not in Firefox's store)."""
import json, os, shutil, subprocess, sys, tempfile, threading, warnings

from websockets.sync.client import connect

warnings.filterwarnings("ignore", category=DeprecationWarning)
port, urls = int(sys.argv[1]), sys.argv[2:]
profile = tempfile.mkdtemp(prefix="cp-firefox-")
prefs = {
    "network.proxy.type": 1, "network.proxy.http": "127.0.0.1", "network.proxy.http_port": port,
    "network.proxy.ssl": "127.0.0.1", "network.proxy.ssl_port": port, "network.proxy.no_proxies_on": "",
    "browser.shell.checkDefaultBrowser": False, "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False, "browser.startup.homepage_override.mstone": "ignore",
    "app.update.enabled": False, "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False, "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False, "network.dns.disablePrefetch": True,
    "network.prefetch-next": False, "extensions.update.enabled": False,
}
with open(os.path.join(profile, "user.js"), "w") as f:
    for k, v in prefs.items():
        f.write("user_pref(%s, %s);\n" % (json.dumps(k), json.dumps(v)))
proc = subprocess.Popen(["firefox-esr", "--headless", "--no-remote", "--profile", profile,
                         "--remote-debugging-port=0"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                        env=dict(os.environ, HOME=profile, MOZ_CRASHREPORTER_DISABLE="1"))
try:
    url = None
    for line in proc.stderr:
        if "WebDriver BiDi listening on" in line:
            url = line.strip().split()[-1]
            break
    if url is None:
        raise SystemExit("Firefox did not start WebDriver BiDi")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    ws = connect(url + "/session", max_size=None)
    next_id = [0]

    def call(method, params, timeout=60):
        next_id[0] += 1
        wanted = next_id[0]
        ws.send(json.dumps({"id": wanted, "method": method, "params": params}))
        while True:
            m = json.loads(ws.recv(timeout=timeout))
            if m.get("id") == wanted:
                if m.get("type") == "error":
                    raise RuntimeError("%s: %s %s" % (method, m.get("error"), m.get("message")))
                return m.get("result", {})

    call("session.new", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": True}}})
    context = call("browsingContext.getTree", {})["contexts"][0]["context"]
    texts = []
    for u in urls:
        call("browsingContext.navigate", {"context": context, "url": u, "wait": "complete"})
        r = call("script.evaluate", {"expression": "document.body ? document.body.innerText : ''",
                                     "target": {"context": context}, "awaitPromise": False})
        texts.append(r.get("result", {}).get("value", ""))
    print(json.dumps({"texts": texts}))
    try:
        call("session.end", {}, timeout=5)
    except Exception:
        pass
finally:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(profile, ignore_errors=True)
