#!/usr/bin/env python3
"""A first-party visit that sets a widget's cookies, then a page of another site that frames the widget, in headless
Chromium (Selenium, chromedriver) through a proxy; writes what Chromium did as a HAR built from the DevTools
protocol's Network events (requestWillBeSentExtraInfo and responseReceivedExtraInfo carry the Cookie and Set-Cookie
headers really sent and received), and prints, as JSON, the text the framed page showed.

usage: chromium_lifecycle.py PROXY_URL SET_URL FRAMING_URL HAR_OUT [block-third-party]
Chromium ignores certificate errors here (the proxy's CA is not in its store)."""
import json, sys, time

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import devtools_har

proxy, set_url, framing_url, har_out = sys.argv[1:5]
block = len(sys.argv) > 5 and sys.argv[5] == "block-third-party"
driver = devtools_har.driver(proxy, block)
try:
    driver.get(set_url)
    driver.get(framing_url)
    WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "f"))
    driver.switch_to.frame(driver.find_element(By.ID, "f"))
    WebDriverWait(driver, 20).until(lambda d: "COOKIE[" in d.find_element(By.TAG_NAME, "body").text)
    frame_text = driver.find_element(By.TAG_NAME, "body").text
    driver.switch_to.default_content()
    time.sleep(0.3)
    har = devtools_har.har(driver)
    with open(har_out, "w") as f:
        json.dump(har, f, indent=1)
    print(json.dumps({"frameText": frame_text, "entries": len(har["log"]["entries"])}))
finally:
    driver.quit()
