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

A decoding step of a few requests would pay for a whole block: on a 2-core CPU a step of 4 rows cost as much
as one of 64, three to four times what the 4 rows need. So a last block of fewer rows is padded only up to a
*short block* size (:data:`SHORT_BLOCKS`) at which this machine's product gives every row the very bits it
gets in a full block: which sizes do is the kernel's business (on a 2-core AMD EPYC in fp32, 4, 8, 16 and 32
rows do and 1, 2 and 3 do not), so it is checked once per weight shape, dtype and torch thread count, on the
first product (:func:`short_blocks`), and a size that does not give the same bits is not used. Sizes below 4 are
not candidates at all: there a one-row bf16 product rounded one ``down_proj`` output in 576 apart from a full
block's on a real activation, while the probes agreed. The answers are the full blocks' whatever the sizes found.
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
#: reading the weights once per block, and padding a last block of fewer rows (to a short block where one gives
#: the same bits, :func:`short_blocks`). Measured on a 2-core Xeon (bf16,
#: 256 prompts, 64 new tokens each, against torch's plain layers): 32 rows cost 31% at 256 slots and 13% at
#: 32 slots; 128 rows 12% and 38%; 64 rows sits between, for the 128 to 256 slots the throughput sweep picks
#: and the rounds' smaller streams
ROWS = 64
#: how results.json and the answer cache's key name this computation (short blocks give a full block's bits)
NUMERICS = f"fixed_rows/{ROWS}"
#: the sizes a last block of fewer than :data:`ROWS` rows may be computed at, where they give a full block's bits
SHORT_BLOCKS = (4, 8, 16, 32)
#: (weight shape and strides, dtype, device, torch threads) -> the short block sizes checked to give a full block's bits
_SHORT: dict[tuple[Any, ...], tuple[int, ...]] = {}


def short_blocks(weight_t: torch.Tensor) -> tuple[int, ...]:
    """The sizes of :data:`SHORT_BLOCKS` at which ``rows @ weight_t`` gives every row the bits it gets in a block
    of :data:`ROWS` rows, on this machine with the calling thread's torch thread count; checked on the first call
    for a weight's shape, strides, dtype and device, then remembered.

    The check multiplies probes (:func:`_probes`) by a weight of the same shape, strides and dtype (the kernel's
    choice depends on them, not on the values), as :meth:`FixedRowsLinear.forward` calls the product, rows taken
    from the start and from the end of a full block.

    Args:
        weight_t: the transposed weight, ``[in_features, out_features]``, as the forward pass multiplies by it.
    """
    key = (tuple(weight_t.shape), weight_t.stride(), weight_t.dtype, weight_t.device.type, torch.get_num_threads())
    if key not in _SHORT:
        good = set(SHORT_BLOCKS)
        with torch.no_grad():
            for rows, values in _probes(weight_t):
                weight = torch.empty_strided(weight_t.shape, weight_t.stride(), dtype=weight_t.dtype,
                                             device=weight_t.device)
                weight.copy_(values)
                full = rows.new_empty(ROWS, weight_t.shape[1])
                torch.matmul(rows, weight, out=full)
                for size in sorted(good):
                    for first in (0, ROWS - size):  # rows from the start and from the end of the full block
                        part = rows.new_empty(size, weight_t.shape[1])
                        torch.matmul(rows[first:first + size], weight, out=part)
                        if not torch.equal(part, full[first:first + size]):
                            good.discard(size)
                            break
        _SHORT[key] = tuple(sorted(good))
    return _SHORT[key]


def _probes(like: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Rows (``[ROWS, in_features]``) and a weight's values (``like``'s shape) of ``like``'s dtype and device, from
    a fixed seed, that make two kernels' outputs differ where they compute differently:

    * magnitudes spanning 2^-8 to 2^8: the sums cancel, so two summation orders round apart in most outputs, in
      bf16 as in fp32 (values of one scale, as activations have, leave a bf16 output the same under most
      reorderings);
    * small integers: the sums are exact and often fall halfway between two bf16 values, where two ways of
      rounding the fp32 sum to bf16 part.

    Probes can miss a difference real values show (the one-row case in the module doc), which is why
    :data:`SHORT_BLOCKS` starts at 4 rows.
    """
    gen = torch.Generator(device=like.device).manual_seed(0)
    dev = like.device

    def wide(shape: tuple[int, ...]) -> torch.Tensor:
        scale = torch.exp2(torch.randint(-8, 9, shape, generator=gen, device=dev).float())
        return (torch.randn(shape, generator=gen, device=dev) * scale).to(like.dtype)

    def integers(shape: tuple[int, ...]) -> torch.Tensor:
        return torch.randint(-16, 17, shape, generator=gen, device=dev).to(like.dtype)

    rows_shape = (ROWS, like.shape[0])
    return [(wide(rows_shape), wide(tuple(like.shape))), (integers(rows_shape), integers(tuple(like.shape)))]


class FixedRowsLinear(torch.nn.Linear):
    """``torch.nn.Linear`` computed in blocks of :data:`ROWS` rows (see the module doc).

    A subclass, so that PEFT wraps it as it wraps ``torch.nn.Linear``. Input ``[..., in_features]``,
    output ``[..., out_features]``, as ``torch.nn.Linear``.
    """

    #: a last block of fewer than :data:`ROWS` rows may be computed at a short block size (:func:`short_blocks`);
    #: False pads it to a full block (the same bits, more work: ``benchmarks/bench_invariance.py`` compares them)
    use_short_blocks = True

    @classmethod
    def sharing(cls, linear: torch.nn.Linear, use_short_blocks: bool = True) -> FixedRowsLinear:
        """A :class:`FixedRowsLinear` holding ``linear``'s own weight and bias parameters (not copies)."""
        new = cls(linear.in_features, linear.out_features, bias=False, device="meta")
        new.use_short_blocks = use_short_blocks
        new.weight = linear.weight
        new.bias = linear.bias
        new.train(linear.training)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        n = rows.shape[0]
        if n == 0:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        weight_t = self.weight.t()
        full, left = divmod(n, ROWS)
        # the last block: padded to the smallest short block that gives a full block's bits, else to a full block
        last = 0
        if left:
            sizes = short_blocks(weight_t) if self.use_short_blocks else ()
            last = next((size for size in sizes if size >= left), ROWS)
        padded = full * ROWS + last
        if padded != n:
            rows = torch.cat([rows, rows.new_zeros(padded - n, self.in_features)])
        out = rows.new_empty(padded, self.out_features)
        for start in range(0, padded, ROWS):  # (each block written in place: no concatenation)
            torch.matmul(rows[start:start + ROWS], weight_t, out=out[start:start + ROWS])
        if self.bias is not None:
            out += self.bias
        return out[:n].reshape(*x.shape[:-1], self.out_features)


def make_batch_invariant(model: Any, use_short_blocks: bool = True) -> int:
    """Put a :class:`FixedRowsLinear` in place of every plain ``torch.nn.Linear`` of ``model`` (a
    transformers model or a ``PeftModel``), sharing its parameters; returns how many were replaced.

    Call it on the base before PEFT attaches adapters (PEFT then wraps the fixed-rows projections) and
    again after every adapter is loaded (their LoRA ``A`` and ``B`` matrices). ``use_short_blocks=False`` pads
    every last block to a full one (:attr:`FixedRowsLinear.use_short_blocks`)."""
    names = [name for name, m in model.named_modules() if type(m) is torch.nn.Linear]
    for name in names:
        model.set_submodule(name, FixedRowsLinear.sharing(model.get_submodule(name), use_short_blocks))
    return len(names)
