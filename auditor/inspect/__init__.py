"""Stage 1 — inspect: the inputs, checked before any model is loaded.

* :mod:`.paths`: the adapter argument, symbolic links, the size limit;
* :mod:`.bin_convert`: ``--allow-bin`` conversion of a pickle adapter;
* :mod:`.peft_config`: ``adapter_config.json`` → :class:`~auditor.records.AdapterConfig`;
* :mod:`.safetensors_header`: file kind, header, value scan;
* :mod:`.base_shapes`: the base's module shapes on the meta device;
* :mod:`.tensors`: the adapter's tensors matched to the base's modules;
* :mod:`.declared_base`: ``base_model_name_or_path``: the base a run is audited on without ``--base``
  (:func:`choose_base`), and against the audited base;
* :mod:`.card_label`: the nominal label in the model card;
* :mod:`.tokenizer_files`: the tokenizer files an adapter ships, against the base's tokenizer;
* :mod:`.chat_template`: which chat template renders each variant's prompts (``--chat-template``);
* :mod:`.adapter`: :func:`preflight_adapter` and :func:`inspect_adapter`, in that order;
* :mod:`.base_model` and :mod:`.hub`: the base model (embedded default, local folder, hub id)
  and hub ids of adapters.
"""

from .adapter import inspect_adapter, preflight_adapter
from .base_model import resolve_base
from .bin_convert import bin_adapter_file, convert_bin_adapter
from .declared_base import choose_base
from .paths import parse_size

__all__ = ["inspect_adapter", "preflight_adapter", "resolve_base", "choose_base", "bin_adapter_file", "convert_bin_adapter",
           "parse_size"]
