"""The base model's module shapes, from a meta-device instance of its config (no weights read): a base folder's
``config.json``, or an embedded base's recorded architecture (before it is installed or converted)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from ..errors import AuditInputError
from .base_model import EMBEDDED


def base_linear_shapes(base_path: Path) -> dict[str, tuple[int, int]]:
    """Module name → ``(in_features, out_features)`` for every nn.Linear of the base, and every
    transformers ``Conv1D`` (GPT-2's fused ``c_attn``, ``c_proj``, ``c_fc``: a linear layer with its weight
    stored transposed, ``[in, out]``, which PEFT adapts with ``fan_in_fan_out``).

    Built on the meta device from ``config.json``: no weights are read.

    Raises:
        AuditInputError: the base config cannot be instantiated.
    """
    return dict(_base_shapes(str(base_path))[0])


def base_weight_shapes(base_path: Path) -> dict[str, tuple[int, ...]]:
    """Module name → shape of its ``weight`` for every module of the base that has one
    (linear layers, embeddings, norms), on the meta device like :func:`base_linear_shapes`.

    Raises:
        AuditInputError: the base config cannot be instantiated.
    """
    return dict(_base_shapes(str(base_path))[1])


def embedded_linear_shapes(key: str) -> dict[str, tuple[int, int]]:
    """:func:`base_linear_shapes` of the embedded base ``key`` (:data:`~auditor.inspect.base_model.EMBEDDED`),
    from its recorded architecture: neither its package nor its converted folder is needed."""
    return dict(_embedded_shapes(key))


@functools.lru_cache(maxsize=2)
def _embedded_shapes(key: str) -> dict[str, tuple[int, int]]:
    from transformers import AutoConfig

    arch = dict(EMBEDDED[key].architecture)
    return _shapes_of(AutoConfig.for_model(arch.pop("model_type"), **arch), key)[0]


@functools.lru_cache(maxsize=4)
def _base_shapes(base_path: str) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, ...]]]:
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(base_path)
    except Exception as e:
        raise AuditInputError(base_path, f"cannot build the base model from its config: {e}") from None
    return _shapes_of(config, base_path)


def _shapes_of(config: Any, where: str) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, ...]]]:
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.pytorch_utils import Conv1D

    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
    except Exception as e:
        raise AuditInputError(where, f"cannot build the base model from its config: {e}") from None
    linear = {name: (m.in_features, m.out_features) for name, m in model.named_modules()
              if isinstance(m, torch.nn.Linear)}
    linear |= {name: (m.nx, m.nf) for name, m in model.named_modules() if isinstance(m, Conv1D)}
    weights = {name: tuple(m.weight.shape) for name, m in model.named_modules()
               if isinstance(getattr(m, "weight", None), torch.Tensor)}
    return linear, weights
