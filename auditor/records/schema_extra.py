"""What the record types cannot say about results.json: the constraints and descriptions its schema adds
to the types (:mod:`auditor.records.schema_files` maps the types and merges these in; its module doc says how).

* :data:`FIELDS`: per ``Class.field`` of the records results.json is made of, JSON Schema keywords merged
  into the schema the field's type maps to (``minimum: 1`` for a rank, ``{"type": "number"}`` for a float
  that is never null), or a ``$ref`` of :data:`KINDS` that replaces it, or the whole shape of a block the
  record types ``Mapping[str, Any]`` (``run.vllm``, ``run.cache``); a record class stands for its schema;
* :data:`KINDS`: named value kinds (``$defs``) the records type as plain ``str``, ``float`` or ``Mapping``;
* :data:`NEVER_NULL`: fields typed ``X | None`` that results.json always holds;
* :data:`DEF_NAMES`: ``$defs`` names kept from the hand-written schema (v5).
"""

from __future__ import annotations

from typing import Any

from .inputs import DECLARED_BASE_STATUSES, TEMPLATE_STATUSES, VOCABULARY_STATUSES, PromptTemplate
from .vocab import Role, values

DESCRIPTION = (
    "One audit of one adapter against its base model: the verdict, the paired comparisons, the agreement of its "
    "generated answers with the base's, DriftScore, every item with both outputs, and how the run was made. Rates "
    "are fractions in [0, 1] in base/adapter fields and points (x100) in deltas and intervals; see the field "
    "descriptions. Re-rendered by `audit report results.json --out DIR`.")
COMMENT = ("generated from the records (auditor.results.AuditResult) by `python -m auditor.records.schema_files "
           "--write`; do not edit by hand")

#: ``$defs`` names kept from the hand-written schema (v5) for records whose names say less
DEF_NAMES = {"RuleOutcome": "rule", "MetricComparison": "comparison", "Answer": "output"}

_NO_NEWLINE = "$(?!\\n)"  # Python's ``$`` also matches before a final newline
#: named value kinds the records type as plain ``str``, ``float`` or ``Mapping``
KINDS: dict[str, dict[str, Any]] = {
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}" + _NO_NEWLINE},
    "confidence": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "per_variant": {"type": "object", "propertyNames": {"enum": list(values(Role))},
                    "additionalProperties": {"type": "integer", "minimum": 0}},
    "hub_ref": {"type": "object", "description": "a hub id resolved to a local snapshot: the revision asked for and "
                                                 "the commit it resolved to",
                "required": ["repo_id", "requested", "revision"],
                "properties": {"repo_id": {"type": "string"}, "requested": {"type": "string"},
                               "revision": {"type": "string"},
                               "subfolder": {"type": "string", "description": "the folder inside the repository "
                                             "(owner/name@revision:path/in/repo); absent for the repository's root"}}},
}
SHA256, CONFIDENCE, PER_VARIANT, HUB_REF = ({"$ref": f"#/$defs/{k}"} for k in KINDS)
COUNT, POSITIVE, FINITE = {"minimum": 0}, {"minimum": 1}, {"type": "number"}
P = {"minimum": 0, "maximum": 1}
PAIR = {"items": FINITE}  # an interval's ends are numbers
_SETTINGS_SOURCES = ["auditor", "user", "env", "vllm"]

#: constraints and descriptions the types cannot say, per ``Class.field`` (see the module doc)
FIELDS: dict[str, dict[str, Any]] = {
    "AuditResult.baseline": {"description": "release-checklist mode (--baseline): the previously approved adapter "
                             "and the candidate's comparisons with it (its 'base' side is the previous adapter); "
                             "null otherwise"},
    "AdapterRecord.sha256": SHA256, "AdapterRecord.content_sha256": SHA256,
    "AdapterRecord.r": POSITIVE, "AdapterRecord.lora_alpha": FINITE, "AdapterRecord.max_rank": POSITIVE,
    "AdapterRecord.ranks": {"additionalProperties": POSITIVE,
                            "description": "real rank per adapted module, from the lora_A tensor shapes"},
    "AdapterRecord.n_tensors": COUNT, "AdapterRecord.size_bytes": COUNT, "AdapterRecord.matched_modules": COUNT,
    "AdapterRecord.hub": HUB_REF, "AdapterRecord.declared_base_status": {"enum": list(DECLARED_BASE_STATUSES)},
    "AdapterRecord.tokenizer_files": {"description": "the tokenizer files the adapter folder ships, compared with "
                                      "the base's tokenizer"},
    "AdapterRecord.vocab_resize": {"description": "an adapter trained with added tokens: its variant ran with the "
                                   "embeddings resized from base_size to size rows (its tokenizer's length) and its "
                                   "saved rows"},
    "TokenizerFiles.chat_template": {"enum": list(TEMPLATE_STATUSES)},
    "TokenizerFiles.template_sha256": SHA256, "TokenizerFiles.base_template_sha256": SHA256,
    "TokenizerFiles.vocabulary": {"enum": list(VOCABULARY_STATUSES)},
    "TokenizerFiles.vocab_size": COUNT, "TokenizerFiles.base_vocab_size": COUNT, "TokenizerFiles.added_tokens": COUNT,
    "VocabResize.base_size": POSITIVE, "VocabResize.size": POSITIVE,
    "VocabResize.how": {"enum": ["modules_to_save", "trainable_token_indices"]},
    "BaseRecord.content_hash": SHA256, "BaseRecord.hub": HUB_REF,
    "BaseRecord.reason": {"pattern": "^(--base |declared: |default: )",
                          "description": "why this base was audited: '--base X' (given); 'declared: ...' (without "
                                         "--base, the base the adapters' base_model_name_or_path names: an embedded "
                                         "base or a local folder); '--base declared: ...' (that, or the hub); "
                                         "'default: ...' (the embedded default: none declared, or the declared base "
                                         "cannot be had here)"},
    "SuiteRecord.items_sha256": {**SHA256, "description": "sha256 of the canonical JSON of every item's id, messages, "
                                 "budget and target"},
    "PolicyRecord.sha256": {**SHA256, "description": "sha256 of the canonical JSON of the policy as judged"},
    "MetricComparison.metric": {"pattern": "^[^.]+\\..+" + _NO_NEWLINE},
    "MetricComparison.n_items": COUNT, "MetricComparison.n_clusters": COUNT,
    "MetricComparison.base": {"description": "fraction in [0, 1] for unit 'fraction', else the unit; null when no "
                              "item of the capability was scored on this metric"},
    "MetricComparison.delta": {"description": "adapter - base, in delta_unit (points for fractions); null when "
                               "either side is"},
    "MetricComparison.confidence": CONFIDENCE, "MetricComparison.rel_ci_pct": PAIR,
    "MetricComparison.p_value": P, "MetricComparison.p_adjusted": P, "MetricComparison.p_decrease": P,
    "MetricComparison.p_increase": P, "MetricComparison.discordant": {"additionalProperties": COUNT},
    "MetricComparison.floor": {**FINITE, **P}, "MetricComparison.ceiling": {**FINITE, **P},
    "AuditResult.agreement_with_base": {"description": "the adapter's generated answers compared with the base's "
                                        "answers to the same items, per capability and overall (every look's items, "
                                        "as the comparisons use them); multiple-choice items scored by log-likelihood "
                                        "are left out; descriptive, no rule acts on it"},
    "AgreementWithBase.overall": {"description": "over every generated item of the audit"},
    "AgreementWithBase.capabilities": {"description": "capability -> the agreement over its generated items; a "
                                       "capability with no generated item (multiple choice) is absent"},
    "Agreement.identical": {**P, "description": "share of the items (fraction in [0, 1]) whose adapter answer is "
                            "exactly the base's answer (the same string); null when n is 0"},
    "Agreement.n_items": {**COUNT, "description": "items compared (count)"},
    "Agreement.first_difference_word": {**POSITIVE, "description": "over the items whose answers differ: the mean "
                                        "1-based position of the first whitespace-separated word that differs (a "
                                        "word position, not a count of items); where one answer's words begin the "
                                        "other's, the position after the shorter one's last word; null when no "
                                        "answer differs"},
    "DriftResult.drift_score_pts": {"description": "OffTargetGain - TargetGain, points"},
    "DriftResult.confidence": CONFIDENCE, "DriftResult.p_positive": P,
    "RuleOutcome.look": POSITIVE, "RuleOutcome.items_to_decide": COUNT, "RuleOutcome.ci": PAIR,
    "RuleOutcome.p_value": P, "RuleOutcome.p_adjusted": P, "RuleOutcome.n_items": COUNT,
    "Answer.n_tokens": COUNT,
    "ItemRecord.rendered_prompt": {"description": "the base variant's prompt, chat template applied"},
    "ItemRecord.rendered_prompts": {"description": "variant (adapter, baseline) -> its prompt, for the variants "
                                    "whose chat template rendered another than rendered_prompt"},
    "ItemRecord.messages": {"items": {"required": ["role", "content"]}},
    "ItemRecord.max_new_tokens": COUNT, "ItemRecord.round": POSITIVE,
    "NoiseFloor.n_items": COUNT, "NoiseFloor.batch_sizes": {"minItems": 2, "maxItems": 2},
    "NoiseFloor.n_differ": COUNT, "NoiseFloor.n_score_differ": COUNT,
    "NoiseFloor.dtypes": {"minItems": 2, "maxItems": 2, "description": "[the audit's dtype, the replay's]"},
    "NoiseFloor.metric_shifts": {"description": "metric id -> the replay's mean minus the audit's base mean on the "
                                 "replayed items, in the metric's delta unit (points for a fraction metric)"},
    "NoiseFloor.metric_shifts_pct": {"description": "the same shifts in % of the audit's base mean (metrics whose "
                                     "base mean is not 0)"},
    "RuleOutcome.noise": {"minimum": 0, "description": "with --noise-floor: how far the base replayed on the other path moved this "
                          "rule's statistic (absolute; the units of value)"},
    "RuleOutcome.within_noise": {"description": "with --noise-floor: the rule was decided (pass or fail) with value "
                                 "no further than noise from limit; null when it was not decided"},
    "StatisticsRecord.confidence": CONFIDENCE, "StatisticsRecord.n_resamples": POSITIVE,
    "StatisticsRecord.min_items": COUNT,
    "RunRecord.backend": {"description": "the generation backend that ran (hf, vllm, openai)"},
    "RunRecord.backend_reason": {"description": "why that backend ran: '--backend hf', '--backend vllm', or auto's "
                                 "reason (e.g. 'auto: no GPU, hf')"},
    "RunRecord.batch_size": {**POSITIVE, "pattern": "^auto" + _NO_NEWLINE,
                             "description": "a positive integer, or 'auto' (vllm's scheduler batches)"},
    "RunRecord.limit": POSITIVE, "RunRecord.batch_sizes_used": {"additionalProperties": POSITIVE},
    "RunRecord.prompts": {"additionalProperties": PromptTemplate,
                          "description": "per variant (base, adapter, baseline): the chat template and tokenizer "
                                         "that rendered its prompts"},
    "RunRecord.new_tokens": PER_VARIANT, "RunRecord.generated": PER_VARIANT,
    "RunRecord.cache": {"required": ["enabled"], "properties": {
        "enabled": {"type": "boolean"}, "hits": PER_VARIANT, "misses": PER_VARIANT,
        "failed_writes": {"type": "integer", **POSITIVE, "description": "entries that could not be written (this audit kept the answers)"},
        "location": {"type": "object", "required": ["protocol", "path"], "additionalProperties": False,
                     "properties": {"protocol": {"type": "string"}, "path": {"type": "string"}},
                     "description": "the answer cache's generations folder: file (a local folder) or the fsspec "
                                    "protocol of --cache-dir / AUDITOR_GENERATION_CACHE, and the folder on it "
                                    "(no credentials)"}}},
    "RunRecord.adapters_in_run": POSITIVE,
    "RunRecord.vllm": {
        "description": "vllm backend only: the engine's LoRA settings and calls",
        "required": ["max_lora_rank", "max_loras", "lora_name", "lora_int_id", "generate_calls"],
        "properties": {
            "max_lora_rank": {"type": ["integer", "null"], "minimum": 1,
                              "description": "the adapters' largest real rank rounded up to a rank vLLM accepts"},
            "max_loras": {"type": ["integer", "null"], "minimum": 1, "description": "adapters in the run + 1"},
            "lora_name": {"type": "string", "pattern": "^adapter-[0-9a-f]{16}" + _NO_NEWLINE,
                          "description": "from the adapter's content digest"},
            "lora_int_id": {"type": "integer", "minimum": 1},
            "engine_args": {"type": "object", "description": "--vllm-arg keyword arguments of vllm.LLM"},
            "settings": {"type": ["object", "null"],
                         "description": "engine settings sized to the machine (auditor.backends.vllm.startup): setting "
                                        "-> {value, source: auditor|user|env|vllm, why}",
                         "additionalProperties": {"type": "object", "required": ["value", "source"],
                                                  "properties": {"source": {"enum": _SETTINGS_SOURCES},
                                                                 "why": {"type": "string"}}}},
            "generate_calls": {"type": "array", "items": {"type": "object",
                                                          "additionalProperties": {"type": "integer", **POSITIVE}},
                               "description": "rows per variant of each LLM.generate call (the audit's, then the "
                                              "self-check's)"},
            "self_check": {"type": ["object", "null"],
                           "description": "mixed-batch answers compared with single-variant answers on a few items"}}},
    "RunRecord.openai": {
        "description": "openai backend only: which server and served names answered",
        "required": ["endpoint", "served"],
        "properties": {
            "endpoint": {"type": "string"},
            "served": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "root": {"type": ["string", "null"]}}}},
            "concurrency": {"type": "integer", "minimum": 1}, "timeout_s": {"type": "number"},
            "max_retries": {"type": "integer", "minimum": 0}}},
    "RunRecord.ray": {
        "description": "--ray only: where the generation ran (auditor.backends.ray.cluster): the cluster's address, "
                       "each worker's node, CPUs, GPUs, torch threads and adapters, the base pass worker and the "
                       "worker that served this adapter",
        "required": ["address", "base_pass_worker", "worker", "workers"],
        "properties": {
            "address": {"type": "string"}, "base_pass_worker": {"type": "integer", **COUNT},
            "worker": {"type": "integer", **COUNT},
            "workers": {"type": "array", "items": {
                "type": "object", "required": ["worker", "node", "adapters"],
                "properties": {"worker": {"type": "integer", **COUNT}, "node": {"type": "string"},
                               "cpus": {"type": "number", **COUNT}, "gpus": {"type": "number", **COUNT},
                               "threads": {"type": "integer", **POSITIVE},
                               "adapters": {"type": "array", "items": {"type": "string"}}}}}}},
    "RunRecord.timings": {"required": ["load_s", "generate_s", "total_s"],
                          "additionalProperties": {**FINITE, **COUNT},
                          "description": "seconds: load_s, generate_s, total_s; rounds_s (the first look to the last); "
                                         "weight_space_s (this adapter's weight-space pre-screen, read from the "
                                         "cache or computed)"},
    "RunRecord.created_at": {"format": "date-time"},
    "PromptTemplate.chat_template": {"pattern": "^(base|adapter|none|file:.+)$",
                                     "description": "base: the base's own; adapter: the one the adapter folder "
                                                    "ships; none: plain prompts (no template: the item's text, "
                                                    "no role markers); file:<path>: --chat-template FILE"},
    "PromptTemplate.template_sha256": SHA256,
    "PromptTemplate.tokenizer": {"enum": ["base", "adapter"],
                                 "description": "the tokenizer that encodes the prompts: the base's, or the "
                                                "adapter's own for an adapter whose vocabulary was resized"},
    "Round.look": POSITIVE, "Round.items": {"additionalProperties": COUNT},
    "Round.new_items": {"additionalProperties": COUNT},
    "Budget.items": COUNT, "Budget.looks": POSITIVE, "Budget.used_items": COUNT,
}

#: fields typed ``X | None`` that results.json always holds (an item's base and adapter answers)
NEVER_NULL = frozenset({"ItemRecord.base", "ItemRecord.adapter"})

RUN_DESCRIPTION = (
    "The audit of a training run's checkpoint-N folders against one base pass (`audit RUN_DIR`): each checkpoint "
    "in global_step order with its verdict, DriftScore and every metric's delta with its 95% interval (points for "
    "rates), the last passing checkpoint and the first failing one with its rules. Each audited checkpoint's "
    "results.json is in its report folder.")
RUN_COMMENT = ("generated from the records (auditor.records.training_run.RunSummary) by `python -m "
               "auditor.records.schema_files --write`; do not edit by hand")
#: run.json's constraints and descriptions (as :data:`FIELDS` is results.json's)
RUN_FIELDS: dict[str, dict[str, Any]] = {
    "CheckpointOutcome.step": COUNT, "RunSummary.last_passing": COUNT, "RunSummary.first_failing": COUNT,
    "CheckpointOutcome.step_source": {"enum": ["trainer_state", "folder name"],
                                      "description": "trainer_state.json's global_step, or the N of checkpoint-N"},
    "CheckpointOutcome.report": {"description": "the checkpoint's report folder, relative to run.json; null when "
                                                "it was not audited"},
    "CheckpointOutcome.drift_score_pts": {"description": "points; null without a DriftScore or when not audited"},
    "MetricDelta.delta": {**FINITE, "description": "adapter - base: points for rates, else delta_unit"},
    "MetricDelta.ci_low": {"description": "95% interval of delta (same unit)"},
}
