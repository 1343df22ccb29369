"""``kvgen diff``: capacity and API changes against a git ref, on temporary git repositories.

Every test builds its own repository from the synthetic ``toy`` family below, commits it (spec
and generated code), edits the working tree and runs the real CLI in it.

Reference deployment (the defaults): B=8, N=8192, S=min(65536, 32768)=32768, tp 1, 40 GiB.
toy_a has 2 full and 2 sliding (window 1024) layers of 1024 B/token, tpb 32, so at H=1:
  slope     = 2 * 1024                                     = 2048 B/token
  pages     = ceil((1024 + 1 - 2) / 32) + 1                = 33
  intercept = 8 * (2 * 1024 * 32 * 33) + 8192 * (2 * 1024) = 17301504 + 16777216 = 34078720
  max tokens in 40 GiB = 8192 + (42949672960 - 17301504 - 8192 * 4096) // 2048 = 20954880
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from kvgen._cli.main import main
from kvgen._review import default_ref

TOY = """\
schema_version: 1
family: toy
tokens_per_block: 32
kv_cache_dtype: bf16
models:
  - name: toy_a
    max_seq_len: 65536
    layer_kinds:
      full: {attention: full, bytes_per_token: 1024}
      local: {attention: sliding, window: 1024, bytes_per_token: 1024}
    layers: {count: 4, pattern: [local, full]}
speculative:
  - name: pard4
    mode: pard
    max_draft_len: 4
    draft:
      layer_kinds: {d: {attention: full, bytes_per_token: 512}}
      layers: {count: 1, pattern: [d]}
"""
SPEC = Path("schema/families/toy.yaml")
HEAD = (
    "kvgen diff HEAD -> working tree\n"
    "reference: max_batch_size 8, max_num_tokens 8192, max_seq_len min(native, 32768), "
    "tp_size 1, GPU KV budget 40 GiB (split per docs/cost-model.md §6), semantics trtllm-v2\n"
)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch, capsys):
    """A committed project with the toy family and its generated code; cwd is its root."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    SPEC.parent.mkdir(parents=True)
    SPEC.write_text(TOY)
    assert main(["-q", "generate"]) == 0
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy")
    capsys.readouterr()
    return tmp_path


def edit(old: str, new: str, path: Path = SPEC) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def summary(
    reducing=0, increasing=0, api=0, added=0, blocking=0, changed=0, removed=0, cosmetic=0,
    unchanged=0, families_added=0,
) -> str:  # fmt: skip
    return (
        f"summary: {reducing} capacity-reducing, {increasing} capacity-increasing, {api} api, "
        f"{added} added; {blocking} not acknowledged; families: {changed} changed, "
        f"{families_added} added, {removed} removed, {cosmetic} cosmetic, {unchanged} unchanged\n"
    )


def diff(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["diff", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_unchanged_tree_reports_nothing_and_exits_0(repo, capsys):
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert out == HEAD + (
        "summary: 0 capacity-reducing, 0 capacity-increasing, 0 api, 0 added; "
        "0 not acknowledged; families: 0 changed, 0 added, 0 removed, 0 cosmetic, 1 unchanged\n"
    )


def test_comment_only_change_is_cosmetic_and_exits_0(repo, capsys):
    SPEC.write_text("# reviewed by the capacity team\n" + TOY.replace("bf16", "bf16  # tpb 32"))
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert out == HEAD + (
        "toy: cosmetic (no numeric change)\n"
        "summary: 0 capacity-reducing, 0 capacity-increasing, 0 api, 0 added; "
        "0 not acknowledged; families: 0 changed, 0 added, 0 removed, 1 cosmetic, 0 unchanged\n"
    )


# Window 1024 -> 2048: pages = ceil(2047/32) + 1 = 65, so per request 2048*32*(65-33) B more;
# at B=8 the intercept grows by 8 * 2048 * 32 * 32 = 16777216 B (16 MiB) and the 40 GiB hold
# 16777216 / 2048 = 8192 fewer tokens. PARD (H = 3K-1 = 11) moves by the same 16 MiB, and the
# §6 split hands the draft pool a smaller share too.
WINDOW_UP = """\
toy/toy_a/none/target: capacity-reducing (NOT ACKNOWLEDGED)
    slope       2048 -> 2048 B/token
    intercept   34078720 -> 50855936 B  (+16777216 B, +16 MiB)
    max tokens  20954880 -> 20946688  (-8192)
toy/toy_a/pard4/draft: capacity-reducing (NOT ACKNOWLEDGED)
    slope       512 -> 512 B/token
    intercept   0 -> 0 B
    max tokens  16763699 -> 16757145  (-6554)
toy/toy_a/pard4/target: capacity-reducing (NOT ACKNOWLEDGED)
    slope       2048 -> 2048 B/token
    intercept   34603008 -> 51380224 B  (+16777216 B, +16 MiB)
    max tokens  16763699 -> 16757145  (-6554)
summary: 3 capacity-reducing, 0 capacity-increasing, 0 api, 0 added; 3 not acknowledged; \
families: 1 changed, 0 added, 0 removed, 0 cosmetic, 0 unchanged
to acknowledge a reviewed change, add to the new spec:
  # schema/families/toy.yaml
  acknowledge:
    - {change: capacity-reducing, model: "toy_a", profile: "none", reason: "..."}
    - {change: capacity-reducing, model: "toy_a", profile: "pard4", reason: "..."}
"""


def test_capacity_reducing_change_without_acknowledgement_exits_1(repo, capsys):
    edit("window: 1024", "window: 2048")
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out == HEAD + WINDOW_UP
    assert "kvgen: 3 capacity-reducing or API changes not acknowledged\n" in err


def test_acknowledged_capacity_reducing_change_exits_0(repo, capsys):
    edit("window: 1024", "window: 2048")
    SPEC.write_text(
        SPEC.read_text()
        + "acknowledge:\n"
        + "  - {change: capacity-reducing, model: toy_a, reason: longer window for quality}\n"
    )
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert out.splitlines()[2:5] == [
        "toy/toy_a/none/target: capacity-reducing (acknowledged: longer window for quality)",
        "    slope       2048 -> 2048 B/token",
        "    intercept   34078720 -> 50855936 B  (+16777216 B, +16 MiB)",
    ]
    assert "0 not acknowledged" in out.splitlines()[-1]


def test_acknowledgement_matches_change_kind_and_profile(repo, capsys):
    edit("window: 1024", "window: 2048")
    SPEC.write_text(
        SPEC.read_text()
        + "acknowledge:\n"
        + "  - {change: api, reason: not this kind}\n"
        + "  - {change: capacity-reducing, profile: pard4, reason: only pard4}\n"
    )
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert [line for line in out.splitlines() if line.startswith("toy/")] == [
        "toy/toy_a/none/target: capacity-reducing (NOT ACKNOWLEDGED)",
        "toy/toy_a/pard4/draft: capacity-reducing (acknowledged: only pard4)",
        "toy/toy_a/pard4/target: capacity-reducing (acknowledged: only pard4)",
    ]


def test_capacity_increasing_change_exits_0(repo, capsys):
    # Window 1024 -> 512: pages 33 -> 17, the intercept drops by 8 * 2048 * 32 * 16 = 8 MiB.
    edit("window: 1024", "window: 512")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert out == HEAD + textwrap.dedent(
        """\
        toy/toy_a/none/target: capacity-increasing
            slope       2048 -> 2048 B/token
            intercept   34078720 -> 25690112 B  (-8388608 B, -8 MiB)
            max tokens  20954880 -> 20958976  (+4096)
        toy/toy_a/pard4/draft: capacity-increasing
            slope       512 -> 512 B/token
            intercept   0 -> 0 B
            max tokens  16763699 -> 16766976  (+3277)
        toy/toy_a/pard4/target: capacity-increasing
            slope       2048 -> 2048 B/token
            intercept   34603008 -> 26214400 B  (-8388608 B, -8 MiB)
            max tokens  16763699 -> 16766976  (+3277)
        """
    ) + summary(increasing=3, changed=1)


def test_slope_increase_is_capacity_reducing(repo, capsys):
    edit(
        "full: {attention: full, bytes_per_token: 1024}",
        "full: {attention: full, bytes_per_token: 2048}",
    )
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out.splitlines()[2:4] == [
        "toy/toy_a/none/target: capacity-reducing (NOT ACKNOWLEDGED)",
        "    slope       2048 -> 4096 B/token  (+2048 B, +2 KiB)",
    ]


def test_renamed_model_is_an_api_change(repo, capsys):
    edit("name: toy_a", "name: toy_b")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out == HEAD + "toy/toy_a/*/*: api: model removed (NOT ACKNOWLEDGED)\n" + (
        "toy/toy_b/*/*: added: model added\n"
    ) + summary(api=1, added=1, blocking=1, changed=1) + textwrap.dedent(
        """\
        to acknowledge a reviewed change, add to the new spec:
          # schema/families/toy.yaml
          acknowledge:
            - {change: api, model: "toy_a", profile: "*", reason: "..."}
        """
    )


def test_renamed_profile_acknowledged_as_api_change_exits_0(repo, capsys):
    edit("name: pard4", "name: pard_k4")
    SPEC.write_text(SPEC.read_text() + "acknowledge:\n  - {change: api, reason: profile renamed}\n")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert out.splitlines()[2:4] == [
        "toy/*/pard4/*: api: profile removed (acknowledged: profile renamed)",
        "toy/*/pard_k4/*: added: profile added",
    ]


def test_cache_manager_disappearing_is_an_api_change(repo, capsys):
    # ngram has no drafter KV: the pard4 profile loses its draft manager and the target gets
    # the whole budget: 8192 + (40 GiB - 8 * 2228224 - 8192 * 4096) // 2048 = 20954624 tokens.
    SPEC.write_text(
        TOY.split("speculative:")[0] + "speculative:\n"
        "  - {name: pard4, mode: ngram, max_draft_len: 4}\n"
    )
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out.splitlines()[2:7] == [
        "toy/toy_a/pard4/draft: api: draft cache manager removed (NOT ACKNOWLEDGED)",
        "toy/toy_a/pard4/target: capacity-increasing",
        "    slope       2048 -> 2048 B/token",
        "    intercept   34603008 -> 34603008 B",
        "    max tokens  16763699 -> 20954624  (+4190925)",
    ]


def test_family_renamed_in_its_file_is_an_api_change(repo, capsys):
    edit("family: toy", "family: toy2")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out.splitlines()[2] == "toy2/*/*/*: api: family renamed from toy (NOT ACKNOWLEDGED)"
    assert '    - {change: api, model: "*", profile: "*", reason: "..."}' in out


def test_removed_family_cannot_be_acknowledged(repo, capsys):
    SPEC.unlink()
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out.splitlines()[2:] == [
        "toy/*/*/*: api: family removed (NOT ACKNOWLEDGED)",
        "summary: 0 capacity-reducing, 0 capacity-increasing, 1 api, 0 added; "
        "1 not acknowledged; families: 0 changed, 0 added, 1 removed, 0 cosmetic, 0 unchanged",
        "to acknowledge a reviewed change, add to the new spec:",
        "  # toy: a removed family has no spec to acknowledge it in",
    ]


def test_added_family_does_not_block(repo, capsys):
    Path("schema/families/other.yaml").write_text(TOY.replace("family: toy", "family: other"))
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert out.splitlines()[2] == "other/*/*/*: added: family added"


TRUST = "--trust-committed-modules"
HOSTILE = """
import os as _os
open(_os.environ.get("KVGEN_PWNED", "/tmp/kvgen-pwned-marker"), "w").close()
"""


def _commit_module(text: str, message: str) -> None:
    module = Path("generated/toy/sizing.py")
    original = module.read_text()
    module.write_text(text)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", message)
    module.write_text(original)


def test_code_committed_at_the_ref_is_never_executed_by_default(repo, capsys, monkeypatch):
    marker = repo.parent / f"{repo.name}-PWNED"
    monkeypatch.setenv("KVGEN_PWNED", str(marker))
    text = Path("generated/toy/sizing.py").read_text()
    _commit_module(text + HOSTILE, "hostile module, same spec hash")
    edit("window: 1024", "window: 2048")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert not marker.exists()
    assert code == 1
    assert out == HEAD + WINDOW_UP
    # Opted in, it runs, but in another process: the marker proves where, kvgen is unharmed.
    code, out, _ = diff(capsys, "--against", "HEAD", TRUST)
    assert marker.exists()
    assert out == HEAD + WINDOW_UP


def test_a_committed_module_reporting_false_capacities_cannot_hide_a_regression(repo, capsys):
    # The ref's module claims a huge intercept for the old side (same SPEC_SHA256), so the
    # window growth would look capacity-increasing; by default the old spec is rendered.
    text = Path("generated/toy/sizing.py").read_text()
    lie = (
        "\n_real = cache_costs\n\n\n"
        "def cache_costs(*args, **kwargs):  # noqa: F811\n"
        "    return {k: CacheCost(v.slope, v.intercept * 100) for k, v in "
        "_real(*args, **kwargs).items()}\n"
    )
    _commit_module(text + lie, "lying module")
    edit("window: 1024", "window: 2048")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out == HEAD + WINDOW_UP


def test_trusted_old_side_is_the_committed_generated_module(repo, capsys):
    # Opt-in: a generator change shows up although the spec did not change: the committed
    # module (same spec hash) answers for the old side, the current generator for the new one.
    module = Path("generated/toy/sizing.py")
    text = module.read_text()
    assert text.count("bytes_per_token=512") + text.count(", 512,") >= 1
    module.write_text(
        text.replace("bytes_per_token=512", "bytes_per_token=256").replace(", 512,", ", 256,")
    )
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "old generator")
    module.write_text(text)
    code, out, _ = diff(capsys, "--against", "HEAD", TRUST)
    assert code == 1
    assert out.splitlines()[2:4] == [
        "toy/toy_a/pard4/draft: capacity-reducing (NOT ACKNOWLEDGED)",
        "    slope       256 -> 512 B/token  (+256 B)",
    ]


def test_trusted_stale_committed_module_falls_back_to_rendering_the_old_spec(repo, capsys):
    edit("window: 1024", "window: 2048")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "spec without generate")
    edit("window: 2048", "window: 1024")  # back to what generated/ was rendered from
    code, out, err = diff(capsys, "--against", "HEAD", TRUST)
    assert "HEAD:generated/toy/sizing.py was generated from another spec" in err
    assert code == 0
    assert "3 capacity-increasing" in out


def test_trusted_committed_module_with_an_older_api_falls_back_to_rendering(repo, capsys):
    module = Path("generated/toy/sizing.py")
    text = module.read_text()
    module.write_text(text + "\n\ndef cache_costs(model):\n    raise AssertionError\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "older generator")
    module.write_text(text)
    edit("window: 1024", "window: 2048")
    code, out, err = diff(capsys, "--against", "HEAD", TRUST)
    assert "HEAD:generated/toy/sizing.py does not answer today's API" in err
    assert code == 1
    assert out == HEAD + WINDOW_UP


def test_without_committed_generated_code_the_old_spec_is_rendered(repo, capsys):
    git("rm", "-rq", "--cached", "generated")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "untrack generated")
    edit("window: 1024", "window: 2048")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out == HEAD + WINDOW_UP


def test_reference_deployment_flags(repo, capsys):
    # --gpu-memory 1GiB, batch 1: intercept = 2162688 + 16777216 = 18939904 B.
    code, out, _ = diff(
        capsys, "--against", "HEAD", "--gpu-memory", "1GiB", "--max-batch-size", "1",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["deployment"] == {
        "max_batch_size": 1,
        "max_num_tokens": 8192,
        "max_seq_len": 32768,
        "tp_size": 1,
        "gpu_budget": 1 << 30,
        "semantics": "trtllm-v2",
    }


def test_json_output(repo, capsys):
    edit("window: 1024", "window: 2048")
    code, out, _ = diff(capsys, "--against", "HEAD", "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert data["families"] == {"toy": "changed"}
    assert data["not_acknowledged"] == 3
    assert data["changes"][0] == {
        "family": "toy",
        "model": "toy_a",
        "profile": "none",
        "manager": "target",
        "kind": "capacity-reducing",
        "detail": "",
        "old": {"slope": 2048, "intercept": 34078720, "share": 40 << 30, "max_tokens": 20954880},
        "new": {"slope": 2048, "intercept": 50855936, "share": 40 << 30, "max_tokens": 20946688},
        "blocking": True,
        "acknowledged": None,
    }


def test_markdown_output_is_a_pr_comment(repo, capsys):
    edit("window: 1024", "window: 2048")
    code, out, _ = diff(capsys, "--against", "HEAD", "--format", "markdown")
    assert code == 1
    assert out == (
        "### kvgen diff: `HEAD` → working tree\n"
        "\n"
        "Reference deployment: max_batch_size 8, max_num_tokens 8192, max_seq_len min(native, "
        "32768), tp_size 1, GPU KV budget 40 GiB (split per docs/cost-model.md §6), "
        "semantics trtllm-v2.\n"
        "\n"
        ":x: **3 capacity-reducing or API changes not acknowledged.**\n"
        "\n"
        "| family | model | profile | manager | change | slope (B/token) | intercept (B) "
        "| max tokens | acknowledged |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "| toy | toy_a | none | target | capacity-reducing | 2048 | 34078720 → 50855936 "
        "(+16777216) | 20954880 → 20946688 (-8192) | **no** |\n"
        "| toy | toy_a | pard4 | draft | capacity-reducing | 512 | 0 | 16763699 → 16757145 "
        "(-6554) | **no** |\n"
        "| toy | toy_a | pard4 | target | capacity-reducing | 2048 | 34603008 → 51380224 "
        "(+16777216) | 16763699 → 16757145 (-6554) | **no** |\n"
        "\n"
        "- this change reserves 16 MiB more per GPU for toy_a at batch 8 and fits 8192 fewer "
        "tokens in 40 GiB.\n"
        "- this change fits 6554 fewer tokens for toy_a (pard4) draft pool in 40 GiB.\n"
        "- this change reserves 16 MiB more per GPU for toy_a (pard4) at batch 8 and fits 6554 "
        "fewer tokens in 40 GiB.\n"
        "\n"
        "To acknowledge a reviewed change, add to the new spec:\n"
        "\n"
        "```yaml\n"
        "# schema/families/toy.yaml\n"
        "acknowledge:\n"
        '  - {change: capacity-reducing, model: "toy_a", profile: "none", reason: "..."}\n'
        '  - {change: capacity-reducing, model: "toy_a", profile: "pard4", reason: "..."}\n'
        "```\n"
        "\n"
        "<sub>3 capacity-reducing, 0 capacity-increasing, 0 api, 0 added; 3 not acknowledged; "
        "families: 1 changed, 0 added, 0 removed, 0 cosmetic, 0 unchanged</sub>\n"
    )


def test_github_format_annotates_unacknowledged_changes(repo, capsys):
    edit("name: toy_a", "name: toy_b")
    code, out, _ = diff(capsys, "--against", "HEAD", "--format", "github")
    assert code == 1
    # A removed model is anchored at `family:` (line 2); toy_b is named on line 6.
    assert out == (
        "::error file=schema/families/toy.yaml,line=2,title=kvgen diff%3A api::"
        "toy/toy_a/*/*: api: model removed (NOT ACKNOWLEDGED)\n"
        "::notice file=schema/families/toy.yaml,line=6,title=kvgen diff%3A added::"
        "toy/toy_b/*/*: added: model added\n"
    )


def test_github_annotation_of_a_profile_change_is_on_the_profile_line(repo, capsys):
    # Renamed pard4 -> pard5: the removed profile is no longer in the new spec, so it is
    # anchored at `family:` (line 2); pard5 is named on line 13 of the new spec.
    edit("name: pard4", "name: pard5")
    code, out, _ = diff(capsys, "--against", "HEAD", "--format", "github")
    assert code == 1
    assert out.splitlines() == [
        "::error file=schema/families/toy.yaml,line=2,title=kvgen diff%3A api::"
        "toy/*/pard4/*: api: profile removed (NOT ACKNOWLEDGED)",
        "::notice file=schema/families/toy.yaml,line=13,title=kvgen diff%3A added::"
        "toy/*/pard5/*: added: profile added",
    ]


def test_spec_failing_lint_prints_diagnostics_and_exits_1(repo, capsys):
    edit("tokens_per_block: 32", "tokens_per_block: 32\nbogus: 1")
    code, out, err = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out == (
        "schema/families/toy.yaml:4:1: KV101 unknown key 'bogus' at bogus "
        "(fix: remove the key, or check its spelling against the schema)\n"
    )
    assert "not comparing: fix the lint errors above" in err


def test_old_spec_failing_lint_is_reported_with_the_ref(repo, capsys):
    edit("tokens_per_block: 32", "tokens_per_block: 32\nbogus: 1")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "broken")
    SPEC.write_text(TOY)
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out.startswith("HEAD:schema/families/toy.yaml:4:1: KV101 unknown key 'bogus'")


def test_unknown_ref_is_a_usage_error(repo, capsys):
    code, out, err = diff(capsys, "--against", "no-such-branch")
    assert (code, out) == (2, "")
    assert err == "kvgen: error: unknown git ref 'no-such-branch'\n"


def test_outside_a_git_repository_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    code, out, err = diff(capsys, "--against", "HEAD")
    assert (code, out) == (2, "")
    assert "is not in a git repository" in err


def test_explicit_spec_path(repo, capsys):
    Path("schema/families/other.yaml").write_text(TOY.replace("family: toy", "family: other"))
    edit("window: 1024", "window: 2048")
    code, out, _ = diff(capsys, "--against", "HEAD", "schema/families/other.yaml")
    assert code == 0
    assert out.splitlines()[2] == "other/*/*/*: added: family added"


def test_default_ref_is_the_pull_request_base():
    assert default_ref({"GITHUB_BASE_REF": "main"}) == "origin/main"
    assert default_ref({"GITHUB_BASE_REF": ""}) == "HEAD"
    assert default_ref({}) == "HEAD"


def test_cli_defaults_to_origin_base_in_github_actions(repo, capsys, monkeypatch):
    git("update-ref", "refs/remotes/origin/main", "HEAD")
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    code, out, _ = diff(capsys)
    assert code == 0
    assert out.startswith("kvgen diff origin/main -> working tree\n")


def test_progress_is_a_debug_log_off_a_terminal_and_quiet_silences_everything(repo, capsys):
    # The progress line is for terminals only (tests/cli/test_progress.py); a pipe or CI log
    # gets the per-family line with -v alone.
    code, _, err = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert "evaluating" not in err
    assert main(["-v", "diff", "--against", "HEAD"]) == 0
    assert "kvgen: [1/1] evaluating family toy\n" in capsys.readouterr().err
    assert main(["-q", "diff", "--against", "HEAD"]) == 0
    assert capsys.readouterr().err == ""


def test_profile_restricted_to_other_models_is_an_api_change(repo, capsys):
    # A second model, committed; then pard4 is restricted to toy_a (`models:`).
    second = TOY.split("speculative:")[0].split("models:\n")[1].replace("toy_a", "toy_b")
    edit("speculative:", second + "speculative:")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "toy_b")
    edit("    max_draft_len: 4\n", "    max_draft_len: 4\n    models: [toy_a]\n")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out.splitlines()[2] == (
        "toy/toy_b/pard4/*: api: profile no longer applies to the model (NOT ACKNOWLEDGED)"
    )
    assert summary(api=1, blocking=1, changed=1) in out
    # Lifting the restriction again is an addition, which never blocks.
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "restrict")
    edit("    models: [toy_a]\n", "    models: [toy_a, toy_b]\n")
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 0
    assert out.splitlines()[2] == "toy/toy_b/pard4/*: added: profile now applies to the model"


def test_spec_file_name_with_a_control_character_is_refused(repo, capsys):
    hostile = SPEC.parent / 'x\nimport os; os.system("touch PWNED")\n#.yaml'
    hostile.write_text(TOY.replace("family: toy", "family: other"))
    code, out, _ = diff(capsys, "--against", "HEAD")
    assert code == 1
    assert out.splitlines()[0] == (
        'schema/families/x\\nimport os; os.system("touch PWNED")\\n#.yaml:1:1: KV011 file name '
        "contains U+000A (fix: rename the file to printable characters, e.g. lowercase letters, "
        "digits and _)"
    )
    assert not Path("PWNED").exists()
