"""Personal data removed from what chat stores, logs or sends to a remote model.

Chat uses the system's one redactor, `ng12_common.redaction` (presidio's recognisers: NHS numbers,
postcodes, phone numbers, e-mail addresses, names after a title or cue, dates), the same one the
gateway applies to every message before chat sees it, so a stored turn carries the same labels
(`<UK_NHS>`, `<PERSON>`, `<DATE>`) whichever way the message came in; redacting redacted text
changes nothing. The analyser is synchronous: `redact` runs it in a worker thread, off the event
loop, unless the redactor remembers the text's redacted form (a repeated follow-up): then no
thread hop. Its engine is built once per process (a few seconds), at start-up (`warm`). A turn's
message is redacted once (chat.graph's first node); when the redactor fails the turn is answered 503
(`RedactorUnavailable`) and nothing is stored, rather than storing unredacted text.
"""

from __future__ import annotations

import asyncio

from ng12_common.redaction import shared_redactor


class RedactorUnavailable(Exception):
    """The personal-data redactor failed: nothing is stored or sent on unredacted."""


async def redact(text: str) -> str:
    """The text with personal identifiers replaced by their type (`<UK_NHS>`)."""
    if not text:
        return text
    redactor = shared_redactor()
    done = redactor.remembered(text)
    if done is not None:
        return done
    try:
        return await asyncio.to_thread(redactor.redact, text)
    except Exception as exc:  # any analyser failure means the text cannot be kept
        raise RedactorUnavailable(
            f"the personal-data redactor failed ({type(exc).__name__}); the message was not stored, "
            "retry, and if it persists check the chat service's /readyz"
        ) from exc


async def warm() -> None:
    """Build the analyser engine (start-up), so that no turn waits for it."""
    await asyncio.to_thread(shared_redactor().engine)
