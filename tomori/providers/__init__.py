"""Model providers: each turns one SDK's stream into the events of `tomori.providers.base`.

- `base.py`   the `Provider` protocol, the request, the events, `ProviderError`
- `errors.py` an SDK's failures as the few kinds the model chain acts on, in our own words
- `openai.py` OpenAI and every OpenAI-compatible server (Ollama, vLLM, llama.cpp...)
- `gemini.py` Google's Gemini, through google-genai
"""

from tomori.providers.base import (
    ContextItem,
    Provider,
    ProviderError,
    ProviderErrorKind,
    Role,
    StreamRequest,
)

__all__ = [
    "ContextItem",
    "Provider",
    "ProviderError",
    "ProviderErrorKind",
    "Role",
    "StreamRequest",
]
