"""The local LLM server in a process of its own, for load benchmarks: the bot under test then
has its event loop to itself, as it would against a real provider.

    python -m tests.support.llm_server_process CHUNKS RATE STALL_EVERY

Every request gets CHUNKS OpenAI chunks at RATE per second; every STALL_EVERY-th request
(0: none) stalls after its first chunk. Prints the port, then serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

from tests.support.llm_server import Action, LLMServer, Reply, SeenRequest, pause, sse, stall
from tests.support.openai_wire import chunk


def replies(chunks: int, rate: float, stall_every: int) -> LLMServer:
    counter = itertools.count(1)

    def reply(request: SeenRequest) -> Reply:
        number = next(counter)
        body: list[Action] = [sse(chunk("Streaming along.\n\n"))]
        if stall_every and number % stall_every == 0:
            return Reply(body=[*body, stall()])
        for n in range(chunks - 1):
            body += [pause(1 / rate), sse(chunk("\n\n" if n % 20 == 19 else "word "))]
        return Reply(body=[*body, sse(chunk(finish="stop")), sse("[DONE]")])

    return LLMServer(default=reply)


async def main(chunks: int, rate: float, stall_every: int) -> None:
    server = replies(chunks, rate, stall_every)
    await server.start()
    print(server.port, flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    await reader.read()
    await server.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])))
