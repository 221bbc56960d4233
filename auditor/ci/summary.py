"""The Markdown the action puts on the job's summary page and in the pull-request comment: each
adapter's ``summary.md``, or the error that stopped the audit, and where the reports are."""

from __future__ import annotations

import json
from pathlib import Path

from .runner import env


def adapters_from_env() -> list[str]:
    return json.loads(env("GATE_ADAPTERS_JSON") or "[]")


def report_folders(adapters: list[str], out: Path) -> list[Path]:
    """Where ``audit`` writes each adapter's reports: ``out`` for one, ``out/<name>`` for several."""
    if len(adapters) == 1:
        return [out]
    from ..reports import report_folder_names

    return [out / n for n in report_folder_names(adapters)]


def run_page() -> str:
    server, repo, run_id = env("GITHUB_SERVER_URL", "https://github.com"), env("GITHUB_REPOSITORY"), env("GITHUB_RUN_ID")
    return f"{server}/{repo}/actions/runs/{run_id}" if repo and run_id else ""


def summary_markdown(adapters: list[str], out: Path, verdict: str, error: str = "") -> str:
    """The Markdown for the job summary and the PR comment: each adapter's ``summary.md``, or the
    error that stopped the audit, and where the reports are."""
    link = run_page()
    if verdict == "error":
        error = (error or "see the job log").replace("`", "'")  # cannot close the code block
        return (f"## ⚠️ adapter-auditor: ERROR\n\nThe audit stopped before a verdict:\n\n```\n{error}\n```\n"
                + (f"\nJob log: [this run]({link}).\n" if link else ""))
    parts = []
    folders = report_folders(adapters, out)
    if len(adapters) > 1:
        n_fail = sum(_verdict_of(f) != "pass" for f in folders)
        parts.append(f"# adapter-auditor: {n_fail} of {len(adapters)} adapters fail\n")
    for folder in folders:
        summary = folder / "summary.md"
        parts.append(summary.read_text(encoding="utf-8") if summary.is_file() else f"`{folder.name}`: no summary.md\n")
    artifact = env("GATE_ARTIFACT_NAME")
    if artifact:
        from ..reports import REPORT_FILES

        files = ", ".join(f for f in REPORT_FILES if f != "summary.md")
        parts.append(f"Reports ({files}): artifact `{artifact}`"
                     + (f" of [this run]({link})" if link else "") + ".\n")
    return "\n".join(parts)


def _verdict_of(folder: Path) -> str:
    try:
        return json.loads((folder / "results.json").read_text(encoding="utf-8"))["verdict"]["verdict"]
    except (OSError, ValueError, KeyError, TypeError):
        return "missing"
