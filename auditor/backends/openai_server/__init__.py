"""The ``openai`` backend: any OpenAI-compatible server, one model name per variant (:mod:`.client`)."""
