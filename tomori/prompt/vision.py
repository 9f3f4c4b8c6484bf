"""What a model is sent of a turn's images: all of them, or a note that they were left out.

Images reach only the models whose `TOMORI_MODELS` entry says `+vision`. Any other model gets
the same conversation with the images taken out and a request-only notice that the user
attached images it cannot see, so it can say so instead of answering as if there were none.
A vision model whose provider still refuses the images (a bad request naming them) gets the
same treatment once, through `without_images`.
"""

from __future__ import annotations

from dataclasses import replace

from tomori.providers.base import ContextItem, Role, StreamRequest

UNSEEN_IMAGES_NOTICE = (
    "The messages above came with {count} that you cannot see: you were sent their text "
    "only. If your answer depends on an image, say that you cannot view images."
)


def image_count(request: StreamRequest) -> int:
    return sum(len(item.images) for item in request.context)


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
    if count == 0:
        return request
    notice = unseen_images_notice(count)
    return replace(
        request,
        context=tuple(
            replace(item, images=()) if item.images else item for item in request.context
        ),
        request_notices=(*request.request_notices, notice),
    )
