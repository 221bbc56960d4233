"""Settings read from AUDITOR_* variables: a bad value is one line naming the variable (auditor.util.env)."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import AUDIT, ROOT, assert_one_line_error

from auditor.errors import AuditInputError
from auditor.util.env import env_seconds


def test_env_seconds_reads_the_variable_or_keeps_the_default(monkeypatch):
    monkeypatch.delenv("AUDITOR_X_TIMEOUT", raising=False)
    assert env_seconds("AUDITOR_X_TIMEOUT", 20.0) == 20.0
    monkeypatch.setenv("AUDITOR_X_TIMEOUT", " ")
    assert env_seconds("AUDITOR_X_TIMEOUT", 20.0) == 20.0
    monkeypatch.setenv("AUDITOR_X_TIMEOUT", "4.5")
    assert env_seconds("AUDITOR_X_TIMEOUT", 20.0) == 4.5
    monkeypatch.setenv("AUDITOR_X_TIMEOUT", "7200")
    assert env_seconds("AUDITOR_X_TIMEOUT", 20.0, most=86400) == 7200


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf", "7200", "3\x1b[31m"])
def test_env_seconds_refuses_what_is_not_a_number_of_seconds(monkeypatch, value):
    monkeypatch.setenv("AUDITOR_X_TIMEOUT", value)
    with pytest.raises(AuditInputError) as e:
        env_seconds("AUDITOR_X_TIMEOUT", 20.0)
    line = e.value.one_line()
    assert line.startswith("AUDITOR_X_TIMEOUT: ") and "not a number of seconds in (0, 3600]" in line
    assert "\x1b" not in line and "\n" not in line


def test_a_bad_ray_placement_timeout_no_longer_breaks_every_audit(tmp_path):
    """AUDITOR_RAY_PLACEMENT_TIMEOUT was read with float() when the Ray module was imported, so a bad value made
    every audit an internal error (exit 3), --ray or not; it is now read when Ray workers start."""
    proc = subprocess.run([*AUDIT, str(tmp_path / "nope"), "--out", str(tmp_path / "o")], capture_output=True,
                          text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "AUDITOR_RAY_PLACEMENT_TIMEOUT": "soon"})
    assert_one_line_error(proc, "nope", "no such file")
