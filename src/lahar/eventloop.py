"""Every lahar command runs its asyncio work on uvloop.

A lahar process is an event loop doing many small things: tens of thousands of socket
reads and writes per second (the API server's requests and watch streams, the
components' calls and watches), timers and callbacks. uvloop (libuv, in C) runs the
same asyncio programs with a much cheaper loop and socket layer than the standard
library's selector loop. Installing its policy once, before the command starts, makes
every ``asyncio.run`` in the process use it; library code and tests that run on the
standard loop behave the same (nothing here depends on which loop runs).
"""

from __future__ import annotations

import asyncio

import uvloop


def install() -> None:
    """Make uvloop the event loop of every ``asyncio.run`` in this process. Idempotent."""
    if not isinstance(asyncio.get_event_loop_policy(), uvloop.EventLoopPolicy):
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
