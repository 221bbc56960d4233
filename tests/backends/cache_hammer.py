"""The processes of tests/backends/test_cache_shared.py's hammer: what each writes and reads, and what it saw.
A module of its own so that a spawned process imports only this and the auditor (not pytest, not conftest)."""

from __future__ import annotations

import hashlib
import os
import random
import time

from auditor.cache.generations import CACHE_FORMAT, GenerationCache
from auditor.util.hashing import canonical_json

WRITERS, READERS = 6, 2
#: entries each writer writes: a folder takes about 4 s for 240 (on 2 busy cores), an S3 server in this
#: process about 10 ms a request
PER_WRITER = {"folder": 240, "s3": 40}
ABOUT = {"base": "b" * 64, "adapter": None}


def key_of(i: int) -> str:
    return hashlib.sha256(f"key {i}".encode()).hexdigest()


def answer_of(i: int, big: bool) -> tuple[str, int]:
    """Key i's answer: the same for every writer (entries are content-addressed); 100 B to 24 kB, so a
    write that is not atomic leaves a window a reader can fall into."""
    return f"answer {i}: " + "é" * ((i * 7919) % (12000 if big else 1500)), i % 97


def entry_of(i: int, big: bool) -> bytes:
    text, n = answer_of(i, big)
    return canonical_json({"format": CACHE_FORMAT, "key": key_of(i), "text": text, "n_tokens": n, "about": ABOUT})


def shared_keys(per: int) -> int:
    """How many keys writers of ``per`` entries share: each key is written by two writers (overlapping halves)."""
    return WRITERS * per // 2


def worker(where: str, me: int, per: int, big: bool, env: dict, barrier, done, results) -> None:
    """A writer (me < WRITERS: its ``per`` keys, each followed by two reads of random keys, which other
    writers may be writing at that moment) or a reader (reads random keys until the writers are done).
    Reports what it saw: hits, misses, answers that differ from the key's (torn or wrong) and unreadable ones."""
    os.environ.update(env)
    cache = GenerationCache(where)
    rng = random.Random(me)
    wrong: list[int] = []
    keys = shared_keys(per)

    def read(i: int) -> None:
        got = cache.get(key_of(i), "base")
        if got is not None and got != answer_of(i, big):
            wrong.append(i)

    if me < WRITERS:
        # this writer's keys and the next writer's first half overlap; every writer goes through its keys in
        # one global order, so the two writers of a key reach it at about the same moment
        mine = sorted(((me * per // 2 + j) % keys for j in range(per)), key=key_of)
        barrier.wait(timeout=120)
        for i in mine:
            cache.put(key_of(i), *answer_of(i, big), ABOUT)
            read(rng.randrange(keys))
            read(rng.randrange(keys))
    else:
        barrier.wait(timeout=120)
        while not done.is_set():
            read(rng.randrange(keys))
            if not cache.store.local:
                time.sleep(0.005)  # leave the S3 server (a thread of the test's process) time for the writers
    s = cache.stats
    results.put({"me": me, "hits": sum(s.hits.values()), "misses": sum(s.misses.values()), "wrong": wrong,
                 "unreadable": s.unreadable, "writes": s.writes, "failed_writes": s.failed_writes})
