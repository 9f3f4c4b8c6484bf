from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from tests.support.memory_channel import MemoryChannel
from tests.support.passes import CHANNEL, LONG, Harness, budgets, kill_after
from tests.support.recording_port import RecordingPort
from tests.support.scripted import ScriptedProvider, Step, stall, text
from tomori.config.settings import Settings
from tomori.delivery.notices import FIRST_TOKEN_TIMEOUT, IDLE_TIMEOUT
from tomori.delivery.port import StreamWriter
from tomori.delivery.sprite_markers import Wardrobe
from tomori.delivery.writer import ChannelWriter
from tomori.generation.results import StreamResult, StreamStatus, TimedOut, TimeoutPhase
from tomori.generation.state import TurnState
from tomori.locks import ChannelLocks
from tomori.locks.vocabulary import KillReason
from tomori.providers.base import (
    ContextItem,
    DetailsDelta,
    Finish,
    ProviderError,
    ProviderErrorKind,
    Role,
    StreamRequest,
    ToolCall,
    ToolCallEvent,
    ToolExchange,
    Usage,
    UsageEvent,
)


async def test_a_completed_pass_returns_the_delivered_text_details_and_usage(
    harness: Harness,
) -> None:
    provider = ScriptedProvider(
        [
            Step(event=DetailsDelta("thinking")),
            text("Hello\n"),
            text("world"),
            Step(event=UsageEvent(Usage(12, 3))),
            Step(event=Finish("stop")),
        ]
    )
    run = await harness.run(provider, budgets())
    assert run.result == StreamResult(
        StreamStatus.COMPLETED,
        text="Hello\nworld",
        details="thinking",
        usage=Usage(12, 3),
        data=Finish("stop"),
    )
    assert run.channel.messages == ["Hello\n", "world"]
    assert run.channel.notices == []
    assert [message.text for message in run.state.delivered] == ["Hello\n", "world"]


async def test_the_first_token_budget_is_distinct_from_the_idle_budget(
    harness: Harness,
) -> None:
    slow_start = ScriptedProvider([stall(0.25), text("late but fine")])
    run = await harness.run(slow_start, budgets(first=1.0, idle=0.08))
    assert run.result is not None
    assert run.result.status is StreamStatus.COMPLETED

    stalls_midway = ScriptedProvider([text("begun\n"), stall(0.25), text("never")])
    run = await harness.run(stalls_midway, budgets(first=1.0, idle=0.08))
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.result.data == TimedOut(TimeoutPhase.IDLE, KillReason.TIMER)
    assert run.result.text == "begun\n"
    assert run.channel.notices == [IDLE_TIMEOUT]


async def test_no_first_token_in_time_is_a_first_token_timeout(harness: Harness) -> None:
    provider = ScriptedProvider([stall(LONG), text("never")])
    run = await harness.run(provider, budgets(first=0.1, idle=0.05))
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.result.data == TimedOut(TimeoutPhase.FIRST_TOKEN, KillReason.TIMER)
    assert run.channel.notices == [FIRST_TOKEN_TIMEOUT]
    assert provider.closed == 1
    assert provider.finished == 0


async def test_every_chunk_rearms_the_idle_timer(harness: Harness) -> None:
    steady = ScriptedProvider([text(f"{n} ", after=0.03) for n in range(15)])
    run = await harness.run(steady, budgets(idle=0.1))  # 0.45 s of stream, 0.1 s idle budget
    assert run.result is not None
    assert run.result.status is StreamStatus.COMPLETED
    assert run.result.text == "".join(f"{n} " for n in range(15))


async def test_a_timeout_with_a_fallback_pending_posts_no_notice(
    harness: Harness,
) -> None:
    provider = ScriptedProvider([text("part\n"), stall(LONG)])
    run = await harness.run(provider, budgets(idle=0.05), suppress=True)
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.channel.notices == []

    run = await harness.run(provider, budgets(idle=0.05), suppress=False)
    assert run.channel.notices == [IDLE_TIMEOUT]


async def test_kill_during_a_stall_stops_at_once_and_closes_the_provider_stream(
    harness: Harness,
) -> None:
    provider = ScriptedProvider([text("partial\n"), stall(LONG), text("never")])
    run = await harness.run(provider, budgets(), meanwhile=kill_after(0.1))
    assert run.result is not None
    assert run.result.status is StreamStatus.STOPPED_BY_USER
    assert run.result.text == "partial\n"
    assert run.elapsed < LONG / 2
    assert (provider.closed, provider.finished) == (1, 0)
    assert run.channel.messages == ["partial\n"]
    assert run.channel.notices == []


async def test_kill_during_the_settle_wait_ends_it_at_once(harness: Harness) -> None:
    channel = MemoryChannel(send_delay=LONG)  # the first send never lands
    provider = ScriptedProvider([text("on the wire\n"), stall(LONG)])
    run = await harness.run(
        provider, budgets(idle=0.05), channel=channel, meanwhile=kill_after(0.3)
    )
    assert run.result is not None
    assert run.result.status is StreamStatus.STOPPED_BY_USER
    assert run.elapsed < LONG / 2
    assert channel.sends_started == 1
    assert channel.notices == []


async def test_the_settle_wait_is_bounded_against_a_send_that_never_lands(
    harness: Harness,
) -> None:
    channel = MemoryChannel(send_delay=LONG)
    provider = ScriptedProvider([text("on the wire\n"), stall(LONG)])
    run = await harness.run(provider, budgets(idle=0.05, settle=0.15), channel=channel)
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.result.text == ""
    assert run.elapsed < LONG / 2
    assert channel.notices == [IDLE_TIMEOUT]


async def test_a_send_on_the_wire_when_the_timer_fires_lands_in_the_timed_out_text(
    harness: Harness,
) -> None:
    channel = MemoryChannel(send_delay=0.2)
    provider = ScriptedProvider([text("landing\n"), stall(LONG)])
    run = await harness.run(provider, budgets(idle=0.05, settle=LONG), channel=channel)
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.result.text == "landing\n"
    assert channel.messages == ["landing\n"]


async def test_with_settling_disabled_a_timeout_does_not_wait_for_sends(
    harness: Harness,
) -> None:
    channel = MemoryChannel(send_delay=LONG)
    provider = ScriptedProvider([text("on the wire\n"), stall(LONG)])
    run = await harness.run(provider, budgets(idle=0.05, settle=0), channel=channel)
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.elapsed < LONG / 2


async def test_a_provider_error_is_returned_with_the_complete_lines_delivered_before_it(
    harness: Harness,
) -> None:
    failure = ProviderError(ProviderErrorKind.SERVER_ERROR, "the provider failed", status=500)
    provider = ScriptedProvider([text("a whole line\nand some"), Step(error=failure)])
    run = await harness.run(provider, budgets())
    assert run.result is not None
    assert run.result.status is StreamStatus.ERROR
    assert run.result.error is failure
    assert run.result.text == "a whole line\n"  # the unfinished line is not shown


async def test_any_other_exception_propagates(harness: Harness) -> None:
    provider = ScriptedProvider([text("x"), Step(error=RuntimeError("bug"))])
    run = await harness.run(provider, budgets())
    assert isinstance(run.error, RuntimeError)
    assert run.channel.notices == []


async def test_a_tool_call_returns_the_call_and_the_text_written_before_it(
    harness: Harness,
) -> None:
    call = ToolCall("call-1", "now", {"timezone": "UTC"}, raw_arguments='{"timezone": "UTC"}')
    provider = ScriptedProvider(
        [text("Let me check.\n"), Step(event=ToolCallEvent(call)), Step(event=Finish("tool_calls"))]
    )
    run = await harness.run(provider, budgets())
    assert run.result is not None
    assert run.result.status is StreamStatus.FUNCTION_CALL
    assert run.result.data == (call,)
    assert run.result.text == "Let me check.\n"


async def test_a_pass_with_no_text_and_no_tool_call_is_an_empty_response(
    harness: Harness,
) -> None:
    provider = ScriptedProvider([Step(event=Finish("stop"))])
    run = await harness.run(provider, budgets())
    assert run.result is not None
    assert run.result.status is StreamStatus.EMPTY_RESPONSE
    assert run.result.data == Finish("stop")


async def test_the_provider_is_sent_the_prepared_request(harness: Harness) -> None:
    prefill = "Tomori: Well,"
    exchange = ToolExchange(ToolCall("1", "now", {}), {"time": "noon"})
    request = StreamRequest(
        model="m",
        context=(ContextItem(Role.USER, "hi"), ContextItem(Role.ASSISTANT, prefill)),
        tool_history=(exchange,),
        output_prefill=prefill,
    )
    provider = ScriptedProvider([text("ok")])
    await harness.run(provider, budgets(), request=request)
    sent = provider.requests[0]
    assert sent.context == (ContextItem(Role.USER, "hi"),)
    assert sent.tool_history[0].pre_tool_text == (prefill,)


async def test_a_pending_stop_request_ends_the_pass_before_the_provider_is_called(
    harness: Harness,
) -> None:
    provider = ScriptedProvider([text("never")])

    async def kill_before_stream(locks: ChannelLocks) -> None:
        await asyncio.sleep(0)  # the turn begins (a turn stopped before that never runs)...
        await locks.kill(CHANNEL, requester_id="42")  # ...and /kill lands before its pass

    run = await harness.run(provider, budgets(), meanwhile=kill_before_stream)
    assert run.result == StreamResult(StreamStatus.STOPPED_BY_USER)
    assert provider.requests == []


def _steps_for(ending: str) -> list[Step]:
    failure = ProviderError(ProviderErrorKind.RATE_LIMITED, "slow down", status=429)
    call = ToolCall("c", "now", {})
    return {
        "completed": [text("done")],
        "function_call": [Step(event=ToolCallEvent(call))],
        "error": [Step(error=failure)],
        "exception": [Step(error=RuntimeError("bug"))],
        "timeout": [text("a\n"), stall(LONG)],
        "stopped": [text("a\n"), stall(LONG)],
        "empty": [Step(event=Finish("stop"))],
    }[ending]


@pytest.mark.parametrize(
    "ending",
    ["completed", "function_call", "error", "exception", "timeout", "stopped", "empty"],
)
async def test_every_exit_clears_the_timer_the_progress_hook_and_the_kill_hook(
    harness: Harness, ending: str
) -> None:
    provider = ScriptedProvider(_steps_for(ending))
    run = await harness.run(
        provider,
        budgets(idle=0.05, settle=0.05),
        meanwhile=kill_after(0.02) if ending == "stopped" else None,
    )
    assert run.leftovers == []
    assert run.state.on_stream_progress is None
    assert provider.closed == 1


async def test_a_genuine_timeout_is_counted_as_a_stream_sdk_timeout_with_its_phase(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    provider = ScriptedProvider([text("a\n"), stall(LONG)], name="slowpoke")
    with caplog.at_level("WARNING", logger="tomori.generation.stream_once"):
        await harness.run(provider, budgets(idle=0.05, settle=0.05))
    metrics = [r for r in caplog.records if getattr(r, "metric", None) == "stream_sdk_timeout"]
    assert [(r.provider, r.phase, r.reason) for r in metrics] == [("slowpoke", "idle", "timer")]  # type: ignore[attr-defined]


async def test_a_kill_is_not_counted_as_a_timeout(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    provider = ScriptedProvider([text("a\n"), stall(LONG)])
    with caplog.at_level("WARNING", logger="tomori.generation.stream_once"):
        await harness.run(provider, budgets(), meanwhile=kill_after(0.05))
    assert not [r for r in caplog.records if getattr(r, "metric", None)]


def delivery(budget: float, idle: float = 0.05) -> Settings:
    return replace(budgets(idle=idle), delivery_timeout_ms=int(budget * 1000))


async def test_after_the_stream_ended_a_slow_send_is_bounded_by_delivery_not_idleness(
    harness: Harness,
) -> None:
    channel = MemoryChannel(send_delay=0.3)  # six idle budgets: the provider is long done
    provider = ScriptedProvider([text("first\n"), text("last")])
    run = await harness.run(provider, delivery(LONG), channel=channel)
    assert run.result is not None
    assert run.result.status is StreamStatus.COMPLETED
    assert run.result.text == "first\nlast"
    assert channel.notices == []
    assert run.leftovers == []


async def test_a_provider_error_then_a_slow_send_is_still_the_error_with_its_text(
    harness: Harness,
) -> None:
    failure = ProviderError(ProviderErrorKind.SERVER_ERROR, "the provider failed", status=500)
    channel = MemoryChannel(send_delay=0.3)
    provider = ScriptedProvider([text("some\n"), Step(error=failure)])
    run = await harness.run(provider, delivery(LONG), channel=channel)
    assert run.result is not None
    assert run.result.status is StreamStatus.ERROR
    assert run.result.text == "some\n"
    assert channel.notices == []


async def test_when_the_delivery_bound_runs_out_the_answer_stays_answered(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    channel = MemoryChannel(send_delay=LONG)  # the only send never lands
    provider = ScriptedProvider([text("never shown")], name="quick")
    with caplog.at_level("WARNING", logger="tomori.generation.stream_once"):
        run = await harness.run(provider, delivery(0.15), channel=channel)
    assert run.result is not None
    assert run.result.status is StreamStatus.COMPLETED  # not empty: no other model, no notice
    assert run.result.text == ""
    assert channel.notices == []
    assert run.elapsed < LONG / 2
    assert run.leftovers == []
    metrics = [r for r in caplog.records if getattr(r, "metric", None)]
    assert [(r.metric, r.provider) for r in metrics] == [("delivery_timeout", "quick")]  # type: ignore[attr-defined]


async def test_kill_ends_the_wait_for_delivery_at_once(harness: Harness) -> None:
    channel = MemoryChannel(send_delay=LONG)
    provider = ScriptedProvider([text("never shown")])
    run = await harness.run(provider, delivery(LONG), channel=channel, meanwhile=kill_after(0.1))
    assert run.result is not None
    assert run.result.status is StreamStatus.STOPPED_BY_USER
    assert run.elapsed < LONG / 2
    assert channel.notices == []
    assert run.leftovers == []


async def test_a_timed_out_pass_carries_the_sprites_its_messages_wore(harness: Harness) -> None:
    """The seed's timeout result: the settled text, and the sprites shown, in order (a marker
    for the sprite already worn starts no new message, so it is shown once)."""
    port = RecordingPort()
    wardrobe = Wardrobe("Ann", ("happy",), lambda label: None)

    def writer(state: TurnState) -> StreamWriter:
        return ChannelWriter(port, state, first_gather_s=0, wardrobe=wardrobe)

    provider = ScriptedProvider(
        [
            text("Hi.\n\nAnn (happy): Yay!\n\n"),
            text("Ann (happy): again\n\n"),
            stall(LONG),
        ]
    )
    run = await harness.run(provider, budgets(idle=0.2), writer=writer)
    assert run.result is not None
    assert run.result.status is StreamStatus.TIMEOUT
    assert run.result.sprites == ("Ann (happy)",)
    assert run.result.text == "Hi.\n\nYay!\n\nagain\n\n"
