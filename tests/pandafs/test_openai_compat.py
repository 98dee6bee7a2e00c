"""The OpenAI-compatible backend against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest
from pydantic import BaseModel

from pandafs.config import LLMConfig, RoleConfig
from pandafs.errors import PandaError
from pandafs.llm.errors import LLMError, LLMOutputError, LLMRejected, LLMTimeout, LLMUnavailable
from pandafs.llm.openai_compat import OpenAIBackend
from pandafs.llm.usage import Usage
from tests.support.openai_stub import OpenAIStub, StubReply


class Laptop(BaseModel):
    name: str
    price: int


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def make_config(base_url: str, **overrides: object) -> LLMConfig:
    settings: dict[str, object] = {
        "backend": "openai",
        "base_url": base_url,
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_s": 0.01,
    }
    settings.update(overrides)
    return LLMConfig.model_validate(settings)


@pytest.fixture
def llm(stub: OpenAIStub) -> Iterator[OpenAIBackend]:
    with closing(OpenAIBackend(make_config(stub.base_url), api_key="")) as client:
        yield client


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_chat_returns_content_and_reported_usage(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script("Hamsters sleep by day.")
    text, _, usage = llm.complete("voice", [{"role": "user", "content": "tell me about hamsters"}])
    assert text == "Hamsters sleep by day."
    assert usage == Usage(tokens_in=5, tokens_out=5, calls=1)  # the stub's own counts
    assert len(stub.requests) == 1
    assert "response_format" not in stub.requests[0]
    assert stub.requests[0]["messages"] == [{"role": "user", "content": "tell me about hamsters"}]


def test_usage_is_estimated_when_the_server_reports_none(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    completion = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "a" * 40}}],
    }
    stub.script(StubReply(body=json.dumps(completion).encode()))
    text, _, usage = llm.complete("mind", [{"role": "user", "content": "b" * 80}])
    assert text == "a" * 40
    assert usage == Usage(tokens_in=20, tokens_out=10, calls=1)


def test_usage_adds_up() -> None:
    assert Usage(1, 2, 1) + Usage(10, 20, 1) == Usage(11, 22, 2)


def test_role_picks_model_and_temperature(stub: OpenAIStub) -> None:
    roles = {
        "reflex": RoleConfig(temperature=0.3),
        "mind": RoleConfig(model="big-model", temperature=0.5),
        "voice": RoleConfig(temperature=0.7),
    }
    config = make_config(stub.base_url, model="small-model", roles=roles)
    with closing(OpenAIBackend(config, api_key="secret")) as llm:
        for role in ("reflex", "mind", "voice"):
            llm.complete(role, [{"role": "user", "content": "hi"}])
        with pytest.raises(LLMError, match=r"add \[llm\.roles\.critic\] to pandafs\.toml"):
            llm.complete("critic", [{"role": "user", "content": "hi"}])
    sent = [(r["model"], r["temperature"]) for r in stub.requests]
    assert sent == [("small-model", 0.3), ("big-model", 0.5), ("small-model", 0.7)]
    assert stub.request_headers[0]["authorization"] == "Bearer secret"


def test_api_key_comes_from_the_configured_env_var(stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PANDAFS_TEST_KEY", "from-env")
    config = make_config(stub.base_url, api_key_env="PANDAFS_TEST_KEY")
    with closing(OpenAIBackend(config)) as llm:
        llm.complete("mind", [{"role": "user", "content": "hi"}])
    assert stub.request_headers[0]["authorization"] == "Bearer from-env"


def test_structured_output_is_validated(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script('{"name": "ThinkPad X1", "price": 1500}')
    laptop, usage = llm.structured("mind", "You pick laptops.", "a light one", Laptop)
    assert laptop == Laptop(name="ThinkPad X1", price=1500)
    assert usage.calls == 1
    request = stub.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"]["required"] == ["name", "price"]
    system = request["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You pick laptops.")
    assert json.dumps(Laptop.model_json_schema()) in system["content"]
    assert request["messages"][1] == {"role": "user", "content": "a light one"}


def test_a_server_refusing_json_schema_is_asked_with_json_object_once_and_says_so(
    stub: OpenAIStub, llm: OpenAIBackend, caplog: pytest.LogCaptureFixture
) -> None:
    refusal = StubReply(status=400, content="response_format json_schema is not supported")
    stub.script(refusal, '{"name": "X1", "price": 1500}', '{"name": "X2", "price": 900}')
    laptop, _ = llm.structured("mind", "You pick laptops.", "a light one", Laptop)
    again, _ = llm.structured("mind", "You pick laptops.", "a cheap one", Laptop)
    assert (laptop.name, again.name) == ("X1", "X2")
    kinds = [r.get("response_format", {}).get("type") for r in stub.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]  # lowered once, then kept
    said = [r.getMessage() for r in caplog.records if "refused json_schema output" in r.getMessage()]
    assert len(said) == 1 and 'structured_output = "json_object"' in said[0]  # said once, on stderr


def test_a_500_naming_response_format_is_a_refusal_not_a_transient_failure(
    stub: OpenAIStub, llm: OpenAIBackend
) -> None:
    # llama-cpp-python's server validates the request body and answers json_schema with a 500
    detail = "1 validation error: ('body', 'response_format', 'type') Input should be 'text' or 'json_object'"
    stub.script(StubReply(status=500, content=detail), '{"name": "X1", "price": 1500}')
    laptop, _ = llm.structured("mind", "You pick laptops.", "a light one", Laptop)
    assert laptop.name == "X1" and len(stub.requests) == 2  # no retry of the refused format
    assert llm.structured_output == "json_object"


def test_a_server_refusing_json_object_too_gets_the_prompt_alone(
    stub: OpenAIStub, llm: OpenAIBackend
) -> None:
    stub.script(
        StubReply(status=400, content="unsupported response_format"),
        StubReply(status=422, content="json_object: unknown response_format type"),
        '{"name": "X1", "price": 1500}',
    )
    laptop, _ = llm.structured("mind", "You pick laptops.", "a light one", Laptop)
    assert laptop.name == "X1"
    assert [r.get("response_format", {}).get("type") for r in stub.requests] == [
        "json_schema",
        "json_object",
        None,
    ]
    assert llm.structured_output == "none"


def test_a_refusal_that_is_not_about_the_format_names_the_setting_to_fix(stub: OpenAIStub) -> None:
    with closing(OpenAIBackend(make_config(stub.base_url, structured_output="none"), api_key="")) as client:
        stub.script(StubReply(status=400, content="model 'x' not found"))
        with pytest.raises(LLMRejected) as caught:
            client.structured("mind", "You pick laptops.", "a light one", Laptop)
    assert "check [llm] model" in str(caught.value) and len(stub.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"name": "X1", "price": 1500}\n```',
        'Sure! Here it is:\n```\n{"name": "X1", "price": 1500}\n```\nAnything else?',
        'The answer is {"name": "X1", "price": 1500} as requested.',
        '<think>maybe {"name": "wrong"}</think>\n{"name": "X1", "price": 1500}',
    ],
    ids=["json-fence", "bare-fence-with-prose", "inline-prose", "think-block"],
)
def test_structured_output_tolerates_fences_and_prose(
    stub: OpenAIStub, llm: OpenAIBackend, reply: str
) -> None:
    stub.script(reply)
    laptop, _ = llm.structured("mind", "You pick laptops.", "one", Laptop)
    assert laptop == Laptop(name="X1", price=1500)
    assert len(stub.requests) == 1


def test_invalid_json_gets_one_corrective_retry(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script('{"name": "X1"}', '{"name": "X1", "price": 1500}')
    laptop, usage = llm.structured("reflex", "You pick laptops.", "one", Laptop)
    assert laptop == Laptop(name="X1", price=1500)
    assert usage.calls == 2
    assert len(stub.requests) == 2
    retry = stub.requests[1]["messages"]
    assert retry[:2] == stub.requests[0]["messages"]
    assert retry[2] == {"role": "assistant", "content": '{"name": "X1"}'}
    assert retry[3]["role"] == "user"
    assert "price: Field required" in retry[3]["content"]
    assert "corrected JSON" in retry[3]["content"]


def test_invalid_json_twice_is_an_output_error(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script("I think you want the X1.", '{"name": "X1", "price": "cheap"}')
    with pytest.raises(LLMOutputError) as caught:
        llm.structured("mind", "You pick laptops.", "one", Laptop)
    error = caught.value
    assert "no JSON object found" in stub.requests[1]["messages"][3]["content"]
    assert error.raw == '{"name": "X1", "price": "cheap"}'
    assert error.validation.startswith("price: Input should be a valid integer")
    assert error.usage is not None and error.usage.calls == 2
    assert isinstance(error, LLMError) and isinstance(error, PandaError)
    message = str(error)
    assert "model 'qwen3' (mind) did not return valid JSON for Laptop" in message
    assert "[llm.roles.mind]" in message
    assert "\n" not in message
    assert len(stub.requests) == 2


def test_server_error_is_retried(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script(StubReply(status=500, content="CUDA out of memory"), "recovered")
    text, _, usage = llm.complete("mind", [{"role": "user", "content": "hi"}])
    assert text == "recovered"
    assert usage.calls == 1
    assert len(stub.requests) == 2


def test_server_errors_until_retries_run_out(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script(*[StubReply(status=503, content="model is loading")] * 3)
    with pytest.raises(LLMUnavailable) as caught:
        llm.complete("mind", [{"role": "user", "content": "hi"}])
    assert len(stub.requests) == 3  # max_retries=2
    assert caught.value.status == 503
    assert str(caught.value) == (
        f"the LLM server at {stub.base_url} kept failing (HTTP 503: model is loading; "
        "3 attempts): check the server's log, or raise [llm] max_retries / backoff_s "
        "in pandafs.toml"
    )


def test_rate_limit_honours_retry_after(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script(StubReply(status=429, content="slow down", headers={"Retry-After": "1"}), "ok")
    started = time.monotonic()
    text, _, _ = llm.complete("mind", [{"role": "user", "content": "hi"}])
    elapsed = time.monotonic() - started
    assert text == "ok"
    assert len(stub.requests) == 2
    assert elapsed >= 0.9  # the server's 1 s, not our 0.01 s backoff


def test_slow_server_times_out_after_retries(stub: OpenAIStub) -> None:
    stub.script(*[StubReply(content="too late", delay_s=3.0)] * 2)
    config = make_config(stub.base_url, timeout_s=0.2, max_retries=1)
    started = time.monotonic()
    with closing(OpenAIBackend(config)) as llm, pytest.raises(LLMTimeout) as caught:
        llm.complete("voice", [{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 2.0
    assert len(stub.requests) == 2
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    assert str(caught.value) == (
        f"the LLM server at {stub.base_url} did not answer within 0.2 s (2 attempts): "
        "is the model loaded? raise [llm] timeout_s in pandafs.toml or use a smaller model"
    )


def test_connection_refused_is_unavailable() -> None:
    base_url = closed_port_url()
    with closing(OpenAIBackend(make_config(base_url, max_retries=1))) as llm:
        with pytest.raises(LLMUnavailable) as caught:
            llm.complete("mind", [{"role": "user", "content": "hi"}])
    message = str(caught.value)
    assert message.startswith(f"cannot reach the LLM server at {base_url} (")
    assert message.endswith("; 2 attempts): is it running? check [llm] base_url in pandafs.toml")
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert caught.value.status is None


def test_client_error_fails_without_retry(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script(StubReply(status=400, content="'messages' must not be empty"))
    with pytest.raises(LLMError) as caught:
        llm.complete("mind", [{"role": "user", "content": "hi"}])
    assert type(caught.value) is LLMRejected and caught.value.status == 400
    assert len(stub.requests) == 1
    assert str(caught.value) == (
        f"the LLM server at {stub.base_url} rejected the request "
        "(HTTP 400: 'messages' must not be empty): check [llm] model and [llm.roles] "
        "in pandafs.toml against what the server serves"
    )


def test_unauthorised_names_the_api_key_setting(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script(StubReply(status=401, content="invalid api key"))
    with pytest.raises(LLMError, match=r"HTTP 401: invalid api key\): .*\[llm\] api_key_env"):
        llm.complete("mind", [{"role": "user", "content": "hi"}])
    assert len(stub.requests) == 1


def test_a_body_that_is_not_a_completion_is_an_error(stub: OpenAIStub, llm: OpenAIBackend) -> None:
    stub.script(StubReply(body=b"<html>welcome to nginx</html>"))
    with pytest.raises(LLMError, match="not a chat completion .*OpenAI-compatible /v1 endpoint"):
        llm.complete("mind", [{"role": "user", "content": "hi"}])


def test_a_base_url_without_scheme_fails_at_once() -> None:
    with pytest.raises(LLMError, match=r"\[llm\] base_url 'localhost:8000/v1' is not an http"):
        OpenAIBackend(make_config("localhost:8000/v1"))


def test_stub_lists_models_and_echoes_by_default(stub: OpenAIStub) -> None:
    with httpx.Client() as client:
        models = client.get(f"{stub.base_url}/models").json()
        assert models["object"] == "list" and models["data"][0]["id"]
        reply = client.post(
            f"{stub.base_url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "ping"}]},
        ).json()
    assert reply["object"] == "chat.completion"
    assert reply["choices"][0]["message"]["content"] == "ping"
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"]["total_tokens"] >= 2


def test_stub_stop_does_not_wait_for_slow_replies() -> None:
    stub = OpenAIStub(lambda request: StubReply(content="late", delay_s=30)).start()
    try:
        with httpx.Client(timeout=0.1) as client, pytest.raises(httpx.ReadTimeout):
            client.post(f"{stub.base_url}/chat/completions", json={"messages": []})
    finally:
        started = time.monotonic()
        stub.stop()
    assert time.monotonic() - started < 2.0
