"""What a ``stare`` command shows on the terminal from the library: the lines of the modules that report a run's
progress (:data:`PROGRESS_LOGGERS`), INFO on stdout and WARNING or worse on stderr, each as the bare message.

The library only logs (``logging.getLogger(__name__)``); the command line sets this up once, in
:func:`stare_rl.cli.main`. Other loggers are left alone: transformers, TRL and the rest of stare_rl log as they
would without it (their warnings through Python's last-resort handler, their INFO hidden).
"""

from __future__ import annotations

import logging
import sys

# the modules whose INFO lines are the output of `stare train` and `stare compare`
PROGRESS_LOGGERS = ("stare_rl.train.run", "stare_rl.train.prepare", "stare_rl.compare.run")


class ConsoleHandler(logging.Handler):
    """INFO to stdout, WARNING and above to stderr, the message alone, flushed at once. The stream is looked up
    at each line, so a replaced ``sys.stdout`` (pytest's ``capsys``, a redirect) receives it."""

    def emit(self, record: logging.LogRecord) -> None:
        stream = sys.stdout if record.levelno < logging.WARNING else sys.stderr
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 - logging never raises into the program
            self.handleError(record)


def show_progress(names: tuple[str, ...] = PROGRESS_LOGGERS) -> None:
    """Send the INFO and worse records of the loggers ``names`` to the terminal (:class:`ConsoleHandler`), once
    each: calling it again adds nothing. They stop propagating, so a root handler never prints them twice."""
    for name in names:
        log = logging.getLogger(name)
        log.setLevel(logging.INFO)
        log.propagate = False
        if not any(isinstance(h, ConsoleHandler) for h in log.handlers):
            log.addHandler(ConsoleHandler())
