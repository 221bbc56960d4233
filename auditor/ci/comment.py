"""The ``comment`` step: one sticky pull-request comment with the summary, found again by a hidden
marker and edited on every run. The marker names this use of the action (the ``comment-id`` input,
else workflow, job and artifact name), so two uses in one pull request keep a comment each. A comment
that cannot be posted is a warning, never a failure."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

from .changes import load_event
from .runner import annotate, env, report_dir
from .summary import adapters_from_env, summary_markdown

MARKER_PREFIX = "<!-- adapter-auditor:sticky-comment"


def marker() -> str:
    """The hidden first line of this use's comment: ``GATE_COMMENT_ID``, else
    ``$GITHUB_WORKFLOW/$GITHUB_JOB/GATE_ARTIFACT_NAME`` (the artifact name is unique per use in a run);
    characters that could end the HTML comment early are replaced by ``_``."""
    ident = env("GATE_COMMENT_ID") or "/".join(
        x for x in (env("GITHUB_WORKFLOW"), env("GITHUB_JOB"), env("GATE_ARTIFACT_NAME")) if x)
    ident = re.sub(r"-{2,}|[<>\s]", "_", ident)
    return f"{MARKER_PREFIX} id={ident} -->" if ident else f"{MARKER_PREFIX} -->"
COMMENT_LIMIT = 60000  # GitHub refuses comment bodies over 65536 characters


def _api(method: str, url: str, token: str, body: dict | None = None):
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Accept", "application/vnd.github+json")
    req.add_header("X-GitHub-Api-Version", "2022-11-28")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def sticky_comment(api: str, repo: str, number: int, token: str, body: str, mark: str) -> str:
    """Update the comment whose body starts with ``mark`` (:func:`marker`) on issue/PR ``number``, or create
    it; return its URL."""
    page = 1
    while True:
        comments = _api("GET", f"{api}/repos/{repo}/issues/{number}/comments?per_page=100&page={page}", token)
        for c in comments:
            if (c.get("body") or "").startswith(mark + "\n"):
                return _api("PATCH", f"{api}/repos/{repo}/issues/comments/{c['id']}", token, {"body": body})["html_url"]
        if len(comments) < 100:
            break
        page += 1
    return _api("POST", f"{api}/repos/{repo}/issues/{number}/comments", token, {"body": body})["html_url"]


def comment() -> int:
    number = (load_event().get("pull_request") or {}).get("number")
    if not number:
        print("adapter-auditor: not a pull request; no comment", flush=True)
        return 0
    adapters = adapters_from_env()
    out = report_dir()
    verdict = env("GATE_VERDICT") or "error"
    body = summary_markdown(adapters, out, verdict, env("GATE_ERROR"))
    if len(body) > COMMENT_LIMIT:
        body = body[:COMMENT_LIMIT] + "\n\n… (cut; the whole summary is on the run page)\n"
    mark = marker()
    body = f"{mark}\n{body}"
    api = env("GITHUB_API_URL") or "https://api.github.com"
    try:
        url = sticky_comment(api, env("GITHUB_REPOSITORY"), int(number), env("GITHUB_TOKEN"), body, mark)
    except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
        if isinstance(e, urllib.error.HTTPError) and e.code in (401, 403, 404):
            # GitHub answers 403 (or 404 for a hidden repository) to a token without the permission
            hint = ("the workflow needs `permissions: pull-requests: write` (a fork's pull request gets a "
                    "read-only token)")
            detail = f"HTTP {e.code}"
        elif isinstance(e, urllib.error.HTTPError):
            hint, detail = "the GitHub API refused the request", f"HTTP {e.code}"
        else:
            reason = getattr(e, "reason", e)
            hint, detail = f"the GitHub API at {api} could not be reached", f"{type(e).__name__}: {reason}"
        annotate("warning", f"could not post the pull-request comment ({detail}); {hint}")
        return 0
    print(f"adapter-auditor: comment {url}", flush=True)
    return 0
