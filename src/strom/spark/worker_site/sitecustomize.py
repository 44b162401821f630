"""Run by Python at the start of each of Spark's Python workers of a strom session: moves
PySpark's zips (``pyspark.zip``, py4j's), which Spark puts first on the workers' PYTHONPATH,
behind the installed pyspark package they were shipped in.

Python keeps no bytecode for modules imported from a zip, so every worker process (the daemon's
forks and the data source planners alike) would compile PySpark again; the installed package
holds the same code, compiled once. A zip outside an installed pyspark (a Spark distribution's
``SPARK_HOME``) stays where it is.
"""

import sys
from pathlib import Path


def _shipped_in_installed_pyspark(entry: str, path: set[Path]) -> bool:
    """Whether ``entry`` is a zip of ``<dir>/pyspark/python/lib`` with ``<dir>`` in ``path``."""
    zip_file = Path(entry)
    return (
        zip_file.suffix == ".zip"
        and zip_file.parent.parts[-3:] == ("pyspark", "python", "lib")
        and zip_file.parents[3].resolve() in path
    )


_path = {Path(entry).resolve() for entry in sys.path}
_zips = [entry for entry in sys.path if _shipped_in_installed_pyspark(entry, _path)]
sys.path[:] = [entry for entry in sys.path if entry not in _zips] + _zips
