"""Records of one run: the adapter variants it generates for, its looks and its escalation budget."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .inputs import AdapterRecord

_OMIT = {"omit_none": True}


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One adapter of a run under the name its requests and generations carry.

    Attributes:
        name: ``adapter`` when one adapter is audited, ``adapter0``, ``adapter1``, ... for several,
            ``baseline`` for the previously approved adapter (``--baseline``); never ``base``.
        info: the adapter's record, as inspection made it (:class:`~auditor.records.AdapterRecord`).
        warnings: what the run found about it after inspection (a declared base it could not have, its chat
            template), in the order found.
    """

    name: str
    info: AdapterRecord
    warnings: tuple[str, ...] = ()

    @classmethod
    def of_folder(cls, name: str, folder: Path | str, digest: str) -> Variant:
        """A variant of an adapter folder that inspection did not see (a benchmark or test driving a backend
        directly): its record holds the folder and the digest only (``info.config`` None). The hf backend reads
        whether the weights hold DoRA magnitudes from the files; a resized vocabulary (an adapter trained with
        added tokens) is not read: such an adapter needs the record inspection makes."""
        return cls(name=name, info=AdapterRecord(path=str(folder), content_sha256=digest))

    @property
    def folder(self) -> Path:
        """The PEFT folder the backend loads."""
        return Path(self.info.path)

    @property
    def digest(self) -> str:
        """The content digest of its weights and config: what keys its cached answers."""
        return self.info.content_sha256 or ""


@dataclass(frozen=True, kw_only=True)
class Round:
    """One look of an adapter's audit (results.json ``run.rounds[]``).

    Attributes:
        look: 1 for the suite's own items, then one per round of items drawn from the pools.
        items: capability → items judged at this look (every earlier look's included).
        new_items: capability → items this look's round added (None for look 1).
        undecided: the rules still undecided after this look (the ones that bought the next round).
    """

    look: int
    items: Mapping[str, int]
    new_items: Mapping[str, int] | None = field(default=None, metadata=_OMIT)
    undecided: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Budget:
    """How many more items (each asked of every variant) and seconds the rounds may spend, planned before
    any data, and what they used (results.json ``run.budget``).

    Attributes:
        items: items the rounds may add over all capabilities (0: no rounds).
        seconds: wall-clock seconds the rounds may take (None: no time limit).
        looks: the looks planned before any data (the policy's ``looks``, or 1 when no round can be
            bought), for the alpha-spending plan (:func:`auditor.policy.decisions.alpha_at_look`).
        used_items: items the rounds drew.
        tokens: new tokens the rounds may generate, every variant's together (``--budget 20ktok``; None:
            no token limit); used_tokens: what they generated (with a token limit only).
    """

    items: int
    seconds: float | None = None
    looks: int = 1
    used_items: int = 0
    tokens: int | None = field(default=None, metadata=_OMIT)
    used_tokens: int | None = field(default=None, metadata=_OMIT)
