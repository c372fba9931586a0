"""What headless Chromium really sent and received, as a HAR built from the DevTools protocol's Network events
(requestWillBeSentExtraInfo and responseReceivedExtraInfo carry the Cookie and Set-Cookie headers as sent and
received, after Chromium's own cookie store decided): shared by the Chromium fixtures."""
import json, time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def driver(proxy, block_third_party=False):
    """Headless Chromium through `proxy` ("-": none, the proxy being the origin), certificate errors ignored (the
    proxy's CA is not in its store), the performance log on, Chrome's "Block third-party cookies" setting as asked
    (this Chromium's own default blocks them)."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--ignore-certificate-errors"]
    for flag in flags + ([] if proxy == "-" else ["--proxy-server=" + proxy]):
        options.add_argument(flag)
    options.add_experimental_option(
        "prefs", {"profile.block_third_party_cookies": block_third_party,
                  "profile.cookie_controls_mode": 1 if block_third_party else 0})
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def har(driver):
    """The HAR of everything the driver's performance log holds (read once: the log empties as it is read)."""
    requests, order = {}, []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        method, params = message.get("method"), message.get("params", {})
        rid = params.get("requestId")
        if method == "Network.requestWillBeSent" and rid not in requests:
            order.append(rid)
            requests[rid] = {"url": params["request"]["url"], "method": params["request"]["method"],
                             "wallTime": params.get("wallTime", time.time()), "requestHeaders": params["request"]["headers"]}
        elif method == "Network.requestWillBeSentExtraInfo":
            requests.setdefault(rid, {})["extraRequestHeaders"] = params["headers"]
        elif method == "Network.responseReceived":
            requests.setdefault(rid, {})["status"] = params["response"]["status"]
            requests[rid]["responseHeaders"] = params["response"]["headers"]
        elif method == "Network.responseReceivedExtraInfo":
            requests.setdefault(rid, {})["extraResponseHeaders"] = params["headers"]
    entries = []
    for rid in order:
        r = requests[rid]
        if not r.get("url", "").startswith("http"):
            continue
        req = r.get("extraRequestHeaders") or r.get("requestHeaders", {})
        res = r.get("extraResponseHeaders") or r.get("responseHeaders", {})
        started = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(r["wallTime"])) + ".%03dZ" % int((r["wallTime"] % 1) * 1000)
        entries.append({
            "startedDateTime": started, "time": 0,
            "request": {"method": r["method"], "url": r["url"], "httpVersion": "HTTP/1.1", "cookies": [],
                        "headers": [{"name": k, "value": v} for k, v in req.items()], "queryString": [],
                        "headersSize": -1, "bodySize": 0},
            "response": {"status": r.get("status", 0), "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [],
                         "headers": [{"name": k, "value": v} for k, v in res.items()],
                         "content": {"size": 0, "mimeType": ""}, "redirectURL": "", "headersSize": -1, "bodySize": -1},
            "cache": {}, "timings": {"send": 0, "wait": 0, "receive": 0}})
    return {"log": {"version": "1.2", "creator": {"name": "cookie-proxy tests (DevTools protocol)", "version": "1"},
                   "pages": [], "entries": entries}}
