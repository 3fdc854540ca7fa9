"""Evaluation protocols: which datasets, how many samples each, and the sampling settings, as one YAML file.

The packaged protocols (``stare_rl/recipes/eval/<name>.yaml``) are the papers' own: STARE and STEER report
avg@32 at temperature 1.0 / top_p 0.7 on AIME24, AIME25 and AMC23 and avg@4 on MATH-500, MinervaMath and
OlympiadBench (STEER adds GSM8K and OmniMath). ``stare eval --protocol NAME|FILE --data-dir DIR`` runs one.

Schema::

    name: stare
    temperature: 1.0            # > 0
    top_p: 0.7                  # in (0, 1]
    max_new_tokens: 3072        # >= 1
    reward: math                # math (last \\boxed{}, math-verify; the papers') | number (the final number)
    datasets:                   # one table row each
      - {name: aime24, file: aime24.parquet, samples: 32, pass_k: [1, 8, 32], maj_k: [32]}

``file`` is relative to the data directory unless absolute (``task:<name>``: an embedded task's test split); ``pass_k`` defaults to ``[samples]`` and
``maj_k`` to ``[]``; every k must be in [1, samples].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

PROTOCOL_DIR = "recipes/eval"
PROTOCOL_REWARDS = ("math", "number")
TASK_PREFIX = "task:"  # file: task:<name> = that embedded task's whole test split (no file needed)


@dataclass(frozen=True)
class EvalDataset:
    """One benchmark of a protocol."""

    name: str = field(metadata={"help": "Row label in the tables and key in the JSON."})
    file: str = field(metadata={"help": "Dataset file, relative to the data directory unless absolute."})
    samples: int = field(metadata={"help": "Sampled completions per prompt: the n of avg@n (paper: 32 or 4)."})
    pass_k: tuple[int, ...] = field(default=(), metadata={"help": "k of each pass@k (default: samples)."})
    maj_k: tuple[int, ...] = field(default=(), metadata={"help": "k of each maj@k (default: none)."})

    def __post_init__(self) -> None:
        where = f"dataset {self.name!r}"
        if not isinstance(self.samples, int) or self.samples < 1:
            raise ValueError(f"{where}: samples={self.samples!r} must be an integer >= 1")
        object.__setattr__(self, "pass_k", tuple(self.pass_k) or (self.samples,))
        object.__setattr__(self, "maj_k", tuple(self.maj_k))
        for key in ("pass_k", "maj_k"):
            bad = [k for k in getattr(self, key) if not isinstance(k, int) or not 1 <= k <= self.samples]
            if bad:
                raise ValueError(f"{where}: {key}={list(getattr(self, key))} has {bad}; each k must be an "
                                 f"integer in [1, samples={self.samples}]")


@dataclass(frozen=True)
class EvalProtocol:
    """Sampling settings shared by all datasets, and the datasets."""

    name: str
    datasets: tuple[EvalDataset, ...]
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (papers: 1.0)."})
    top_p: float = field(default=0.7, metadata={"help": "Nucleus top_p (papers: 0.7)."})
    max_new_tokens: int = field(default=3072, metadata={"help": "Generation budget (papers: response 3072)."})
    reward: str = field(default="math", metadata={
        "help": "math: math-verify on the last \\boxed{} (the papers'); number: the final number written (chat "
                "models that do not box their answers)."})

    def __post_init__(self) -> None:
        if self.reward not in PROTOCOL_REWARDS:
            raise ValueError(f"reward={self.reward!r} must be one of {list(PROTOCOL_REWARDS)}")
        if not (isinstance(self.temperature, int | float) and math.isfinite(self.temperature)
                and self.temperature > 0):
            raise ValueError(f"temperature={self.temperature!r} must be a finite value > 0")
        if not (isinstance(self.top_p, int | float) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p={self.top_p!r} must be in (0, 1]")
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={self.max_new_tokens!r} must be an integer >= 1")
        if not self.datasets:
            raise ValueError("datasets is empty: a protocol needs at least one dataset")
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError(f"datasets: names must be unique; got {names}")

    def path_of(self, dataset: EvalDataset, data_dir: str | Path | None) -> Path:
        """The dataset file: absolute as given, else under ``data_dir`` (not for ``task:<name>``)."""
        path = Path(dataset.file).expanduser()
        if path.is_absolute():
            return path
        if data_dir is None:
            raise ValueError(f"dataset {dataset.name!r}: file={dataset.file!r} is relative; pass --data-dir")
        return Path(data_dir).expanduser() / path


def packaged_protocols() -> list[str]:
    """Names of the protocols shipped in ``stare_rl/recipes/eval``."""
    root = resources.files("stare_rl") / PROTOCOL_DIR
    return sorted(p.name.removesuffix(".yaml") for p in root.iterdir() if p.name.endswith(".yaml"))


def load_protocol(spec: str | Path) -> EvalProtocol:
    """A packaged protocol by name (``stare``, ``steer``) or a YAML file; ValueError naming the bad field."""
    import yaml

    path = Path(spec).expanduser()
    if not path.is_file():
        if str(spec) not in packaged_protocols():
            raise ValueError(f"protocol={str(spec)!r} is neither a file nor one of {packaged_protocols()}")
        path = Path(str(resources.files("stare_rl") / PROTOCOL_DIR / f"{spec}.yaml"))
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"protocol {str(path)!r}: expected a mapping at the top level")
    return protocol_from_dict(raw, default_name=path.stem)


def protocol_from_dict(raw: dict[str, Any], default_name: str = "custom") -> EvalProtocol:
    """Build and validate a protocol from a plain mapping (unknown keys rejected)."""
    known = {"name", "temperature", "top_p", "max_new_tokens", "datasets", "reward"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"protocol: unknown keys {unknown}; allowed: {sorted(known)}")
    entries = raw.get("datasets") or []
    if not isinstance(entries, list):
        raise ValueError(f"datasets={entries!r} must be a list of mappings")
    datasets = []
    for i, entry in enumerate(entries):
        allowed = {"name", "file", "samples", "pass_k", "maj_k"}
        if not isinstance(entry, dict) or not {"name", "file", "samples"} <= set(entry) or set(entry) - allowed:
            raise ValueError(f"datasets[{i}]={entry!r} must be a mapping with name, file, samples "
                             "(optional pass_k, maj_k) and nothing else")
        datasets.append(EvalDataset(**{**entry, "pass_k": tuple(entry.get("pass_k", ())),
                                       "maj_k": tuple(entry.get("maj_k", ()))}))
    rest = {k: raw[k] for k in ("temperature", "top_p", "max_new_tokens", "reward") if k in raw}
    return EvalProtocol(name=str(raw.get("name", default_name)), datasets=tuple(datasets), **rest)
