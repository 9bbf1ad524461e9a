"""`python -m shoal`: the `shoal` command, for environments where the entry point is not on
PATH (a wheel unpacked with `pip install --target`, say)."""

from shoal.cli.main import main

main()
