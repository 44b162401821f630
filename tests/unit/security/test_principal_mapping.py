"""ssl.principal.mapping.rules, as Kafka's SslPrincipalMapperTest exercises them."""

from __future__ import annotations

import pytest

from strom.security.principal_mapping import NoMatchingRule, PrincipalMapper


def test_default_keeps_the_distinguished_name() -> None:
    assert PrincipalMapper().name_of("CN=alice,OU=eng,O=acme") == "CN=alice,OU=eng,O=acme"


@pytest.mark.parametrize(
    ("rules", "name", "expected"),
    [
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "CN=kafka-server,OU=ServiceUsers,O=Org",
            "kafka-server",
        ),
        ("RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L", "CN=Duke,OU=JavaSoft,O=Sun", "duke@javasoft"),
        ("RULE:^CN=(.*?),OU=(.*?)$/$1/U", "CN=duke,OU=x", "DUKE"),
        ("RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/", "cn=a,ou=b,dc=c,dc=d", "a@b"),
        ("RULE:^CN=(.*)$/$12/", "CN=x", "x2"),
        ("RULE:^CN=(.*)$/$2/", "CN=x", "$2"),
        ("RULE:^CN=(.*)$/a\\/b/", "CN=x", "a/b"),
        ("RULE:^OU=(.*)$/$1/, DEFAULT", "CN=x", "CN=x"),
        ("RULE:^CN=(.*)$/$1/,RULE:^OU=(.*)$/$1/L", "OU=Team", "team"),
    ],
)
def test_rules_map_as_kafka_does(rules: str, name: str, expected: str) -> None:
    assert PrincipalMapper(rules).name_of(name) == expected


def test_a_name_no_rule_matches_fails() -> None:
    with pytest.raises(NoMatchingRule, match="CN=x"):
        PrincipalMapper("RULE:^OU=(.*)$/$1/").name_of("CN=x")


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*)$/$1/X", "nonsense", "RULE:[/x/"])
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(ValueError, match="invalid rule"):
        PrincipalMapper(rules)
