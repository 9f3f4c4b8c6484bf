"""A persona's own prefill through the cog, on both libraries, against the faithful Discord REST
server: an admin gives one with `/tomori persona add|edit ... prefill:`, and the persona's
answers begin with it in place of the channel's (or server's), which begins the answers of
personas without one as before; a `/respond` prefill still wins for its answer, and a scene's
lines begin with the persona's own but never the server's."""

from __future__ import annotations

from pathlib import Path

from tests.cog.test_personas import settle
from tests.cog.test_prefill import prefill, respond, started
from tests.cog.test_scenes import scene
from tests.support.discord_rest import DiscordRestServer
from tests.support.llm_server import LLMServer
from tests.support.rest_bots import OpenRestBot, RestBot, conversation, posted, said
from tests.support.scripts import answer

YAWNS = "*yawns*"
"""The server's prefill."""
BOWS = "Aria: *bows*"
"""Aria's own."""
GRUNTS = "*grunts*"
"""Rook's own."""


async def cast(bot: RestBot, **prefills: str) -> None:
    """Aria and Rook join, each with the prefill given for it, if any."""
    bot.allow_webhooks()
    for name in ("Aria", "Rook"):
        prompt = f"You are {name}."
        if name in prefills:
            reply = await bot.persona("add", name=name, prompt=prompt, prefill=prefills[name])
        else:
            reply = await bot.persona("add", name=name, prompt=prompt)
        assert f"{name} joined this server" in said(reply)


async def test_a_personas_own_prefill_begins_its_answers_and_the_servers_begins_the_others(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    await prefill(bot, "set", text=YAWNS, scope="server")
    await cast(bot, Aria=f"  {BOWS} ")  # checked as /tomori prefill checks one: trimmed
    llm_server.script(answer(" A ballad."), answer(" Hmph."), answer(f"{YAWNS} Fine."))

    bot.say("aria, rook: good evening")
    await settle(bot)
    assert [(m.username, m.content) for m in posted(discord_rest)] == [
        ("Aria", f"{BOWS} A ballad."),
        ("Rook", f"{YAWNS} Hmph."),
    ]
    aria, rook = (conversation(request) for request in llm_server.requests)
    assert aria[-1] == ("assistant", BOWS)  # hers alone, natively: never joined to the server's
    assert not any(YAWNS in text for _, text in aria)
    assert rook[-1] == ("assistant", YAWNS)

    listed = said(await bot.persona("list"))
    assert f'**Aria**: called by Aria; the channel\'s models, no avatar; begins with "{BOWS}"' in (
        listed
    )
    assert "**Rook**: called by Rook; the channel's models, no avatar\n" in f"{listed}\n"

    cleared = said(await bot.persona("edit", name="aria", prefill=""))  # an empty one clears it
    assert "Aria changed." in cleared
    assert "begins with" not in cleared
    bot.say("aria, again?")
    await settle(bot)
    assert posted(discord_rest)[-1].content == f"{YAWNS} Fine."  # the server's, once more
    assert conversation(llm_server.requests[-1])[-1] == ("assistant", YAWNS)


async def test_respond_gives_the_prefill_of_its_answer_and_the_persona_drawn_in_begins_with_its_own(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    await prefill(bot, "set", text=YAWNS, scope="server")
    await cast(bot, Aria=BOWS, Rook=GRUNTS)
    grins = "Aria: *grins*"
    llm_server.script(answer(" Your turn, Rook."), answer(" No."), answer(" A song!"))

    await respond(bot, persona="aria", prefill=grins)
    await settle(bot)
    assert [(m.username, m.content) for m in posted(discord_rest)] == [
        ("Aria", f"{grins} Your turn, Rook."),  # the /respond one wins for its answer
        ("Rook", f"{GRUNTS} No."),  # drawn in: its own, as any answer of Rook's
    ]
    aria, rook = (conversation(request) for request in llm_server.requests)
    assert aria[-1] == ("assistant", grins)
    assert not any(BOWS in text or YAWNS in text for _, text in aria)
    assert rook[-1] == ("assistant", GRUNTS)

    await respond(bot, persona="aria", prompt="sing")  # no prefill given: Aria's own
    await settle(bot)
    assert posted(discord_rest)[-1].content == f"{BOWS} A song!"
    assert conversation(llm_server.requests[-1])[-1] == ("assistant", BOWS)


async def test_a_scenes_lines_begin_with_each_personas_own_prefill_never_the_servers(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    await prefill(bot, "set", text=YAWNS, scope="server")
    await cast(bot, Aria=BOWS)
    llm_server.script(answer(" A duel!"), answer("Rook sighs."))

    assert "begins" in await scene(bot, "Aria, Rook", 1)
    await settle(bot)
    assert [(m.username, m.content) for m in posted(discord_rest)] == [
        ("Aria", f"{BOWS} A duel!"),
        ("Rook", "Rook sighs."),
    ]
    aria, rook = (conversation(request) for request in llm_server.requests)
    assert aria[-1] == ("assistant", BOWS)  # after the scene's notice, which is request-only
    assert "[Scene, cycle 1 of 1] You are Aria" in aria[-2][1]
    assert rook[-1][0] == "user"  # Rook has none of its own, and the server's is not a line's
    assert not any(YAWNS in text for request in (aria, rook) for _, text in request)


async def test_a_persona_prefill_is_checked_as_tomori_prefill_checks_one(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    tmp_path: Path,
) -> None:
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    refused = said(await bot.persona("add", name="Aria", prompt="You are Aria.", prefill="a\0b"))
    assert "the prefill holds a NUL character" in refused
    assert "no personas" in said(await bot.persona("list"))  # refused whole: nothing stored
    await bot.persona("add", name="Aria", prompt="You are Aria.", prefill=BOWS)
    refused = said(await bot.persona("edit", name="Aria", prefill="x" * 2_001))
    assert "the prefill is 2001 characters long" in refused
    assert f'begins with "{BOWS}"' in said(await bot.persona("list"))
    assert not llm_server.requests


async def test_a_prefill_that_starts_with_a_sprites_marker_opens_the_answer_wearing_it(
    open_rest_bot: OpenRestBot,
    llm_server: LLMServer,
    discord_rest: DiscordRestServer,
    tmp_path: Path,
) -> None:
    """The prefill is the answer's first words, so its sprite markers are read as the model's
    are: `Aria (wet):` opens the answer in that sprite, and is taken out."""
    bot = await started(open_rest_bot, llm_server, tmp_path, "openai:test-model")
    bot.allow_webhooks()
    await bot.persona("add", name="Aria", prompt="You are Aria.", prefill="Aria (wet): *shivers*")
    await bot.sprite("add", persona="Aria", label="wet", avatar="https://images.example/wet.png")
    llm_server.script(answer(" Brr.\nAria: Better now."))
    bot.say("hi aria")
    await settle(bot)
    assert [(m.username, m.content) for m in posted(discord_rest)] == [
        ("Aria (wet)", "*shivers* Brr."),
        ("Aria", "Better now."),
    ]
    assert conversation(llm_server.requests[0])[-1] == ("assistant", "Aria (wet): *shivers*")
