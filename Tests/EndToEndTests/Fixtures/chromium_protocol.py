#!/usr/bin/env python3
"""Loads a URL in headless Chromium (Selenium, chromedriver) through a proxy and prints, as JSON, the protocol
the DevTools protocol's Network.responseReceived gives for each response ("h2", "http/1.1"), and the page's text.

usage: chromium_protocol.py PROXY_URL URL
Chromium ignores certificate errors here (the proxy's CA is not in its store): what is checked is the protocol."""
import json, sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--ignore-certificate-errors",
             "--proxy-server=" + sys.argv[1]):
    options.add_argument(flag)
options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get(sys.argv[2])
    text = driver.find_element("tag name", "body").text
    protocols = {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.responseReceived":
            response = message["params"]["response"]
            protocols[response["url"]] = response.get("protocol")
    print(json.dumps({"protocols": protocols, "text": text}))
finally:
    driver.quit()
