"""The REST proxy with basic authentication and principal propagation in front of a SASL
broker with ACLs: each HTTP user's requests are made as that user's principal, so the ACLs
judge them (the proxy is never a way around an ACL), and ACLs are managed through v3. The
console, with the same settings, sees and counts what each user's principal may describe."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from strom.console.app import Console
from strom.rest.app import RestProxy
from strom.rest.settings import RestSettings
from strom.testing import Broker, unique_topic_name
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    security = Security(protocol="SASL_PLAINTEXT", users=USERS)
    config = {"authorizer.class.name": AUTHORIZER, "super.users": "User:admin"}
    with Broker(security=security, process=True, config=config) as started:
        yield started


@pytest.fixture(scope="module")
def settings(broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> RestSettings:
    directory = tmp_path_factory.mktemp("rest")
    passwords = directory / "password.properties"
    passwords.write_text("".join(f"{user}: {password},user\n" for user, password in USERS.items()))
    jaas = directory / "jaas.conf"
    jaas.write_text(
        "KafkaRest {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f'  file="{passwords}";\n}};\n'
    )
    return RestSettings.from_properties(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "listeners": "http://127.0.0.1:0",
            "authentication.method": "BASIC",
            "authentication.realm": "KafkaRest",
            "authentication.roles": "user",
            "java.security.auth.login.config": str(jaas),
            "confluent.rest.auth.propagate.method": "JETTY_AUTH",
            "client.security.protocol": "SASL_PLAINTEXT",
            "client.sasl.mechanism": "PLAIN",
        }
    )


@pytest.fixture(scope="module")
def proxy_url(settings: RestSettings) -> Iterator[str]:
    proxy = RestProxy(settings)
    proxy.start()
    yield proxy.url
    proxy.stop()


def _as(url: str, user: str, password: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=url, auth=(user, password or USERS[user]), timeout=30)


def test_each_user_is_judged_by_the_acls_as_itself(broker: Broker, proxy_url: str) -> None:
    with _as(proxy_url, "admin") as admin, _as(proxy_url, "alice") as alice:
        cluster = f"/v3/clusters/{admin.get('/v3/clusters').json()['data'][0]['cluster_id']}"
        topic = unique_topic_name("rest-acl")
        created = admin.post(f"{cluster}/topics", json={"topic_name": topic, "partitions_count": 1})
        assert created.status_code == 201, created.text
        record = {"value": {"type": "STRING", "data": "hello"}}
        refused = alice.post(f"{cluster}/topics/{topic}/records", json=record)
        assert (refused.status_code, refused.json()["error_code"]) == (403, 40301), refused.text
        acl = {"resource_type": "TOPIC", "resource_name": topic, "pattern_type": "LITERAL",
               "principal": "User:alice", "host": "*", "operation": "ALL",
               "permission": "ALLOW"}  # fmt: skip
        denied = alice.post(f"{cluster}/acls", json=acl)
        assert (denied.status_code, denied.json()["error_code"]) == (403, 40301)
        assert admin.post(f"{cluster}/acls", json=acl).status_code == 201
        found = admin.get(f"{cluster}/acls", params={"resource_type": "TOPIC",
                                                     "resource_name": topic}).json()  # fmt: skip
        assert [(a["principal"], a["operation"]) for a in found["data"]] == [("User:alice", "ALL")]
        answer = alice.post(f"{cluster}/topics/{topic}/records", json=record)
        assert (answer.status_code, answer.json()["offset"]) == (200, 0), answer.text
        deleted = admin.delete(f"{cluster}/acls", params={"resource_type": "TOPIC",
                                                          "resource_name": topic})  # fmt: skip
        assert [a["principal"] for a in deleted.json()["data"]] == ["User:alice"]


def _held(console: httpx.Client, topic: str) -> int | None:
    """The records held the topics page shows for ``topic`` (None: not on the page)."""
    rows = console.get("/api/console/topics", params={"records": "true"}).json()
    return next((row["records"] for row in rows if row["name"] == topic), None)


def test_the_console_counts_records_held_as_each_users_principal(settings: RestSettings) -> None:
    console = Console(settings)
    console.start()
    try:
        with _as(console.url, "admin") as admin, _as(console.url, "alice") as alice:
            cluster = f"/v3/clusters/{admin.get('/v3/clusters').json()['data'][0]['cluster_id']}"
            topic = unique_topic_name("console-acl")
            body = {"topic_name": topic, "partitions_count": 2}
            assert admin.post(f"{cluster}/topics", json=body).status_code == 201
            for value in ("a", "b", "c"):
                record = {"value": {"type": "STRING", "data": value}}
                assert admin.post(f"{cluster}/topics/{topic}/records", json=record).is_success
            assert _eventually(lambda: _held(admin, topic)) == 3
            assert _held(alice, topic) is None  # alice may not describe it
            acl = {"resource_type": "TOPIC", "resource_name": topic, "pattern_type": "LITERAL",
                   "principal": "User:alice", "host": "*", "operation": "DESCRIBE",
                   "permission": "ALLOW"}  # fmt: skip
            assert admin.post(f"{cluster}/acls", json=acl).status_code == 201
            assert _eventually(lambda: _held(alice, topic)) == 3  # counted with her login
    finally:
        console.stop()


def _eventually(read: Callable[[], int | None], timeout_s: float = 15.0) -> int | None:
    """What ``read`` gives once it gives something, or None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (found := read()) in (None, 0) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def test_a_wrong_password_or_no_login_is_refused(proxy_url: str) -> None:
    with _as(proxy_url, "alice", "wrong") as wrong:
        answer = wrong.get("/v3/clusters")
    assert (answer.status_code, answer.json()["error_code"]) == (401, 401)
    assert answer.headers["www-authenticate"] == 'Basic realm="KafkaRest"'
    assert httpx.get(f"{proxy_url}/v3/clusters").status_code == 401


def test_settings_that_cannot_work_stop_the_start(tmp_path: Path) -> None:
    cases = {
        "authentication.method=BASIC needs java.security.auth.login.config": {
            "authentication.method": "BASIC"},
        "confluent.rest.auth.propagate.method=JETTY_AUTH needs authentication.method=BASIC": {
            "confluent.rest.auth.propagate.method": "JETTY_AUTH"},
        "authentication.method: expected NONE or BASIC, got DIGEST": {
            "authentication.method": "digest"},
    }  # fmt: skip
    for message, values in cases.items():
        with pytest.raises(ValueError, match=message):
            RestSettings.from_properties(values, environ={})
