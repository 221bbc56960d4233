"""The ``hf`` engine: transformers + peft on the CPU or one GPU (:mod:`.backend`), with transformers' continuous
batching (:mod:`.stream`), per-request attention (:mod:`.attention`), the calling thread's OpenMP workers released
(:mod:`.openmp`), what PEFT loads (:mod:`.adapters`), static batches (:mod:`.batching`) and ``--batch-size auto``
(:mod:`.throughput`)."""
