"""Session reports: record what compaction did at each model call, then render the same
self-contained HTML page as ``context-compactor report`` and the npm package's
``createReportRecorder`` (the renderer is the core's: one template for every host).

>>> from context_compactor import Compactor, create_report_recorder
>>> report = create_report_recorder(title="research agent")
>>> compactor = Compactor(model="gpt-4o", on_event=report.on_event)
>>> result = report.manage(compactor, [{"role": "user", "content": "hi"}])
>>> report.calls[0]["tokensBefore"] > 0
True
>>> report.html().startswith("<!doctype html>")
True
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from . import _core, tokenizers
from .codec import dumps, well_formed
from .errors import CompactorError

if TYPE_CHECKING:
    from .compactor import Compactor, ManageResult, Message

ReportData = Dict[str, Any]
"""``{title, model, encoding, window, thresholds: {compactAt, target, summarizeAt}, calls,
store, notes}``: the npm package's ``ReportData``, key for key."""

#: The fields of an event a report shows.
_EVENT_FIELDS = ("strategy", "status", "messageIndex", "path", "tokensBefore", "tokensAfter", "tokensSaved", "error")


def render_report(data: ReportData) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG; no script, font or
    network request)."""
    return str(_core.call("render-report", dumps(data)))


def render_report_chart(data: ReportData) -> str:
    """The report's chart alone: a ``<figure>`` with an inline ``<svg>`` that scales to its
    container's width."""
    return str(_core.call("render-report-chart", dumps(data)))


class ReportRecorder:
    """Records a session report from a live compactor, one entry per model call: the tokens of
    the conversation handed in, the tokens of the prompt sent, the compaction events in
    between, and whether the prompt broke the previous one's prefix (the provider's prompt
    cache). Made by :func:`create_report_recorder`."""

    def __init__(self, *, title: str = "Session report", calls: Optional[Sequence[Dict[str, Any]]] = None) -> None:
        self.title = title
        self.calls: List[Dict[str, Any]] = [dict(c) for c in calls or ()]
        """The calls recorded so far (plain data: persist it and pass it back as ``calls``)."""
        self._pending: List[Dict[str, Any]] = []
        self._readable: Dict[str, str] = {}  # transcript JSON path -> its Markdown sibling
        self._trigger: Optional[Dict[str, Any]] = None
        self._previous: Optional[List[str]] = None
        self._last: Optional["Compactor"] = None

    def on_event(self, event: Dict[str, Any]) -> None:
        """Pass as the compactor's ``on_event`` (or call it from yours): the events of
        ``offload_tool_output`` and of the LangChain middleware reach the recorder only this
        way. An event counts toward the call being recorded, or the next one."""
        self._pending.append(event)
        path = event.get("path")
        if event.get("strategy") == "transcript" and isinstance(path, str) and path.endswith(".json"):
            self._readable[path] = f"{path[:-5]}.md"

    def manage(self, compactor: "Compactor", messages: Sequence["Message"]) -> "ManageResult":
        """``compactor.manage(messages)``, recorded."""
        result = compactor.manage(messages)
        self.add(compactor, messages, result)
        return result

    def compact(self, compactor: "Compactor", messages: Sequence["Message"], *, instructions: Optional[str] = None) -> "ManageResult":
        """``compactor.compact(messages)``, recorded."""
        result = compactor.compact(messages, instructions=instructions)
        self.add(compactor, messages, result)
        return result

    async def amanage(self, compactor: "Compactor", messages: Sequence["Message"]) -> "ManageResult":
        """``await compactor.amanage(messages)``, recorded."""
        result = await compactor.amanage(messages)
        self.add(compactor, messages, result)
        return result

    async def acompact(self, compactor: "Compactor", messages: Sequence["Message"], *, instructions: Optional[str] = None) -> "ManageResult":
        """``await compactor.acompact(messages)``, recorded."""
        result = await compactor.acompact(messages, instructions=instructions)
        self.add(compactor, messages, result)
        return result

    def record(self, compactor: "Compactor", handed_in: Sequence["Message"], prompt: Sequence["Message"], events: Sequence[Dict[str, Any]] = ()) -> None:
        """Records one model call made some other way (a framework hook): the conversation
        handed in and the prompt sent; the events are those given here and those that reached
        ``on_event`` since the last call."""
        self._record(compactor, len(handed_in), int(compactor.usage(handed_in)["tokens"]), prompt, list(events))

    def data(self, compactor: Optional["Compactor"] = None) -> ReportData:
        """The report: the calls, the thresholds, and every stored file read back from the
        store (exact tokens in the model's encoding)."""
        compactor = compactor or self._last
        if compactor is None:
            raise CompactorError("invalid_config", "create_report_recorder: no call recorded yet; pass the compactor to data()/html()", {"field": "compactor"})
        model = compactor.model
        files: List[Dict[str, Any]] = []
        seen = set()
        for call in self.calls:
            for event in call["events"]:
                if event.get("status") != "applied" or event.get("path") is None:
                    continue
                paths = [event["path"]]
                markdown = self._readable.get(event["path"])
                if event.get("strategy") == "transcript" and markdown:
                    paths.append(markdown)
                for path in paths:
                    if path in seen:
                        continue
                    seen.add(path)
                    text = compactor.store.read(path)
                    if not isinstance(text, str):
                        continue
                    tokenizers.ensure_loaded(model["encoding"])
                    tokens = int(_core.call("count-tokens", well_formed(text), model["encoding"]))
                    files.append({"path": path, "strategy": event["strategy"], "call": call["call"], "tokens": tokens, "chars": len(text)})
        trigger = self._trigger or compactor.plan([])["trigger"]
        return {
            "title": self.title,
            "model": model["name"],
            "encoding": model["encoding"],
            "window": model["contextWindow"],
            "thresholds": {"compactAt": trigger["compactAt"], "target": trigger["target"], "summarizeAt": trigger["summarizeAt"]},
            "calls": json.loads(json.dumps(self.calls)),
            "store": files,
            "notes": [],
        }

    def html(self, compactor: Optional["Compactor"] = None) -> str:
        """``render_report(data())``."""
        return render_report(self.data(compactor))

    def add(self, compactor: "Compactor", messages: Sequence["Message"], result: "ManageResult") -> None:
        """Records a call made elsewhere (the LangChain middleware's ``report=``): the
        conversation handed to ``manage`` and what it returned."""
        if self._trigger is None:
            self._trigger = result.plan["trigger"]
        for action in result.plan["actions"]:
            if action["type"] == "save-transcript":
                self._readable[action["path"]] = action["readablePath"]
        self._record(compactor, len(messages), int(result.plan["tokensBefore"]), result.messages, list(result.events))

    def _record(self, compactor: "Compactor", handed_in: int, before: int, prompt: Sequence["Message"], events: List[Dict[str, Any]]) -> None:
        self._last = compactor
        every = [e for e in self._pending if not any(e is x for x in events)] + events
        self._pending = []
        changed = any(e.get("status") in ("applied", "fallback") for e in every)
        # Messages compared by their JSON: a compaction returns new objects for every message.
        sent = [dumps(m) for m in prompt]
        previous = self._previous
        self.calls.append(
            {
                "call": len(self.calls) + 1,
                "messages": handed_in,
                "tokensBefore": before,
                "tokensAfter": int(compactor.usage(prompt)["tokens"]) if changed else before,
                "prefixBreak": previous is not None and sent[: len(previous)] != previous,
                "events": [{k: e.get(k) for k in _EVENT_FIELDS} for e in every],
            }
        )
        self._previous = sent


def create_report_recorder(*, title: str = "Session report", calls: Optional[Sequence[Dict[str, Any]]] = None) -> ReportRecorder:
    """A :class:`ReportRecorder` (the npm package's ``createReportRecorder``)."""
    return ReportRecorder(title=title, calls=calls)
