"""Configuration precedence: defaults < user file < repository file < environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import load_settings, save_user_setting, user_config_path
from engine.errors import ConfigError
from tests.conftest import run_semfora


def test_precedence_and_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = user_config_path()
    user.parent.mkdir(parents=True)
    user.write_text('[budget]\ncontext_tokens = 6000\n[ui]\ntheme = "semfora-light"\n')
    (tmp_path / ".semfora.toml").write_text("[budget]\ncontext_tokens = 7000\n")
    loaded = load_settings(tmp_path)
    assert loaded.settings.budget.context_tokens == 7000
    assert loaded.source_of("budget.context_tokens").endswith(".semfora.toml")
    assert loaded.settings.ui.theme == "semfora-light"
    monkeypatch.setenv("SEMFORA_BUDGET", "5000")
    monkeypatch.setenv("SEMFORA_MODEL", "ollama/qwen2.5-coder:7b")
    loaded = load_settings(tmp_path)
    assert loaded.settings.budget.context_tokens == 5000
    assert loaded.settings.llm.model == "ollama/qwen2.5-coder:7b"
    assert loaded.source_of("budget.context_tokens") == "env"


def test_invalid_values_name_the_key_and_origin(tmp_path: Path) -> None:
    (tmp_path / ".semfora.toml").write_text("[budget]\ncontext_tokens = -3\n")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert "budget.context_tokens" in info.value.message
    assert ".semfora.toml" in info.value.message
    (tmp_path / ".semfora.toml").write_text("[budget\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings(tmp_path)


def test_save_user_setting_round_trips() -> None:
    save_user_setting("ui.theme", "semfora-contrast")
    save_user_setting("budget.context_tokens", 9000)
    loaded = load_settings(None)
    assert loaded.settings.ui.theme == "semfora-contrast"
    assert loaded.settings.budget.context_tokens == 9000


def test_config_command_shows_sources(tmp_path: Path) -> None:
    (tmp_path / ".semfora.toml").write_text("[budget]\ncontext_tokens = 7000\n")
    out = run_semfora("config", "--path", str(tmp_path), env={"SEMFORA_MODEL": "claude-haiku-4-5"})
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines()}
    assert "7000" in lines["budget.context_tokens"] and ".semfora.toml" in lines["budget.context_tokens"]
    assert "claude-haiku-4-5" in lines["llm.model"] and "[env]" in lines["llm.model"]
    bad = run_semfora("config", "--path", str(tmp_path / "missing"))
    assert bad.returncode == 2
    assert bad.stderr.startswith("error[PATH_NOT_FOUND]")


def test_configuration_doc_matches_the_model() -> None:
    from engine.config import iter_keys, render_configuration_doc
    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert doc == render_configuration_doc(), "regenerate: python -m engine.config > docs/configuration.md"
    for dotted, _default, description in iter_keys():
        assert description, f"{dotted} has no description"
        assert f"`{dotted}`" in doc


def test_a_section_written_as_a_value_is_a_config_error_not_a_traceback(tmp_path: Path) -> None:
    # `llm = "x"` in config.toml with SEMFORA_MODEL set crashed every command with a TypeError.
    user = user_config_path()
    user.parent.mkdir(parents=True)
    user.write_text('llm = "claude-haiku-4-5"\n')
    out = run_semfora("config", "--path", str(tmp_path), env={"SEMFORA_MODEL": "claude-haiku-4-5"})
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("error[CONFIG_INVALID]: llm: must be a table of settings ([llm])")
    assert str(user) in out.stderr
    user.write_text('[llm]\nmodel = "claude-haiku-4-5"\n')
    out = run_semfora("config", "--path", str(tmp_path), env={"SEMFORA_LLM__MODEL__NAME": "x"})
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "llm.model.name: unknown setting" in out.stderr and "SEMFORA_LLM__MODEL__NAME" in out.stderr


def test_an_unknown_key_is_named_with_the_nearest_real_one(tmp_path: Path) -> None:
    # pydantic's "Extra inputs are not permitted" told nobody that `modle` was a typo.
    (tmp_path / ".semfora.toml").write_text('[llm]\nmodle = "claude-haiku-4-5"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert info.value.message == (
        f"llm.modle: unknown setting (did you mean llm.model?) (from {tmp_path / '.semfora.toml'})"
    )
    (tmp_path / ".semfora.toml").write_text("[searhc]\nrerank = true\n")
    with pytest.raises(ConfigError, match=r"searhc: unknown section \(did you mean search\?\)"):
        load_settings(tmp_path)
    with pytest.raises(ConfigError, match=r"budget.context: .*\(from SEMFORA_BUDGET__CONTEXT\)"):
        load_settings(None, environ={"SEMFORA_BUDGET__CONTEXT": "9000"})


def test_a_bad_price_names_the_file_that_set_it(tmp_path: Path) -> None:
    (tmp_path / ".semfora.toml").write_text('[llm.prices."my-model"]\ninput = "cheap"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert info.value.message.startswith("llm.prices.my-model.input: Input should be a valid number")
    assert info.value.message.endswith(f"(from {tmp_path / '.semfora.toml'})")


def test_environment_variables_set_list_keys_and_empty_ones_are_unset() -> None:
    # docs/configuration.md: SEMFORA_<SECTION>__<KEY> sets any key; a list key was refused.
    loaded = load_settings(None, environ={"SEMFORA_INDEX__EXCLUDE_DIRS": "node_modules, generated"})
    assert loaded.settings.index.exclude_dirs == ["node_modules", "generated"]
    loaded = load_settings(None, environ={"SEMFORA_EDITS__DENY": '[".env", "*.pem", "local.cfg"]'})
    assert loaded.settings.edits.deny == [".env", "*.pem", "local.cfg"]
    # SEMFORA_MODEL= is unset; SEMFORA_LLM__MODEL= made the model "" ("no model configured").
    loaded = load_settings(None, environ={"SEMFORA_LLM__MODEL": "", "SEMFORA_MODEL": ""})
    assert loaded.settings.llm.model == "claude-sonnet-4-6"
    assert loaded.source_of("llm.model") == "default"
