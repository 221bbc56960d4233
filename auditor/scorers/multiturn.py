"""Multi-turn instruction persistence (HOW): does the answer to the last turn still follow the
instruction(s) given in turn 1? Checked with IFEval's reference checkers."""

from __future__ import annotations

from ..records import Generation, Item, MetricSpec, Score
from .ifeval import _target_ifeval, explain_instructions
from .scorer import Scorer, register


# --------------------------------------------------------------------------- multiturn (HOW)
def score_multiturn(item: Item, gen: Generation) -> Score:
    """Multi-turn instruction persistence: does the answer to the last turn still follow
    the instruction(s) given in turn 1?

    Checked with IFEval's reference checkers (as :func:`score_ifeval`), on the final
    answer only. Values: ``instruction_held_rate`` (strict: every turn-1 instruction
    followed) and ``instruction_held_rate_loose`` (IFEval's loose variant: also tried
    without the first/last line and without ``*``).
    """
    from .ifeval_checkers import ifeval_results

    res = ifeval_results(item.target, item.target["prompt"], gen.text)
    return Score(item_id=gen.item_id, variant=gen.variant,
                 values={"instruction_held_rate": float(res["prompt_level_strict_acc"]),
                  "instruction_held_rate_loose": float(res["prompt_level_loose_acc"])},
                 detail={"instructions": list(item.target["instruction_id_list"]),
                  "followed_strict": [bool(x) for x in res["inst_level_strict_acc"]],
                  "followed_loose": [bool(x) for x in res["inst_level_loose_acc"]]})


def _target_multiturn(row: dict) -> dict:
    """Rows: ``history`` (user turn 1 with the instruction, assistant, user, assistant),
    ``prompt`` (the last user turn), ``instruction_id_list`` and ``kwargs`` as in IFEval.
    Every argument an instruction takes must be given (IFEval otherwise draws a random one)."""
    history = row.get("history")
    if not isinstance(history, list) or len(history) < 2 or len(history) % 2 \
            or [m.get("role") if isinstance(m, dict) else None for m in history] \
            != ["user", "assistant"] * (len(history) // 2):
        raise ValueError("multiturn items need 'history': user/assistant turns in pairs, starting with the "
                         "user turn that gives the instruction")
    target = _target_ifeval(row)  # also makes NLTK's punkt data available before lm-eval's import
    from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_DICT as registry
    for iid, kw in zip(target["instruction_id_list"], target["kwargs"]):
        keys = set(registry[iid](iid).get_instruction_args_keys())
        given = {k for k, v in kw.items() if v is not None}
        if given != keys:
            raise ValueError(f"instruction {iid!r} needs kwargs {sorted(keys)}, got {sorted(given)}")
    return target


register(Scorer("multiturn_ifeval", (MetricSpec(name="instruction_held_rate"), MetricSpec(name="instruction_held_rate_loose")),
                   score_multiturn, _target_multiturn, explain=explain_instructions))
