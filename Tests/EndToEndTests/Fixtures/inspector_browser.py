#!/usr/bin/env python3
"""Drives the inspector in a real headless Chromium (Selenium, chromium-driver) while traffic goes through the
proxy with curl. Prints one JSON object of what the page showed; the Swift test asserts on it.
Usage: inspector_browser.py INSPECTOR_URL PROXY_URL UPSTREAM_PORT SCREENSHOT LAYOUT_DIR
(SCREENSHOT: the page at 1500×900 with an exchange open; LAYOUT_DIR gets one screenshot per width checked)"""
import json, subprocess, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait, Select

inspector, proxy, port, screenshot, layout_dir = sys.argv[1:6]
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1500,900"]:
    options.add_argument(flag)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
out = {}
try:
    wait = WebDriverWait(driver, 20)
    driver.get(inspector)
    out["landed"] = driver.current_url
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-live") == "yes")
    rows = lambda: driver.find_elements(By.CSS_SELECTOR, "#rows tr")
    out["rowsBefore"] = len(rows())

    def through(*args):
        subprocess.run(["curl", "-s", "-o", "/dev/null", "-x", proxy] + list(args), check=True)

    base = f"http://login.site.test:{port}"
    through(f"{base}/setcookie?c=sid%3Ds3cr3t%3B%20Path%3D%2F&c=bad%3D1%3B%20SameSite%3DNone")
    through("-b", "sid=s3cr3t", f"http://app.site.test:{port}/path/home")
    through(f"http://other.test:{port}/setcookie?c=x%3D1")
    wait.until(lambda d: len(rows()) == 3)
    out["rowsLive"] = len(rows())
    out["urls"] = [r.find_elements(By.TAG_NAME, "td")[3].text for r in rows()]

    driver.find_element(By.ID, "filter").send_keys("host:login")
    wait.until(lambda d: sum(1 for r in rows() if r.is_displayed()) == 1)
    out["rowsFiltered"] = [r.find_elements(By.TAG_NAME, "td")[3].text for r in rows() if r.is_displayed()]
    driver.find_element(By.ID, "filter").clear()
    driver.find_element(By.ID, "filter").send_keys("finding:samesite-none")
    wait.until(lambda d: sum(1 for r in rows() if r.is_displayed()) == 1)
    out["rowsByFinding"] = sum(1 for r in rows() if r.is_displayed())
    driver.find_element(By.ID, "filter").clear()
    driver.find_element(By.ID, "filter").send_keys(" ")
    wait.until(lambda d: all(r.is_displayed() for r in rows()))

    rows()[0].click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#detail .cookie")) == 2)
    cookies = driver.find_elements(By.CSS_SELECTOR, "#detail .cookie")
    out["detail"] = [c.text for c in cookies]
    out["changes"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#detail .change")]
    out["findingBadges"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#detail .findings .badge")]
    driver.save_screenshot(screenshot)

    # The layout holds from 1024 to 1920 pixels wide, with an exchange open: the list never runs under the detail
    # (side by side from 1500, stacked below), the page never scrolls sideways, and the URL column keeps room.
    out["layout"] = {}
    for width in [1024, 1280, 1400, 1500, 1920]:
        driver.set_window_size(width, 900)
        time.sleep(0.2)
        out["layout"][str(width)] = driver.execute_script("""
            const list = document.getElementById('list').getBoundingClientRect();
            const detail = document.getElementById('detail').getBoundingClientRect();
            const url = document.querySelector('#rows tr td:nth-child(4)').getBoundingClientRect();
            const apart = list.right <= detail.left + 0.5 || list.bottom <= detail.top + 0.5;
            return {apart: apart, sideways: document.documentElement.scrollWidth > window.innerWidth,
                    urlWidth: Math.round(url.width)};""")
        driver.save_screenshot(f"{layout_dir}/inspector-{width}.png")
    driver.set_window_size(1500, 900)

    driver.find_element(By.CSS_SELECTOR, ".tab[data-tab=jar]").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#jar-client option")) >= 1)
    # The one client (on loopback, the address and curl's product: the lifecycle's key).
    Select(driver.find_element(By.ID, "jar-client")).select_by_index(0)
    out["jarClient"] = driver.find_element(By.ID, "jar-client").get_attribute("value")
    field = driver.find_element(By.ID, "jar-url")
    field.send_keys(f"http://app.site.test:{port}/")
    driver.find_element(By.ID, "jar-go").click()
    wait.until(lambda d: d.find_element(By.ID, "jar-header").text not in ("", "(type a URL)"))
    out["jarHeader"] = driver.find_element(By.ID, "jar-header").text
    out["jarRejected"] = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#jar-rejected tr")]
    out["jarHeld"] = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#jar-cookies tr")]

    driver.find_element(By.CSS_SELECTOR, ".tab[data-tab=rules]").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rules-body tr")) >= 1)
    out["rules"] = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#rules-body tr")]

    # The lifecycle: the same client sends sid with another value; the list's "Sent back?" column says so, the
    # detail says why, and the cookie's name opens its timeline.
    through("-b", "sid=other", f"http://app.site.test:{port}/path/again")
    driver.find_element(By.CSS_SELECTOR, ".tab[data-tab=exchanges]").click()
    wait.until(lambda d: len(rows()) == 4)
    out["sentBack"] = [r.find_elements(By.TAG_NAME, "td")[6].text for r in rows()]
    rows()[3].click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#detail .lifecycle")) == 1)
    out["lifecycle"] = driver.find_element(By.CSS_SELECTOR, "#detail .lifecycle").text
    driver.find_element(By.CSS_SELECTOR, "#detail .lifecycle a").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#detail table tr")) >= 2)
    out["timeline"] = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#detail table tr")]
    out["consoleErrors"] = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
finally:
    driver.quit()
print(json.dumps(out))
