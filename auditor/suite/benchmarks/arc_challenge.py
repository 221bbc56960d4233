"""ARC-Challenge (Clark et al., 2018, *Think you have Solved Question Answering? Try ARC, the AI2 Reasoning
Challenge*, arXiv:1803.05457): ``ARC-Challenge-Test.jsonl`` (1172 questions) → multiple-choice rows
(:mod:`.choice_rows`) as lm-evaluation-harness's ``arc_challenge`` task builds them (the same as ``arc_easy``:
:func:`.arc_easy.arc_row`)."""

from __future__ import annotations

from .arc_easy import hub_arc, read_arc
from .benchmark import Benchmark, register
from .choice_rows import data_names

register(Benchmark("arc_challenge", ("test",), lambda s: data_names("arc_challenge", "ARC-Challenge-Test.jsonl"),
                   lambda p, s: read_arc(p, "arc_challenge", s), "allenai/ai2_arc",
                   hub_arc("arc_challenge", "ARC-Challenge")))
