"""``strom storage``: cluster ids, formatting a data directory, the bootstrap metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from strom.controller import DEFAULT_METADATA_VERSION
from strom.raft import OffsetAndEpoch, SnapshotReader
from strom.raft.snapshots import snapshot_file_name
from strom.raft.voters import Endpoint, VoterNode, VoterSet
from strom.server.bootstrap_metadata import (
    BOOTSTRAP_FILE,
    BootstrapError,
    read_bootstrap_metadata_version,
    release_metadata_version,
)
from strom.server.meta_properties import (
    MetaPropertiesError,
    load_formatted,
    read_meta_properties,
    validate_kafka_uuid,
)
from strom.server.raft.quorum_voters import directory_uuid

from .conftest import Invoke, error_lines

CLUSTER_ID = "q1Sh-9_ISia_zwGINzRvyQ"


def _properties(tmp_path: Path, node_id: int = 1) -> Path:
    path = tmp_path / f"node{node_id}.properties"
    path.write_text(
        f"node.id={node_id}\n"
        "process.roles=broker,controller\n"
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
        "controller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters={node_id}@127.0.0.1:9093\n"
        f"log.dirs={tmp_path / f'data{node_id}'}\n"
    )
    return path


def test_random_uuid_prints_a_new_valid_cluster_id(invoke: Invoke) -> None:
    first, second = (invoke(["storage", "random-uuid"]).stdout.strip() for _ in range(2))
    assert first != second
    assert validate_kafka_uuid(first) is None and len(first) == 22


def test_format_writes_meta_properties_and_the_bootstrap_metadata(
    invoke: Invoke, tmp_path: Path
) -> None:
    result = invoke(["storage", "format", "-t", CLUSTER_ID, "-c", str(_properties(tmp_path))])
    assert result.exit_code == 0, result.output
    data = tmp_path / "data1"
    assert f"formatted {data} for cluster {CLUSTER_ID} as node 1" in result.stdout
    meta = read_meta_properties(data / "meta.properties")
    assert (meta.cluster_id, meta.node_id) == (CLUSTER_ID, 1)
    assert meta.directory_id is not None
    assert (data / BOOTSTRAP_FILE).exists()
    assert read_bootstrap_metadata_version(data) == DEFAULT_METADATA_VERSION
    assert load_formatted(data, node_id=1) == meta


def test_format_takes_kafkas_release_version_names(invoke: Invoke, tmp_path: Path) -> None:
    args = ["storage", "format", "-t", CLUSTER_ID, "-c", str(_properties(tmp_path))]
    assert invoke([*args, "--release-version", "3.4-IV0"]).exit_code == 0
    assert read_bootstrap_metadata_version(tmp_path / "data1") == 8
    assert release_metadata_version("3.5") == 11
    assert release_metadata_version("3.6-IV2") == 14


def test_format_refuses_a_formatted_directory_unless_told_to_leave_it(
    invoke: Invoke, tmp_path: Path
) -> None:
    args = ["storage", "format", "-t", CLUSTER_ID, "-c", str(_properties(tmp_path))]
    assert invoke(args).exit_code == 0
    again = invoke(args)
    assert again.exit_code == 1
    assert error_lines(again) == [
        f"strom storage: {tmp_path / 'data1'} is already formatted (cluster {CLUSTER_ID}); "
        "use --ignore-formatted to leave it as it is"
    ]
    left = invoke([*args, "--ignore-formatted"])
    assert left.exit_code == 0 and "already formatted; left as it is" in left.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-t", "not-a-uuid"], "--cluster-id:"),
        (["-t", CLUSTER_ID, "--release-version", "2.8"], "--release-version: '2.8' is not one of"),
    ],
)
def test_format_refuses_bad_options_in_one_line(
    invoke: Invoke, tmp_path: Path, extra: list[str], message: str
) -> None:
    result = invoke(["storage", "format", "-c", str(_properties(tmp_path)), *extra])
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith("strom storage: ") and message in line
    assert not (tmp_path / "data1" / BOOTSTRAP_FILE).exists()


def test_a_node_refuses_an_unformatted_or_foreign_data_dir(invoke: Invoke, tmp_path: Path) -> None:
    with pytest.raises(MetaPropertiesError, match="is not formatted: run strom storage format"):
        load_formatted(tmp_path / "data1", node_id=1)
    invoke(["storage", "format", "-t", CLUSTER_ID, "-c", str(_properties(tmp_path))])
    with pytest.raises(
        MetaPropertiesError, match=r"belongs to node.id=1, but this node is node.id=2"
    ):
        load_formatted(tmp_path / "data1", node_id=2)


def test_a_corrupt_bootstrap_file_is_named_in_one_line(tmp_path: Path) -> None:
    (tmp_path / BOOTSTRAP_FILE).write_bytes(b"garbage")
    with pytest.raises(BootstrapError, match="cannot read the bootstrap metadata"):
        read_bootstrap_metadata_version(tmp_path)
    assert read_bootstrap_metadata_version(tmp_path / "absent") == DEFAULT_METADATA_VERSION


def _dynamic_properties(tmp_path: Path, node_id: int) -> Path:
    path = tmp_path / f"controller{node_id}.properties"
    path.write_text(
        f"node.id={node_id}\n"
        "process.roles=controller\n"
        f"listeners=CONTROLLER://127.0.0.1:1909{node_id}\n"
        "controller.listener.names=CONTROLLER\n"
        "controller.quorum.bootstrap.servers=127.0.0.1:19091,127.0.0.1:19092\n"
        f"log.dirs={tmp_path / f'data{node_id}'}\n"
    )
    return path


def _bootstrap_voters(data: Path) -> VoterSet | None:
    snapshot = OffsetAndEpoch(0, 0)
    path = data / "__cluster_metadata-0" / snapshot_file_name(snapshot)
    return SnapshotReader(snapshot, path.read_bytes()).voters if path.exists() else None


def test_format_standalone_makes_the_node_the_only_voter(invoke: Invoke, tmp_path: Path) -> None:
    properties = str(_dynamic_properties(tmp_path, 1))
    result = invoke(["storage", "format", "-t", CLUSTER_ID, "-c", properties, "--standalone"])
    assert result.exit_code == 0, result.output
    meta = read_meta_properties(tmp_path / "data1" / "meta.properties")
    voters = _bootstrap_voters(tmp_path / "data1")
    assert voters is not None
    assert voters.nodes == (
        VoterNode(
            1,
            directory_uuid(meta.directory_id),
            (Endpoint("CONTROLLER", "127.0.0.1", 19091),),
        ),
    )
    other = str(_dynamic_properties(tmp_path, 2))
    result = invoke(
        ["storage", "format", "-t", CLUSTER_ID, "-c", other, "--no-initial-controllers"]
    )
    assert result.exit_code == 0, result.output
    assert _bootstrap_voters(tmp_path / "data2") is None


def test_format_initial_controllers_takes_the_listed_directory_id(
    invoke: Invoke, tmp_path: Path
) -> None:
    one, two = "vdQj-gy2TFmT7oEjbr0Zrw", "2oA2mmIOScKs6JRBS-HZog"
    initial = f"1@127.0.0.1:19091:{one},2@127.0.0.1:19092:{two}"
    properties = str(_dynamic_properties(tmp_path, 2))
    args = ["storage", "format", "-t", CLUSTER_ID, "-c", properties]
    result = invoke([*args, "--initial-controllers", initial])
    assert result.exit_code == 0, result.output
    assert read_meta_properties(tmp_path / "data2" / "meta.properties").directory_id == two
    voters = _bootstrap_voters(tmp_path / "data2")
    assert voters is not None and voters.ids == {1, 2}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--standalone", "--no-initial-controllers"], "give one of --standalone"),
        (["--initial-controllers", "1@127.0.0.1:1:x"], "expected id@host:port:directory-id"),
        (["--initial-controllers", "7@h:1:vdQj-gy2TFmT7oEjbr0Zrw"], "node.id 2 is not listed"),
    ],
)
def test_format_refuses_bad_quorum_flags_in_one_line(
    invoke: Invoke, tmp_path: Path, flags: list[str], message: str
) -> None:
    properties = str(_dynamic_properties(tmp_path, 2))
    result = invoke(["storage", "format", "-t", CLUSTER_ID, "-c", properties, *flags])
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert message in line
    assert not (tmp_path / "data2" / "meta.properties").exists()
