"""Text into Discord-shaped messages, through a port the cog implements over its library.

- `port.py`      the contract: `ChannelPort` (writable, send, edit) and the `Urgency` of a
                 request, `StreamWriter`, `AnswerRecord`, and
                 the delivery outcomes (`DestinationUnreachable`, `DeliveryFailed`,
                 `DeliveryRateLimited`)
- `writer.py`    `ChannelWriter`: a pass's text into a channel, the mode's writer, what both
                 modes share (sprite markers, the ceiling) and its `Phase`
- `messages_writer.py` messages mode: whole messages, never edited
- `edit_writer.py` edit mode: one message growing by edits, a new one when full
- `sender.py`    the one sender both writers request through: pacing, recording, failures
- `segmenter.py` streamed text released as messages-mode segments, each sent once
- `unseen.py`    the characters a reader does not see (a name may not hold them; a prompt
                 shows them as escapes)
- `chunking.py`  1950-character messages cut where nothing breaks
- `fences.py`    code fences and inline code: one rule for every reader of markdown
- `sprite_markers.py` a persona's `Name (label):` markers taken out of its streamed answer
                 (`SpriteMarkers`), and the `Wardrobe` the writer switches sprites by
- `hidden.py`    `<details>` and `<think>` blocks captured, never posted
- `ceiling.py`   the answer's ceiling: the cut note, and what one pass may read
- `notices.py`   what the bot tells a channel, as data; `NoticeSink`, `post_notice_safely`
- `progress.py`  a turn's stages shown as marks on its trigger: what shows when (`Progress`,
                 `Stage`, `Visibility`)
- `budget.py`    the bot's request budget: one per token, split among its processes, in
                 `Urgency` order, and each channel's own write bucket (`RequestBudget`,
                 `ChannelPace`)
- `traffic.py`   what Discord answered lately: requests per second, 429s by scope, invalid
                 requests against the ban (`Traffic`, `TrafficReport`)
"""

from tomori.delivery.notices import Notice, NoticeColour, NoticeSink, post_notice_safely
from tomori.delivery.port import (
    AnswerCut,
    AnswerRecord,
    ChannelPort,
    DeliveredMessage,
    DeliveryError,
    DeliveryFailed,
    DeliveryRateLimited,
    DestinationUnreachable,
    StreamWriter,
    Urgency,
    as_shown,
)
from tomori.delivery.progress import Progress, Visibility
from tomori.delivery.writer import ChannelWriter

__all__ = [
    "AnswerCut",
    "AnswerRecord",
    "ChannelPort",
    "ChannelWriter",
    "DeliveredMessage",
    "DeliveryError",
    "DeliveryFailed",
    "DeliveryRateLimited",
    "DestinationUnreachable",
    "Notice",
    "NoticeColour",
    "NoticeSink",
    "Progress",
    "StreamWriter",
    "Urgency",
    "Visibility",
    "as_shown",
    "post_notice_safely",
]
