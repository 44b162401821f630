"""sasl.jaas.config, as Kafka's JaasConfig parses it."""

from __future__ import annotations

import pytest

from strom.security.jaas import JaasConfigError, parse_jaas_config

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_a_plain_module_with_users() -> None:
    module = parse_jaas_config(
        f'{PLAIN} required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="al\\"ice";'
    )
    assert module.class_name == PLAIN
    assert module.flag == "required"
    assert module.options["username"] == "admin"
    assert dict(module.users()) == {"admin": "admin-secret", "alice": 'al"ice'}


def test_bare_values_and_whitespace() -> None:
    module = parse_jaas_config(f'\n  {PLAIN}  Optional\n  a=b  c = "d e" ;  ')
    assert module.flag == "optional"
    assert dict(module.options) == {"a": "b", "c": "d e"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected a login module"),
        (f"{PLAIN} always a=b;", "expected a control flag"),
        (f"{PLAIN} required a=b", "must end with ';'"),
        (f"{PLAIN} required a b;", "expected name=value"),
        (f'{PLAIN} required a="b;', "unterminated"),
        (f"{PLAIN} required; {PLAIN} required;", "expected one login module"),
    ],
)
def test_malformed_configs_say_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(JaasConfigError, match=message):
        parse_jaas_config(text)
