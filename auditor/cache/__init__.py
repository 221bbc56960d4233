"""The answer cache: what an audit generated (and the weight-space pre-screens), kept by content so that an
answer asked again is read, not generated, by any process or machine that names the same cache.

* :mod:`.store`: where it lives (a local folder or any location fsspec opens), how a URL is shown without
  its secrets, and how several writers at once lose and tear nothing;
* :mod:`.generations`: the generation cache the backends read and write (each answer keyed by the sha256 of
  what determines it), ``audit cache info`` and ``clear``'s figures.
"""

from .generations import CacheStats, GenerationCache, generation_key

__all__ = ["CacheStats", "GenerationCache", "generation_key"]
