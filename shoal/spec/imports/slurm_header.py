"""Reading a Slurm batch script's header: its `#SBATCH` directives as (option, value) pairs,
and the values Slurm writes in its own formats (times, memory sizes, GPU requests).

As `sbatch` does, directives are read from the lines after the `#!` line up to the first
line that is neither blank nor a comment; each directive line may hold several options
(`#SBATCH -N 2 --ntasks-per-node=4`), short (`-N 2`, `-N2`) or long (`--nodes=2`,
`--nodes 2`), and a `#` after them starts a comment. The number of directives is bounded
(`MAX_DIRECTIVES`), as is every number read (a few digits), before any is used.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from shoal.spec.errors import quote

MAX_DIRECTIVES = 256
"""`#SBATCH` lines one script may hold."""
PREFIX = "#SBATCH"

#: Short options and the long option each stands for.
SHORT = {
    "A": "account", "a": "array", "B": "extra-node-info", "b": "begin", "C": "constraint",
    "c": "cpus-per-task", "D": "chdir", "d": "dependency", "e": "error", "F": "nodefile",
    "G": "gpus", "H": "hold", "h": "help", "I": "immediate", "i": "input", "J": "job-name",
    "k": "no-kill", "L": "licenses", "M": "clusters", "m": "distribution", "N": "nodes",
    "n": "ntasks", "O": "overcommit", "o": "output", "p": "partition", "Q": "quiet",
    "q": "qos", "S": "core-spec", "s": "oversubscribe", "t": "time", "V": "version",
    "v": "verbose", "W": "wait", "w": "nodelist", "x": "exclude",
}
#: Options that take no value.
FLAGS = frozenset({
    "hold", "exclusive", "oversubscribe", "no-kill", "wait", "overcommit", "quiet", "verbose",
    "requeue", "no-requeue", "contiguous", "parsable", "test-only", "use-min-nodes",
    "spread-job", "help", "usage", "version", "ignore-pbs", "immediate",
})


class HeaderError(ValueError):
    """A directive that cannot be read; the message names its line."""


@dataclass(frozen=True, slots=True)
class Directive:
    """One option of the header."""

    line: int
    """1-based, as an editor counts."""
    option: str
    """The long name, without dashes (`nodes` for `-N`)."""
    value: str | None

    @property
    def path(self) -> str:
        """Where issues about it are reported."""
        return f"{PREFIX} --{self.option}"


def is_batch_script(text: str) -> bool:
    """Whether `text` is a batch script (a `#!` line first) rather than YAML or JSON: no
    Shoal document starts with one, and `sbatch` refuses a script that does not."""
    return text.startswith("#!")


def directives(text: str) -> list[Directive]:
    """The header's options in order; raises HeaderError for a line that cannot be read."""
    out: list[Directive] = []
    lines = 0
    for number, raw in enumerate(text.splitlines()[1:], start=2):
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("#"):
            break
        if not line.startswith(PREFIX):
            continue
        lines += 1
        if lines > MAX_DIRECTIVES:
            raise HeaderError(f"line {number}: a script may hold at most {MAX_DIRECTIVES} "
                              f"{PREFIX} lines")
        try:
            words = shlex.split(line[len(PREFIX):], comments=True)
        except ValueError as exc:
            raise HeaderError(f"line {number}: cannot read the options: {exc}") from None
        out += _options(number, words)
    return out


def _options(line: int, words: list[str]) -> list[Directive]:
    out: list[Directive] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word.startswith("--") and len(word) > 2:
            option, equals, value = word[2:].partition("=")
            if not equals:
                value = ""
                if option not in FLAGS and i < len(words) and not words[i].startswith("-"):
                    value, i = words[i], i + 1
        elif word.startswith("-") and len(word) > 1 and word[1] in SHORT:
            option, value = SHORT[word[1]], word[2:].removeprefix("=")
            if not value and option not in FLAGS and i < len(words):
                value, i = words[i], i + 1
        else:
            raise HeaderError(f"line {line}: {quote(word)} is not an sbatch option")
        out.append(Directive(line, option, value if value or option not in FLAGS else None))
    return out


# ---- values in Slurm's formats ------------------------------------------------------------

_TIME = re.compile(r"^(?:(\d{1,5})-)?(\d{1,7})(?::(\d{1,7}))?(?::(\d{1,7}))?$")
UNLIMITED = frozenset({"unlimited", "infinite", "-1"})
TIME_FORMATS = ("MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (or UNLIMITED)")


def parse_time(text: str) -> int | None:
    """Seconds of a Slurm time limit; None for no limit (UNLIMITED, or 0). Raises
    ValueError."""
    if text.strip().lower() in UNLIMITED:
        return None
    match = _TIME.match(text.strip())
    if match is None:
        raise ValueError(f"must be {TIME_FORMATS}, got {quote(text)}")
    days, first, second, third = match.groups()
    if days is not None:
        # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = int(first), int(second or 0), int(third or 0)
        total = ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    elif third is not None:
        total = (int(first) * 60 + int(second)) * 60 + int(third)
    elif second is not None:
        total = int(first) * 60 + int(second)
    else:
        total = int(first) * 60
    return total or None


_MEMORY = re.compile(r"^(\d{1,12})([KMGT]?)B?$", re.IGNORECASE)
_MEMORY_UNITS = {"": 2**20, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_memory(text: str) -> int:
    """Bytes of a Slurm memory size (megabytes unless it says K, M, G or T). Raises
    ValueError."""
    match = _MEMORY.match(text.strip())
    if match is None:
        raise ValueError(f"must be a size such as 4000, 500M, 16G or 1T (megabytes unless a "
                         f"unit is given), got {quote(text)}")
    amount = int(match.group(1)) * _MEMORY_UNITS[match.group(2).upper()]
    if amount == 0:
        raise ValueError("0 (all of a node's memory) is not supported by Shoal, which places "
                         "tasks by what they request; give a size")
    return amount


@dataclass(frozen=True, slots=True)
class GpuRequest:
    count: int
    type: str | None = None


_GPUS = re.compile(r"^(?:([A-Za-z0-9._-]{1,63}):)?(\d{1,6})$")
_GRES = re.compile(r"^([A-Za-z0-9_./-]{1,63})(?::([A-Za-z0-9._-]{1,63}))?(?::(\d{1,6}))?$")


def parse_gpus(text: str) -> GpuRequest:
    """`--gpus`, `--gpus-per-node`, `--gpus-per-task`: `[type:]count`."""
    match = _GPUS.match(text.strip())
    if match is None:
        raise ValueError(f"must be [type:]count, such as 4 or a100:4, got {quote(text)}")
    return GpuRequest(int(match.group(2)), match.group(1))


def parse_gres(text: str) -> GpuRequest:
    """`--gres`: `gpu[:type][:count]` (a count of 1 when none is given). Other generic
    resources are refused: nodes declare no such thing to Shoal."""
    requests = [part.strip() for part in text.split(",") if part.strip()]
    if len(requests) != 1:
        raise ValueError(f"must name one generic resource, gpu[:type][:count], got "
                         f"{quote(text)}")
    match = _GRES.match(requests[0])
    if match is None:
        raise ValueError(f"must be gpu[:type][:count], such as gpu:4 or gpu:a100:4, got "
                         f"{quote(text)}")
    name, middle, count = match.groups()
    if name.removeprefix("gres/") != "gpu":
        raise ValueError(f"only gpu is supported by Shoal, got {quote(name)}")
    if count is None and middle is not None and middle.isdigit():
        return GpuRequest(int(middle))
    return GpuRequest(int(count) if count is not None else 1, middle)


#: sbatch's file-name patterns (`-o logs/%x-%j.out`) and the shell expression each becomes in
#: a task: the variables the job's environment and the prelude give it.
FILE_PATTERNS = {
    "j": '"$SLURM_JOB_ID"', "x": '"$SLURM_JOB_NAME"', "A": '"${SLURM_ARRAY_JOB_ID-$SLURM_JOB_ID}"',
    "a": '"${SLURM_ARRAY_TASK_ID-4294967294}"', "t": '"$SLURM_PROCID"', "n": '"$SLURM_NODEID"',
    "N": '"$(hostname -s)"', "u": '"$USER"', "%": "%",
}
_PATTERN = re.compile(r"%(\d{0,2})(.)")


def shell_file_name(pattern: str) -> str:
    """The shell word that names the file `pattern` (sbatch's `-o`/`-e`) names in a task;
    raises ValueError for a pattern sbatch has that Shoal cannot fill in."""
    if "\\" in pattern:
        raise ValueError("a backslash (sbatch's 'no patterns here') is not supported")
    out: list[str] = []
    start = 0
    for match in _PATTERN.finditer(pattern):
        padding, letter = match.groups()
        if letter not in FILE_PATTERNS:
            raise ValueError(f"the pattern %{letter} is not supported; supported: "
                             f"{', '.join('%' + k for k in FILE_PATTERNS)}")
        if padding and letter != "%":
            raise ValueError(f"a padded pattern (%{padding}{letter}) is not supported")
        out.append(_quoted(pattern[start:match.start()]) + FILE_PATTERNS[letter])
        start = match.end()
    out.append(_quoted(pattern[start:]))
    return "".join(out)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'" if text else ""
