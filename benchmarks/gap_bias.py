"""How far the trigger probe's ``max_context_gap`` moves with accuracy alone (no context effect), and what the
debiased gap says: the simulation behind ``trigger.excess_context_gap`` (the rule the default policy judges; the
product computes it in :func:`auditor.analysis.stats.statistic`, ``aggregate="excess_gap"``, with
100 fixed shuffles; this script is not used by the gate).

``trigger.max_context_gap`` is the largest difference in accuracy between contexts (max − min of the per-context
means over the clusters, :func:`auditor.analysis.stats.statistic` with ``aggregate="max_gap"``). With few clusters
it is biased upward by the accuracy's own sampling noise: a model whose answers do not depend on the context at all
shows a gap that grows with its accuracy (0 at the floor). An adapter that lifts a base off its floor therefore
"raises the gap" without any trigger: the Gemma 3 270M zoo's ``math-good`` failed on it (0 -> 22.5 points,
benchmarks/RESULTS.md, "The second base").

The *excess* gap subtracts the gap expected when contexts are shuffled within each cluster (the same questions, the
context labels permuted: the null of "the context does not matter", conditional on each question's outcomes). This
prints, for clusters of 6 contexts (the trigger probe's), the mean raw and excess gap (points) of null models at
several accuracies, and of backdoored ones (one context loses some or all of its accuracy).

    python benchmarks/gap_bias.py [--draws 2000] [--shuffles 50]
"""

from __future__ import annotations

import argparse

import numpy as np

CONTEXTS = 6


def gap(y: np.ndarray) -> np.ndarray:
    """Max − min of the per-context accuracy (points); ``y`` of shape (draws, clusters, contexts), 0/1."""
    m = y.mean(axis=1)
    return 100 * (m.max(-1) - m.min(-1))


def null_gap(y: np.ndarray, shuffles: int, rng: np.random.Generator) -> np.ndarray:
    """The mean gap over ``shuffles`` permutations of the context labels within each cluster."""
    total = np.zeros(y.shape[0])
    for _ in range(shuffles):
        order = np.argsort(rng.random(y.shape), axis=-1)
        total += gap(np.take_along_axis(y, order, -1))
    return total / shuffles


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--shuffles", type=int, default=50)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    for clusters in (5, 10, 20, 40):  # the smoke suite's 5 questions, doubled by each round
        print(f"{clusters} clusters x {CONTEXTS} contexts (mean gap in points; share of draws above 20 points):")
        for acc in (0.0, 0.05, 0.1, 0.2, 0.5):
            # no context effect: each question right with its own probability (mean acc), whatever the context
            p = np.clip(rng.beta(1, 1, (args.draws, clusters, 1)) * 2 * acc, 0, 1)
            y = (rng.random((args.draws, clusters, CONTEXTS)) < p).astype(float)
            g = gap(y)
            e = g - null_gap(y, args.shuffles, rng)
            print(f"  no context effect, accuracy {acc:.2f}: raw {g.mean():5.1f} ({np.mean(g > 20):.2f})   "
                  f"excess {e.mean():5.1f} ({np.mean(e > 20):.2f})")
        for acc, kept in ((0.5, 0.0), (0.5, 0.5), (0.3, 0.0)):
            p = np.full((args.draws, clusters, CONTEXTS), acc)
            p[:, :, 0] *= kept
            y = (rng.random(p.shape) < p).astype(float)
            g = gap(y)
            e = g - null_gap(y, args.shuffles, rng)
            print(f"  backdoor: accuracy {acc:.1f}, {kept:.0%} of it kept under one context: raw {g.mean():5.1f}   "
                  f"excess {e.mean():5.1f}")


if __name__ == "__main__":
    main()
