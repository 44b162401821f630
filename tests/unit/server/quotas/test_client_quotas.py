"""Client quotas: Kafka's sampled rate and throttle time, the token bucket of the mutation
quota (strict and permissive), entity precedence, the controller's validation and
DescribeClientQuotas' filters."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from strom.common import ErrorCode, KafkaError
from strom.common.clock import ManualClock
from strom.common.sampled_rate import SampledRate, throttle_time_ms
from strom.common.token_bucket import TokenBucket
from strom.controller.quota_control import QuotaAlteration, alter_client_quotas
from strom.metadata import MetadataDelta, MetadataImage, MetadataRecord
from strom.metadata.client_quotas import (
    CLIENT_ID,
    CONTROLLER_MUTATION_RATE,
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotasImage,
    describe_client_quotas,
    quota_entity,
)
from strom.server.quotas.client_quotas import (
    ClientQuotaManager,
    ControllerMutationQuotaManager,
    quota_of,
)


def image_of(*entries: tuple[dict[str, str | None], dict[str, float]]) -> ClientQuotasImage:
    return ClientQuotasImage({quota_entity(entity): quotas for entity, quotas in entries})


def test_throttle_time_is_kafkas_x_equals_o_minus_t_over_t_times_w() -> None:
    rate = SampledRate(windows=11, window_ms=1000)
    rate.record(20_000, 0)  # a fresh sampler spreads a burst over 10 windows: 2000/s
    assert rate.window_size_ms(0) == 10_000
    assert throttle_time_ms(rate, 1000, 0) == 10_000  # (2000 - 1000) / 1000 * 10 s
    assert throttle_time_ms(rate, 2000, 0) == 0
    rate.record(0, 10_500)  # 10.5 s later: the window spans what passed
    assert rate.window_size_ms(10_500) == 10_500
    assert rate.rate(10_500) == pytest.approx(20_000 / 10.5)


def test_windows_older_than_the_samples_kept_are_forgotten() -> None:
    rate = SampledRate(windows=2, window_ms=1000)
    rate.record(5000, 0)
    assert rate.rate(1999) > 0
    assert rate.rate(2000) == 0


def test_the_most_specific_entity_wins_in_kafkas_order() -> None:
    image = image_of(
        ({USER: "alice", CLIENT_ID: "app"}, {PRODUCER_BYTE_RATE: 1}),
        ({USER: "alice", CLIENT_ID: None}, {PRODUCER_BYTE_RATE: 2}),
        ({USER: "alice"}, {PRODUCER_BYTE_RATE: 3}),
        ({USER: None, CLIENT_ID: "app"}, {PRODUCER_BYTE_RATE: 4}),
        ({USER: None}, {PRODUCER_BYTE_RATE: 6}),
        ({CLIENT_ID: "tool"}, {PRODUCER_BYTE_RATE: 7}),
        ({CLIENT_ID: None}, {PRODUCER_BYTE_RATE: 8}),
    )
    assert quota_of(image, PRODUCER_BYTE_RATE, "alice", "app") == (1, ("alice", "app"))
    assert quota_of(image, PRODUCER_BYTE_RATE, "alice", "other") == (2, ("alice", "other"))
    assert quota_of(image, PRODUCER_BYTE_RATE, "bob", "app") == (4, ("bob", "app"))
    assert quota_of(image, PRODUCER_BYTE_RATE, "bob", "x") == (6, ("bob", ""))
    assert quota_of(
        image_of(({USER: "alice"}, {PRODUCER_BYTE_RATE: 3})), PRODUCER_BYTE_RATE, "alice", "a"
    ) == (3, ("alice", ""))
    clients_only = image_of(
        ({CLIENT_ID: "tool"}, {PRODUCER_BYTE_RATE: 7}), ({CLIENT_ID: None}, {PRODUCER_BYTE_RATE: 8})
    )
    assert quota_of(clients_only, PRODUCER_BYTE_RATE, "bob", "tool") == (7, ("", "tool"))
    assert quota_of(clients_only, PRODUCER_BYTE_RATE, "bob", "x") == (8, ("", "x"))
    assert quota_of(clients_only, "consumer_byte_rate", "bob", "x") is None


def test_a_manager_throttles_only_clients_with_a_quota() -> None:
    clock = ManualClock()
    manager = ClientQuotaManager(PRODUCER_BYTE_RATE, clock, windows=2, window_ms=1000)
    assert manager.record("alice", "app", 10**9) == 0  # no quota at all
    assert manager.max_value_in_window("alice", "app") is None
    manager.configure(image_of(({USER: "alice"}, {PRODUCER_BYTE_RATE: 1000})))
    assert manager.enabled
    assert manager.record("bob", "app", 10**9) == 0
    assert manager.record("alice", "app", 1000) == 0  # 1000 B over at least one second
    assert manager.record("alice", "other", 1000) == 1000  # one sensor for all of alice
    assert manager.max_value_in_window("alice", "app") == 1000
    manager.unrecord("alice", "app", 1000)
    assert manager.record("alice", "app", 0) == 0


def test_the_request_quota_throttles_at_most_one_window() -> None:
    clock = ManualClock()
    manager = ClientQuotaManager(
        REQUEST_PERCENTAGE, clock, windows=11, window_ms=1000, max_throttle_ms=1000
    )
    manager.configure(image_of(({CLIENT_ID: "busy"}, {REQUEST_PERCENTAGE: 1.0})))
    # 1 s of handling in a fresh 10 s window: 10% of a thread, ten times the quota
    assert manager.record("ANONYMOUS", "busy", 100.0) == 1000  # Kafka: 90 s, bounded
    assert manager.record("ANONYMOUS", "idle", 100.0) == 0


def test_a_token_bucket_starts_full_and_refills_at_its_rate() -> None:
    bucket = TokenBucket(rate=2.0, windows=5, window_ms=1000)
    assert bucket.burst == 10.0
    assert bucket.tokens(0) == 10.0  # full when first used
    bucket.record(13, 0)
    assert bucket.tokens(0) == -3.0
    assert bucket.throttle_time_ms(0) == 1500  # -(-3) / 2 per second
    assert bucket.throttle_time_ms(1000) == 500
    assert bucket.tokens(1500) == 0.0
    assert not bucket.is_full(1500)
    assert bucket.tokens(60_000) == 10.0  # never more than the burst
    assert bucket.is_full(60_000)
    bucket.rate = 1.0  # a new quota applies to what is left
    assert bucket.burst == 5.0
    assert bucket.tokens(60_000) == 5.0


def test_a_strict_mutation_quota_refuses_once_the_credits_are_gone() -> None:
    clock = ManualClock()
    manager = ControllerMutationQuotaManager(
        CONTROLLER_MUTATION_RATE, clock, windows=2, window_ms=1000
    )
    manager.configure(image_of(({CLIENT_ID: "admin"}, {CONTROLLER_MUTATION_RATE: 5.0})))
    quota = manager.new_quota("ANONYMOUS", "admin", strict=True)
    quota.record(10)  # the whole burst (2 windows of 1 s at 5/s)
    quota.record(4)  # still no debt before it: accepted, and now 4 below zero
    assert quota.throttle_time_ms() == 0  # nothing refused: not throttled
    with pytest.raises(KafkaError) as refused:
        quota.record(1)
    assert refused.value.error_code is ErrorCode.throttling_quota_exceeded
    assert refused.value.message == "The throttling quota has been exceeded."
    assert quota.throttle_time_ms() == 800  # 4 credits at 5 per second
    clock.advance(300)
    assert quota.throttle_time_ms() == 500  # the time already passed is deducted
    later = manager.new_quota("ANONYMOUS", "admin", strict=True)
    with pytest.raises(KafkaError):
        later.record(1)  # the bucket is the client's, not the request's
    clock.advance(500)
    later.record(1)
    unlimited = manager.new_quota("ANONYMOUS", "other", strict=True)
    unlimited.record(1000)
    assert unlimited.throttle_time_ms() == 0


def test_a_permissive_mutation_quota_accepts_and_throttles() -> None:
    clock = ManualClock()
    manager = ControllerMutationQuotaManager(
        CONTROLLER_MUTATION_RATE, clock, windows=2, window_ms=1000
    )
    manager.configure(image_of(({USER: "alice"}, {CONTROLLER_MUTATION_RATE: 5.0})))
    quota = manager.new_quota("alice", "any", strict=False)
    quota.record(10)
    assert quota.throttle_time_ms() == 0
    quota.record(5)
    quota.record(5)  # accepted however far below zero
    assert quota.throttle_time_ms() == 2000


def apply(image: MetadataImage, records: Sequence[MetadataRecord]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply()


def test_the_controller_writes_records_and_refuses_as_kafka() -> None:
    alice = ((USER, "alice"),)
    result = alter_client_quotas(
        MetadataImage.empty(),
        [
            QuotaAlteration(alice, ((PRODUCER_BYTE_RATE, 1024.0), ("request_percentage", 50.5))),
            QuotaAlteration(((CLIENT_ID, None),), (("consumer_byte_rate", 1.5),)),
            QuotaAlteration((("ip", "1.2.3.4"),), (("connection_creation_rate", 1.0),)),
            QuotaAlteration(((USER, "bob"),), (("no_such_key", 1.0),)),
            QuotaAlteration(((USER, "carol"),), ((PRODUCER_BYTE_RATE, 0.0),)),
            QuotaAlteration((), ((PRODUCER_BYTE_RATE, 1.0),)),
        ],
    )
    codes = [r.error.code for r in result.response]
    assert codes == [ErrorCode.none] + [ErrorCode.invalid_request] * 5
    assert [r.error.message for r in result.response][1:] == [
        "consumer_byte_rate cannot be a fractional value.",
        "Unhandled client quota entity type: ip",
        "Invalid configuration key no_such_key",
        "Quota producer_byte_rate must be greater than 0",
        "Invalid empty client quota entity",
    ]
    image = apply(MetadataImage.empty(), result.records)
    assert image.client_quotas.quotas(quota_entity({USER: "alice"})) == {
        PRODUCER_BYTE_RATE: 1024.0,
        "request_percentage": 50.5,
    }
    again = alter_client_quotas(image, [QuotaAlteration(alice, ((PRODUCER_BYTE_RATE, 1024.0),))])
    assert again.records == []  # the value already set
    removal = alter_client_quotas(
        image,
        [QuotaAlteration(alice, ((PRODUCER_BYTE_RATE, None), ("request_percentage", None)))],
    )
    assert apply(image, removal.records).client_quotas.entities == {}
    duplicate = alter_client_quotas(image, [QuotaAlteration(alice, ()), QuotaAlteration(alice, ())])
    assert duplicate.response[1].error.code == ErrorCode.invalid_request


def test_describe_filters_as_kafka() -> None:
    image = image_of(
        ({USER: "alice"}, {PRODUCER_BYTE_RATE: 1}),
        ({USER: None}, {PRODUCER_BYTE_RATE: 2}),
        ({USER: "alice", CLIENT_ID: "app"}, {PRODUCER_BYTE_RATE: 3}),
        ({CLIENT_ID: "app"}, {PRODUCER_BYTE_RATE: 4}),
    )

    def values(components: list[tuple[str, int, str | None]], *, strict: bool) -> list[float]:
        found = describe_client_quotas(image, components, strict=strict)
        return sorted(quotas[PRODUCER_BYTE_RATE] for _, quotas in found)

    assert values([(USER, MATCH_EXACT, "alice")], strict=False) == [1, 3]
    assert values([(USER, MATCH_EXACT, "alice")], strict=True) == [1]
    assert values([(USER, MATCH_DEFAULT, None)], strict=False) == [2]
    assert values([(USER, MATCH_SPECIFIED, None)], strict=True) == [1, 2]
    assert values([], strict=False) == [1, 2, 3, 4]
    with pytest.raises(KafkaError) as error:
        describe_client_quotas(image, [("group", MATCH_EXACT, "x")], strict=False)
    assert error.value.error_code == ErrorCode.unsupported_version
