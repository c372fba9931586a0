#!/usr/bin/env python3
"""Visits URLs one after another in headless Chromium (Selenium, chromedriver) through a proxy, each a top-level
navigation that returns once the page and its frames have loaded (a /form page once the POST it submits has
landed); writes what Chromium really sent and received
as a HAR built from the DevTools protocol (devtools_har.py) and prints {"entries": N}.

usage: chromium_visits.py PROXY_URL HAR_OUT URL...   (a `sleep:MS` in the list waits that long; PROXY_URL "-":
no proxy, the URLs are the proxy's own)
Third-party cookies are allowed (Chrome's default); certificate errors are ignored (the proxy's CA is not in
Chromium's store)."""
import json, sys, time

from selenium.webdriver.support.ui import WebDriverWait

import devtools_har

proxy, har_out, urls = sys.argv[1], sys.argv[2], sys.argv[3:]
driver = devtools_har.driver(proxy)
try:
    for url in urls:
        if url.startswith("sleep:"):
            time.sleep(int(url[6:]) / 1000)
            continue
        driver.get(url)
        if "/form?" in url:
            # The page submits itself: wait for the navigation it starts to land.
            WebDriverWait(driver, 20).until(lambda d: "/form?" not in d.current_url
                                            and d.execute_script("return document.readyState") == "complete")
    time.sleep(0.3)
    har = devtools_har.har(driver)
    with open(har_out, "w") as f:
        json.dump(har, f, indent=1)
    print(json.dumps({"entries": len(har["log"]["entries"]), "url": driver.current_url,
                      "text": driver.find_element("tag name", "body").text}))
finally:
    driver.quit()
