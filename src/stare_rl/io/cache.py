"""Where stare-rl caches what it builds once and reuses (the warm-started tiny models): one resolution rule.

Order, first that is set (a non-empty value) wins::

    1. an explicit directory (``stare train --cache_dir``, ``stare probe --cache-dir``, a config's ``cache_dir``)
    2. $STARE_RL_CACHE                    the directory itself
    3. $XDG_CACHE_HOME/stare-rl           the XDG base-directory rule (only an absolute path counts, as the spec says)
    4. ~/.cache/stare-rl

``~`` is expanded in every form. Imports nothing else of stare_rl.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CACHE_ENV = "STARE_RL_CACHE"
CACHE_SUBDIR = "stare-rl"


def cache_dir(explicit: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The cache directory by the rule above (not created here).

    Args:
        explicit: a directory the user named (wins when given and non-empty).
        env: the environment to read (default ``os.environ``).
    """
    env = os.environ if env is None else env
    if explicit is not None and str(explicit):
        return Path(explicit).expanduser()
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).expanduser().is_absolute():
        return Path(xdg).expanduser() / CACHE_SUBDIR
    return Path("~/.cache").expanduser() / CACHE_SUBDIR


__all__ = ["CACHE_ENV", "CACHE_SUBDIR", "cache_dir"]
