#!/usr/bin/env python3
"""A first-party visit that sets a widget's cookies, then a page of another site that frames the widget, in headless
Chromium (Selenium, chromedriver) through a proxy; writes what Chromium did as a HAR built from the DevTools
protocol's Network events (requestWillBeSentExtraInfo and responseReceivedExtraInfo carry the Cookie and Set-Cookie
headers really sent and received), and prints, as JSON, the text the framed page showed.

usage: chromium_lifecycle.py PROXY_URL SET_URL FRAMING_URL HAR_OUT [block-third-party]
Chromium ignores certificate errors here (the proxy's CA is not in its store)."""
import json, sys, time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

proxy, set_url, framing_url, har_out = sys.argv[1:5]
block = len(sys.argv) > 5 and sys.argv[5] == "block-third-party"
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--ignore-certificate-errors",
             "--proxy-server=" + proxy):
    options.add_argument(flag)
# Chrome's "Block third-party cookies" setting (what Incognito does by default), on or off as asked: this Chromium's
# own default blocks them.
options.add_experimental_option(
    "prefs", {"profile.block_third_party_cookies": block, "profile.cookie_controls_mode": 1 if block else 0})
options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get(set_url)
    driver.get(framing_url)
    WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "f"))
    driver.switch_to.frame(driver.find_element(By.ID, "f"))
    WebDriverWait(driver, 20).until(lambda d: "COOKIE[" in d.find_element(By.TAG_NAME, "body").text)
    frame_text = driver.find_element(By.TAG_NAME, "body").text
    driver.switch_to.default_content()
    time.sleep(0.3)
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
    har = {"log": {"version": "1.2", "creator": {"name": "chromium_lifecycle.py (DevTools protocol)", "version": "1"},
                   "pages": [], "entries": entries}}
    with open(har_out, "w") as f:
        json.dump(har, f, indent=1)
    print(json.dumps({"frameText": frame_text, "entries": len(entries)}))
finally:
    driver.quit()
