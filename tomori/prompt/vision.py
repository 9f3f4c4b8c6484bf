"""What a model is sent of a turn's images: all of them, or a note that they were left out.

Images reach only the models whose `TOMORI_MODELS` entry says `+vision`. Any other model gets
the same conversation with the images taken out and a request-only notice that the user
attached images it cannot see, so it can say so instead of answering as if there were none.
A vision model whose provider still refuses the images (a bad request naming them) gets the
same treatment once, through `without_images`. Images a tool returned (an MCP server's) follow
the same rule: a model without vision is told of them in the tool's result.
"""

from __future__ import annotations

from dataclasses import replace

from tomori.providers.base import ContextItem, Role, StreamRequest, ToolExchange

UNSEEN_IMAGES_NOTICE = (
    "The messages above came with {count} that you cannot see: you were sent their text "
    "only. If your answer depends on an image, say that you cannot view images."
)


def image_count(request: StreamRequest) -> int:
    """The conversation's images (a tool's are named to the model in its result instead)."""
    return sum(len(item.images) for item in request.context)


def tool_images_unseen(exchange: ToolExchange) -> ToolExchange:
    """The exchange with its images named in its result, for a model that cannot see them."""
    if not exchange.images:
        return exchange
    named = [f"an image ({image.content_type}) you cannot see" for image in exchange.images]
    result = dict(exchange.result)
    result["images_not_shown"] = named
    return replace(exchange, result=result, images=())


def shown_to(request: StreamRequest, *, sees_images: bool) -> StreamRequest:
    """The request as a model with or without vision is sent it."""
    return request if sees_images else without_images(request)


def unseen_images_notice(count: int) -> ContextItem:
    """What a model that cannot see `count` (at least one) images of the turn is told."""
    images = "an image" if count == 1 else f"{count} images"
    return ContextItem(Role.USER, UNSEEN_IMAGES_NOTICE.format(count=images))


def without_images(request: StreamRequest) -> StreamRequest:
    """The request with every image taken out and the notice that says so (none if none)."""
    count = image_count(request)
    history = tuple(tool_images_unseen(exchange) for exchange in request.tool_history)
    if count == 0:
        return replace(request, tool_history=history, sees_images=False)
    notice = unseen_images_notice(count)
    return replace(
        request,
        context=tuple(
            replace(item, images=()) if item.images else item for item in request.context
        ),
        tool_history=history,
        request_notices=(*request.request_notices, notice),
        sees_images=False,
    )
