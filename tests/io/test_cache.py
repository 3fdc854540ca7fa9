"""The cache directory rule (``stare_rl.io.cache``): explicit > $STARE_RL_CACHE > $XDG_CACHE_HOME/stare-rl >
~/.cache/stare-rl; the end-to-end check through ``stare train`` is in tests/train/test_train_cli.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stare_rl.io.cache import CACHE_ENV, cache_dir

HOME = Path("~").expanduser()


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        (None, {}, HOME / ".cache" / "stare-rl"),
        (None, {"XDG_CACHE_HOME": "/x/cache"}, Path("/x/cache/stare-rl")),
        (None, {"XDG_CACHE_HOME": ""}, HOME / ".cache" / "stare-rl"),  # empty = unset
        (None, {"XDG_CACHE_HOME": "relative/cache"}, HOME / ".cache" / "stare-rl"),  # XDG: relative is ignored
        (None, {CACHE_ENV: "/s/rl", "XDG_CACHE_HOME": "/x/cache"}, Path("/s/rl")),  # the override wins over XDG
        (None, {CACHE_ENV: "~/mine"}, HOME / "mine"),
        (None, {CACHE_ENV: "", "XDG_CACHE_HOME": "/x/cache"}, Path("/x/cache/stare-rl")),
        ("/given", {CACHE_ENV: "/s/rl", "XDG_CACHE_HOME": "/x/cache"}, Path("/given")),  # --cache_dir wins
        ("~/given", {}, HOME / "given"),
        ("", {CACHE_ENV: "/s/rl"}, Path("/s/rl")),  # an empty explicit value counts as not given
    ],
)
def test_resolution_order(explicit: str | None, env: dict[str, str], expected: Path) -> None:
    assert cache_dir(explicit, env) == expected


def test_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "stare-rl"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "override"))
    assert cache_dir() == tmp_path / "override"
    assert not (tmp_path / "override").exists()  # resolving creates nothing
    assert os.environ[CACHE_ENV] == str(tmp_path / "override")
