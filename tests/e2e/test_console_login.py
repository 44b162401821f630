"""The console's own login in headless Chromium, over HTTPS: with basic authentication's users
configured (the REST proxy's settings), every page and API asks for a login first, a wrong
password gets the login page again with its error, the right one shows the cluster page, and
logging out asks again."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from e2e.browser import eventually
from e2e.conftest import Server
from strom.console.app import Console
from strom.rest.settings import RestSettings
from strom.testing.certificates import CertificateAuthority

pytestmark = pytest.mark.timeout(120)

PAGE_S = 20.0
USERS = {"ops": "ops-secret", "guest": "guest-secret"}


@pytest.fixture(scope="module")
def ca_file(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[CertificateAuthority, Path]]:
    ca = CertificateAuthority()
    yield ca, ca.write_pem(tmp_path_factory.mktemp("ca") / "ca.pem")


@pytest.fixture(scope="module")
def console(
    server: Server,
    ca_file: tuple[CertificateAuthority, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    ca, _ = ca_file
    directory = tmp_path_factory.mktemp("console-login")
    keystore = ca.issue("console", hosts=("127.0.0.1",)).write_pkcs12(
        directory / "console.p12", "store-secret"
    )
    passwords = directory / "password.properties"
    passwords.write_text("ops: ops-secret,operator\nguest: guest-secret,guest\n")
    jaas = directory / "jaas.conf"
    jaas.write_text(
        "KafkaRest {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f'  file="{passwords}";\n}};\n'
    )
    settings = RestSettings.from_properties(
        {
            "bootstrap.servers": server.bootstrap,
            "listeners": "https://127.0.0.1:0",
            "ssl.keystore.location": str(keystore),
            "ssl.keystore.password": "store-secret",
            "ssl.key.password": "store-secret",
            "ssl.keystore.type": "PKCS12",
            "authentication.method": "BASIC",
            "authentication.roles": "operator",
            "java.security.auth.login.config": str(jaas),
        },
        environ={},
    )
    started = Console(settings)
    started.start()
    yield started.url
    started.stop()


@pytest.fixture
def trusting(browser: Any) -> Iterator[Any]:
    """The run's browser, trusting the test CA's certificate for this test (DevTools)."""
    browser.execute_cdp_cmd("Security.setIgnoreCertificateErrors", {"ignore": True})
    try:
        yield browser
    finally:
        browser.execute_cdp_cmd("Security.setIgnoreCertificateErrors", {"ignore": False})
        browser.delete_all_cookies()


def _text(browser: Any, selector: str) -> str:
    from selenium.common.exceptions import WebDriverException  # noqa: PLC0415
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    try:
        return str(browser.find_element(By.CSS_SELECTOR, selector).text)
    except WebDriverException:
        return ""


def _log_in(browser: Any, user: str, password: str) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    browser.find_element(By.ID, "login-user").clear()
    browser.find_element(By.ID, "login-user").send_keys(user)
    browser.find_element(By.ID, "login-password").send_keys(password)
    browser.find_element(By.ID, "login-submit").click()


def test_the_console_asks_for_a_login_over_https(trusting: Any, console: str) -> None:
    from selenium.webdriver.common.by import By  # noqa: PLC0415

    assert console.startswith("https://")
    trusting.get(f"{console}/#/cluster")
    eventually(lambda: "/login" in trusting.current_url, seconds=PAGE_S, what="the login page")
    _log_in(trusting, "ops", "wrong")
    eventually(lambda: "Wrong user name or password" in _text(trusting, "#login-error"),
               seconds=PAGE_S, what="the wrong password refused")  # fmt: skip
    _log_in(trusting, "guest", USERS["guest"])
    eventually(lambda: "may not use the console" in _text(trusting, "#login-error"),
               seconds=PAGE_S, what="a user without the role refused")  # fmt: skip
    _log_in(trusting, "ops", USERS["ops"])
    eventually(lambda: _text(trusting, "#brokers-up") == "1 / 1", seconds=PAGE_S,
               what="the cluster page after logging in")  # fmt: skip
    trusting.find_element(By.ID, "logout").click()
    eventually(lambda: "/login" in trusting.current_url, seconds=PAGE_S, what="logged out")
    trusting.get(f"{console}/")
    eventually(lambda: "/login" in trusting.current_url, seconds=PAGE_S,
               what="the login page again after logging out")  # fmt: skip


def test_the_api_needs_a_session_or_a_login(
    console: str, ca_file: tuple[CertificateAuthority, Path]
) -> None:
    verify = ssl.create_default_context(cafile=str(ca_file[1]))
    with httpx.Client(base_url=console, verify=verify, timeout=30) as client:
        refused = client.get("/api/console/cluster")
        assert (refused.status_code, refused.json()["error_code"]) == (401, 401)
        wrong = client.post("/login", data={"username": "ops", "password": "nope"})
        assert wrong.status_code == 401 and "Wrong user name or password" in wrong.text
        logged_in = client.post("/login", data={"username": "ops", "password": USERS["ops"]})
        assert logged_in.status_code == 303
        assert client.get("/api/console/cluster").json()["brokers"][0]["alive"] is True
        client.get("/logout")
        assert client.get("/api/console/cluster").status_code == 401
    basic = httpx.get(f"{console}/api/console/features", verify=verify, auth=("ops", "ops-secret"))
    assert basic.json()["login"] is True
