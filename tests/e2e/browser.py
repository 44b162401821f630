"""One headless Chromium per test run (Debian's ``chromium`` and ``chromium-driver``, never a
browser downloaded at run time), driven by Selenium; skipped, saying why, where they are not
installed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def headless_chromium() -> Iterator[Any]:
    """The browser (a Selenium ``WebDriver``), quit at the end."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("no chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium import webdriver  # noqa: PLC0415 - only the browser tests need it
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,900"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def eventually(check: Callable[[], bool], *, seconds: float, what: str) -> None:
    """Wait until ``check()`` holds (the page refreshes every two seconds)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f} s: {what}")
        time.sleep(0.25)
