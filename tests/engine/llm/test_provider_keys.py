"""A LiteLLM model whose provider key is not set is refused before LiteLLM is imported.

Importing LiteLLM takes seconds (5-8 s on a loaded machine); `semfora ask --model openai/gpt-4o`
without OPENAI_API_KEY used to pay that, build the pack, send nothing and only then say MODEL_AUTH.
The table of provider keys is checked against the installed LiteLLM's own ``validate_environment``.
"""

from __future__ import annotations

import pytest

from engine.config import load_settings
from engine.llm.base import ModelUnavailable
from engine.llm.select import PROVIDER_KEYS, describe_model_status, make_reasoner, missing_provider_key
from tests.conftest import run_fresh_python


def _model(prefix: str) -> str:
    return "gpt-4o" if prefix == "gpt-" else f"{prefix}some-model"


@pytest.mark.parametrize("prefix", sorted(PROVIDER_KEYS))
def test_the_key_table_agrees_with_litellm(prefix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.llm.litellm_reasoner import import_litellm

    litellm = import_litellm()
    names = PROVIDER_KEYS[prefix]
    for name in names:
        monkeypatch.delenv(name, raising=False)
    unset = litellm.validate_environment(model=_model(prefix))
    assert not unset["keys_in_environment"] and set(names) <= set(unset["missing_keys"])
    for name in names:  # any one of them is enough, for LiteLLM as for the table
        monkeypatch.setenv(name, "test-key")
        assert litellm.validate_environment(model=_model(prefix))["keys_in_environment"]
        assert missing_provider_key(_model(prefix), {name: "test-key"}) == ()
        monkeypatch.delenv(name)


def test_a_missing_provider_key_is_model_auth_without_importing_litellm(tmp_path) -> None:
    code = (
        "import json, sys\n"
        "from engine.config import load_settings\n"
        "from engine.llm.select import make_reasoner\n"
        "from engine.llm.base import ModelUnavailable\n"
        "try:\n"
        "    make_reasoner(load_settings(sys.argv[1]).settings, 'openai/gpt-4o', environ={'OPENAI_API_KEY': ' '})\n"
        "    out = {'raised': None}\n"
        "except ModelUnavailable as exc:\n"
        "    out = {'raised': exc.code, 'message': str(exc)}\n"
        "out['litellm'] = 'litellm' in sys.modules\n"
        "print(json.dumps(out))\n"
    )
    out = run_fresh_python(code, str(tmp_path), cache=tmp_path / "cache")
    assert out["raised"] == "MODEL_AUTH" and "set OPENAI_API_KEY" in out["message"]
    assert out["litellm"] is False


def test_a_set_key_and_unknown_providers_go_on_to_litellm(tmp_path) -> None:
    settings = load_settings(tmp_path).settings
    reasoner = make_reasoner(settings, "openai/gpt-4o", environ={"OPENAI_API_KEY": "sk-test"})
    assert "gpt-4o" in repr(reasoner)
    assert missing_provider_key("bedrock/some-model", {}) == ()  # not in the table: LiteLLM decides
    with pytest.raises(ModelUnavailable) as info:
        make_reasoner(settings, "gemini/gemini-1.5-pro", environ={})
    assert "set GEMINI_API_KEY or GOOGLE_API_KEY" in str(info.value)
    status = describe_model_status(settings, "mistral/mistral-large-latest", environ={})
    assert status == "mistral/mistral-large-latest is configured but MISTRAL_API_KEY is not set"
