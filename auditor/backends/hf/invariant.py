"""Linear layers whose every row is computed the same whatever else is in the batch (on the CPU).

A greedy answer should be a function of the model, the adapter and the prompt. On the CPU it is not:
torch's matrix product (oneDNN for bf16, MKL / oneDNN for fp32) picks its kernel and its blocking of the
reduction by the number of rows, so one row's result changes in its last bits with the rows beside it.
Measured on a 2-core Xeon with AMX (SmolLM2-135M's projection shapes, ``benchmarks/bench_invariance.py``):
in bf16 a row computed among more than 32 rows differs from the same row alone in every projection and in
``lm_head``, and among 33 to 300 rows it differs by its position; in fp32 a row alone (a matrix-vector
product) differs from a row among two or more. Continuous batching decodes each step with whichever
requests are running, so an answer depended on the slot count, on the other requests of its stream, and
on which answers the cache already held (a cached answer is one that is not decoded again, which changes
the company of the rest): in bf16, 49 to 57 of 96 greedy answers of the embedded base changed between 96,
24, 8 and 3 slots, enough to move a DriftScore rule between fail and inconclusive.

:class:`FixedRowsLinear` computes ``x @ W.T + b`` in blocks of exactly :data:`ROWS` rows (the last one
padded with zeros), each block one call of the same product with the same shape, so every row goes through
the same kernel with the same blocking wherever it sits: a row's result is the same alone, among 3 or
among 1,024 rows, in bf16 and fp32 (the test ``tests/backends/test_invariant.py`` checks this bit for bit).
:func:`make_batch_invariant` puts it in place of every ``torch.nn.Linear`` of a model (the projections,
``lm_head``, and a loaded PEFT model's LoRA ``A`` / ``B`` matrices) with ``Module.set_submodule``, sharing
the same parameters (tied weights stay tied). The rest of a decoder step is per row already (norms,
rotary embeddings, activations) or per request (:mod:`auditor.backends.hf.attention`).

This is the CPU analogue of batch-invariant kernels on GPUs (Horace He and Thinking Machines Lab,
"Defeating Nondeterminism in LLM Inference", 2025; vLLM's ``VLLM_BATCH_INVARIANT``): fix the reduction
order of each row instead of letting the batch choose it.
"""

from __future__ import annotations

from typing import Any

import torch

#: rows per matrix-product call. Any fixed number makes a row's result independent of the batch; the cost is
#: reading the weights once per block, and padding a step of fewer rows. Measured on a 2-core Xeon (bf16,
#: 256 prompts, 64 new tokens each, against torch's plain layers): 32 rows cost 31% at 256 slots and 13% at
#: 32 slots; 128 rows 12% and 38%; 64 rows sits between, for the 128 to 256 slots the throughput sweep picks
#: and the rounds' smaller streams
ROWS = 64
#: how results.json and the answer cache's key name this computation
NUMERICS = f"fixed_rows/{ROWS}"


class FixedRowsLinear(torch.nn.Linear):
    """``torch.nn.Linear`` computed in blocks of :data:`ROWS` rows (see the module doc).

    A subclass, so that PEFT wraps it as it wraps ``torch.nn.Linear``. Input ``[..., in_features]``,
    output ``[..., out_features]``, as ``torch.nn.Linear``.
    """

    @classmethod
    def sharing(cls, linear: torch.nn.Linear) -> FixedRowsLinear:
        """A :class:`FixedRowsLinear` holding ``linear``'s own weight and bias parameters (not copies)."""
        new = cls(linear.in_features, linear.out_features, bias=False, device="meta")
        new.weight = linear.weight
        new.bias = linear.bias
        new.train(linear.training)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        n = rows.shape[0]
        if n == 0:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        padded = -(-n // ROWS) * ROWS
        if padded != n:
            rows = torch.cat([rows, rows.new_zeros(padded - n, self.in_features)])
        weight_t = self.weight.t()
        out = rows.new_empty(padded, self.out_features)
        for start in range(0, padded, ROWS):  # (each block written in place: no concatenation)
            torch.matmul(rows[start:start + ROWS], weight_t, out=out[start:start + ROWS])
        if self.bias is not None:
            out += self.bias
        return out[:n].reshape(*x.shape[:-1], self.out_features)


def make_batch_invariant(model: Any) -> int:
    """Put a :class:`FixedRowsLinear` in place of every plain ``torch.nn.Linear`` of ``model`` (a
    transformers model or a ``PeftModel``), sharing its parameters; returns how many were replaced.

    Call it on the base before PEFT attaches adapters (PEFT then wraps the fixed-rows projections) and
    again after every adapter is loaded (their LoRA ``A`` and ``B`` matrices)."""
    names = [name for name, m in model.named_modules() if type(m) is torch.nn.Linear]
    for name in names:
        model.set_submodule(name, FixedRowsLinear.sharing(model.get_submodule(name)))
    return len(names)
