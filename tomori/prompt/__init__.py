"""What the model is sent: the conversation in order, images or a note, prefill, file contents.

- `conversation.py` `in_time_order`: the order a channel's messages are shown in; `Unshown`:
                    the ones never shown
- `vision.py`       a turn's images for a model with or without `+vision`
- `sniff.py`        what a file's bytes are: an image's type by its signature, text or not
- `prefill.py`      a prefill per model (native or in words), notices before it, folded into tools
- `opening.py`      `opened`: the posted answer begins with the prefill exactly once
- `tokens.py`       a request's tokens, estimated with no download
- `budget.py`       `fitted`: a request within a model's context (the rule for what goes)
- `tool_cuts.py`    a tool result cut to fit, with a note the model reads
"""

from tomori.prompt.conversation import Unshown, in_time_order
from tomori.prompt.opening import Opening, opened
from tomori.prompt.prefill import Prefill, prefilled, prepare_request, reaches, without_prefill
from tomori.prompt.sniff import image_type, is_text
from tomori.prompt.vision import image_count, shown_to, unseen_images_notice, without_images

__all__ = [
    "Opening",
    "Prefill",
    "Unshown",
    "image_count",
    "image_type",
    "in_time_order",
    "is_text",
    "opened",
    "prefilled",
    "prepare_request",
    "reaches",
    "shown_to",
    "unseen_images_notice",
    "without_images",
    "without_prefill",
]
