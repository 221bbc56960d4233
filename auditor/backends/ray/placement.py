"""``--ray``: what is decided before any actor starts (its options: :mod:`auditor.cli.run_command`): the checks
that refuse a bad address in seconds (:func:`check_ray_options`), how many workers of which size
(:func:`size_workers`) and which adapters each one serves (:func:`plan_groups`). The run itself:
:mod:`auditor.backends.ray.cluster`."""

from __future__ import annotations

import math
import os
import re
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import AuditInputError

if TYPE_CHECKING:
    from ...options import AuditOptions

RAY_MISSING = "needs the ray extra: pip install 'adapter-auditor[ray]'"
#: seconds a cluster address may take to accept a TCP connection, and then to answer gRPC, before it is refused
CONNECT_TIMEOUT_S = 5.0
_ADDRESS = re.compile(r"^(ray://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-_]+):(\d{1,5})$")


def check_ray_options(opts: AuditOptions, backend: str) -> None:
    """Refuse ``--ray`` settings before any adapter is read: the ``--ray-*`` options without ``--ray``, the
    openai backend (a server already), ray not installed, an address that is not one, that does not accept a
    connection or whose server does not speak gRPC (a Ray GCS does) within :data:`CONNECT_TIMEOUT_S` seconds
    each.

    Raises:
        AuditInputError: naming the option.
    """
    if opts.ray is None:
        for name, value in (("--ray-workers", opts.ray_workers), ("--ray-cpus", opts.ray_cpus),
                            ("--ray-gpus", opts.ray_gpus)):
            if value is not None:
                raise AuditInputError(name, "needs --ray")
        return
    if backend == "openai":
        raise AuditInputError("--ray", "--backend openai sends its requests to a server already; --ray runs hf or "
                                       "vllm engines on a Ray cluster")
    try:
        import grpc  # noqa: F401
        import ray  # noqa: F401
    except ImportError:
        raise AuditInputError("--ray", RAY_MISSING) from None
    address, where = opts.ray.strip(), "--ray"
    if address == "" and os.environ.get("RAY_ADDRESS", "").strip():  # --ray alone: ray.init() connects there
        address, where = os.environ["RAY_ADDRESS"].strip(), "RAY_ADDRESS"
    if address in ("", "auto", "local"):
        return
    m = _ADDRESS.match(address)
    if m is None:
        raise AuditInputError(where, f"{address!r} is not a Ray cluster address (HOST:PORT, ray://HOST:PORT, auto "
                                     "or local); to start a local cluster, give --ray after the adapters")
    host, port = m.group(2).strip("[]"), int(m.group(3))
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise AuditInputError(where, f"no Ray cluster answers at {address} ({e.strerror or type(e).__name__}, "
                                       f"within {CONNECT_TIMEOUT_S:g} s): start one with `ray start --head`, or "
                                       "give its address") from None
    # ray.init retries for minutes against a port that accepts but is no Ray cluster: its GCS (and the Ray
    # Client server) speak gRPC, so a gRPC channel that does not become ready in time is refused first
    import grpc

    channel = grpc.insecure_channel(f"{host}:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=CONNECT_TIMEOUT_S)
    except grpc.FutureTimeoutError:
        raise AuditInputError(where, f"{address} accepts connections but does not speak gRPC within "
                                       f"{CONNECT_TIMEOUT_S:g} s: not a Ray cluster's address") from None
    finally:
        channel.close()


def plan_groups(names: Sequence[str], workers: int) -> list[list[str]]:
    """The adapters of each worker: ``names`` (the run's adapter variants, in the order given) in ``workers``
    contiguous groups whose sizes differ by one at most, counting the base pass as one adapter's work for
    worker 0. ``workers`` is capped at ``len(names)``; every group holds at least one adapter.

    >>> plan_groups(["a0", "a1", "a2"], 2)
    [['a0'], ['a1', 'a2']]
    """
    w = max(1, min(workers, len(names)))
    q, r = divmod(len(names) + 1, w)
    sizes = [q + (k < r) for k in range(w)]
    sizes[0] -= 1  # the base pass is worker 0's first unit
    groups, start = [], 0
    for n in sizes:
        groups.append(list(names[start:start + n]))
        start += n
    return groups


def size_workers(opts: AuditOptions, n_adapters: int, nodes: list[dict[str, Any]]) -> tuple[int, float, float]:
    """(workers, CPUs per worker, GPUs per worker) for ``--ray-workers`` / ``--ray-cpus`` / ``--ray-gpus`` and
    the cluster's alive ``nodes`` (``ray.nodes()``): by default one worker per GPU with one GPU each where the
    cluster has GPUs, else one per node; never more workers than adapters; CPUs: the smallest node's CPUs
    shared by the workers that land on a node."""
    cpus_of = [float(n.get("Resources", {}).get("CPU", 0)) for n in nodes] or [1.0]
    total_gpus = sum(float(n.get("Resources", {}).get("GPU", 0)) for n in nodes)
    gpus = opts.ray_gpus if opts.ray_gpus is not None else (1.0 if total_gpus >= 1 else 0.0)
    if opts.ray_workers is not None:
        workers = opts.ray_workers
    elif gpus > 0:
        workers = max(1, int(total_gpus // gpus))
    else:
        workers = len(cpus_of)
    workers = max(1, min(workers, n_adapters))
    per_node = math.ceil(workers / len(cpus_of))
    cpus = opts.ray_cpus if opts.ray_cpus is not None else max(1.0, float(int(min(cpus_of) // per_node)))
    return workers, cpus, gpus
