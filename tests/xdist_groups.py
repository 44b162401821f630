"""Keep ``pytest -n 2 --dist loadgroup`` grouping tests by their ``xdist_group`` mark.

pytest-xdist tells its scheduler a test's group by appending ``@<group>`` to the test's node id,
which it does by setting ``item._nodeid``. pytest 9.2 keeps node ids in ``item._id`` (a structured
``NodeId``) and ignores ``_nodeid``, so the suffix is lost and ``loadgroup`` silently becomes
``load`` (pytest-xdist issue #1386): the Spark tests then run on both workers, each starting a JVM
and session, the cluster tests run beside each other, module-scoped brokers and clusters start once
per worker, and the examples of ``test_examples.py`` may run twice. This hook, run after xdist's
own, adds the suffix where it is missing, as xdist means to. ``integration/conftest.py`` and
``e2e/conftest.py`` (where the groups are) import it; it is idempotent, so running both is
harmless.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        groups = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if not groups:
            continue
        suffix = "@" + "_".join(sorted(groups))
        if item.nodeid.endswith(suffix) or not hasattr(item, "_id"):
            continue  # xdist's own suffix took effect (pytest before 9.2)
        from _pytest.nodeid import NodeId  # noqa: PLC0415 (only in pytest 9.2 and later)

        item._id = NodeId.parse(item.nodeid + suffix)
