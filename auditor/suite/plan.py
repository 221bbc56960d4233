"""The plan: every item of the suite under every variant (``base``, ``adapter``, ...), as requests."""

from __future__ import annotations

from ..records import Request, Suite

VARIANTS = ("base", "adapter")


def plan_requests(suite: Suite, variants: tuple[str, ...] = VARIANTS) -> list[Request]:
    """Every item under every variant, item-major (base and adapter of an item adjacent)."""
    return [Request(item=item, variant=v) for item in suite.items for v in variants]
