"""LogConfig: Kafka's defaults, plain fields, validation."""

from __future__ import annotations

import pytest

from strom.storage.log_config import LONG_MAX, LogConfig


def test_defaults_are_kafkas() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1073741824
    assert config.segment_ms == 604800000
    assert config.segment_jitter_ms == 0
    assert config.index_interval_bytes == 4096
    assert config.segment_index_bytes == 10485760
    assert config.max_message_bytes == 1048588
    assert config.message_timestamp_type == "CreateTime"
    assert config.retention_ms == 604800000
    assert config.retention_bytes == -1
    assert config.cleanup_policy == frozenset({"delete"})
    assert config.delete_retention_ms == 86400000
    assert config.min_compaction_lag_ms == 0
    assert config.max_compaction_lag_ms == LONG_MAX
    assert config.min_cleanable_dirty_ratio == 0.5
    assert config.flush_messages == LONG_MAX
    assert config.flush_ms == LONG_MAX
    assert config.file_delete_delay_ms == 60000
    assert config.preallocate is False
    assert config.deletes and not config.compacts and not config.log_append_time


@pytest.mark.parametrize(
    "kwargs",
    [
        {"message_timestamp_type": "Whenever"},
        {"cleanup_policy": frozenset({"shred"})},
        {"segment_bytes": 13},
        {"segment_ms": 0},
        {"segment_index_bytes": 3},
        {"index_interval_bytes": -1},
    ],
)
def test_invalid_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        LogConfig(**kwargs)  # type: ignore[arg-type]
