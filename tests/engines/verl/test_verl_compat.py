"""The trl value-head shim (:mod:`stare_rl.engines.verl.compat`): verl 0.9.1's start-up import, answered only
where trl lacks it, with real verl and trl (the fresh-interpreter start-up is in test_verl_check.py)."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys

import pytest

pytest.importorskip("verl")
trl = pytest.importorskip("trl")

from stare_rl.engines.verl import compat  # noqa: E402


@pytest.fixture
def no_shim() -> None:
    compat.uninstall()
    yield
    compat.install()  # the plugin installs it on `import verl`: leave the process as it was


def _trl_has_value_head() -> bool:
    try:
        importlib.import_module(compat.SHIMMED_MODULE)
    except ImportError:
        return hasattr(trl, compat.CLASS_NAME)
    return True


def test_verl_import_fails_without_the_shim_and_resolves_with_it(no_shim: None) -> None:
    if _trl_has_value_head():
        pytest.skip("this trl still ships the value-head class: nothing to shim")
    with pytest.raises(ImportError):  # verl's fallback, as in monkey_patch.py
        exec("from trl import AutoModelForCausalLMWithValueHead", {})
    compat.install()
    namespace: dict = {}
    exec("from trl.experimental.ppo import AutoModelForCausalLMWithValueHead", namespace)
    cls = namespace[compat.CLASS_NAME]
    assert cls is compat.AutoModelForCausalLMWithValueHead
    cls.state_dict = lambda self: {}  # what verl does with it: harmless, the class is ours
    with pytest.raises(RuntimeError, match="ForTokenClassification critic"):  # verl's value-model fallback
        cls.from_pretrained("any/path")


def test_shim_is_last_and_installed_once() -> None:
    compat.install()
    compat.install()
    finders = [f for f in sys.meta_path if isinstance(f, compat.TrlValueHeadFinder)]
    assert len(finders) == 1  # after Python's own finders: a trl that has the module wins
    assert sys.meta_path.index(finders[0]) > sys.meta_path.index(importlib.machinery.PathFinder)
    assert finders[0].find_spec("trl.experimental.gkd") is None  # only the one name


def test_real_apply_monkey_patch_runs_with_the_shim() -> None:
    """verl's real worker-side patch on a tiny model, in this process (the plugin installed the shim)."""
    import verl  # noqa: F401  (loads the plugin)
    from transformers import LlamaConfig, LlamaForCausalLM
    from verl.models.transformers.monkey_patch import apply_monkey_patch

    model = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1))
    apply_monkey_patch(model=model, use_remove_padding=True, ulysses_sp_size=1)
    assert any(isinstance(f, compat.TrlValueHeadFinder) for f in sys.meta_path)
