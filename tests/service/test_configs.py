"""Each layer's frozen config comes from the settings by name; tenant overrides merge as data."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from majlis.engine import EngineConfig
from majlis.requests import Limits
from service.app import build_tenant, model_config
from service.server import ServerOptions
from service.settings import Settings, TenantSettings


def test_every_config_field_with_a_setting_is_read_from_it() -> None:
    s = Settings(max_text_chars=900, max_token_chars=50, concurrency_policy="enqueue",
                 enqueue_wait_s=3.0, default_turn_timeout_s=9.0, default_timezone="Asia/Riyadh",
                 request_replay_window_s=60.0, reflection=False, max_message_bytes=8192,
                 keepalive_time_s=11, drain_grace_s=1.5, queued_while_starting=False)
    assert EngineConfig.from_settings(s) == EngineConfig(
        limits=Limits(max_text_chars=900, max_token_chars=50), policy="enqueue",
        enqueue_wait_s=3.0, turn_timeout_s=9.0, default_timezone="Asia/Riyadh",
        replay_window_s=60.0, queued_while_starting=False)
    options = ServerOptions.from_settings(s, listen="127.0.0.1:7", reuse_port=True)
    assert (options.listen, options.reflection, options.max_message_bytes,
            options.keepalive_time_s, options.drain_grace_s, options.reuse_port) == (
        "127.0.0.1:7", False, 8192, 11, 1.5, True)


@pytest.mark.parametrize("config", [Limits, EngineConfig, ServerOptions])
def test_no_config_field_is_left_at_its_default_by_a_missing_setting(config: type) -> None:
    """A renamed setting would silently stop being read; every field maps to one."""
    names = set(Settings.model_fields)
    # tls and interceptors are built by the composition root from several settings.
    renamed = {"policy", "turn_timeout_s", "replay_window_s", "limits", "reuse_port",
               "tls", "interceptors"}
    missing = {f.name for f in dataclasses.fields(config)} - names - renamed
    assert missing == set()


def test_configs_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        EngineConfig.from_settings(Settings()).turn_timeout_s = 1  # type: ignore[misc]


def test_a_tenant_sets_only_what_it_names() -> None:
    s = Settings(persona_name="ديوانية", greeting_style="brief", country_offsets={"KW": 1},
                 national_days={"KW": [(2, 25, "اليوم الوطني")]}, model_name="base-model",
                 model_base_url="http://127.0.0.1:9/v1", model_price_prompt_per_1k=0.5)
    t = s.for_tenant(TenantSettings(persona_name="نورة", country_offsets={"SA": -1},
                                    national_days={"SA": [(9, 23, "اليوم الوطني")]},
                                    model_name="acme-model"))
    assert (t.persona_name, t.greeting_style, t.model_name) == ("نورة", "brief", "acme-model")
    assert t.country_offsets == {"KW": 1, "SA": -1}
    assert set(t.national_days) == {"KW", "SA"}
    assert s.persona_name == "ديوانية"  # the service-wide settings are untouched
    config = model_config(s, TenantSettings(model_name="acme-model"))
    assert config is not None
    assert (config.model, config.price_prompt_per_1k) == ("acme-model", 0.5)


def test_a_tenant_with_its_own_webhook_never_gets_the_services_credentials() -> None:
    s = Settings(handoff_webhook_url="https://ops.example/handoff",
                 handoff_webhook_auth_header="Authorization",
                 handoff_webhook_secret_env="OPS_SECRET", handoff_webhook_timeout_s=7)
    own = s.for_tenant(TenantSettings(handoff_webhook_url="https://acme.example/hook"))
    assert (own.handoff_webhook_url, own.handoff_webhook_auth_header,
            own.handoff_webhook_secret_env, own.handoff_webhook_timeout_s) == (
        "https://acme.example/hook", None, None, 7)
    inherited = s.for_tenant(TenantSettings(persona_name="نورة"))
    assert inherited.handoff_webhook_secret_env == "OPS_SECRET"


async def test_build_tenant_uses_the_merged_voice() -> None:
    s = Settings(greeting_style="brief", religious_greetings=True)
    async with httpx.AsyncClient() as http:
        tenant = build_tenant(s, TenantSettings(persona_name="نورة", register_policy="msa"),
                              http=http, webhooks=[])
    assert (tenant.profile.persona_name, tenant.profile.register_policy,
            tenant.profile.greeting_style, tenant.profile.religious_greetings) == (
        "نورة", "msa", "brief", True)
