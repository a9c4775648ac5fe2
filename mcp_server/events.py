"""A bounded in-memory event store for streamable HTTP: with it the SDK opens every SSE
stream with a priming event (an id a client resumes from) and a `retry:` field, and a client
that lost a stream reconnects with Last-Event-ID and gets what it missed (the newest
MAX_EVENTS; older ones are gone, and the client gets nothing for them)."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import Any

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

MAX_EVENTS = 2000  # events kept across all streams (a few MB of answers at most)
RETRY_MS = 1000  # the `retry:` a client waits before reconnecting a closed stream


class BoundedEventStore(EventStore):
    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        self.max_events = max_events
        self._ids = itertools.count(1)
        self._events: OrderedDict[str, tuple[str, Any]] = OrderedDict()  # id -> (stream, message)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = f"{next(self._ids)}"
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.max_events:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(self, last_event_id: str,
                                  send_callback: EventCallback) -> str | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id
