"""Resource vectors: what a task asks for, what a node has, what a virtual cluster may use.

`Resources` is an exact integer vector: cpu in millicores, memory in MiB, whole GPUs and named
extras (RDMA devices, milli-GPUs, licences …). Comparisons are per dimension, so `a <= b`
means "a fits in b" and two vectors may be incomparable: that is why `Resources` defines
`fits` and the rich comparisons but is not totally ordered.

`ResourceLimit` is a ceiling in which every dimension not named is unlimited (a virtual
cluster's `max`); it is kept apart from `Resources` so that "absent" can never be confused
with "zero".

Quantities are parsed the Kubernetes way (`500m`, `2`, `1.5` CPUs; `4Gi`, `512Mi`, `1G`
memory). Memory that is not a whole number of MiB is rounded *up*, so a request is never
under-counted.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction

CPU = "cpu"
MEMORY = "memory"
GPU = "gpu"
#: The Kubernetes device-plugin name of an NVIDIA GPU; accepted as an alias of `gpu`.
NVIDIA_GPU = "nvidia.com/gpu"
CORE_DIMENSIONS = (CPU, MEMORY, GPU)
#: A node's task limit (Kubernetes' `capacity.pods`): declared in a node's capacity like an
#: extra, but no task requests it — every task placed on the node counts one against it.
PODS = "pods"

_new = object.__new__
_set = object.__setattr__
_EXTRA_NAME = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_.\-/]*[a-zA-Z0-9])?$")


class QuantityError(ValueError):
    """A resource quantity or name that cannot be read; the message says what was expected."""


@dataclass(frozen=True, slots=True, order=False)
class Resources:
    """An exact, non-negative resource vector. Instances are immutable and hashable."""

    cpu: int = 0
    """CPU in millicores (1000 = one core)."""
    memory: int = 0
    """Memory in MiB."""
    gpu: int = 0
    """Whole GPUs."""
    extras: tuple[tuple[str, int], ...] = field(default=())
    """Named extra resources, sorted by name, zero amounts dropped."""

    def __post_init__(self) -> None:
        for name in CORE_DIMENSIONS:
            value = getattr(self, name)
            if type(value) is not int:
                raise QuantityError(f"{name} must be an integer, got {value!r}")
            if value < 0:
                raise QuantityError(f"{name} must not be negative, got {value}")
        for name, value in self.extras:
            if type(value) is not int or value < 0:
                raise QuantityError(f"{name} must be a non-negative integer, got {value!r}")

    @staticmethod
    def _trusted(cpu: int, memory: int, gpu: int, extras: tuple[tuple[str, int], ...]
                 ) -> Resources:
        """Build without validation: only for results that cannot be invalid (sums, scales
        and clamped differences of valid vectors). Keeps arithmetic off the hot path."""
        out = _new(Resources)
        _set(out, "cpu", cpu)
        _set(out, "memory", memory)
        _set(out, "gpu", gpu)
        _set(out, "extras", extras)
        return out

    @staticmethod
    def of(
        cpu: int = 0, memory: int = 0, gpu: int = 0, extras: Mapping[str, int] | None = None
    ) -> Resources:
        """Build a vector; `extras` may be any mapping (it is normalised)."""
        return Resources(cpu, memory, gpu, _normalise_extras(extras or {}))

    # ---- access ---------------------------------------------------------------------------

    def get(self, name: str) -> int:
        if name == CPU:
            return self.cpu
        if name == MEMORY:
            return self.memory
        if name in (GPU, NVIDIA_GPU):
            return self.gpu
        for key, value in self.extras:
            if key == name:
                return value
        return 0

    def items(self) -> Iterator[tuple[str, int]]:
        """Every non-zero dimension as (name, amount), core dimensions first."""
        if self.cpu:
            yield CPU, self.cpu
        if self.memory:
            yield MEMORY, self.memory
        if self.gpu:
            yield GPU, self.gpu
        yield from self.extras

    def dimensions(self) -> set[str]:
        return {name for name, _ in self.items()}

    def is_zero(self) -> bool:
        return not (self.cpu or self.memory or self.gpu or self.extras)

    # ---- arithmetic -----------------------------------------------------------------------

    def __add__(self, other: Resources) -> Resources:
        extras = self.extras
        if other.extras:
            merged = dict(self.extras)
            for key, value in other.extras:
                merged[key] = merged.get(key, 0) + value
            extras = _normalise_extras(merged)
        return Resources._trusted(self.cpu + other.cpu, self.memory + other.memory,
                                  self.gpu + other.gpu, extras)

    def __sub__(self, other: Resources) -> Resources:
        """Exact difference; raises `QuantityError` if any dimension would go negative."""
        if not self.extras and not other.extras:
            cpu, memory, gpu = self.cpu - other.cpu, self.memory - other.memory, \
                self.gpu - other.gpu
            if cpu >= 0 and memory >= 0 and gpu >= 0:  # else the constructor says which
                return Resources._trusted(cpu, memory, gpu, ())
        extras = self.extras
        if other.extras:
            merged = dict(self.extras)
            for key, value in other.extras:
                merged[key] = merged.get(key, 0) - value
            extras = _normalise_extras(merged)
        return Resources(self.cpu - other.cpu, self.memory - other.memory, self.gpu - other.gpu,
                         extras)

    def saturating_sub(self, other: Resources) -> Resources:
        """Per-dimension `max(0, self - other)`."""
        if not self.extras and not other.extras:
            return Resources._trusted(max(0, self.cpu - other.cpu),
                                      max(0, self.memory - other.memory),
                                      max(0, self.gpu - other.gpu), ())
        merged = dict(self.extras)
        for key, value in other.extras:
            merged[key] = max(0, merged.get(key, 0) - value)
        return Resources._trusted(max(0, self.cpu - other.cpu),
                                  max(0, self.memory - other.memory),
                                  max(0, self.gpu - other.gpu), _normalise_extras(merged))

    def scale(self, factor: int) -> Resources:
        if factor < 0:
            raise QuantityError(f"cannot scale resources by a negative factor {factor}")
        if not self.extras:
            return Resources._trusted(self.cpu * factor, self.memory * factor,
                                      self.gpu * factor, ())
        return Resources._trusted(self.cpu * factor, self.memory * factor, self.gpu * factor,
                                  tuple((k, v * factor) for k, v in self.extras if v * factor))

    def minimum(self, other: Resources) -> Resources:
        """Per-dimension minimum."""
        if not self.extras or not other.extras:  # an extra on one side only is min 0
            return Resources._trusted(min(self.cpu, other.cpu), min(self.memory, other.memory),
                                      min(self.gpu, other.gpu), ())
        mine = dict(self.extras)
        theirs = dict(other.extras)
        return Resources(min(self.cpu, other.cpu), min(self.memory, other.memory),
                         min(self.gpu, other.gpu),
                         _normalise_extras({k: min(v, theirs.get(k, 0)) for k, v in mine.items()}))

    def maximum(self, other: Resources) -> Resources:
        """Per-dimension maximum."""
        if not self.extras and not other.extras:
            return Resources._trusted(max(self.cpu, other.cpu), max(self.memory, other.memory),
                                      max(self.gpu, other.gpu), ())
        merged = dict(self.extras)
        for key, value in other.extras:
            merged[key] = max(merged.get(key, 0), value)
        return Resources(max(self.cpu, other.cpu), max(self.memory, other.memory),
                         max(self.gpu, other.gpu), _normalise_extras(merged))

    # ---- comparison -----------------------------------------------------------------------

    def fits(self, capacity: Resources) -> bool:
        """True when every dimension of `self` is at most the same dimension of `capacity`."""
        if self.cpu > capacity.cpu or self.memory > capacity.memory or self.gpu > capacity.gpu:
            return False
        if not self.extras:
            return True
        available = dict(capacity.extras)
        return all(value <= available.get(key, 0) for key, value in self.extras)

    def shortfall(self, capacity: Resources) -> list[str]:
        """The dimensions in which `self` does not fit `capacity`, core dimensions first."""
        return [name for name, amount in self.items() if amount > capacity.get(name)]

    def __le__(self, other: Resources) -> bool:
        return self.fits(other)

    def __ge__(self, other: Resources) -> bool:
        return other.fits(self)

    def __lt__(self, other: Resources) -> bool:
        return self.fits(other) and self != other

    def __gt__(self, other: Resources) -> bool:
        return other.fits(self) and self != other

    # ---- presentation ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, int]:
        """Every non-zero dimension in its canonical unit (millicores, MiB, GPUs, units)."""
        return dict(self.items())

    def to_quantities(self) -> dict[str, str | int]:
        """Kubernetes-style quantities, the form the YAML spec accepts back."""
        out: dict[str, str | int] = {}
        for name, amount in self.items():
            if name == CPU:
                out[name] = format_cpu(amount)
            elif name == MEMORY:
                out[name] = format_memory(amount)
            else:
                out[name] = amount
        return out

    def __str__(self) -> str:
        parts = [f"{k}={v}" for k, v in self.to_quantities().items()]
        return "{" + ", ".join(parts) + "}" if parts else "{}"


ZERO = Resources()


def total(vectors: Iterable[Resources]) -> Resources:
    """Sum of many vectors, without building one intermediate object per term."""
    cpu = memory = gpu = 0
    extras: dict[str, int] = {}
    for r in vectors:
        cpu += r.cpu
        memory += r.memory
        gpu += r.gpu
        for key, value in r.extras:
            extras[key] = extras.get(key, 0) + value
    return Resources._trusted(cpu, memory, gpu, _normalise_extras(extras))


@dataclass(frozen=True, slots=True)
class ResourceLimit:
    """A per-dimension ceiling; a dimension that is not named is unlimited."""

    limits: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def unlimited() -> ResourceLimit:
        return ResourceLimit()

    @staticmethod
    def of(limits: Mapping[str, int]) -> ResourceLimit:
        for name, value in limits.items():
            if type(value) is not int or value < 0:
                raise QuantityError(f"limit {name} must be a non-negative integer, got {value!r}")
        return ResourceLimit(tuple(sorted((canonical_name(k), v) for k, v in limits.items())))

    @staticmethod
    def from_resources(resources: Resources, dimensions: Iterable[str] = CORE_DIMENSIONS
                       ) -> ResourceLimit:
        """A limit equal to `resources` in every named dimension (zero included)."""
        names = set(dimensions) | resources.dimensions()
        return ResourceLimit.of({name: resources.get(name) for name in names})

    def get(self, name: str) -> int | None:
        """The limit on `name`, or None when unlimited."""
        for key, value in self.limits:
            if key == name:
                return value
        return None

    def is_unlimited(self) -> bool:
        return not self.limits

    def admits(self, usage: Resources) -> bool:
        """True when `usage` stays within every named limit."""
        return all(usage.get(name) <= value for name, value in self.limits)

    def exceeded(self, usage: Resources) -> list[str]:
        """The limited dimensions that `usage` goes over."""
        return [name for name, value in self.limits if usage.get(name) > value]

    def exceeded_by(self, usage: Resources, request: Resources) -> list[str]:
        """The limited dimensions that `usage + request` goes over *and* the request asks
        for: a VC already over its GPU max may still take CPU-only work."""
        return [name for name, value in self.limits
                if request.get(name) > 0 and usage.get(name) + request.get(name) > value]

    def raised_by(self, resources: Resources) -> ResourceLimit:
        """Every named limit raised by `resources`; unlimited dimensions stay unlimited."""
        if not self.limits or resources.is_zero():
            return self
        return ResourceLimit(tuple((name, value + resources.get(name))
                                   for name, value in self.limits))

    def lowered_by(self, resources: Resources) -> ResourceLimit:
        """Every named limit lowered by `resources`, not below zero; unlimited dimensions
        stay unlimited."""
        if not self.limits or resources.is_zero():
            return self
        return ResourceLimit(tuple((name, max(0, value - resources.get(name)))
                                   for name, value in self.limits))

    def to_dict(self) -> dict[str, int]:
        return dict(self.limits)

    def __str__(self) -> str:
        if not self.limits:
            return "unlimited"
        return str(Resources.of(
            cpu=self.get(CPU) or 0, memory=self.get(MEMORY) or 0, gpu=self.get(GPU) or 0,
            extras={k: v for k, v in self.limits if k not in CORE_DIMENSIONS}))


# ---- quantity parsing ---------------------------------------------------------------------

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")
_MIB = 2**20
#: Parsed quantities are remembered: specs repeat the same few ('1', '500m', '4Gi'), and each
#: submission parses several. Typed, so that `True` never hits the entry of `1`.
_remembered = functools.lru_cache(maxsize=4096, typed=True)


def canonical_name(name: str) -> str:
    """The resource's canonical name (`nvidia.com/gpu` → `gpu`); rejects malformed names."""
    if name == NVIDIA_GPU:
        return GPU
    if not _EXTRA_NAME.match(name):
        raise QuantityError(
            f"resource name {name!r} is not valid (letters, digits, '.', '_', '-', '/')")
    return name


def _number(text: str | int | float, what: str) -> tuple[Decimal, str]:
    if isinstance(text, bool):
        raise QuantityError(f"{what} must be a quantity, got {text!r}")
    if isinstance(text, int | float):
        if text < 0:
            raise QuantityError(f"{what} must not be negative, got {text}")
        return Decimal(str(text)), ""
    match = _QUANTITY.match(str(text))
    if not match:
        if str(text).strip().startswith("-"):
            raise QuantityError(f"{what} must not be negative, got {text!r}")
        raise QuantityError(f"{what} must be a quantity like '2', '500m' or '4Gi', got {text!r}")
    try:
        return Decimal(match.group(1)), match.group(2)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
        raise QuantityError(f"{what}: cannot read {text!r}") from exc


@_remembered
def parse_cpu(value: str | int | float) -> int:
    """CPU quantity → millicores: `2` → 2000, `500m` → 500, `1.5` → 1500."""
    number, suffix = _number(value, "cpu")
    if suffix == "m":
        millis = number
    elif suffix == "":
        millis = number * 1000
    else:
        raise QuantityError(f"cpu accepts plain cores or millicores ('500m'), got {value!r}")
    if millis != millis.to_integral_value():
        raise QuantityError(f"cpu must be a whole number of millicores, got {value!r}")
    return int(millis)


@_remembered
def parse_memory(value: str | int | float) -> int:
    """Memory quantity → MiB, rounded up: `4Gi` → 4096, `1G` → 954; a bare number is bytes."""
    number, suffix = _number(value, "memory")
    if suffix in _BINARY:
        scale = _BINARY[suffix]
    elif suffix in _DECIMAL:
        scale = _DECIMAL[suffix]
    elif suffix == "":
        scale = 1
    else:
        raise QuantityError(
            f"memory unit {suffix!r} is unknown; use Ki, Mi, Gi, Ti or k, M, G, T (got {value!r})")
    exact = Fraction(number) * scale / _MIB
    return -(-exact.numerator // exact.denominator)  # exact ceiling, no float on the way


@_remembered
def parse_count(value: str | int | float, what: str) -> int:
    """A whole count (GPUs, extras): `2`, `"2"`."""
    number, suffix = _number(value, what)
    if suffix:
        raise QuantityError(f"{what} must be a whole number, got {value!r}")
    if number != number.to_integral_value():
        raise QuantityError(f"{what} must be a whole number, got {value!r}")
    return int(number)


def parse_quantity(name: str, value: str | int | float) -> int:
    """Parse one named quantity into its canonical unit."""
    canonical = canonical_name(name)
    if canonical == CPU:
        return parse_cpu(value)
    if canonical == MEMORY:
        return parse_memory(value)
    return parse_count(value, canonical)


def parse_resources(mapping: Mapping[str, str | int | float]) -> Resources:
    """A `{name: quantity}` mapping → `Resources`. Duplicate aliases (gpu and nvidia.com/gpu)
    are an error rather than silently summed."""
    seen: dict[str, int] = {}
    for name, value in mapping.items():
        canonical = canonical_name(name)
        if canonical in seen:
            raise QuantityError(f"resource {canonical!r} is given twice (as {name!r} too)")
        seen[canonical] = parse_quantity(canonical, value)
    return of_amounts(seen)


def of_amounts(amounts: dict[str, int]) -> Resources:
    """`Resources` of amounts already parsed, keyed by canonical name (taken from
    `amounts`, which is consumed)."""
    return Resources.of(cpu=amounts.pop(CPU, 0), memory=amounts.pop(MEMORY, 0),
                        gpu=amounts.pop(GPU, 0), extras=amounts)


def format_memory(mib: int) -> str:
    """MiB → the largest exact binary unit: 131072 → '128Gi', 1536 → '1536Mi'."""
    for unit, scale in (("Ti", 2**20), ("Gi", 2**10)):
        if mib and mib % scale == 0:
            return f"{mib // scale}{unit}"
    return f"{mib}Mi"


def format_cpu(millicores: int) -> str:
    """Millicores → the shortest exact CPU quantity: 2000 → '2', 500 → '500m'."""
    if millicores % 1000 == 0:
        return str(millicores // 1000)
    return f"{millicores}m"


def _normalise_extras(extras: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k, v) for k, v in extras.items() if v != 0))
