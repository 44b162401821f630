"""sasl.jaas.config, as Kafka's JaasConfig parses it, and JAAS files, as Java's ConfigFile."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.security.jaas import (
    JaasConfigError,
    login_config_from_jvm_options,
    parse_jaas_config,
    parse_jaas_file,
    read_jaas_file,
    server_section,
)

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


SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_a_jaas_file_with_sections_comments_and_several_modules() -> None:
    sections = parse_jaas_file(
        "/* the brokers */\n"
        "KafkaServer {\n"
        f'  {PLAIN} required // the first\n    username="admin" user_alice="a//b";\n'
        f'  {SCRAM} required username="admin" password="/* kept */";\n'
        "};\n"
        f'sasl_ssl.KafkaServer {{ {PLAIN} required user_bob="b}}"; }};\n'
        "Client{com.example.Other optional;};"
    )
    assert list(sections) == ["KafkaServer", "sasl_ssl.KafkaServer", "Client"]
    plain, scram = sections["KafkaServer"]
    assert dict(plain.users()) == {"alice": "a//b"}
    assert scram.class_name == SCRAM and scram.options["password"] == "/* kept */"
    assert dict(sections["sasl_ssl.KafkaServer"][0].users()) == {"bob": "b}"}
    assert sections["Client"][0].flag == "optional"


def test_a_listener_section_wins_over_kafka_server() -> None:
    sections = parse_jaas_file(
        f"KafkaServer {{ {PLAIN} required; }}; sasl_ssl.KafkaServer {{ {SCRAM} required; }};"
    )
    assert server_section(sections, "SASL_SSL") == sections["sasl_ssl.KafkaServer"]
    assert server_section(sections, "INTERNAL") == sections["KafkaServer"]
    assert server_section({}, "INTERNAL") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"KafkaServer {{ {PLAIN} required a=b; }}", r"line 1: expected a section"),
        (f"\n{PLAIN} required a=b;", r"line 2: expected a section 'Name \{ \.\.\. \};'"),
        ("KafkaServer { };", r"section 'KafkaServer' \(line 1\) has no login module"),
        (
            f"\n\nKafkaServer {{\n {PLAIN} required a=b }};",
            r"section 'KafkaServer' \(line 3\): .* must end",
        ),
        (
            f"A {{ {PLAIN} required; }};\nA {{ {PLAIN} required; }};",
            r"'A' \(line 2\) appears twice",
        ),
        (f'A {{ {PLAIN} required a="b; }};', "expected a section"),
    ],
)
def test_malformed_files_say_where(text: str, message: str) -> None:
    with pytest.raises(JaasConfigError, match=message):
        parse_jaas_file(text)


def test_reading_a_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.conf"
    with pytest.raises(JaasConfigError, match=f"{missing}: No such file"):
        read_jaas_file(missing)
    bad = tmp_path / "bad.conf"
    bad.write_text("KafkaServer {")
    with pytest.raises(JaasConfigError, match=f"{bad}: line 1"):
        read_jaas_file(bad)


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ("-Xmx1g -Djava.security.auth.login.config=/etc/kafka/jaas.conf", "/etc/kafka/jaas.conf"),
        ("-Djava.security.auth.login.config=='/a b/jaas.conf' -Dother=1", "/a b/jaas.conf"),
        ("-Djava.security.auth.login.config=a -Djava.security.auth.login.config=b", "b"),
        ("-Dother.java.security.auth.login.config=x", None),
        ("", None),
        ("-Djava.security.auth.login.config=x 'unbalanced", "x"),
    ],
)
def test_the_file_from_kafka_opts(options: str, path: str | None) -> None:
    assert login_config_from_jvm_options(options) == path
