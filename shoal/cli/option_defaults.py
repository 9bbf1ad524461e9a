"""The built-in profiles' names, which `shoal schedule --help` lists.

typer reads every command's signature to run any one of them, `shoal submit` included, so
the names cannot come from `shoal.scheduler.profile.BUILTIN_PROFILES` (whose keys they are)
without loading the scheduler with every command. They are the one value the command line
still copies: every other default it shows has its one home in `shoal.api.defaults`, which
the layers applying it import too; the profiles' texts live with the scheduler that parses
them. tests/cli/test_light_imports.py checks this copy against its source.
"""

from __future__ import annotations

#: `shoal.scheduler.profile.BUILTIN_PROFILES`'s names.
BUILTIN_PROFILE_NAMES = frozenset({
    "default", "elastic", "fairshare", "fifo", "fifo-backfill", "las", "las-elastic", "sjf",
    "spread", "strict-fifo"})
