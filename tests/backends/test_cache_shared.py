"""The answer cache shared by several processes and machines (``--cache-dir DIR|URL``,
``$AUDITOR_GENERATION_CACHE``): real OS processes hammer one cache at once, on a plain folder, a ``file://``
URL and (with s3fs and moto from the test extras) an S3 bucket served on 127.0.0.1; afterwards every entry
is there, whole, with the bytes written, and no reader ever saw a torn one. And the one-line refusals of a
location that cannot be used, before any model loads. One audit of a tiny random-weight model; no real base loads."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cache_hammer import ABOUT, PER_WRITER, READERS, WRITERS, answer_of, entry_of, key_of, shared_keys, worker
from conftest import AUDIT, DEMO_ADAPTERS, ROOT, assert_one_line_error

from auditor.cache.generations import ENTRY_NAMES, GenerationCache, cache_info
from auditor.cache.store import ANSWER_CACHE_ENV, cache_env, open_store, public_url, using_cache_dir


def _hammer(where: str, per: int, big: bool = True, env: dict | None = None) -> list[dict]:
    """Start WRITERS + READERS processes (spawn: fresh interpreters, as on separate machines) on ``where`` at
    the same moment; returns their reports. Bounded: every process must end within two minutes."""
    ctx = multiprocessing.get_context("spawn")
    barrier, done, results = ctx.Barrier(WRITERS + READERS), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(where, me, per, big, env or {}, barrier, done, results))
             for me in range(WRITERS + READERS)]
    for p in procs:
        p.start()
    reports = []
    try:
        while len([r for r in reports if r["me"] < WRITERS]) < WRITERS:
            reports.append(results.get(timeout=120))
        done.set()
        while len(reports) < WRITERS + READERS:
            reports.append(results.get(timeout=60))
    finally:
        done.set()
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return reports


def _check_reports(reports: list[dict], per: int) -> None:
    """Nothing torn seen, nothing failed, every write counted, and the readers did meet entries mid-run."""
    assert sorted(r["me"] for r in reports) == list(range(WRITERS + READERS))
    for r in reports:
        assert r["wrong"] == [] and r["unreadable"] == 0 and r["failed_writes"] == 0, r
    writers = [r for r in reports if r["me"] < WRITERS]
    assert [r["writes"] for r in writers] == [per] * WRITERS
    assert sum(r["hits"] for r in reports) > 0 and sum(r["misses"] for r in reports) > 0  # they raced


def _check_store(where: str, per: int, big: bool = True) -> None:
    """Every key present once, with exactly the bytes written; no temporary or stray file."""
    store = open_store(where, "test")
    listed = store.files("")
    assert [rel for rel, _ in listed] == sorted(f"{key_of(i)[:2]}/{key_of(i)}.json" for i in range(shared_keys(per)))
    got = store.read_many([rel for rel, _ in listed])
    for i in range(shared_keys(per)):
        assert got[f"{key_of(i)[:2]}/{key_of(i)}.json"] == entry_of(i, big), i


@pytest.mark.parametrize("as_url", [False, True], ids=["folder", "file-url"])
def test_processes_writing_and_reading_one_cache_at_once_lose_and_tear_nothing(tmp_path, as_url):
    folder = tmp_path / "shared" / "generations"
    where = folder.as_uri() if as_url else str(folder)
    t0 = time.monotonic()
    reports = _hammer(where, PER_WRITER["folder"])
    _check_reports(reports, PER_WRITER["folder"])
    _check_store(where, PER_WRITER["folder"])
    # no temporary file left behind (hidden names are what atomic_write's siblings are called)
    assert [p for p in folder.rglob("*") if p.is_file() and (p.name.startswith(".") or p.suffix == ".tmp")] == []
    assert time.monotonic() - t0 < 120


def test_the_hammer_catches_a_deliberately_non_atomic_writer(tmp_path, monkeypatch):
    """The test has teeth: the same readers, racing a writer that writes an entry in two parts (what a
    plain open('wb') + write does on a slow disk), see torn entries and count them."""
    from auditor.cache import store as cache_store

    def torn_write(self, rel, data):
        path = Path(self._full(rel))
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
            f.flush()
            time.sleep(0.002)
            f.write(data[len(data) // 2:])

    monkeypatch.setattr(cache_store.CacheStore, "write", torn_write)
    where = tmp_path / "generations"
    keys = list(range(40))
    seen = {"torn": 0}
    import threading

    stop = threading.Event()

    def reader() -> None:
        c = GenerationCache(where)
        while not stop.is_set():
            for i in keys:
                c.get(key_of(i), "base")
        seen["torn"] = c.stats.unreadable

    t = threading.Thread(target=reader)
    t.start()
    w = GenerationCache(where)
    for _ in range(5):
        for i in keys:
            w.put(key_of(i), *answer_of(i, True), ABOUT)
    stop.set()
    t.join(timeout=30)
    assert seen["torn"] > 0


def _moto():
    """A local S3 server (moto) on 127.0.0.1 and the environment a process needs to reach it."""
    if not all(importlib.util.find_spec(m) for m in ("s3fs", "moto", "flask_cors")):
        pytest.skip("s3fs and moto[s3] are not installed (test extras: pip install -e '.[test]')")
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{server.get_host_and_port()[1]}"}
    import urllib.request

    import boto3

    # moto's state outlives a server in this process: start from no bucket
    urllib.request.urlopen(urllib.request.Request(f"{env['AWS_ENDPOINT_URL']}/moto-api/reset", method="POST"), timeout=10)
    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id="test", aws_secret_access_key="test",
                 region_name="us-east-1").create_bucket(Bucket="answers")
    return server, env


@pytest.fixture
def s3_env(monkeypatch):
    server, env = _moto()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # fsspec keeps one filesystem per options: not one of another server's
    yield env
    s3fs.S3FileSystem.clear_instance_cache()
    server.stop()


def test_processes_sharing_an_s3_bucket_lose_and_tear_nothing(s3_env):
    """The same hammer on an object store: one PUT per entry (moto's S3 on 127.0.0.1, reached through s3fs)."""
    where = "s3://answers/team/generations"
    reports = _hammer(where, PER_WRITER["s3"], big=False, env=s3_env)
    _check_reports(reports, PER_WRITER["s3"])
    _check_store(where, PER_WRITER["s3"], big=False)


def _audit(*args, env: dict | None = None, timeout: int = 120, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``audit *args`` in a fresh process, run in ``cwd`` (this checkout's auditor package imported wherever)."""
    return subprocess.run([*AUDIT, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_cache_info_and_clear_on_a_shared_url(tmp_path, s3_env):
    """``audit cache info|clear --cache-dir s3://…``: the answer cache is counted and cleared there; the local
    cache (converted models) stays where it is; clear removes only the cache's own folders of the prefix."""
    local = tmp_path / "local"
    (local / "models" / "M").mkdir(parents=True)
    (local / "models" / "M" / "config.json").write_text("{}")
    url = "s3://answers/team"
    gc = GenerationCache(f"{url}/generations")
    gc.put("ab" + "0" * 62, "hello", 2, {"base": "b" * 64, "adapter": None})
    gc.put("cd" + "0" * 62, "hi", 1, {"base": "b" * 64, "adapter": "a" * 64})
    assert gc.stats.location == {"protocol": "s3", "path": "answers/team/generations"}
    other = open_store(url, "test")
    other.write("notes/keep.txt", b"not the auditor's")
    env = {"AUDITOR_CACHE_DIR": str(local), **s3_env}
    proc = _audit("cache", "info", "--json", "--cache-dir", url, env=env)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["answers"] == {"protocol": "s3", "path": "answers/team"} and info["root"] == str(local)
    assert info["generations"]["entries"] == 2 and info["generations"]["by_variant"] == {"base": 1, "adapter": 1}
    assert [m["name"] for m in info["models"]] == ["M"]
    # the environment variable names the same place (what Ray workers and CI jobs inherit)
    proc = _audit("cache", "info", env={**env, ANSWER_CACHE_ENV: url})
    assert proc.returncode == 0 and "answer cache: s3://answers/team" in proc.stdout and "2 entries" in proc.stdout

    proc = _audit("cache", "clear", "--cache-dir", url, env=env)
    assert proc.returncode == 0 and "removed 2 files" in proc.stdout, proc.stderr
    assert other.files("generations") == [] and other.read("notes/keep.txt") == b"not the auditor's"
    assert (local / "models" / "M").is_dir()


def test_a_local_cache_dir_moves_the_whole_cache(tmp_path):
    """``--cache-dir DIR`` is $AUDITOR_CACHE_DIR for one command; a ``file://`` URL moves the answers only."""
    moved = tmp_path / "moved"
    GenerationCache(moved / "generations").put("ab" + "0" * 62, "hello", 2, ABOUT)
    proc = _audit("cache", "info", "--json", "--cache-dir", moved, env={"AUDITOR_CACHE_DIR": str(tmp_path / "home")})
    info = json.loads(proc.stdout)
    assert info["root"] == str(moved) and info["generations"]["entries"] == 1
    proc = _audit("cache", "info", "--json", "--cache-dir", moved.as_uri(),
                  env={"AUDITOR_CACHE_DIR": str(tmp_path / "home")})
    info = json.loads(proc.stdout)
    assert info["root"] == str(tmp_path / "home") and info["answers"] == {"protocol": "file", "path": str(moved)}
    assert info["generations"]["entries"] == 1


def test_using_cache_dir_puts_the_location_into_effect_and_takes_it_back(tmp_path, monkeypatch):
    from auditor.cache.store import answer_store
    from auditor.util.files import cache_dir

    before = cache_dir()
    with using_cache_dir(str(tmp_path / "all")) as store:
        assert cache_dir() == tmp_path / "all" and answer_store() == store
        assert GenerationCache.default().stats.location == {"protocol": "file", "path": str(tmp_path / "all" / "generations")}
    with using_cache_dir((tmp_path / "answers").as_uri()):
        assert cache_dir() == before and GenerationCache.default().stats.location["path"] == str(tmp_path / "answers" / "generations")
    monkeypatch.setenv(ANSWER_CACHE_ENV, str(tmp_path / "env"))
    with using_cache_dir(None):
        assert GenerationCache.default().stats.location["path"] == str(tmp_path / "env" / "generations")
    assert cache_dir() == before


def test_a_child_process_given_cache_env_uses_the_same_cache(tmp_path):
    """What a Ray worker or a CI job gets in its environment (cache_env) puts its answers where --cache-dir put
    this process's: a URL through AUDITOR_GENERATION_CACHE, a folder through both variables."""
    for value, expect in ((tmp_path / "all", tmp_path / "all" / "generations"),
                          ((tmp_path / "answers").as_uri(), tmp_path / "answers" / "generations")):
        env = {**os.environ, ANSWER_CACHE_ENV: str(tmp_path / "inherited"), **cache_env(str(value))}
        code = "from auditor.cache.generations import GenerationCache as G; print(G.default().stats.location['path'])"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
        assert proc.stdout.strip() == str(expect), proc.stderr
    assert cache_env(None) == {}


def test_urls_are_recorded_without_credentials():
    assert public_url("s3://KEY:SECRET@bucket/p?X-Amz-Signature=abc#x") == "s3://bucket/p"
    assert public_url("simplecache::sftp://user:pw@host:22/cache") == "simplecache::sftp://host:22/cache"
    # the user and password end at the LAST @, a / in the password included
    assert public_url("memory://user:Se/CrEt1@foo/bar") == "memory://foo/bar"
    assert public_url("s3://AKIA:SeC/rEtKeY@bkt/p") == "s3://bkt/p"
    assert public_url("simplecache::sftp://u:p/w@d@host/c::x") == "simplecache::sftp://host/c::x"
    # an @ after the query starts: a query holding one or a password holding ?; nothing after s3:// is shown
    assert public_url("s3://b/p?x=a@b&token=SeCrEt") == "s3://…" and public_url("s3://u:pa?ss@b/p") == "s3://…"


def test_an_object_store_entry_is_one_put_and_is_read_back(tmp_path):
    """The fsspec path of the store (write = pipe_file, read, list, read_many, remove) on fsspec's in-memory
    filesystem, with cache_info over it; a torn object (what another tool might leave) is a miss."""
    c = GenerationCache("memory://answers/p/generations")
    c.put(key_of(1), *answer_of(1, False), ABOUT)
    assert c.get(key_of(1), "base") == answer_of(1, False) and c.get(key_of(2), "base") is None
    store = open_store("memory://answers/p", "test")
    store.write(f"generations/{key_of(2)[:2]}/{key_of(2)}.json", entry_of(2, False)[:30])
    assert c.get(key_of(2), "base") is None and c.stats.unreadable == 1
    info = cache_info(tmp_path, store)
    assert info["generations"]["entries"] == 2 and info["generations"]["unreadable"] == 1
    assert store.remove("generations", ENTRY_NAMES["generations"]) == (2, len(entry_of(1, False)) + 30)
    assert store.files("generations") == []


def _missing_protocol() -> tuple[str, str]:
    """A protocol fsspec knows whose package is not installed here (the package's name too)."""
    for proto, package in (("gs", "gcsfs"), ("az", "adlfs"), ("oci", "ocifs"), ("s3", "s3fs")):
        if importlib.util.find_spec(package) is None:
            return proto, package
    pytest.skip("every object-store package tried is installed")


def _refused_before_any_model(tmp_path, *args, env=None) -> str:
    """``audit run`` of a demo adapter with ``args``: one error line, exit 2, and no model converted."""
    home = tmp_path / "home"
    t0 = time.monotonic()
    proc = _audit(DEMO_ADAPTERS / "terse-instruct-r8", "--out", tmp_path / "out", *args,
                  env={"AUDITOR_CACHE_DIR": str(home), **(env or {})})
    line = assert_one_line_error(proc)
    assert not (home / "models").exists() and time.monotonic() - t0 < 60
    return line


def test_a_protocol_without_its_package_is_one_line_naming_the_pip_install(tmp_path):
    proto, package = _missing_protocol()
    line = _refused_before_any_model(tmp_path, "--cache-dir", f"{proto}://bucket/prefix")
    assert line == f"error: --cache-dir: {proto}:// needs the {package} package: pip install {package}"
    line = _refused_before_any_model(tmp_path, env={ANSWER_CACHE_ENV: f"{proto}://bucket/prefix"})
    assert line.startswith(f"error: {ANSWER_CACHE_ENV}: {proto}:// needs the {package} package")
    # the Python API takes the option under the same name, and refuses it the same way
    from auditor import AuditInputError, audit

    with pytest.raises(AuditInputError, match=f"needs the {package} package: pip install {package}"):
        audit(str(DEMO_ADAPTERS / "terse-instruct-r8"), cache_dir=f"{proto}://bucket/prefix")


def test_an_unknown_protocol_and_an_unwritable_folder_are_refused(tmp_path):
    assert "nope:// is not a filesystem fsspec knows" in _refused_before_any_model(tmp_path, "--cache-dir", "nope://x/y")
    (tmp_path / "a-file").write_text("x")
    line = _refused_before_any_model(tmp_path, "--cache-dir", tmp_path / "a-file" / "cache")
    assert "--cache-dir must be a folder, but this is a file" in line
    line = _refused_before_any_model(tmp_path, "--cache-dir", (tmp_path / "a-file" / "answers").as_uri())
    assert "--cache-dir must be a folder, but this is a file" in line
    assert "names no bucket" in _refused_before_any_model(tmp_path, "--cache-dir", "s3://")


def test_an_unreachable_or_missing_bucket_is_refused(tmp_path, s3_env):
    line = _refused_before_any_model(tmp_path, "--cache-dir", "s3://no-such-bucket/p", env=s3_env)
    assert "s3://no-such-bucket/p cannot be written" in line
    # nothing listens on port 9; one attempt (botocore's own retry settings, from the environment)
    env = {**s3_env, "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1", "AWS_RETRY_MODE": "standard"}
    line = _refused_before_any_model(tmp_path, "--cache-dir", "s3://answers/p", env=env)
    assert "s3://answers/p cannot be written" in line and "connect" in line.lower()
    assert "test" not in line.split("cannot be written")[0]  # no credentials in the message


def test_an_audit_with_its_answers_on_s3_reads_them_back_and_records_where(tmp_path, s3_env, base_model, cli):
    """A real audit (a tiny random-weight Llama and a LoRA on it, hf backend) with ``--cache-dir s3://…``: its
    answers and its weight-space pre-screen go to the bucket, none to the local cache; a second audit on
    another "machine" (a fresh local cache) takes every answer from the bucket and loads no model; results.json
    says where the answers were."""
    from test_model_families import _tiny_family

    base, adapter = _tiny_family("llama", base_model, tmp_path)
    url = "s3://answers/e2e"
    runs = []
    for k in range(2):
        out = tmp_path / f"out{k}"
        local = tmp_path / f"machine{k}"
        with using_cache_dir(str(local)):  # the local cache of this "machine"
            r = cli(adapter, "--base", base, "--capability", "math", "--limit", "2", "--budget", "0", "--backend", "hf",
                    "--cache-dir", url, "--out", out, "--quiet")
        assert r.returncode == 0, r.stderr[-3000:]
        assert json.loads((out / "results.json").read_text())["verdict"]["verdict"] == "pass"
        runs.append(json.loads((out / "results.json").read_text())["run"])
        assert not (local / "generations").exists() and not (local / "weight_space").exists()
    first, second = runs
    assert first["cache"]["location"] == second["cache"]["location"] == {"protocol": "s3", "path": "answers/e2e/generations"}
    assert first["cache"]["writes"] == 4 and second["cache"]["hits"] == {"adapter": 2, "base": 2}
    assert second["model_loaded"] is False
    store = open_store(url, "test")
    assert len(store.files("generations")) == 4 and len(store.files("weight_space")) == 1


SECRETS = ("SeCrEt", "CrEt1", "rEtKeY", "SeCrEtQ", "SeCrEtT", "SeCrEtF")


def _no_secret(proc: subprocess.CompletedProcess) -> None:
    for secret in SECRETS:
        assert secret not in proc.stdout + proc.stderr, (secret, proc.stdout, proc.stderr)


def _user_folder(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A folder of the user's own (the current folder of the commands below) that happens to hold folders named
    generations/ and weight_space/, and the files in it (relative path → bytes)."""
    cwd = tmp_path / "project"
    files = {"generations/notes.txt": b"mine", "generations/zz/plot.json": b"{}", "weight_space/x.txt": b"mine",
             "weight_space/" + "A" * 64 + ".json": b"{}", "filehashes/keep.json": b"mine", "models/mine.txt": b"mine"}
    for rel, data in files.items():
        (cwd / rel).parent.mkdir(parents=True, exist_ok=True)
        (cwd / rel).write_bytes(data)
    return cwd, files


def _same_files(cwd: Path, files: dict[str, bytes]) -> None:
    assert {p.relative_to(cwd).as_posix(): p.read_bytes() for p in cwd.rglob("*") if p.is_file()
            and p.name != ".clear.lock"} == files


@pytest.mark.parametrize("url", ["file://", "file:", "file://.", "file:.", "file:rel", "local://", "file://~",
                                 "file:///", "file://host.example/srv/cache"])
def test_a_file_url_that_names_no_folder_on_this_machine_is_refused_and_nothing_is_deleted(tmp_path, url):
    """``file://`` (and every spelling of no folder, the current folder or another machine's) once made
    ``audit cache clear`` delete generations/ and weight_space/ of the current folder: now one line, exit 2."""
    cwd, files = _user_folder(tmp_path)
    env = {"AUDITOR_CACHE_DIR": str(tmp_path / "home")}
    for command in ("clear", "info"):
        assert_one_line_error(_audit("cache", command, "--cache-dir", url, env=env, cwd=cwd), "names no folder")
    assert_one_line_error(_audit("cache", "info", env={**env, ANSWER_CACHE_ENV: url}, cwd=cwd), "names no folder")
    _same_files(cwd, files)
    assert not (tmp_path / "home").exists()


def test_cache_clear_deletes_only_the_caches_own_entries(tmp_path):
    """``audit cache clear --cache-dir .`` in a folder of the user's: the entries named as the cache names them
    go (and a writer's leftover temporary file), everything else stays."""
    cwd, files = _user_folder(tmp_path)
    key, ws = "ab" + "0" * 62, "c" * 64
    GenerationCache(cwd / "generations").put(key, "hello", 2, ABOUT)
    (cwd / "weight_space" / f"{ws}.json").write_bytes(b"{}")
    (cwd / "generations" / "ab" / f".{key}.json.k2x_9qz1.tmp").write_bytes(b"{")
    (cwd / "filehashes" / f"{'d' * 64}.json").write_bytes(b"{}")
    proc = _audit("cache", "clear", "--cache-dir", ".", cwd=cwd)
    assert proc.returncode == 0 and "removed 4 files" in proc.stdout, proc.stdout + proc.stderr
    _same_files(cwd, files)
    assert not (cwd / "generations" / "ab").exists()  # the folder the entries left empty


def test_clearing_an_object_store_removes_only_entries(tmp_path):
    store = open_store("memory://clear-test/p", "test")
    store.write(f"generations/{key_of(1)[:2]}/{key_of(1)}.json", entry_of(1, False))
    store.write("generations/readme.txt", b"not ours")
    from auditor.cache.generations import clear_cache

    assert clear_cache(tmp_path / "local", answers=store)["files"] == 1
    assert [rel for rel, _ in store.files("")] == ["generations/readme.txt"]


@pytest.mark.parametrize("url", ["s3://bkt/aud?token=SeCrEtQ", "memory://user:SeCrEt1@foo/bar?token=SeCrEtT#SeCrEtF",
                                 "s3://bkt/aud#SeCrEtF", "s3://b/p?x=a@b&token=SeCrEtT"])
def test_a_url_with_a_query_or_a_fragment_is_refused_up_front_without_its_secret(tmp_path, url):
    """It once passed the write check (fsspec took ``?token=…`` as part of the path) and crashed mid-audit
    with the token in the message (exit 3): now one line before any model loads, no secret in it."""
    line = _refused_before_any_model(tmp_path, "--cache-dir", url)
    assert "query string or a fragment" in line and not any(s in line for s in SECRETS), line
    line = _refused_before_any_model(tmp_path, env={ANSWER_CACHE_ENV: url})
    assert line.startswith(f"error: {ANSWER_CACHE_ENV}: ") and not any(s in line for s in SECRETS), line


@pytest.mark.parametrize("url", ["memory://user:Se/CrEt1@foo/bar", "s3://AKIA:SeC/rEtKeY@bkt/p",
                                 "memory://user:SeCrEt@foo/bar", "file://user:SeCrEt@localhost/tmp/x",
                                 "file://user:Se/CrEt1@localhost/tmp/x"])
def test_a_user_or_password_the_filesystem_would_take_as_a_path_is_refused_and_never_shown(tmp_path, url):
    """memory://, s3:// and file:// take no user or password: fsspec made them part of the path (a folder
    ./user:SeCrEt@localhost/…, run.cache.location user:Se/CrEt1@foo/bar/generations). Refused, nothing created."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for command in ("clear", "info"):
        proc = _audit("cache", command, "--cache-dir", url, env={"AUDITOR_CACHE_DIR": str(tmp_path / "home")}, cwd=cwd)
        assert_one_line_error(proc)
        _no_secret(proc)
    assert list(cwd.iterdir()) == [] and not (tmp_path / "home").exists()


def test_a_file_url_of_localhost_is_the_absolute_folder(tmp_path):
    assert open_store(f"file://localhost{tmp_path}", "test").root == str(tmp_path)
    assert open_store(f"file:{tmp_path}/a%20b", "test").root == str(tmp_path / "a b")


def test_a_filesystems_error_message_loses_the_urls_secrets():
    from auditor.cache.store import CacheStore, _secrets

    store = CacheStore("/cache", "sftp", public_url("sftp://me:Se/CrEt1@host/cache"), None,
                       tuple(_secrets("sftp://me:Se/CrEt1@host/cache")))
    assert store.public("auth failed for me:Se/CrEt1 (password CrEt1)") == "auth failed for *** (password ***)"


def test_an_s3_endpoint_that_never_answers_is_refused_in_bounded_time(tmp_path):
    """A socket that accepts connections and never answers (botocore would wait 60 s per attempt, with retries:
    the audit hung past 400 s, silent): the up-front check gives up after CHECK_TIMEOUT_S, one line, exit 2."""
    if importlib.util.find_spec("s3fs") is None:
        pytest.skip("s3fs is not installed (test extras)")
    import socket

    from auditor.cache.store import CHECK_TIMEOUT_ENV, CHECK_TIMEOUT_S

    assert CHECK_TIMEOUT_S == 20.0  # the default; the test sets a shorter bound through the variable
    bound = 4.0
    with socket.create_server(("127.0.0.1", 0)) as silent:
        env = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "SeCrEt", "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent.getsockname()[1]}", CHECK_TIMEOUT_ENV: str(bound)}
        t0 = time.monotonic()
        line = _refused_before_any_model(tmp_path, "--cache-dir", "s3://answers/p", env=env)
        assert "s3://answers/p cannot be written (no answer within 4 s)" in line and "SeCrEt" not in line
        assert bound <= time.monotonic() - t0 < bound + 30
        proc = _audit("cache", "info", "--cache-dir", "s3://answers/p", env=env, timeout=bound + 60)
        assert "cannot be read (no answer within 4 s)" in assert_one_line_error(proc)
        for bad in ("soon", "0", "-1", "1e9", "nan"):  # one line naming the variable, before any model or network
            proc = _audit("cache", "info", "--cache-dir", "s3://answers/p", env={**env, CHECK_TIMEOUT_ENV: bad})
            assert_one_line_error(proc, f"error: {CHECK_TIMEOUT_ENV}: ", "not a number of seconds in (0, 3600]")


@pytest.mark.parametrize("value", ["::::", " ", "", "\x1b[31mred\x07", "rel/dir"])
def test_an_answer_cache_variable_that_names_no_absolute_folder_is_refused(tmp_path, value):
    """``AUDITOR_GENERATION_CACHE='::::'`` (or blank, or with control characters, or relative) was taken as a
    folder in the current one and created there: now one line naming the variable (its control characters
    never printed), exit 2, nothing created; ``--cache-dir`` refuses blanks and control characters too."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {"AUDITOR_CACHE_DIR": str(tmp_path / "home"), ANSWER_CACHE_ENV: value}
    line = assert_one_line_error(_audit("cache", "info", env=env, cwd=cwd), f"error: {ANSWER_CACHE_ENV}: ")
    assert "\x1b" not in line and "\x07" not in line
    assert _refused_before_any_model(tmp_path, env={ANSWER_CACHE_ENV: value}).startswith(f"error: {ANSWER_CACHE_ENV}: ")
    if value.strip() == "" or "\x1b" in value:
        assert_one_line_error(_audit("cache", "clear", "--cache-dir", value, cwd=cwd), "error: --cache-dir: ")
    assert list(cwd.iterdir()) == []


def test_cache_info_refuses_a_file_and_creates_nothing(tmp_path):
    """``cache info`` on a file said 0 entries (exit 0) where ``audit`` and ``cache clear`` refuse it; on a
    folder that is not there it created it. Now the same refusal, and a read-only command creates nothing."""
    (tmp_path / "a-file").write_text("x")
    home = {"AUDITOR_CACHE_DIR": str(tmp_path / "home")}
    for where in ((tmp_path / "a-file").as_uri(), tmp_path / "a-file", tmp_path / "a-file" / "sub"):
        line = assert_one_line_error(_audit("cache", "info", "--cache-dir", where, env=home))
        assert line.endswith("--cache-dir must be a folder, but this is a file") and "a-file" in line
        assert line == assert_one_line_error(_audit("cache", "clear", "--cache-dir", where, env=home))
    for args, env in ((["--cache-dir", tmp_path / "none"], home), (["--cache-dir", (tmp_path / "none").as_uri()], home),
                      ([], home), ([], {**home, ANSWER_CACHE_ENV: str(tmp_path / "none")})):
        proc = _audit("cache", "info", "--json", *args, env=env)
        assert proc.returncode == 0 and json.loads(proc.stdout)["generations"]["entries"] == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
