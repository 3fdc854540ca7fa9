"""Built-in methods; importing this package registers them. One method, one file."""

from stare_rl.methods import vanilla  # noqa: F401
