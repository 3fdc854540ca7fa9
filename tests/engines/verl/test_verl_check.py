"""`stare check-verl` and the entry point's plugin guard: verl's own loading steps, each failure named."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")

from stare_rl import list_methods  # noqa: E402
from stare_rl.engines.verl import check as C  # noqa: E402


def test_plugin_policy_follows_verls_rule() -> None:
    assert C.plugin_allowed("auto") and C.plugin_allowed(" AUTO ")
    assert not C.plugin_allowed("none")
    assert C.plugin_allowed("other, stare_rl") and not C.plugin_allowed("other")


@pytest.mark.slow  # a fresh Python process: seconds
def test_check_passes_on_this_install_and_lists_every_method() -> None:
    report = C.check_verl(fresh=True, exact=False)  # a fresh interpreter: `import verl` as a worker does it
    assert report.ok, report.format()
    assert report.worker_error is None and "worker start-up (fresh interpreter, apply_monkey_patch): ok" in report.format()
    assert report.entry_point == f"{C.ENTRY_POINT_NAME} = {C.ENTRY_POINT_VALUE}"
    assert report.registered == sorted(f"stare_rl.{m}" for m in list_methods()) == sorted(report.expected)
    assert report.versions["verl"].startswith("0.9") and "OK: verl will load stare-rl" in report.format()


@pytest.mark.slow  # a fresh Python process: seconds
def test_disabled_plugins_are_reported_with_the_missing_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(C.PLUGIN_POLICY_ENV, "none")  # verl then skips every plugin in the fresh interpreter
    report = C.check_verl(fresh=True, exact=False)
    assert not report.ok and report.registered == [] and report.missing == sorted(report.expected)
    text = report.format()
    assert "VERL_USE_EXTERNAL_PLUGINS='none' stops verl" in text and "registry lacks" in text


def test_import_error_is_shown_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    class BrokenEntryPoint:
        name, value = C.ENTRY_POINT_NAME, C.ENTRY_POINT_VALUE

        def load(self) -> None:
            raise ImportError("No module named 'missing_dependency'")

    monkeypatch.setattr(C, "_entry_point", lambda: BrokenEntryPoint())
    report = C.check_verl(fresh=False, exact=False)
    assert any("missing_dependency" in p and "DEBUG" in p for p in report.problems)


def test_entry_point_fails_loudly_without_the_installed_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m stare_rl.engines.verl.main` stops before Ray when verl's workers would not load stare-rl."""
    import stare_rl.engines.verl.main as vm

    monkeypatch.setattr(C, "_entry_point", lambda: None)  # e.g. a PYTHONPATH checkout: no package metadata
    monkeypatch.setattr(vm, "run_ppo", lambda *a, **k: pytest.fail("run_ppo must not be reached"))
    with pytest.raises(RuntimeError, match=r"no 'verl.plugins' entry point 'stare_rl'.*pip install"):
        vm._main(None)


def test_cli_check_verl(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from stare_rl.cli import main

    monkeypatch.setattr(C, "fresh_probe", lambda: C.FreshProbe([], "ImportError: boom", None))  # the fresh run is tested above
    assert main(["check-verl"]) == 1
    out, err = capsys.readouterr()
    assert "a fresh `import verl` failed: ImportError: boom" in out and "problem(s)" in err
    assert "check-verl" in (main(["--help"]) == 0 and capsys.readouterr().out)


@pytest.mark.slow  # a fresh Python process: seconds
def test_worker_start_up_fails_loudly_without_the_trl_shim(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl 0.9.1's apply_monkey_patch imports trl's removed value-head class (issue #23): without the plugin
    (hence without its shim) the real worker start-up fails with that ImportError and check-verl says so."""
    pytest.importorskip("trl")
    monkeypatch.setenv(C.PLUGIN_POLICY_ENV, "none")  # verl loads no plugin: exactly verl + trl, no stare-rl
    report = C.check_verl(fresh=True, exact=False)
    assert report.worker_error is not None and "AutoModelForCausalLMWithValueHead" in report.worker_error
    assert any("worker start-up" in p and "AutoModelForCausalLMWithValueHead" in p for p in report.problems)
    # with the plugin loaded (the default policy) the same start-up passes: test_check_passes_on_this_install
