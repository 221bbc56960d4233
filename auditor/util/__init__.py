"""Leaf utilities: hashing, atomic files, strict JSON/JSONL readers, safe YAML, text, versions, the one
plug-in registry (:mod:`.registry`), seeded random streams (:mod:`.seeding`) and the version (:mod:`.version`).

Every module here imports nothing of the auditor's but :mod:`auditor.errors` (itself a leaf),
so any stage may use them without an import cycle.
"""
