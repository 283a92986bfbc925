"""A conversation (an agent session transcript) as its messages, the matched ones marked."""

from __future__ import annotations

from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static
from textual.worker import get_current_worker

from apus.memory.transcript_reader import ConversationWindow
from apus.tui.live import LiveMemory

# Messages shown around the passage: enough context to read the exchange, few enough to
# render at once.
WINDOW_MESSAGES = 120
_ROLE_NAMES = {"user": "User", "assistant": "Assistant"}


class ConversationView(Vertical):
    """Follows `show(session_key, start_line, end_line)`: loads the messages around those
    file lines off the UI thread and marks the ones inside them."""

    DEFAULT_CSS = """
    ConversationView #conversation-title {
        height: auto;
        padding: 0 1 1 1;
    }
    ConversationView #conversation-scroll {
        height: 1fr;
        padding: 0 1;
    }
    ConversationView .message {
        height: auto;
        margin-bottom: 1;
        padding: 0 1;
    }
    ConversationView .message.-match {
        background: $accent 12%;
    }
    """

    @dataclass
    class Loaded(Message, bubble=False):
        key: tuple[str, int, int]
        window: ConversationWindow

    def __init__(self, live: LiveMemory, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.live = live
        self.key: tuple[str, int, int] | None = None
        self.window: ConversationWindow | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="conversation-title", markup=False)
        yield VerticalScroll(id="conversation-scroll")

    def focus_text(self) -> None:
        self.query_one("#conversation-scroll", VerticalScroll).focus()

    def show(self, session_key: str, start_line: int = 0, end_line: int = 0) -> None:
        key = (session_key, start_line, end_line)
        if key != self.key:
            self.key = key
            self._load(key)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def _load(self, key: tuple[str, int, int]) -> None:
        window = self.live.session.sessions_history(key[0], line=key[1], limit=WINDOW_MESSAGES)
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(key, window))

    async def on_conversation_view_loaded(self, message: Loaded) -> None:
        if message.key != self.key:
            return
        self.window = window = message.window
        _key, start, end = message.key
        info = window.info
        when = f"{_time(info.started)} – {_time(info.last_activity)}"
        title = Content.assemble(
            (f"Conversation {info.session_key}", "bold $text-primary"),
            "\n",
            (f"{info.messages} messages · {when}", "$text-muted"),
        )
        self.query_one("#conversation-title", Static).update(title)
        scroll = self.query_one("#conversation-scroll", VerticalScroll)
        await scroll.remove_children()
        blocks = [
            _block(m.role, m.timestamp, m.text, start <= m.line <= end) for m in window.messages
        ]
        await scroll.mount_all(blocks)
        target = next((b for b in blocks if b.has_class("-match")), None)
        if target is None:
            scroll.scroll_end(animate=False)
        else:
            self.call_after_refresh(scroll.scroll_to_widget, target, top=True, animate=False)

    def marked(self) -> list[Static]:
        """The messages inside the passage shown."""
        return [block for block in self.query(".message.-match").results(Static)]


def _block(role: str, timestamp: str, text: str, matched: bool) -> Static:
    header = Content.assemble(
        (_ROLE_NAMES.get(role, role), "bold"), "  ", (_time(timestamp), "$text-muted")
    )
    block = Static(Content("\n").join([header, Content(text)]), classes="message")
    block.set_class(matched, "-match")
    return block


def _time(timestamp: str) -> str:
    """`2026-11-20 14:30` from an ISO 8601 time (UTC, as stored)."""
    return timestamp[:16].replace("T", " ")
