"""Every string that came from a file is escaped in text reports and messages (issue 29, I1 and
I2): a deployment table's name, a shard name from a safetensors index, a value quoted in an
error. No ESC or other control character reaches the terminal or the CI log, and no line can
start a GitHub workflow command (``::error ...``).

On c2a37ec a deployment table named ``"a\\u001b[31m\\n::error file=a,line=1::pwned"`` printed
the escape and a second line ``::error file=a,line=1::pwned`` on stdout (and on stderr in its
errors), and so did a shard of that name listed by an index file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvgen._cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FORGED = "\u001b[31m\n::error file=a,line=1::pwned\r::warning::x\u2028##[error]y"
TOML_FORGED = "\\u001b[31m\\n::error file=a,line=1::pwned\\r::warning::x\\u2028##[error]y"


def clean(stream: str) -> list[str]:
    """What is wrong with an output stream: a control character, a workflow command."""
    wrong = [f"control {ch!r}" for ch in set(stream) if not (ch.isprintable() or ch == "\n")]
    for line in stream.splitlines():
        if line.lstrip().startswith("::") or "##[" in line:
            wrong.append(f"command line {line!r}")
    return wrong


def run(tmp_path: Path, capsys, text: str, *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "deploy.toml"
    path.write_text(text, encoding="utf-8")
    code = main(["-q", "plan", "--deployment", str(path), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def node(name: str, extra: str = "") -> str:
    return (
        'gpu = "H100-80GB"\ngpus = 8\n\n'
        f'[models."{name}"]\nfamily = "llama3"\nmodel = "llama3_1_8b"\nengine = "vllm"\n'
        f'gpu_memory = "40GiB"\n{extra}'
    )


def test_a_deployment_table_name_is_escaped_in_the_report(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, node(f"a{TOML_FORGED}"))
    assert code == 0, err
    assert clean(out) == [] and clean(err) == []
    # One row, the name as its escapes: \x1b and \n shown, the command neutralised.
    row = [line for line in out.splitlines() if "vllm" in line and "40 GiB" in line]
    assert len(row) == 1 and row[0].startswith("  a\\x1b[31m\\n::error file=a,line=1::pwned")
    assert "[a\\x1b[31m\\n::error" in out  # the model's own section


@pytest.mark.parametrize(
    ("extra", "what"),
    [
        ('weights = "nope"\n', "--weights nope"),  # an error quoting the table's name
        ('max_seq_len = "long"\n', "max_seq_len must be an integer"),
        ('"tp\\u001b\\n::error::x" = 1\n', "unknown key"),
        ('speculative = "x\\u001b\\n::error::y"\n', "speculative"),
    ],
)
def test_errors_quoting_a_file_are_escaped(tmp_path, capsys, extra, what):
    text = node(f"b{TOML_FORGED}", extra)
    if "weights" in extra:  # the hardware arithmetic, which reads the weights
        text = text.replace('gpu_memory = "40GiB"\n', "")
    code, out, err = run(tmp_path, capsys, text)
    assert code == 2 and out == ""
    assert what in err, err
    assert clean(err) == [], err
    assert err.count("\n") == 1  # one message, one line


def test_a_shard_name_from_an_index_is_escaped(tmp_path, capsys):
    weights = tmp_path / "w"
    weights.mkdir()
    index = {"weight_map": {"x": f"s{FORGED}.safetensors"}}
    (weights / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    generated = str(ROOT / "generated")
    code = main(["-q", "plan", "llama3", "llama3_1_8b", "--gpu", "H100-80GB", "--weights",
                 str(weights), "--emit", "vllm", "--generated", generated])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "pwned" in err and clean(err) == [], err


def test_a_log_message_quoting_untrusted_text_is_escaped(capsys):
    import logging

    from kvgen._cli.main import _install_log_format

    _install_log_format(logging.INFO)
    logging.getLogger("kvgen").warning("x from a ref: %s", FORGED)
    err = capsys.readouterr().err
    assert "pwned" in err and clean(err) == [], err
