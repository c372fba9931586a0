#!/usr/bin/env python3
"""Opens an audit's report.html in headless Chromium (Selenium, chromedriver) at each width given, and prints, as
JSON per width: the page's scroll width against the window's inner width (a page readable without horizontal
scrolling has the first no larger), the cookie table's rows, the screenshots' images that loaded, and the PNG of
the window saved beside the report (report-<width>.png).

usage: report_layout.py REPORT_HTML WIDTH..."""
import json, sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"):
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
out = {}
try:
    for width in sys.argv[2:]:
        driver.set_window_size(int(width), 1000)
        driver.get("file://" + sys.argv[1])
        facts = driver.execute_script("""
            const tables = document.querySelectorAll('table');
            const images = [...document.images];
            return {scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
                    cookieRows: tables.length > 1 ? tables[1].rows.length - 1 : -1,
                    images: images.length, loaded: images.filter(i => i.complete && i.naturalWidth > 0).length};
        """)
        shot = sys.argv[1].rsplit("/", 1)[0] + "/report-%s.png" % width
        driver.save_screenshot(shot)
        facts["screenshot"] = shot
        out[width] = facts
    print(json.dumps(out))
finally:
    driver.quit()
