"""The proxy rule on plain values: which repost is which waiting message, and for how long."""

from __future__ import annotations

import asyncio

from tomori.policy.proxies import Original, ProxiedMessages, reposts

CHANNEL = 4


def original(message_id: int, text: str, *, author: int = 3, files: int = 0) -> Original:
    return Original(message_id, CHANNEL, author, text, files)


def test_a_repost_is_the_original_less_its_proxy_tags() -> None:
    assert reposts("lu: hi there", "hi there")
    assert reposts("[hi\n  there]", "hi there")
    assert reposts("hi there", "hi there")  # autoproxy: no tags at all
    assert not reposts("lu: hi there", "hello there")
    assert not reposts("what of the launch on Friday?", "of")  # inside it, not within tags
    assert not reposts("x" * 20 + " hi", "hi")  # more than a tag before it


async def test_another_members_question_is_never_claimed_by_a_proxied_word_it_holds() -> None:
    waiting: ProxiedMessages[str] = ProxiedMessages(grace_s=1.0)
    waiting.expect(original(1, "what of the launch, then?", author=20))  # Bob's question
    waiting.expect(original(2, "lu: of", author=10))  # Alice's, about to be proxied
    bob, alice = (asyncio.create_task(waiting.taken(n, "direct")) for n in (1, 2))
    assert await waiting.claim(CHANNEL, "of", 0) == (original(2, "lu: of", author=10), "direct")
    assert await alice  # taken by its repost
    assert not await bob  # answered as Bob's own, after the grace


async def test_a_proxied_stop_word_claims_the_tagged_message_not_anothers_plain_one() -> None:
    waiting: ProxiedMessages[str] = ProxiedMessages(grace_s=1.0)
    waiting.expect(original(1, "stop", author=20))  # Bob's own stop word, first
    waiting.expect(original(2, "lu: stop", author=10))  # Alice's, proxied
    bob, alice = (asyncio.create_task(waiting.taken(n, "direct")) for n in (1, 2))
    claimed = await waiting.claim(CHANNEL, "stop", 0)  # before the deletion, as PluralKit does
    assert claimed is not None
    assert claimed[0].author_id == 10
    assert await alice
    assert not await bob  # Bob's own stop word stays his


async def test_a_repost_claims_the_earliest_matching_original_and_asks_as_it_did() -> None:
    waiting: ProxiedMessages[str] = ProxiedMessages(grace_s=1.0)
    waiting.expect(original(1, "a: ok", author=10))
    waiting.expect(original(2, "b: ok", author=20))
    waiting.expect(original(3, "a: with a file", files=1))
    first, second = (asyncio.create_task(waiting.taken(n, "direct")) for n in (1, 2))
    assert await waiting.claim(CHANNEL, "ok", 0) == (original(1, "a: ok", author=10), "direct")
    assert await first  # taken: not answered itself
    assert await waiting.claim(CHANNEL, "with a file", 0) is None  # its file is missing
    assert await waiting.claim(CHANNEL + 1, "ok", 0) is None  # another channel's
    waiting.deleted([2])
    assert await second
    claimed = await waiting.claim(CHANNEL, "ok", 0)
    assert claimed is not None
    assert claimed[0].author_id == 20


async def test_an_original_no_proxy_takes_is_answered_after_the_grace() -> None:
    waiting: ProxiedMessages[str] = ProxiedMessages(grace_s=0.05)
    waiting.expect(original(1, "hello"))
    assert not await waiting.taken(1, "direct")
    assert await waiting.claim(CHANNEL, "hello", 0) is None  # too late: it was answered
    assert len(waiting) == 0


async def test_a_deleted_original_waits_for_its_repost_only_for_the_grace() -> None:
    waiting: ProxiedMessages[str] = ProxiedMessages(grace_s=0.05)
    waiting.expect(original(1, "hello"))
    waiting.deleted([1])
    assert await waiting.taken(1, "direct")
    await asyncio.sleep(0.06)
    assert await waiting.claim(CHANNEL, "hello", 0) is None
    assert len(waiting) == 0


async def test_a_repost_of_a_message_asking_for_no_reply_is_not_answered() -> None:
    waiting: ProxiedMessages[str] = ProxiedMessages(grace_s=1.0)
    waiting.expect(original(1, "lu: chatting"))
    claim = asyncio.create_task(waiting.claim(CHANNEL, "chatting", 0))
    await asyncio.sleep(0)  # the repost came while the reply rule still reads the original
    assert not claim.done()
    assert await waiting.taken(1, None)
    assert await claim == (original(1, "lu: chatting"), None)  # its author's, asking nothing
