"""strom: an Apache Kafka-compatible event streaming platform written in Python."""

import sys
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType
from typing import Any

__version__ = "0.1.0"


class _KioWithoutHypothesis:
    """kio registers hypothesis strategies for its types when hypothesis is importable: that
    import costs a command 0.1-0.2 s and leaves a ``.hypothesis/`` folder wherever it runs.
    strom uses no such strategy, so the one kio module that looks is run with hypothesis
    hidden, unless hypothesis is loaded already (as in a test run). Nothing is imported
    before kio is."""

    MODULE = "kio.static._phantom"

    def find_spec(self, name: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if name != self.MODULE or "hypothesis" in sys.modules:
            return None
        spec = PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            self._exec = spec.loader.exec_module
            spec.loader.exec_module = self.exec_module  # type: ignore[method-assign]
        return spec

    def exec_module(self, module: ModuleType) -> None:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]  # kio's import fails
        try:
            self._exec(module)
        finally:
            del sys.modules["hypothesis"]


sys.meta_path.insert(0, _KioWithoutHypothesis())
