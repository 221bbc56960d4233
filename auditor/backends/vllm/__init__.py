"""The ``vllm`` engine: one ``vllm.LLM`` with LoRA (:mod:`.engine`), what it can serve (:mod:`.compat`), its start
and fallbacks (:mod:`.startup`) and its KV cache's size (:mod:`.kv`)."""
