"""The closed loop: kvgen's emitted launch settings fed to the engine's own configuration and
KV-sizing code; what the engine computes becomes tests/fixtures/engines/closed_loop_<engine>.json.

Usage (repository root, kvgen's virtualenv; the engine environments as refresh_goldens.py makes
them):
    python bench/engines/refresh_goldens.py --closed-loop [--engine vllm==0.34.0] [--venv-root DIR]

For every case below this module runs ``kvgen plan FAMILY MODEL --gpu-memory 40GiB ... --emit
ENGINE --format json`` (``kvgen._cli.main.main``, in process) and hands the printed ``fields`` with
the model's ``config.json`` (``tests/fixtures/hf/``) to ``closed_loop_<engine>.py`` inside the
engine's virtual environment, which builds the engine's configuration from those fields alone
(vLLM ``EngineArgs(**fields)``, SGLang ``ServerArgs(**fields)``) and runs its KV sizing (see
each runner's docstring). The golden keeps, per case, the plan's command line, the emitted
fields and the engine's result; ``tests/deploy/test_closed_loop.py`` replays the command with
no engine installed and asserts the same fields and that kvgen's planned blocks, tokens and
concurrency are the engine's.

Where kvgen refuses a case (a usage error, e.g. KV heads that do not split over tp), the engine
gets the settings kvgen emits at tp 1 with only the parallel size changed, so the golden says
whether the engine refuses it too.

Each plan names the release it is for (``--emit vllm==0.34.0``) where kvgen models that release;
a release kvgen does not model yet (one being followed) is planned with the engine's default
release, kvgen's answer until the new one is added to its registry.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "tests" / "fixtures" / "hf"
FIXTURES = ROOT / "tests" / "fixtures" / "engines"
BUDGET = "40GiB"  # the KV budget per rank of every case (--gpu-memory)
BUDGET_BYTES = 40 << 30
TP_SIZES = (1, 8)
# Each engine's two page sizes: vLLM 0.33.0's default block and twice it (kept for every
# release, so that releases compare case by case; 0.34.0's default 64 is in the goldens);
# SGLang's default page and the 64-token page its FlashInfer/FA3 deployments commonly use.
PAGE_SIZES = {"vllm": (16, 32), "sglang": (1, 64)}
TP_FIELD = {"vllm": "tensor_parallel_size", "sglang": "tp_size"}
# kvgen's Mamba radix cache strategies beyond extra_buffer and no_buffer, each planned and
# emitted on every recurrent hybrid (kvgen.sizing.engines_sglang.SGLANG_MAMBA_STRATEGIES).
SGLANG_OTHER_STRATEGIES = ("extra_buffer_lazy", "extra_buffer_no_overlap", "disabled")

# One model per shipped family, with the config.json the engine's classes read and the
# speculative profile of the grid ("none": the family's profiles need what the engine cannot
# build here). family -> (model, config fixture, profile, draft model's config fixture).
MODELS: dict[str, tuple[str, str | None, str, str | None]] = {
    "cohere2": ("command_r7b", "command-r7b.json", "ngram4", None),
    "deepseek_v3": ("deepseek_v3", "deepseek-v3.json", "mtp1", None),
    "deepseek_v3_2": ("deepseek_v3_2_exp", "deepseek-v3.2-exp.json", "mtp", None),
    "falcon_h1": ("falcon_h1_0_5b_instruct", "falcon-h1-0.5b-instruct.json", "ngram4", None),
    "gemma2": ("gemma2_9b", "gemma-2-9b.json", "ngram4", None),
    "gemma3": ("gemma3_27b", "gemma-3-27b-text.json", "ngram4", None),
    "gemma3n": ("gemma3n_e2b", "gemma-3n-E2B-text.json", "ngram4", None),
    "gpt_oss": ("gpt_oss_20b", "gpt-oss-20b.json", "ngram4", None),
    "granite4": ("granite_4_0_h_tiny", "granite-4.0-h-tiny.json", "ngram4", None),
    "jamba": ("jamba_1_5_mini", "jamba-1.5-mini.json", "ngram4", None),
    "kimi_k2": ("kimi_k2_instruct", "kimi-k2-instruct.json", "ngram4", None),
    "kimi_linear": ("kimi_linear_48b_a3b", "kimi-linear-48b-a3b-instruct.json", "ngram4", None),
    "ling_linear": ("ling_2_5_linear", "ling-2.5-linear.json", "ngram4", None),
    # PARD (vLLM's draft_model with parallel_drafting): amd/PARD-Llama-3.2-1B's config.json is
    # Llama-3.2-1B's plus pard_token and spd_type, which move no cache (refresh_goldens.py).
    "llama3": ("llama3_1_8b", "llama-3.1-8b.json", "pard4", "llama-3.2-1b.json"),
    "llama3_2_vision": ("llama3_2_11b_vision", "llama-3.2-11b-vision.json", "ngram4", None),
    "llama4_maverick": (
        "llama4_maverick_17b_128e",
        "llama-4-maverick-17b-128e-text.json",
        "ngram",
        None,
    ),
    "llama4_scout": ("llama4_scout_17b_16e", "llama-4-scout-17b-16e-text.json", "ngram", None),
    "mistral": ("mistral_7b_v0_1", "mistral-7b.json", "ngram4", None),
    "nemotron_h": ("nemotron_h_8b", "nemotron-h-8b.json", "ngram4", None),
    "openelm": ("openelm_270m", "openelm-270m.json", "ngram4", None),
    "phi3": ("phi3_medium_4k", "phi-3-medium-4k.json", "ngram4", None),
    "qwen2_5": ("qwen2_5_7b", "qwen2.5-7b.json", "draft_0_5b", "qwen2.5-0.5b.json"),
    "qwen3": ("qwen3_8b", "qwen3-8b.json", "ngram4", None),
    "qwen3_moe": ("qwen3_30b_a3b", "qwen3-30b-a3b.json", "ngram4", None),
    "qwen3_next": ("qwen3_next_80b_a3b", "qwen3-next-80b-a3b.json", "mtp2", None),
}
# More models of a family, each with its own grid (vLLM only): a model served at a
# kv_cache_dtype of its own, whose emitted kv_cache_dtype the engine must size the same.
VLLM_MORE_MODELS: tuple[tuple[str, tuple[str, str | None, str, str | None]], ...] = (
    ("qwen3_moe", ("qwen3_235b_a22b_fp8_pth", "qwen3-235b-a22b.json", "none", None)),
)
# SGLang reads the multimodal Llama 4 config (its hybrid-SWA pools are keyed on
# Llama4ForConditionalGeneration, configs/model_config.py is_hybrid_swa_model); vLLM the text
# model's (the multimodal config does not load with transformers 5 there).
SGLANG_FIXTURES = {
    "llama4_scout": "llama-4-scout-17b-16e.json",
    "llama4_maverick": "llama-4-maverick-17b-128e.json",
}
# SGLang runs EAGLE3, MTP and STANDALONE drafters in the target's pool, NGRAM with none (PARD
# and two-model EAGLE3 not at all): the grid's profile per family there, where the family has
# one, and a draft's config.json.
SGLANG_PROFILES = {
    "deepseek_v3": ("mtp1", None),
    "deepseek_v3_2": ("mtp", None),
    "qwen3_next": ("mtp2", None),
    "llama3": ("eagle3", "eagle3-llama3.1-8b.json"),
    "cohere2": ("ngram4", None),
    "granite4": ("ngram4", None),
    "qwen2_5": ("draft_0_5b", "qwen2.5-0.5b.json"),
}
# vLLM: a separate draft model of another vocabulary, planned with --heterogeneous-vocab (the
# emitted speculative_config's use_heterogeneous_vocab, which vLLM's SpeculativeConfig
# validates itself): the family's model with this profile and draft config (page 16, short
# length, tp 1).
VLLM_HETEROGENEOUS_VOCAB = {
    "gemma3": ("draft_1b", "gemma-3-1b.json"),
    "qwen2_5": ("draft_0_5b", "qwen2.5-0.5b.json"),
}


def emit(argv: list[str]) -> tuple[int, dict[str, Any] | None, str]:
    """``kvgen ARGV`` in process: exit code, the launch JSON it printed (None if none), stderr."""
    from kvgen._cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    text = out.getvalue()
    printed = json.loads(text) if text.startswith("{") else None
    if printed is not None and "fields" not in printed:  # a plan that does not fit: no launch
        printed = None
    return code, printed, err.getvalue().strip()


def lengths(native: int) -> tuple[int, int]:
    """Two lengths: 8192 (half the native length when that is shorter) and min(native, 32768)."""
    return (8192 if native > 8192 else native // 2, min(native, 32768))


def plan_argv(family: str, model: str, engine: str, *, page: int, length: int, tp: int,
              profile: str = "none") -> list[str]:  # fmt: skip
    return [
        "-q", "plan", family, model, "--gpu-memory", BUDGET, "--max-seq-len", str(length),
        "--block-size", str(page), "--tp-size", str(tp), "--speculative", profile,
        "--emit", engine, "--format", "json",
    ]  # fmt: skip


def plan_inputs(engine: str, *, page: int, length: int, tp: int) -> dict[str, Any]:
    """The settings a plan's command line names, in the engine's field names."""
    if engine == "vllm":
        return {"max_model_len": length, "max_num_seqs": 8, "max_num_batched_tokens": 8192,
                "block_size": page, "tensor_parallel_size": tp}  # fmt: skip
    return {"context_length": length, "max_running_requests": 8, "chunked_prefill_size": 8192,
            "page_size": page, "tp_size": tp}  # fmt: skip


def emitted_as(engine: str, release: str | None) -> str:
    """What ``--emit`` names for ``release`` of ``engine``: ``NAME==RELEASE`` where kvgen models
    it, else the engine's name (kvgen's default release)."""
    from kvgen.sizing.engines_registry import SPELLINGS

    return f"{engine}=={release}" if f"{engine}=={release}" in SPELLINGS else engine


def cases(engine: str, release: str | None = None) -> list[dict[str, Any]]:
    """The grid: each family's model at two pages, two lengths, tp 1 and 8, and one speculative
    profile (first page, short length, tp 1); for SGLang each recurrent hybrid kvgen plans also
    under the no_buffer Mamba radix cache (page 1, short length, tp 1). Each plan emits for
    ``release`` (``emitted_as``)."""
    from kvgen._deploy.emit import _speculative  # the emitted speculative_config, as emit builds it
    from kvgen._deploy.rank import load_sizing
    from kvgen.sizing.engines_registry import release as release_of

    emitted = emitted_as(engine, release)

    grid = []
    more = VLLM_MORE_MODELS if engine == "vllm" else ()
    for family, (model, fixture, profile, draft) in sorted([*MODELS.items(), *more]):
        sizing = load_sizing(family, ROOT / "generated")
        native = int(sizing.MAX_SEQ_LEN[model])
        if engine == "sglang":
            profile, draft = SGLANG_PROFILES.get(family, ("none", None))
            fixture = SGLANG_FIXTURES.get(family, fixture)
        points = [
            (page, length, tp, "none")
            for page in PAGE_SIZES[engine]
            for length in lengths(native)
            for tp in TP_SIZES
        ]
        if profile != "none":
            points.append((PAGE_SIZES[engine][0], lengths(native)[0], 1, profile))
        strategies = [""] * len(points)
        drafts = [draft] * len(points)
        if engine == "sglang" and _recurrent(sizing, model):
            # SGLang's other Mamba radix cache settings: no_buffer (page 1 only) keeps 3 state
            # slots a running request where the default extra_buffer keeps 5; the lazy extra
            # buffer and extra_buffer without the overlap scheduler 4, at both pages; the
            # radix cache disabled one per max_running_requests, at both pages.
            points.append((1, lengths(native)[0], 1, "none"))
            strategies.append("no_buffer")
            drafts.append(None)
            for strategy in SGLANG_OTHER_STRATEGIES:
                for page in PAGE_SIZES[engine]:
                    points.append((page, lengths(native)[0], 1, "none"))
                    strategies.append(strategy)
                    drafts.append(None)
        if engine == "vllm" and family in VLLM_HETEROGENEOUS_VOCAB:
            hv_profile, hv_draft = VLLM_HETEROGENEOUS_VOCAB[family]
            points.append((PAGE_SIZES[engine][0], lengths(native)[0], 1, hv_profile))
            strategies.append("heterogeneous_vocab")
            drafts.append(hv_draft)
        for (page, length, tp, prof), strategy, draft in zip(
            points, strategies, drafts, strict=True
        ):
            argv = plan_argv(family, model, emitted, page=page, length=length, tp=tp,
                             profile=prof)  # fmt: skip
            if strategy == "heterogeneous_vocab":
                argv += ["--heterogeneous-vocab"]
            elif strategy:
                argv += ["--mamba-radix-cache-strategy", strategy]
            case: dict[str, Any] = {
                "id": f"{family}/{model}/p{page}/s{length}/tp{tp}/{prof}"
                + (f"/{strategy}" if strategy else ""),
                "family": family,
                "model": model,
                "argv": argv,
                "budget_bytes": BUDGET_BYTES,
            }
            code, printed, err = emit(argv)
            if strategy and strategy != "heterogeneous_vocab" and printed is None:
                continue  # kvgen plans no SGLang launch of the model: nothing to compare
            case["kvgen_exit"] = code
            if printed is not None:
                case["fields"] = printed["fields"]
            else:
                case["kvgen_refusal"] = (err.splitlines() or [""])[-1]
                if code == 2 and tp != 1:
                    # The same settings at tp 1 with the parallel size changed: does the
                    # engine refuse them too?
                    at = argv.index("--tp-size")
                    base = [*argv[: at + 1], "1", *argv[at + 2 :]]
                    _, at_one, _ = emit(base)
                    if at_one is not None:
                        case["fields"] = {**at_one["fields"], TP_FIELD[engine]: tp}
                        case["fields_from"] = "the tp 1 emission with the tp size changed"
                if "fields" not in case and prof != "none" and engine == "vllm":
                    # The same plan without the profile, with the profile's speculative
                    # config added: does the engine refuse the drafter too?
                    at = argv.index("--speculative")
                    base = [*argv[: at + 1], "none", *argv[at + 2 :]]
                    if strategy == "heterogeneous_vocab":  # kvgen refuses the setting itself
                        base.remove("--heterogeneous-vocab")
                    _, plain, _ = emit(base)
                    if plain is not None:
                        config = _speculative(sizing, prof, release_of(emitted).engine.settings)
                        if strategy == "heterogeneous_vocab":  # as emit writes it
                            config = {**config, "use_heterogeneous_vocab": True}
                        case["fields"] = {**plain["fields"], "speculative_config": config}
                        case["fields_from"] = (
                            "the emission without the profile, its speculative_config added"
                        )
                if "fields" not in case:
                    case["fields"] = plan_inputs(engine, page=page, length=length, tp=tp)
                    case["fields_from"] = "the plan's own inputs (kvgen emits nothing)"
            if fixture is None:
                case["engine_skip"] = (
                    "no config.json of this family under tests/fixtures/hf/: the engine's "
                    "configuration classes read one"
                )
            else:
                case["hf_config"] = str(HF / fixture)
                if draft is not None and prof != "none":
                    case["draft_hf_config"] = str(HF / draft)
            grid.append(case)
    return grid


def _recurrent(sizing: Any, model: str) -> bool:
    """Whether the model keeps a recurrent state (SGLang's Mamba pool and radix cache)."""
    return any(layer.attention == "recurrent" for layer in sizing.ENGINE_MODELS[model].layers)


def write_golden(engine: str, grid: list[dict[str, Any]], produced: dict[str, Any],
                 release: str, path: Path, family: str | None = None) -> Path:  # fmt: skip
    """The fixture of ``grid``'s cases at ``path`` (the release's closed loop); with
    ``family`` (a partial refresh), the fixture's other families' cases kept as they are, in
    family order."""
    by_id = {r["id"]: r for r in produced["results"]}
    entries = []
    for case in grid:
        entry = {key: case[key] for key in ("id", "family", "model", "argv", "kvgen_exit")}
        for key in ("fields", "fields_from", "kvgen_refusal", "engine_skip"):
            if key in case:
                entry[key] = case[key]
        if "engine_skip" not in case and "fields" in case:
            got = dict(by_id[case["id"]])
            got.pop("id")
            entry["engine"] = got
        if "hf_config" in case:
            entry["config_from"] = Path(case["hf_config"]).relative_to(ROOT).as_posix()
        entries.append(entry)
    golden = {
        "engine": engine,
        "engine_version": produced["version"],
        "pin": f"{engine}=={release}",
        "what": "kvgen plan --emit's fields fed to the engine's own configuration and KV "
        "sizing code; tests/deploy/test_closed_loop.py replays kvgen against it",
        "provenance": produced["provenance"],
        "refresh": "python bench/engines/refresh_goldens.py --closed-loop --engine "
        f"{engine}=={release}",
        "requirements": f"bench/engines/requirements-{engine}-{release}.txt",
    }
    if "unset_flags_read_as_none" in produced:
        golden["unset_flags_read_as_none"] = produced["unset_flags_read_as_none"]
    if family is not None:
        kept = json.loads(path.read_text(encoding="utf-8"))["cases"]
        entries = [e for e in kept if e["family"] != family] + entries
        entries.sort(key=lambda e: e["family"])  # stable: each family's own order kept
    FIXTURES.mkdir(parents=True, exist_ok=True)
    head = json.dumps(golden, indent=1, sort_keys=True)[:-2]
    lines = [json.dumps(entry, sort_keys=True, separators=(",", ":")) for entry in entries]
    text = head + ',\n "cases": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"
    json.loads(text)
    path.write_text(text, encoding="utf-8")
    return path
