"""IFEval, scored by lm-evaluation-harness's copy of Google's reference checkers
(:mod:`.ifeval_checkers`): prompt-level and instruction-level accuracy, strict and loose, under
the metric names lm-evaluation-harness uses."""

from __future__ import annotations

from ..records import Generation, Item, MetricSpec, Score
from .scorer import Scorer, register


# --------------------------------------------------------------------------- IFEval
def score_ifeval(item: Item, gen: Generation) -> Score:
    """IFEval, scored by lm-evaluation-harness's copy of Google's reference checkers.

    Reports prompt-level accuracy (all instructions followed) and
    instruction-level accuracy (fraction followed; aggregated over all
    instructions), each strict and loose, with the metric names
    lm-evaluation-harness uses.
    """
    from .ifeval_checkers import ifeval_results

    res = ifeval_results(item.target, item.target.get("prompt", item.prompt), gen.text)
    strict, loose = res["inst_level_strict_acc"], res["inst_level_loose_acc"]
    n = len(strict)
    values = {
        "prompt_level_strict_acc": float(res["prompt_level_strict_acc"]),
        "inst_level_strict_acc": sum(strict) / n,
        "prompt_level_loose_acc": float(res["prompt_level_loose_acc"]),
        "inst_level_loose_acc": sum(loose) / n,
    }
    detail = {
        "n_instructions": n,
        "instructions": list(item.target["instruction_id_list"]),
        "followed_strict": [bool(x) for x in strict],
        "followed_loose": [bool(x) for x in loose],
    }
    return Score(item_id=gen.item_id, variant=gen.variant, values=values, detail=detail)


def _target_ifeval(row: dict) -> dict:
    from .ifeval_checkers import known_instruction_ids

    ids, kwargs = row.get("instruction_id_list"), row.get("kwargs")
    if not isinstance(row.get("prompt"), str) or not isinstance(ids, list) or not isinstance(kwargs, list) \
            or len(ids) != len(kwargs) or not ids or not all(isinstance(k, dict) for k in kwargs):
        raise ValueError("ifeval items need 'prompt', 'instruction_id_list' and one 'kwargs' object per instruction")
    unknown = [i for i in ids if i not in known_instruction_ids()]
    if unknown:
        raise ValueError(f"unknown IFEval instruction ids {unknown}")
    target = {"instruction_id_list": ids, "kwargs": kwargs, "prompt": row["prompt"]}
    _dry_run_ifeval(target)
    return target


def _dry_run_ifeval(target: dict) -> None:
    """Run the reference checkers once on a stand-in answer, so that arguments they
    cannot take (an unknown kwarg, a word count given as text) are refused when the
    item is loaded — not after every generation has run."""
    from .ifeval_checkers import ifeval_results

    try:
        ifeval_results(target, target["prompt"], "A stand-in answer.\n\n* one\n* two")
    except Exception as e:  # noqa: BLE001 - any checker fault is a fault of this item's data
        raise ValueError(f"IFEval's reference checker cannot check this item "
                         f"({type(e).__name__}: {str(e)[:200]})") from None


def explain_instructions(detail: dict) -> str:
    """Each instruction with ✓/✗ strict and loose (the report's reason for an IFEval-checked answer)."""
    ins, fs, fl = detail.get("instructions"), detail.get("followed_strict"), detail.get("followed_loose")
    if not (isinstance(ins, list) and isinstance(fs, list) and isinstance(fl, list) and len(ins) == len(fs) == len(fl)):
        return ""
    return "; ".join(f"{i} {'✓' if s else '✗'} strict {'✓' if lo else '✗'} loose" for i, s, lo in zip(ins, fs, fl))


register(Scorer("ifeval", (
    MetricSpec(name="prompt_level_strict_acc"),
    MetricSpec(name="inst_level_strict_acc", weight_key="n_instructions"),
    MetricSpec(name="prompt_level_loose_acc"),
    MetricSpec(name="inst_level_loose_acc", weight_key="n_instructions"),
), score_ifeval, _target_ifeval, explain=explain_instructions))
