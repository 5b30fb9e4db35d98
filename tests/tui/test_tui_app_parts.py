"""The app is one Textual `App` composed of parts, and every message reaches a handler."""

from __future__ import annotations

import inspect

from textual.app import App
from textual.case import camel_to_snake
from textual.message import Message

from gpulab.tui import messages
from gpulab.tui.app import GpulabApp


def test_the_app_is_one_app_not_a_chain_of_layers() -> None:
    # its parts are objects it holds (`learner`, `results`, `claims`, `navigator`)
    assert GpulabApp.__mro__[1] is App, GpulabApp.__mro__


def test_every_message_the_screens_and_workers_post_has_a_handler_on_the_app() -> None:
    posted = [
        cls
        for name in messages.__all__
        if inspect.isclass(cls := getattr(messages, name)) and issubclass(cls, Message)
    ]
    assert len(posted) == len(messages.__all__)
    unhandled = [
        cls.__name__
        for cls in posted
        if not callable(getattr(GpulabApp, f"on_{camel_to_snake(cls.__name__)}", None))
    ]
    assert not unhandled, f"messages that nothing handles: {unhandled}"
