"""auditor.util.files: the write-permission probe leaves nothing behind."""

from __future__ import annotations

import os

import pytest

from auditor.errors import AuditInputError
from auditor.util.files import check_writable_folder


def test_the_write_probe_leaves_no_file_no_folder_and_no_changed_time(tmp_path):
    parent = tmp_path / "reports"
    parent.mkdir()
    os.utime(parent, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))  # 2001-09-09
    check_writable_folder(parent / "new" / "deeper", "--out")
    st = parent.stat()  # before listing it (a listing sets the access time)
    assert (st.st_atime_ns, st.st_mtime_ns) == (1_000_000_000_000_000_000, 1_000_000_000_000_000_000)
    assert list(parent.iterdir()) == []  # neither the probe nor the folder asked for


def test_a_file_in_the_way_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(AuditInputError, match="--out must be a folder, but this is a file"):
        check_writable_folder(tmp_path / "f" / "sub", "--out")
