"""The one registry behind scorers, benchmarks and backends."""

from __future__ import annotations

import pytest

from auditor.util.registry import Registry, UnknownNameError


def _registry() -> Registry[int]:
    r: Registry[int] = Registry("scorer")
    r.register("numeric_match", 1)
    r.register("refusal", 2)
    r.register("length", 3)
    return r


def test_a_registry_reads_like_a_mapping_in_registration_order():
    r = _registry()
    r.freeze()
    assert list(r) == ["numeric_match", "refusal", "length"] and r.names() == ["length", "numeric_match", "refusal"]
    assert sorted(r) == r.names() and len(r) == 3 and dict(r.items()) == {"numeric_match": 1, "refusal": 2, "length": 3}
    assert r["refusal"] == 2 and r.get("refusal") == 2 and r.get("nope") is None and r.get("nope", 0) == 0
    assert "length" in r and "nope" not in r and [1] not in r and r.get([1]) is None
    assert list(r.values()) == [1, 2, 3]


def test_an_unknown_name_names_the_known_ones_and_the_closest():
    r = _registry()
    with pytest.raises(UnknownNameError) as e:
        r["numeric_mach"]
    assert str(e.value) == ("unknown scorer 'numeric_mach'; known: ['length', 'numeric_match', 'refusal']; "
                            "did you mean 'numeric_match'?")
    assert isinstance(e.value, KeyError) and e.value.known == ["length", "numeric_match", "refusal"]
    with pytest.raises(KeyError, match=r"^unknown scorer 'zzz'; known: \['length', 'numeric_match', 'refusal'\]$"):
        r["zzz"]


def test_a_name_registers_once_and_nothing_after_the_freeze():
    r = _registry()
    with pytest.raises(ValueError, match="scorer 'refusal' registered twice: 2 and 5"):
        r.register("refusal", 5)
    assert r["refusal"] == 2
    r.freeze()
    with pytest.raises(ValueError, match="scorer registry is frozen: 'new' registered after"):
        r.register("new", 4)
    assert "new" not in r and r.frozen


def test_override_swaps_an_entry_for_a_with_block_only():
    r = _registry()
    r.freeze()
    with r.override("refusal", 9):
        assert r["refusal"] == 9 and len(r) == 3
    assert r["refusal"] == 2
    with pytest.raises(UnknownNameError), r.override("nope", 9):
        pass


def test_the_three_registries_are_frozen_and_typed_by_kind():
    from auditor.backends import BACKENDS, HFBackend
    from auditor.scorers import SCORERS
    from auditor.suite.benchmarks import BENCHMARKS

    assert (SCORERS.kind, BENCHMARKS.kind, BACKENDS.kind) == ("scorer", "benchmark", "backend")
    assert SCORERS.frozen and BENCHMARKS.frozen and BACKENDS.frozen
    assert list(BACKENDS) == ["hf", "vllm", "openai"] and BACKENDS["hf"] is HFBackend  # the --backend choices' order
    assert BENCHMARKS.names() == ["arc_challenge", "arc_easy", "boolq", "copa", "gsm8k", "hellaswag", "ifeval",
                                  "mmlu_redux", "openbookqa", "piqa", "winogrande", "xcopa", "xstest"]
    with pytest.raises(ValueError, match="scorer registry is frozen: 'refusal' registered after its package"):
        SCORERS.register("refusal", SCORERS["refusal"])
    with pytest.raises(KeyError, match="did you mean 'gsm8k'"):
        BENCHMARKS["gsm9k"]


def test_a_duplicate_names_both_entries():
    class One:
        pass

    class Two:
        pass

    r: Registry[type] = Registry("backend")
    r.register("hf", One)
    with pytest.raises(ValueError) as e:
        r.register("hf", Two)
    assert str(e.value) == (f"backend 'hf' registered twice: {__name__}.{One.__qualname__} "
                            f"and {__name__}.{Two.__qualname__}")
