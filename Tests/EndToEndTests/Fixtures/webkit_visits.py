#!/usr/bin/env python3
"""Visits URLs one after another in WebKitGTK (Debian's WebKitWebDriver starting the MiniBrowser in automation
mode) through a proxy, and prints, as JSON, each page's text: what WebKit's own cookie store sent is what the test
origin's /read page shows. Needs a display (run under xvfb-run) and, as root, WebKit's sandbox off.

usage: webkit_visits.py PROXY_URL URL...   (PROXY_URL "-": no proxy, the URLs are the proxy's own)
Certificate errors are accepted (the proxy's CA is not in WebKit's store)."""
import json, os, socket, subprocess, sys, time, urllib.request

proxy, urls = sys.argv[1], sys.argv[2:]
s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
# https goes to a proxy only by the environment (GLib's resolver); the driver itself is reached over loopback.
env = dict(os.environ, WEBKIT_DISABLE_SANDBOX_THIS_IS_DANGEROUS="1")
if proxy != "-":
    env.update(https_proxy=proxy, http_proxy=proxy, no_proxy="127.0.0.1,localhost")
driver = subprocess.Popen(["WebKitWebDriver", "--port=%d" % port], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)


def call(method, path, body=None, timeout=60):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=timeout).read())["value"]


try:
    deadline = time.time() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    session = call("POST", "/session", {"capabilities": {"alwaysMatch": {
        "acceptInsecureCerts": True,
        "webkitgtk:browserOptions": {"binary": "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser",
                                     "args": ["--automation"]},
        "proxy": {"proxyType": "system"}}}})["sessionId"]
    texts = []
    for url in urls:
        call("POST", "/session/%s/url" % session, {"url": url})
        texts.append(call("POST", "/session/%s/execute/sync" % session,
                          {"script": "return document.body ? document.body.innerText : ''", "args": []}))
    current = call("GET", "/session/%s/url" % session)
    call("DELETE", "/session/%s" % session, timeout=10)
    print(json.dumps({"texts": texts, "url": current}))
finally:
    driver.terminate()
    try:
        driver.wait(timeout=10)
    except subprocess.TimeoutExpired:
        driver.kill()
