"""Installed package versions (for cache keys and the report's reproducibility block)."""

from __future__ import annotations

import platform
from importlib import metadata

#: the packages whose versions results.json records (``run.versions``)
REPORTED = ("torch", "transformers", "peft", "lm_eval", "nltk", "langdetect", "safetensors")


def versions(packages: tuple[str, ...]) -> dict[str, str | None]:
    """Package → installed version, None where it is not installed."""
    out: dict[str, str | None] = {}
    for pkg in packages:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def first_installed(*dists: str) -> str:
    """The version of the first of ``dists`` that is installed (``"?"`` when none is)."""
    return next((v for v in versions(dists).values() if v), "?")


def package_versions(auditor_version: str) -> dict[str, str]:
    """Python, the auditor and :data:`REPORTED` packages that are installed."""
    return {"python": platform.python_version(), "adapter-auditor": auditor_version,
            **{k: v for k, v in versions(REPORTED).items() if v is not None}}
