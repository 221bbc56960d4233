"""The "Audit against the base" section of an adapter's model card (its ``README.md`` on the Hub).

The section is Markdown between two HTML comments, :data:`BEGIN` and :data:`END`, each on a line of its own
(invisible once rendered): the verdict, the failing and undecided rules, each metric's base and adapter scores
with Δ and its interval, DriftScore, and what was audited (base, suite, policy, hashes). Untrusted names and
reasons are escaped plain text (:func:`auditor.reports.markdown.md`).

A model card that exists is edited only when asked (``overwrite``), and then only between the markers: the
bytes before and after them (the YAML front matter included) are kept as they are; a card without the markers
gets the section appended after its last byte. ``huggingface_hub``'s ``ModelCard`` is not used to write it:
it re-serialises the front matter on save, which would not keep it byte for byte.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from ..errors import AuditInputError
from ..results import AuditResult
from ..util.files import check_writable_folder, write_text_file
from .markdown import md, md_comparison_table, md_drift_lines, public_base_name
from .view import failing_rules

BEGIN = "<!-- adapter-auditor:begin -->"
END = "<!-- adapter-auditor:end -->"
#: a model card larger than this is refused (Hub model cards are kilobytes)
MAX_CARD_BYTES = 10_000_000


def render_card_section(result: AuditResult) -> str:
    """The section's Markdown, from :data:`BEGIN` to :data:`END` (each on its own line, ``\\n`` line ends)."""
    v, a = result.verdict, result.adapter
    icon = "✅" if v.verdict == "pass" else "❌"
    lines = [BEGIN, "## Audit against the base", "",
             f"{icon} **{v.verdict.upper()}**: audited by adapter-auditor {md(result.run.auditor_version)} on "
             f"{md(result.run.created_at)} against the base **{md(public_base_name(result))}**, on "
             f"{len(result.items)} items of suite **{md(result.suite.name)}**, judged by policy "
             f"**{md(Path(result.policy.path).name)}**.", ""]
    failing = failing_rules(result)
    if failing:
        lines += ["Failing rules:", ""] + [f"- {md(r.rule)}: {md(r.reason)}" for r in failing] + [""]
    open_rules = [r for r in v.rules if r.decision in ("inconclusive", "not_measurable")]
    if open_rules:
        lines += ["Not decided: " + "; ".join(
            f"{md(r.rule)} ({'inconclusive' if r.decision == 'inconclusive' else 'not measurable on this base'})"
            for r in open_rules) + ".", ""]
    lines += md_comparison_table(result.comparisons)
    lines += md_drift_lines(result)
    lines += ["", "Δ: adapter − base, in points for rates (0–100), with its paired-bootstrap interval; p: exact "
                  "McNemar for pass/fail items, Wilcoxon signed-rank otherwise. Scores are on the audit's probe "
                  "items, greedy decoding, not on a leaderboard's benchmark.", "",
              f"Audited: adapter weights sha256 `{md(a.sha256)}`; base sha256 `{md(result.base.content_hash)}`; "
              f"suite items sha256 `{md(result.suite.items_sha256 or '—')}`; policy sha256 "
              f"`{md(result.policy.sha256 or '—')}`.", END]
    return "\n".join(lines) + "\n"


def _marker_lines(text: str, marker: str) -> list[int]:
    """Start offsets of the lines of ``text`` that are ``marker`` alone (surrounding blanks allowed) as an HTML
    block of the Markdown: a marker line inside a fenced or indented code block (a card that shows how the
    markers look) is text, not a marker. Parsed with markdown-it-py (CommonMark), lines counted as it counts them."""
    from markdown_it import MarkdownIt

    starts = [0, *(m.end() for m in re.finditer(r"\r\n?|\n", text))]
    return [starts[tok.map[0]] for tok in MarkdownIt("commonmark").parse(text)
            if tok.type == "html_block" and tok.map and tok.content.strip() == marker
            and text[starts[tok.map[0]]:].split("\n", 1)[0].strip() == marker]


def splice_card(card: str, section: str, path: str | Path = "model card") -> str:
    """``card`` with its section between :data:`BEGIN` and :data:`END` replaced by ``section`` (which holds
    the markers), or ``section`` appended (after a blank line) when the card has none; everything else is kept
    as it is. The section takes the card's line ends (``\\r\\n`` when the card uses them).

    Raises:
        AuditInputError: the markers are not one :data:`BEGIN` followed by one :data:`END` (named with ``path``).
    """
    if "\r\n" in card:
        section = section.replace("\n", "\r\n")
    begins, ends = _marker_lines(card, BEGIN), _marker_lines(card, END)
    if not begins and not ends:
        if not card:
            return section
        newline = "\r\n" if "\r\n" in card else "\n"
        return card + ("" if card.endswith("\n") else newline) + newline + section
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise AuditInputError(path, f"its adapter-auditor section is not one {BEGIN} line followed by one {END} "
                                    f"line ({len(begins)} begin, {len(ends)} end); fix the markers by hand")
    end_line = card[ends[0]:].splitlines(keepends=True)[0]
    return card[:begins[0]] + section + card[ends[0] + len(end_line):]


def _read_card(path: Path) -> str:
    """The text of the existing card at ``path``, exactly (no newline translation).

    Raises:
        AuditInputError: too large, unreadable or not UTF-8.
    """
    try:
        if path.stat().st_size > MAX_CARD_BYTES:
            raise AuditInputError(path, f"is over {MAX_CARD_BYTES // 1_000_000} MB; not a model card")
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise AuditInputError(path, "is not UTF-8 text; not a model card") from None
    except OSError as e:
        raise AuditInputError(path, f"cannot be read ({e.strerror or type(e).__name__})") from None


def check_model_card(path: str | Path, overwrite: bool = False) -> None:
    """Refuse, before any work, a model card path that :func:`write_model_card` could not write: a folder, an
    symbolic link, an existing file without ``overwrite``, an existing card that is unreadable or whose markers
    are broken, or a folder that cannot be written.

    Raises:
        AuditInputError: naming the path at fault.
    """
    path = Path(path)
    if path.is_symlink():
        raise AuditInputError(path, "--model-card is a symbolic link; name the file it points to")
    if path.is_dir():
        raise AuditInputError(path, "--model-card is a folder; name the model card file (README.md)")
    if path.exists():
        if not overwrite:
            raise AuditInputError(path, "exists; pass --overwrite to replace its adapter-auditor section (the rest "
                                        "of the file is kept byte for byte), or name a new --model-card file")
        splice_card(_read_card(path), "", path)
    check_writable_folder(path.parent, "--model-card's folder")


def write_model_card(result: AuditResult, path: str | Path, overwrite: bool = False) -> Path:
    """Write the audit's section (:func:`render_card_section`) into the model card at ``path``: a new file
    holding the section alone, or, with ``overwrite``, an existing card whose section is replaced (appended
    when it has none), every other byte kept, its file mode too.

    Returns:
        ``path``.

    Raises:
        AuditInputError: as :func:`check_model_card`, or the file cannot be written.
    """
    path = Path(path)
    check_model_card(path, overwrite)
    section = render_card_section(result)
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        write_text_file(path, splice_card(_read_card(path), section, path), mode=mode)
    else:
        write_text_file(path, section)
    return path
