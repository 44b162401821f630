"""Each listener's security from Kafka's settings, checked once at start.

``listener.security.protocol.map`` gives a listener its protocol; the ``ssl.*`` and ``sasl.*``
settings are read per listener (``listener.name.<listener>.<setting>`` first). SASL mechanisms:
``sasl.enabled.mechanisms`` (Kafka's default, GSSAPI, is refused with a hint). A mechanism's JAAS
login module is ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` or
``sasl.jaas.config``, else its class's entry in the JAAS file of
``java.security.auth.login.config`` (section ``<listener>.KafkaServer`` or ``KafkaServer``).
PLAIN's users are its ``user_<name>="<password>"`` options; SCRAM's credentials are the
metadata image's (AlterUserScramCredentials); OAUTHBEARER checks JWTs against a JWKS, or takes
unsecured ones, its validator's ``unsecuredValidator*`` options from the JAAS module.
Every problem is one ConfigError line naming the setting.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Final

from strom.client.security import PLAINTEXT, ClientSecurity
from strom.config import ConfigError, ServerConfig
from strom.config.setting import Value
from strom.security.jaas import (
    LOGIN_CONFIG,
    JaasConfigError,
    LoginModule,
    login_module_class,
    parse_jaas_config,
    read_jaas_file,
    server_section,
)
from strom.security.oauthbearer import (
    OAUTHBEARER,
    OAuthBearerServer,
    TokenValidator,
    UnsecuredValidator,
)
from strom.security.principal_mapping import PrincipalMapper
from strom.security.sasl import PLAIN, MechanismFactory, PlainServer
from strom.security.sasl_authenticator import SaslAuthenticator
from strom.security.scram import CredentialLookup, ScramMechanism, ScramServer
from strom.security.tls import client_context, server_context
from strom.server.configs.node_config import ListenerConfig

if TYPE_CHECKING:
    from strom.security.jwks import JwksValidator

__all__ = ["SUPPORTED_MECHANISMS", "ListenerSecurity", "client_security", "listener_security"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    """How a listener secures its connections; the default is PLAINTEXT."""

    ssl_context: ssl.SSLContext | None = None
    """SSL and SASL_SSL: the server side of TLS."""
    principal_mapper: PrincipalMapper | None = None
    """SSL: names clients by their certificate's subject (``ssl.principal.mapping.rules``)."""
    sasl: Callable[[], SaslAuthenticator] | None = None
    """SASL_PLAINTEXT and SASL_SSL: a new connection's authenticator."""
    sasl_max_receive_size: int = 524288
    """``sasl.server.max.receive.size``: the largest frame a client may send before it has
    authenticated."""
    handshake_timeout: float = 10.0
    """Seconds a client has to finish the TLS handshake."""


SUPPORTED_MECHANISMS: Final = (PLAIN, *(m.mechanism_name for m in ScramMechanism), OAUTHBEARER)


def listener_security(
    config: ServerConfig, listener: ListenerConfig, *, scram_credentials: CredentialLookup
) -> ListenerSecurity:
    """The security of one listener (PLAINTEXT: nothing)."""
    protocol = listener.security_protocol
    if protocol == "PLAINTEXT":
        return ListenerSecurity()

    def setting(name: str) -> Value:
        return config.for_listener(listener.name, name)

    ssl_context = None
    if protocol == "SASL_SSL":
        client_auth = _sasl_ssl_client_auth(config, listener.name)
        ssl_context = server_context(setting, client_auth=client_auth)
    elif protocol == "SSL":
        ssl_context = server_context(setting)
    if protocol == "SSL":
        return ListenerSecurity(ssl_context=ssl_context, principal_mapper=_mapper(setting))
    mechanisms = _mechanisms(config, listener.name, scram_credentials)
    max_reauth = setting("connections.max.reauth.ms")
    max_receive = setting("sasl.server.max.receive.size")
    return ListenerSecurity(
        ssl_context=ssl_context,
        sasl=partial(
            SaslAuthenticator,
            mechanisms=mechanisms,
            max_reauth_ms=max_reauth if isinstance(max_reauth, int) else 0,
        ),
        sasl_max_receive_size=max_receive if isinstance(max_receive, int) else 524288,
    )


def client_security(
    config: ServerConfig, *, listener: str, protocol: str, mechanism_setting: str
) -> ClientSecurity:
    """How this node connects to another's ``listener`` (the inter-broker or the controller
    one): its TLS truststore (and keystore, for mutual TLS), and the SASL mechanism that
    ``mechanism_setting`` names with the ``username``/``password`` of that mechanism's
    ``sasl.jaas.config`` for the listener, as Kafka's brokers log in to each other."""
    if protocol == "PLAINTEXT":
        return PLAINTEXT

    def setting(name: str) -> Value:
        return config.for_listener(listener, name)

    context = client_context(setting) if protocol in ("SSL", "SASL_SSL") else None
    if protocol == "SSL":
        return ClientSecurity(ssl_context=context)
    mechanism = config.get_str(mechanism_setting).upper()
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigError(
            mechanism_setting,
            f"{mechanism} is not supported (listener {listener}); "
            f"use {', '.join(SUPPORTED_MECHANISMS)}",
        )
    name = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    options = _jaas(config, listener, mechanism, name).options
    if mechanism == OAUTHBEARER:  # an unsecured token naming unsecuredLoginStringClaim_sub
        subject = options.get("unsecuredLoginStringClaim_sub") or options.get("username")
        if not subject:
            raise ConfigError(name, "set unsecuredLoginStringClaim_sub for this node's login")
        return ClientSecurity(context, mechanism, subject)
    if not options.get("username") or "password" not in options:
        raise ConfigError(name, f"set username and password for this node's {mechanism} login")
    return ClientSecurity(context, mechanism, options["username"], options["password"])


def _sasl_ssl_client_auth(config: ServerConfig, listener: str) -> str | None:
    """Kafka asks SASL_SSL clients for certificates only when the listener-prefixed
    ``ssl.client.auth`` says so; the broker-wide setting applies to SSL listeners alone."""
    if config.is_explicit(f"listener.name.{listener.lower()}.ssl.client.auth"):
        return None
    if config.get_str("ssl.client.auth") != "none":
        log.warning(
            "ssl.client.auth applies to SSL listeners only; set "
            "listener.name.%s.ssl.client.auth for SASL_SSL listener %s",
            listener.lower(),
            listener,
        )
    return "none"


def _mapper(setting: Callable[[str], Value]) -> PrincipalMapper:
    rules = setting("ssl.principal.mapping.rules")
    try:
        return PrincipalMapper(rules if isinstance(rules, str) else "DEFAULT")
    except ValueError as error:
        raise ConfigError("ssl.principal.mapping.rules", str(error)) from None


def _mechanisms(
    config: ServerConfig, listener: str, scram_credentials: CredentialLookup
) -> Mapping[str, MechanismFactory]:
    enabled = config.for_listener(listener, "sasl.enabled.mechanisms")
    names = (
        [name.strip().upper() for name in enabled if name.strip()]
        if isinstance(enabled, tuple)
        else []
    )
    if not names:
        raise ConfigError("sasl.enabled.mechanisms", f"listener {listener} enables no mechanism")
    factories: dict[str, MechanismFactory] = {}
    for name in names:
        if name not in SUPPORTED_MECHANISMS:
            raise ConfigError(
                "sasl.enabled.mechanisms",
                f"{name} is not supported (listener {listener}); "
                f"use {', '.join(SUPPORTED_MECHANISMS)}",
            )
        scram = ScramMechanism.from_name(name)
        if scram is not None:
            factories[name] = partial(ScramServer, scram, scram_credentials)
        elif name == OAUTHBEARER:
            factories[name] = partial(OAuthBearerServer, _validator(config, listener), _now_ms)
        else:
            factories[name] = partial(PlainServer, _plain_users(config, listener))
    return factories


def _validator(config: ServerConfig, listener: str) -> TokenValidator:
    """OAUTHBEARER's validator: against the JWKS of ``sasl.oauthbearer.jwks.endpoint.url``,
    else of unsecured JWTs, its options from the listener's JAAS config."""
    url = config.for_listener(listener, "sasl.oauthbearer.jwks.endpoint.url")
    if isinstance(url, str) and url:
        return _jwks_validator(config, listener, url)
    name = f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config"
    module = _login_module(config, listener, OAUTHBEARER, name)
    options = module.options if module is not None else {}
    try:
        return UnsecuredValidator.from_options(options)
    except ValueError as error:
        raise ConfigError(name, f"unsecuredValidatorAllowableClockSkewMs: {error}") from None


def _jwks_validator(config: ServerConfig, listener: str, url: str) -> JwksValidator:
    """Fetches the key set now (a set that cannot be fetched stops the start) and refreshes
    it every ``sasl.oauthbearer.jwks.endpoint.refresh.ms``, or sooner for a token naming a key
    it lacks, on a daemon thread."""
    from strom.security.jwks import (  # noqa: PLC0415 - JWKS listeners only
        Backoff,
        JwksError,
        JwksKeys,
        JwksValidator,
        JwtChecks,
    )

    def setting(name: str) -> Value:
        return config.for_listener(listener, f"sasl.oauthbearer.{name}")

    def seconds(name: str, *, least: int) -> float:
        value = setting(name)
        assert isinstance(value, int)
        if value < least:
            raise ConfigError(f"sasl.oauthbearer.{name}", f"must be at least {least}, got {value}")
        return value / 1000

    interval = seconds("jwks.endpoint.refresh.ms", least=1)
    initial = seconds("jwks.endpoint.retry.backoff.ms", least=0)
    backoff = Backoff(initial, seconds("jwks.endpoint.retry.backoff.max.ms", least=0))
    if backoff.max_s < initial:
        raise ConfigError(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
            "must be at least sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        )
    keys = JwksKeys(url, backoff=backoff)
    try:
        keys.fetch()
    except JwksError as error:
        raise ConfigError("sasl.oauthbearer.jwks.endpoint.url", str(error)) from None
    threading.Thread(
        target=keys.refresh_every,
        args=(interval,),
        name=f"strom-jwks-{listener.lower()}",
        daemon=True,
    ).start()
    audiences, issuer, skew = (
        setting("expected.audience"),
        setting("expected.issuer"),
        setting("clock.skew.seconds"),
    )
    return JwksValidator(
        keys,
        JwtChecks(
            principal_claim=str(setting("sub.claim.name") or "sub"),
            scope_claim=str(setting("scope.claim.name") or "scope"),
            audiences=tuple(audiences) if isinstance(audiences, tuple) else (),
            issuer=issuer if isinstance(issuer, str) and issuer else None,
            clock_skew_ms=(skew if isinstance(skew, int) else 30) * 1000,
        ),
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


def _plain_users(config: ServerConfig, listener: str) -> Mapping[str, str]:
    name = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
    return _jaas(config, listener, PLAIN, name).users()


def _jaas(config: ServerConfig, listener: str, mechanism: str, name: str) -> LoginModule:
    """The listener's JAAS login module of ``mechanism`` (``name``: the setting to blame)."""
    module = _login_module(config, listener, mechanism, name)
    if module is not None:
        return module
    path = config[LOGIN_CONFIG]
    if isinstance(path, str) and path:
        raise ConfigError(
            LOGIN_CONFIG,
            f"{path} has no {login_module_class(mechanism)} entry in section "
            f"'{listener.lower()}.KafkaServer' or 'KafkaServer' ({mechanism} on listener "
            f"{listener})",
        )
    raise ConfigError(
        name, f"{mechanism} needs a JAAS login module (or sasl.jaas.config, or {LOGIN_CONFIG})"
    )


def _login_module(
    config: ServerConfig, listener: str, mechanism: str, name: str
) -> LoginModule | None:
    """As Kafka's ``JaasContext.loadServerContext``: the listener's ``sasl.jaas.config``,
    else the entry of the mechanism's login module class in the JAAS file's section for the
    listener (``<listener>.KafkaServer``, else ``KafkaServer``); None when neither has one."""
    text = config.for_listener(listener, "sasl.jaas.config", mechanism=mechanism)
    if isinstance(text, str) and text.strip():
        try:
            return parse_jaas_config(text)
        except JaasConfigError as error:
            raise ConfigError(name, str(error)) from None
    path = config[LOGIN_CONFIG]
    if not isinstance(path, str) or not path:
        return None
    try:
        modules = server_section(read_jaas_file(path), listener) or ()
    except JaasConfigError as error:
        raise ConfigError(LOGIN_CONFIG, str(error)) from None
    wanted = login_module_class(mechanism)
    return next((module for module in modules if module.class_name == wanted), None)
