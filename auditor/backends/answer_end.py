"""Where a generated answer ends at its stop strings, found token by token while it is generated.

An item shown worked examples ends its answer at the first of its ``until`` strings (lm-evaluation-harness's
``until``; :meth:`auditor.records.Item.answer`): a pretrained base goes on with examples of its own. Decoding
past that point costs tokens the scorer never reads, so the engine stops a request as soon as its answer has
ended and keeps its tokens up to and including the one that ended it. The cut is found on the answer's tokens,
not on when the engine noticed, so the kept tokens are the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


class AnswerEnd:
    """The shortest prefix of an answer's tokens whose text has ended at a stop string, checked incrementally.

    Args:
        decode: token ids → text (the variant's tokenizer, special tokens skipped).
        stops: the item's stop strings (:meth:`auditor.records.Item.stop_strings`); an answer has ended when its
            text, from its first non-blank character, contains one of them (leading blank lines are not an end).
        checked: tokens already known not to end the answer (a verified draft's prefix).
    """

    def __init__(self, decode: Callable[[list[int]], str], stops: Sequence[str], checked: int = 0) -> None:
        self.decode = decode
        self.stops = tuple(stops)
        self.checked = checked

    def ended(self, tokens: Sequence[int]) -> bool:
        """Whether the text of ``tokens`` has ended at a stop string for good: one is found, and no stop string
        could still complete at an earlier start with more text (``until: ["Q", "\\nQ:"]`` on "ans\\nQ" has not
        ended: ":" would make the answer "ans", not "ans\\n"), so the answer cut here is the whole text's."""
        text = self.decode(list(tokens)).lstrip()
        found = [k for k in (text.find(s) for s in self.stops) if k >= 0]
        if not found:
            return False
        first = min(found)
        return not any(s.startswith(text[j:]) for s in self.stops
                       for j in range(max(0, len(text) - len(s) + 1), first))

    def __call__(self, tokens: Sequence[int]) -> int | None:
        """The length of the shortest prefix of ``tokens`` that has ended (tokens up to and including the one that
        ended it), or None; prefixes checked by an earlier call (of a shorter ``tokens`` of the same answer) are
        not checked again."""
        for n in range(self.checked + 1, len(tokens) + 1):
            if self.ended(tokens[:n]):
                return n
        self.checked = max(self.checked, len(tokens))
        return None
