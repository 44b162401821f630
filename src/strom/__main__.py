"""``python -m strom``: the ``strom`` command."""

from strom.cli.main import main

main()
