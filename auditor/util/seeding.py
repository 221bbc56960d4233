"""Seeded random streams: one reproducible generator per (seed, name).

Named ``seeding`` (not ``random``) so that it never shadows the standard library's module.
"""

from __future__ import annotations

import zlib

import numpy as np


def rng_for(seed: int, name: str) -> np.random.Generator:
    """A generator seeded by (seed, name): every capability gets its own,
    reproducible stream, independent of the order capabilities are analysed in."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode("utf-8"))]))
