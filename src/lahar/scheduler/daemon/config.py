"""The scheduler configuration in force, re-read when its file changes.

Volcano watches ``volcano-scheduler.conf`` and swaps configurations between sessions;
an unreadable or invalid new version is logged and the previous one stays in force
(volcano-semantics §7). Here the file is checked once per cycle, before the session:
a ``stat`` (cheap) and, when size, mtime or inode moved, a read whose content hash
decides whether anything changed. Polling, rather than inotify, also sees a ConfigMap
volume's symlink swap and needs nothing outside the standard library.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable

from lahar.scheduler.framework.conf import (
    ConfigError,
    SchedulerConfiguration,
    default_conf,
    parse_conf,
)

__all__ = ["ConfigSource"]

log = logging.getLogger("lahar.scheduler.config")


class ConfigSource:
    """Hands out the configuration to use for the next session.

    With no file it is Volcano's built-in default. With a file, the first load must
    succeed (:class:`ConfigError` otherwise: a daemon should not start on a bad file);
    later loads that fail keep the previous configuration.
    """

    def __init__(
        self,
        path: str | None,
        *,
        on_reload: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.on_reload = on_reload
        self.error: str | None = None  # the last reload error, None once a load succeeds
        self._stat: tuple[int, int, int] | None = None
        self._digest: str | None = None  # of the text in force
        self._bad: str | None = None  # of the last text that failed to parse
        self.conf: SchedulerConfiguration = default_conf()
        if path is not None:
            text = self._read()
            self.conf = _parse(text, path)
            self._digest = _digest(text)

    def _read(self) -> str:
        assert self.path is not None
        try:
            st = os.stat(self.path)
            with open(self.path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot read: {exc.strerror}") from None
        self._stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        return text

    def current(self) -> SchedulerConfiguration:
        """The configuration for the next session (re-read first if the file changed)."""
        if self.path is None:
            return self.conf
        try:
            st = os.stat(self.path)
            seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError as exc:
            self._failed(f"{self.path}: cannot read: {exc.strerror}")
            return self.conf
        if seen == self._stat:
            return self.conf
        try:
            text = self._read()
        except ConfigError as exc:
            self._failed(str(exc))
            return self.conf
        digest = _digest(text)
        if digest == self._digest:  # touched, or readable again, but the same text
            self.error = None
            return self.conf
        if digest == self._bad:  # the same bad version: reported already
            return self.conf
        try:
            conf = _parse(text, self.path)
        except ConfigError as exc:
            self._bad = digest
            self._failed(str(exc))
            return self.conf
        self.conf, self._digest, self.error = conf, digest, None
        log.info("scheduler configuration reloaded from %s: actions %s", self.path, conf.actions)
        if self.on_reload is not None:
            self.on_reload("success")
        return self.conf

    def _failed(self, message: str) -> None:
        if message != self.error:
            log.error("keeping the previous scheduler configuration: %s", message)
            if self.on_reload is not None:
                self.on_reload("error")
        self.error = message


def _parse(text: str, path: str) -> SchedulerConfiguration:
    """``parse_conf``, with any failure on malformed input reported as a ConfigError
    (the parser lets a few shapes, e.g. ``tiers: 3``, escape as TypeError)."""
    try:
        return parse_conf(text, source=path)
    except ConfigError:
        raise
    except (TypeError, AttributeError, ValueError, KeyError) as exc:
        raise ConfigError(f"{path}: malformed configuration ({exc})") from None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
