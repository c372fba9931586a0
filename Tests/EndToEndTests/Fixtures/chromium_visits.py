#!/usr/bin/env python3
"""Visits URLs one after another in headless Chromium (Selenium, chromedriver) through a proxy, each a top-level
navigation that returns once the page and its frames have loaded; writes what Chromium really sent and received
as a HAR built from the DevTools protocol (devtools_har.py) and prints {"entries": N}.

usage: chromium_visits.py PROXY_URL HAR_OUT URL...
Third-party cookies are allowed (Chrome's default); certificate errors are ignored (the proxy's CA is not in
Chromium's store)."""
import json, sys, time

import devtools_har

proxy, har_out, urls = sys.argv[1], sys.argv[2], sys.argv[3:]
driver = devtools_har.driver(proxy)
try:
    for url in urls:
        driver.get(url)
    time.sleep(0.3)
    har = devtools_har.har(driver)
    with open(har_out, "w") as f:
        json.dump(har, f, indent=1)
    print(json.dumps({"entries": len(har["log"]["entries"])}))
finally:
    driver.quit()
