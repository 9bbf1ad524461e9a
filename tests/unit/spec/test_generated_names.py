"""`metadata.generateName`: the loader names such jobs deterministically (the same names on
every load, avoiding every name the load gives itself), `name` wins over it, either is
required, and the prefix leaves room for the suffix; random names use Kubernetes'
alphabet."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoal.spec import SpecError, load_text
from shoal.spec.generated_names import (
    ALPHABET,
    MAX_PREFIX,
    SUFFIX_LENGTH,
    CountedNames,
    counted_suffix,
    random_name,
)


def doc(metadata: str) -> str:
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata: {metadata}
spec:
  taskGroups: [{{name: w, replicas: 1, resources: {{cpu: 1}}}}]
"""


def test_the_loader_names_jobs_the_same_way_every_time() -> None:
    text = "---\n".join([doc("{generateName: train-}"), doc("{generateName: train-}"),
                         doc("{name: train-bbbbb}"), doc("{generateName: eval-}")])
    first, again = load_text(text), load_text(text)
    names = [j.name for j in first.jobs]
    assert names == [j.name for j in again.jobs]
    assert names == ["train-bbbbc", "train-bbbbd", "train-bbbbb", "eval-bbbbb"]
    assert first.generated == {"train-bbbbc": "train-", "train-bbbbd": "train-",
                               "eval-bbbbb": "eval-"}


def test_a_name_wins_over_generate_name() -> None:
    bundle = load_text(doc("{name: mine, generateName: train-}"))
    assert [j.name for j in bundle.jobs] == ["mine"] and bundle.generated == {}


@pytest.mark.parametrize(("metadata", "path", "words"), [
    ("{}", "metadata.name", "metadata.generateName"),
    ("{generateName: 'a.b'}", "metadata.generateName", "must match"),
    (f"{{generateName: {'x' * (MAX_PREFIX + 1)}}}", "metadata.generateName",
     f"at most {MAX_PREFIX}"),
])
def test_names_are_required_and_checked(metadata: str, path: str, words: str) -> None:
    with pytest.raises(SpecError) as refused:
        load_text(doc(metadata))
    assert [(i.path, words in i.message) for i in refused.value.issues] == [(path, True)]


def test_the_longest_prefix_makes_the_longest_name() -> None:
    bundle = load_text(doc(f"{{generateName: {'x' * MAX_PREFIX}}}"))
    assert len(bundle.jobs[0].name) == 253


def test_random_names_use_the_kubernetes_alphabet() -> None:
    names = {random_name("p-") for _ in range(50)}
    assert all(n.startswith("p-") and len(n) == 2 + SUFFIX_LENGTH for n in names)
    assert set("".join(n[2:] for n in names)) <= set(ALPHABET)
    assert len(names) > 1


@given(st.integers(0, len(ALPHABET) ** SUFFIX_LENGTH - 1),
       st.integers(0, len(ALPHABET) ** SUFFIX_LENGTH - 1))
def test_counted_suffixes_are_distinct_and_ordered(a: int, b: int) -> None:
    def digits(n: int) -> tuple[int, ...]:
        return tuple(ALPHABET.index(c) for c in counted_suffix(n))

    assert len(counted_suffix(a)) == SUFFIX_LENGTH
    assert (digits(a) < digits(b)) == (a < b)
    assert (counted_suffix(a) == counted_suffix(b)) == (a == b)


def test_counted_names_skip_taken_ones() -> None:
    names = CountedNames()
    names.take("x-bbbbb")
    names.take("x-bbbbd")
    assert [names("x-") for _ in range(3)] == ["x-bbbbc", "x-bbbbf", "x-bbbbg"]


def test_a_kind_that_is_no_string_is_not_taken_for_a_job() -> None:
    with pytest.raises(SpecError) as refused:
        load_text("apiVersion: shoal/v1\nkind: [Job]\nmetadata: {generateName: x-}\n")
    assert [i.path for i in refused.value.issues] == ["kind"]
