"""LangChain v1 agent middleware: ``create_agent(model, tools, middleware=[CompactorMiddleware(...)])``.

Its ``before_model`` hook runs the compactor on the agent's messages before every model call
and, when something changed, replaces them in the agent's state (``RemoveMessage(id=
REMOVE_ALL_MESSAGES)`` then the compacted list, as LangChain's own ``SummarizationMiddleware``
does), so the compaction persists into later steps. The agent's system prompt (the one its
last model call carried) is counted as the first message and kept out of the state. Offloaded
content goes to the compactor's store; give the agent the recovery tools
(``recovery_langchain_tools(compactor)``) to read it back.

Messages are converted to the core's (AI SDK) shape and back: ``SystemMessage`` → ``system``,
``HumanMessage`` → ``user``, ``AIMessage`` → ``assistant`` (text and ``tool_calls``),
``ToolMessage`` → ``tool`` (one ``tool-result``). A message the compactor left unchanged comes
back as the same LangChain object (id, metadata and all); a changed one is rebuilt with the
original's id and fields, and its content blocks: each block the core left as it crossed comes
back as it was (keys in order), a changed one with only its text or arguments replaced.

- Image, file and audio blocks in a ``HumanMessage`` or ``ToolMessage`` (LangChain v1 standard
  blocks, the older ``source_type`` ones, OpenAI's ``image_url`` and ``input_audio``,
  Anthropic's ``source``) cross as the core's image and file parts (in a tool result, items of
  a ``content`` output), counted as images and files.
- An ``AIMessage``'s blocks that repeat its ``tool_calls`` (Anthropic's ``tool_use``, v1
  ``tool_call``, OpenAI's ``function_call``) cross once, as the core's tool-call; its reasoning
  blocks (v1 ``reasoning``, Anthropic's ``thinking``) as reasoning parts.
- Any other block crosses as its JSON text (counted, and kept as it was when unchanged)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, Union

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import StructuredTool
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from .compactor import Compactor, ManageResult
from .errors import InvalidConfigError, InvalidMessageError
from .overflow import overflow_verdict, parse_overflow
from .report import ReportRecorder
from .stores import FileStore
from .tools import recovery_tools


def to_model_messages(messages: Sequence[BaseMessage]) -> List[Dict[str, Any]]:
    """LangChain messages in the core's (AI SDK ``ModelMessage``) shape."""
    return [_to_model(m) for m in messages]


def from_model_messages(
    compacted: Sequence[Dict[str, Any]], originals: Sequence[BaseMessage], converted: Sequence[Dict[str, Any]]
) -> List[BaseMessage]:
    """The compacted messages as LangChain messages: each unchanged one is the original object
    (matched in order by its converted form), each changed one rebuilt; a tool message with
    several results (an AI SDK history's) is one ``ToolMessage`` each. A part LangChain has no
    message for (a tool approval) is an ``InvalidMessageError`` naming the message."""
    pending: Dict[str, List[int]] = {}
    for i, m in enumerate(converted):
        pending.setdefault(json.dumps(m, sort_keys=True), []).append(i)
    same_length = len(compacted) == len(originals)
    # A changed message's original, whose id and fields it keeps: at its place while nothing
    # was removed; past a summary, the original holding its tool call (a ToolMessage by its
    # call id, an AIMessage by its first call's).
    by_call: Dict[str, BaseMessage] = {}
    for original in () if same_length else originals:
        if isinstance(original, ToolMessage):
            by_call.setdefault("result:" + original.tool_call_id, original)
        elif isinstance(original, AIMessage):
            for call in original.tool_calls:
                by_call.setdefault("call:" + str(call["id"]), original)

    def like_of(i: int, message: Dict[str, Any], results: int = 1) -> Optional[BaseMessage]:
        if same_length:
            return originals[i] if results == 1 else None
        content = message.get("content")
        part = next((p for p in content if isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result")), None) if isinstance(content, list) else None
        if part is None or results != 1:
            return None
        return by_call.get(("result:" if part["type"] == "tool-result" else "call:") + str(part.get("toolCallId")))

    out: List[BaseMessage] = []
    for i, message in enumerate(compacted):
        matches = pending.get(json.dumps(message, sort_keys=True))
        if matches:
            out.append(originals[matches.pop(0)])
        elif message.get("role") == "tool" and isinstance(message.get("content"), list):
            # A ToolMessage holds one result: a tool message of several is one each.
            results = [p for p in message["content"] if p.get("type") == "tool-result"]
            other = next((p for p in message["content"] if p.get("type") != "tool-result"), None)
            if other is not None or not results:
                kind = "no tool-result part" if other is None else f"a {other.get('type')!r} part"
                raise InvalidMessageError("invalid_message", f"from_model_messages: message {i} (role tool) has {kind}: a LangChain ToolMessage holds one tool result", {"index": i, "field": "content"})
            like = like_of(i, message, len(results))
            out.extend(_from_model({"role": "tool", "content": [result]}, like) for result in results)
        else:
            out.append(_from_model(message, like_of(i, message)))
    return out


#: Blocks that repeat one of an AIMessage's ``tool_calls`` in its content (Anthropic's
#: ``tool_use``, the v1 standard ``tool_call``, OpenAI Responses' ``function_call``), by the key
#: holding the call's arguments. The call crosses once, as the core's tool-call part.
_CALL_BLOCKS = {"tool_use": "input", "tool_call": "args", "function_call": "arguments"}

#: Reasoning blocks (the v1 standard one, Anthropic's ``thinking``) by the key holding the text.
_REASONING_BLOCKS = {"reasoning": "reasoning", "thinking": "thinking"}


def _to_model(message: BaseMessage) -> Dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": _joined(message.content)}
    if isinstance(message, ToolMessage):
        parts = _parts(message.content, media=True)
        if any(p["type"] != "text" for p in parts):
            output = {"type": "content", "value": [p if p["type"] == "text" else _output_item(p) for p in parts]}
        else:
            value = message.content if isinstance(message.content, str) else "".join(p["text"] for p in parts)
            output = {"type": "error-text" if message.status == "error" else "text", "value": value}
        result = {"type": "tool-result", "toolCallId": message.tool_call_id, "toolName": message.name or "tool", "output": output}
        return {"role": "tool", "content": [result]}
    if isinstance(message, AIMessage):
        ids = {call["id"] for call in message.tool_calls}
        content = message.content if isinstance(message.content, list) else []
        uses = {call_id: i for i, b in enumerate(content) if (call_id := _call_id(b, ids))}
        parts = _parts(message.content, media=False, skip=set(uses.values()))
        for call in message.tool_calls:
            part = {"type": "tool-call", "toolCallId": call["id"], "toolName": call["name"], "input": call["args"]}
            parts.append(_mark(part, uses[call["id"]]) if call["id"] in uses else part)
        return {"role": "assistant", "content": parts}
    if isinstance(message, HumanMessage) and isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    return {"role": "user", "content": _parts(message.content, media=True)}


def _from_model(message: Dict[str, Any], like: Optional[BaseMessage]) -> BaseMessage:
    """A LangChain message for a changed (or new) message; ``like`` is the original at that
    place, whose id and fields it keeps, and whose content blocks it gets back where the core
    left them as they were."""
    role, content = message["role"], message["content"]
    keep: Dict[str, Any] = {}
    if like is not None and like.type == {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}[role]:
        keep = {"id": like.id, "additional_kwargs": like.additional_kwargs, "response_metadata": like.response_metadata}
        keep.update({"usage_metadata": like.usage_metadata, "invalid_tool_calls": like.invalid_tool_calls} if isinstance(like, AIMessage) else {})
        # A tool message's name is its result's toolName.
        keep.update({"artifact": like.artifact} if isinstance(like, ToolMessage) else {"name": like.name})
    else:
        like = None
    blocks = like.content if like is not None and isinstance(like.content, list) else None
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content if p["type"] == "text")
    if role == "system":
        return SystemMessage(content=text, **keep)
    if role == "user":
        media = isinstance(content, list) and any(p.get("type") not in ("text", "reasoning") for p in content)
        rebuilt = _blocks(content, blocks or []) if isinstance(content, list) and (blocks is not None or media) else text
        return HumanMessage(content=rebuilt, **keep)
    if role == "assistant":
        parts = content if isinstance(content, list) else []
        calls = [{"id": p["toolCallId"], "name": p["toolName"], "args": p["input"], "type": "tool_call"} for p in parts if p["type"] == "tool-call"]
        return AIMessage(content=_blocks(parts, blocks) if blocks is not None else text, tool_calls=calls, **keep)
    [result] = [p for p in content if p["type"] == "tool-result"]
    output = result["output"]
    if output["type"] == "content" and isinstance(output.get("value"), list):
        value: Any = _blocks(output["value"], blocks or [])
    else:
        value = output["value"] if isinstance(output.get("value"), str) else json.dumps(output.get("value"))
    return ToolMessage(
        content=value,
        tool_call_id=result["toolCallId"],
        name=result["toolName"],
        # An error with images or files crossed as a `content` output, which has no error form:
        # its status is the original's.
        status="error" if output["type"].startswith("error") or (isinstance(like, ToolMessage) and like.status == "error") else "success",
        **keep,
    )


def _parts(content: Any, media: bool, skip: Any = ()) -> List[Dict[str, Any]]:
    """Content blocks as the core's parts: text as text; with ``media`` (user and tool messages)
    images, files and audio as image and file parts, without (assistant messages) reasoning as
    reasoning; any other block as its JSON text; the blocks at ``skip`` left out. Each part a plain
    ``{"type": "text", "text"}`` block would not come back as (any other block, a string, a text
    block with more keys) is marked with its block's place."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    parts: List[Dict[str, Any]] = []
    for i, block in enumerate(content or []):
        if i in skip:
            continue
        if isinstance(block, dict) and list(block) == ["type", "text"] and block["type"] == "text" and isinstance(block["text"], str):
            parts.append({"type": "text", "text": block["text"]})
            continue
        part = _media(block) if media else None
        if part is None:
            key = _REASONING_BLOCKS.get(str(block.get("type"))) if isinstance(block, dict) and not media else None
            reasoning = key is not None and isinstance(block.get(key), str)
            part = {"type": "reasoning" if reasoning else "text", "text": _block_text(block)}
        parts.append(_mark(part, i))
    return parts


def _blocks(parts: Sequence[Dict[str, Any]], original: Sequence[Any]) -> List[Any]:
    """A rebuilt message's content blocks: the block a part is marked with, itself, where the
    core left the part as that block crossed; with its text or arguments replaced where the
    core changed them; a part with no block as the v1 standard block for it."""
    blocks: List[Any] = []
    for part in parts:
        at = ((part.get("providerOptions") or {}).get("langchain") or {}).get("block")
        block = original[at] if isinstance(at, int) and 0 <= at < len(original) else None
        kind = part.get("type")
        if kind == "tool-call":
            # Its call is in tool_calls; a block only when the original content had one.
            if isinstance(block, dict) and block.get("type") in _CALL_BLOCKS:
                key = _CALL_BLOCKS[block["type"]]
                same = _arguments(block.get(key)) == part.get("input")
                blocks.append(block if same else {**block, key: json.dumps(part["input"]) if key == "arguments" else part["input"]})
        elif kind in ("text", "reasoning"):
            text = part.get("text", "")
            if block is None:
                blocks.append({"type": "text", "text": text})
            elif _block_text(block) == text:
                blocks.append(block)
            elif isinstance(block, dict) and block.get("type") in ("text", *_REASONING_BLOCKS):
                blocks.append({**block, _REASONING_BLOCKS.get(block["type"], "text"): text})
            else:
                blocks.append(text if isinstance(block, str) else {"type": "text", "text": text})
        elif block is not None:
            blocks.append(block)  # an image, file or audio block: the core does not change them
        else:
            # Not from this message (the core does not make media): as the v1 standard block.
            data = part.get("image", part.get("data", part.get("url")))
            mime = part.get("mediaType")
            key = "url" if isinstance(data, str) and ("://" in data or data.startswith("data:")) else "base64"
            image = kind in ("image", "media") or str(kind).startswith("image-")
            blocks.append({"type": "image" if image else "file", key: data, **({"mime_type": mime} if mime else {})})
    return blocks


def _mark(part: Dict[str, Any], at: int) -> Dict[str, Any]:
    """``part`` marked with its block's place, so that a rebuilt message gets the block itself
    back. The core passes providerOptions through and leaves them out of every count and
    fingerprint."""
    part["providerOptions"] = {"langchain": {"block": at}}
    return part


def _block_text(block: Any) -> str:
    """The text a block crosses as: a string itself, a text or reasoning block its text, any
    other block its JSON."""
    if isinstance(block, str):
        return block
    if isinstance(block, dict):
        key = "text" if block.get("type") == "text" else _REASONING_BLOCKS.get(str(block.get("type")))
        text = block.get(key) if key is not None else None
        if isinstance(text, str):
            return text
    return json.dumps(block, ensure_ascii=False, default=str)


def _call_id(block: Any, ids: Any) -> Optional[str]:
    """The id of the tool call an AIMessage's content block repeats, if it is one of ``ids``."""
    if not isinstance(block, dict) or block.get("type") not in _CALL_BLOCKS:
        return None
    return next((block[k] for k in ("id", "call_id") if block.get(k) in ids), None)


def _arguments(value: Any) -> Any:
    """A call block's arguments as a value (OpenAI's ``arguments`` is a JSON string)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _joined(content: Any) -> str:
    return content if isinstance(content, str) else "".join(p["text"] for p in _parts(content, media=False))


def _output_item(part: Dict[str, Any]) -> Dict[str, Any]:
    """An image or file part as an item of a tool result's ``content`` output (AI SDK 6's
    ``image-data`` / ``image-url`` / ``file-data`` / ``file-url``), mark kept."""
    data, mime = part.get("image", part.get("data")), part.get("mediaType")
    url = isinstance(data, str) and "://" in data
    kind = ("image-" if part["type"] == "image" else "file-") + ("url" if url else "data")
    item: Dict[str, Any] = {"type": kind, "url" if url else "data": data}
    item.update({"mediaType": mime} if isinstance(mime, str) else {})
    item.update({"filename": part["filename"]} if "filename" in part else {})
    item["providerOptions"] = part["providerOptions"]
    return item


def _document(block: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Anthropic's ``document`` block (a PDF or a text, by base64, URL, file id or inline text)
    as the core's file part (its ``title`` as the filename), or None for another source (a
    ``content`` list of blocks). The TypeScript twin's ``documentPart``."""
    source: Dict[str, Any] = block["source"] if isinstance(block.get("source"), dict) else {}
    mime = source.get("media_type") if isinstance(source.get("media_type"), str) else None
    name = {"filename": block["title"]} if isinstance(block.get("title"), str) else {}
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        return {"type": "file", "data": {"type": "text", "text": source["data"]}, "mediaType": mime or "text/plain", **name}
    data: Any = None
    if source.get("type") == "base64":
        data = source.get("data")
    elif source.get("type") == "url":
        data = source.get("url")
    elif source.get("type") == "file" and isinstance(source.get("file_id"), str):
        data = f"file-id:{source['file_id']}"
    if not isinstance(data, str):
        return None
    return {"type": "file", "data": data, "mediaType": mime or "application/pdf", **name}


def _media(block: Any) -> Optional[Dict[str, Any]]:
    """A LangChain image, file or audio content block as the core's image or file part (data as
    base64 or a URL, the media type when the block says it), or None for any other block. The
    forms: v1 standard blocks (``{"type": "image", "base64" | "url" | "file_id", "mime_type"}``,
    the same for ``file`` and ``audio``), the older ``source_type`` ones, OpenAI's
    ``image_url`` (a data URL or a link) and ``input_audio``, Anthropic's ``source`` and
    ``document``."""
    if not isinstance(block, dict):
        return None
    if block.get("type") == "document":
        return _document(block)
    kind = block.get("type")
    mime = block.get("mime_type") or block.get("mimeType") or block.get("media_type")
    data: Any = None
    if kind in ("image", "file", "audio"):
        source = block.get("source") if isinstance(block.get("source"), dict) else None
        if isinstance(block.get("base64"), str):
            data = block["base64"]
        elif isinstance(block.get("url"), str):
            data = block["url"]
        elif block.get("source_type") in ("base64", "url") and isinstance(block.get("data") or block.get("url"), str):
            data = block.get("data") or block.get("url")
        elif source is not None and isinstance(source.get("data") or source.get("url"), str):
            data = source.get("data") or source.get("url")
            mime = mime or source.get("media_type")
        elif isinstance(block.get("file_id") or block.get("id"), str):
            data = f"file-id:{block.get('file_id') or block.get('id')}"
    elif kind == "image_url":
        url = block.get("image_url")
        data = url.get("url") if isinstance(url, dict) else url
        kind = "image"
    elif kind == "input_audio" and isinstance(block.get("input_audio"), dict):
        data = block["input_audio"].get("data")
        mime = mime or f"audio/{block['input_audio'].get('format', 'wav')}"
        kind = "audio"
    if not isinstance(data, str):
        return None
    if isinstance(data, str) and data.startswith("data:") and ";base64," in data and not mime:
        mime = data[5 : data.index(";")]
    if kind == "image":
        return {"type": "image", "image": data, **({"mediaType": mime} if isinstance(mime, str) else {})}
    extras: Dict[str, Any] = block["extras"] if isinstance(block.get("extras"), dict) else {}
    name = block.get("filename") or extras.get("filename")
    return {
        "type": "file",
        "data": data,
        "mediaType": mime if isinstance(mime, str) else ("audio/*" if kind == "audio" else "application/octet-stream"),
        **({"filename": name} if isinstance(name, str) else {}),
    }


class CompactorMiddleware(AgentMiddleware):
    """Keeps a LangChain v1 agent's messages inside the model's context window.

    ``compactor``: a :class:`Compactor` (or the options to make one: ``model``,
    ``context_window``, ``store``, ``summarize`` ...). ``summary_model``: a LangChain chat model
    that writes the summaries (sync ``invoke`` in ``before_model``, ``ainvoke`` in
    ``abefore_model``) when the compactor has no ``summarize`` of its own; like the options, it
    goes into the compactor the middleware makes, so with a compactor given either is an
    ``InvalidConfigError`` (``field``: the keyword). When it is the
    agent's own model and the core offers the summary request as a continuation (a model with a
    prompt cache, when that costs less), it is sent as one: the agent's system prompt, tools and
    messages as the agent last sent them, then the instruction, so the span is read from the
    cache; an answer that is a tool call, no text or an error falls back to the plain request. ``on_result`` is
    called with every ``ManageResult`` (for logs and tests). With ``offload_at_return`` (default
    True, as the npm package's ``offloadAtReturn``), a tool's output over the offload threshold is
    stored the moment the tool returns (``wrap_tool_call``), so it never enters the agent's
    history (the model gets the preview naming its path). When the provider refuses a prompt as
    too long (``parse_overflow``), or a reply stops because the context window filled up
    (``stop_reason`` or ``finish_reason`` ``model_context_window_exceeded`` in its
    ``response_metadata``), the model call is retried ``overflow_retries`` times (default the
    compactor's ``overflow_retries``: 1 unless its ``overflow={"retries": n}`` says otherwise,
    as npm's) on ``compactor.recover``'s harder compaction (``wrap_model_call``). A refusal after the last
    retry is a ``CompactorError('context_overflow')`` raised from the provider's error (with no
    retries, the provider's error itself); a cut reply after it is the answer, as it is — as the
    npm package's AI SDK middleware does. ``report``: a :func:`create_report_recorder` recorder
    that records every model call, an overflow's retry too (pass its ``on_event`` to the
    compactor too, for the events of offloads at tool return)."""

    def __init__(
        self,
        compactor: Optional[Compactor] = None,
        *,
        summary_model: Any = None,
        on_result: Optional[Callable[[ManageResult], None]] = None,
        offload_at_return: bool = True,
        overflow_retries: Optional[int] = None,
        report: Optional[ReportRecorder] = None,
        **options: Any,
    ) -> None:
        super().__init__()
        #: The agent's last model call (its model, tools and system prompt) and the messages the
        #: last ``before_model`` saw, for a summary continuation.
        self._agent: Optional[_AgentCall] = None
        self._seen: Optional[Tuple[Sequence[BaseMessage], List[Dict[str, Any]]]] = None
        if compactor is None:
            if summary_model is not None and "summarize" not in options:
                options["summarize"] = _summarizer(summary_model, self._continuation_call)
            compactor = Compactor(**options)
        elif summary_model is not None or options:
            # Both only make the compactor: they cannot reach one made already (its summarizer is
            # fixed when it is made, and a continuation needs this middleware). An error, not a
            # setting silently dropped.
            key = "summary_model" if summary_model is not None else next(iter(options))
            fix = (
                "pass the compactor's options instead of the compactor (CompactorMiddleware(model=..., summary_model=llm)), "
                "or make the compactor with a summarize= of its own"
                if key == "summary_model"
                else "pass it to Compactor(...) instead"
            )
            raise InvalidConfigError(
                "invalid_config", f"CompactorMiddleware: `{key}` is for the compactor the middleware makes, and a compactor was given: {fix}", {"field": key}
            )
        self.compactor = compactor
        self._on_result = on_result
        self._report = report
        self._offload_at_return = offload_at_return
        if overflow_retries is None:
            # The compactor's own (``overflow={"retries": n}``), as npm's middleware takes
            # ``compactor.overflowRetries``; 1 for a compactor without one.
            overflow_retries = getattr(compactor, "overflow_retries", 1)
        if not isinstance(overflow_retries, int) or isinstance(overflow_retries, bool) or overflow_retries < 0:
            raise InvalidConfigError("invalid_config", "overflow_retries must be a whole number >= 0", {"field": "overflow_retries"})
        self._overflow_retries = overflow_retries
        self._observed: Optional[object] = None
        #: The system prompt's text ``before_model`` counted last (None: nothing counted yet).
        self._counted: Optional[str] = None

    def before_model(self, state: Any, runtime: Any) -> Optional[Dict[str, Any]]:
        messages = state["messages"]
        system, converted = self._input(messages)
        return self._update(self.compactor.manage([*system, *converted]), messages, system, converted)

    async def abefore_model(self, state: Any, runtime: Any) -> Optional[Dict[str, Any]]:
        messages = state["messages"]
        system, converted = self._input(messages)
        return self._update(await self.compactor.amanage([*system, *converted]), messages, system, converted)

    def _input(self, messages: Sequence[BaseMessage]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
        """The system prompt to count before the agent's messages (the one the agent's last
        model call carried: it goes with every call but is not in the agent's messages; none
        before the first call, which ``wrap_model_call`` compacts again with its own) and the
        messages, both converted; recorded for a summary continuation. Observes the latest
        reply's usage first."""
        self._observe(messages)
        counted = _counted(self._agent.system if self._agent is not None else None)
        system, converted = to_model_messages(counted), to_model_messages(messages)
        self._seen = ([*counted, *messages], [*system, *converted])
        self._counted = _joined(counted[0].content) if counted else ""
        return system, converted

    def _unfit(self, request: Any) -> Optional[Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]]:
        """The request's system prompt (counted first) and messages, converted, when the last
        compaction counted another system prompt (the agent's first call, which ``before_model``
        counted without one; a dynamic one that changed): this call's prompt is compacted again
        with its own, so that it fits. None when it counted this one."""
        counted = _counted(_system_of(request))
        system, converted = to_model_messages(counted), to_model_messages(request.messages)
        text = str(system[0]["content"]) if system else ""
        if text == self._counted:
            return None
        self._counted = text
        self._seen = ([*counted, *request.messages], [*system, *converted])
        return system, converted

    def _fitted(self, request: Any, result: ManageResult, system: List[Dict[str, Any]], converted: List[Dict[str, Any]]) -> Any:
        """The model request with its messages as compacted with its own system prompt (the
        state keeps the messages ``before_model`` returned, a compaction there persisted: the
        compaction record puts these edits back at the next one)."""
        if self._on_result is not None:
            self._on_result(result)
        return request.override(messages=from_model_messages(result.messages[len(system) :], request.messages, converted))

    def _continuation_call(self, continuation: Dict[str, Any]) -> Optional[Tuple["_AgentCall", List[BaseMessage]]]:
        """A summary continuation as the agent's model would get it (``None`` before the agent
        made a call): the agent's last call, and the continuation's messages (the system prompt
        first, as counted) — each one the agent's own message object where it is unchanged, so
        the prefix is the one the provider cached."""
        if self._agent is None:
            return None
        messages, converted = self._seen if self._seen is not None else ([], [])
        return self._agent, from_model_messages(continuation["messages"], messages, converted)

    def _observe(self, messages: Sequence[BaseMessage]) -> None:
        """Calibration: the latest model reply's ``usage_metadata`` says how many input tokens
        the provider counted for the prompt this middleware last returned (the reply of the last
        step of a turn too, seen when the next turn starts). Each reply is observed once."""
        reply = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        # By id when it has one: a checkpointer hands the same reply back as a new object.
        key = None if reply is None else (reply.id or id(reply))
        if reply is None or key == self._observed:
            return
        self._observed = key
        usage = reply.usage_metadata
        if usage and isinstance(usage.get("input_tokens"), int) and usage["input_tokens"] > 0:
            self.compactor.observe_usage(usage["input_tokens"])

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        self._agent = _AgentCall.of(request)
        if (unfit := self._unfit(request)) is not None:
            request = self._fitted(request, self.compactor.manage([*unfit[0], *unfit[1]]), *unfit)
        attempt = 0
        while True:
            try:
                response, error = handler(request), None
            except Exception as e:
                response, error = None, e
            if (retry := self._next(request, attempt, response, error)) is None:
                return response
            attempt, failure, system, converted = retry
            request = self._retry(request, self.compactor.recover([*system, *converted], failure, attempt=attempt), system, converted)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        self._agent = _AgentCall.of(request)
        if (unfit := self._unfit(request)) is not None:
            request = self._fitted(request, await self.compactor.amanage([*unfit[0], *unfit[1]]), *unfit)
        attempt = 0
        while True:
            try:
                response, error = await handler(request), None
            except Exception as e:
                response, error = None, e
            if (retry := self._next(request, attempt, response, error)) is None:
                return response
            attempt, failure, system, converted = retry
            request = self._retry(request, await self.compactor.arecover([*system, *converted], failure, attempt=attempt), system, converted)

    def _next(
        self, request: Any, attempt: int, response: Any, error: Optional[BaseException]
    ) -> Optional[Tuple[int, BaseException, List[Dict[str, Any]], List[Dict[str, Any]]]]:
        """After one model call on ``request``: None to answer it as it is (``response``;
        ``error`` is raised here), else the retry's attempt, the failure to recover from and the
        request's system prompt (counted first) and messages, converted, by the core's
        rules (``overflow_verdict``, as every other middleware's); raises the typed
        ``context_overflow`` once the retries are spent."""
        if error is None and not _cut_at_window(response):
            return None
        failure = error if error is not None else RuntimeError(_WINDOW_EXCEEDED)
        verdict = overflow_verdict("refused" if error is not None else "cut", parse_overflow(failure), attempt, self._overflow_retries)
        if verdict["verdict"] == "fail":
            raise verdict["error"] from failure
        if verdict["verdict"] == "as-is":
            if error is not None:
                raise error
            return None
        return (int(verdict["attempt"]), failure, *_prompt(request))

    def _retry(self, request: Any, result: ManageResult, system: List[Dict[str, Any]], converted: List[Dict[str, Any]]) -> Any:
        """The model request again, with the recovered messages (the system prompt, counted
        first, stays the request's own)."""
        if self._report is not None:  # the retry is a model call of its own
            self._report.add(self.compactor, [*system, *converted], result)
        return self._fitted(request, result, system, converted)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        if not self._offload_at_return or not _offloadable(result):
            return result
        preview = self.compactor.offload_tool_output(result.name or request.tool_call["name"], result.tool_call_id, result.content)
        return result if preview is result.content else result.model_copy(update={"content": preview})

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        if not self._offload_at_return or not _offloadable(result):
            return result
        preview = await self.compactor.aoffload_tool_output(result.name or request.tool_call["name"], result.tool_call_id, result.content)
        return result if preview is result.content else result.model_copy(update={"content": preview})

    def _update(
        self, result: ManageResult, messages: Sequence[BaseMessage], system: List[Dict[str, Any]], converted: List[Dict[str, Any]]
    ) -> Optional[Dict[str, Any]]:
        """The agent's state update for ``result`` (of the system prompt then the messages):
        the compacted messages, the system prompt left out (it is not in the state); none when
        nothing changed."""
        if self._on_result is not None:
            self._on_result(result)
        if self._report is not None:
            self._report.add(self.compactor, [*system, *converted], result)
        compacted = result.messages[len(system) :]
        if compacted == converted:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *from_model_messages(compacted, messages, converted)]}


def _offloadable(result: Any) -> bool:
    return isinstance(result, ToolMessage) and isinstance(result.content, str) and result.status != "error"


def _counted(system: Optional[BaseMessage]) -> List[BaseMessage]:
    """The system prompt as counted before the messages: none when it has no text (as the npm
    middleware's)."""
    return [system] if system is not None and _joined(system.content) else []


def _prompt(request: Any) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """A model request's system prompt (as counted) and messages, converted."""
    return to_model_messages(_counted(_system_of(request))), to_model_messages(request.messages)


def _system_of(request: Any) -> Optional[SystemMessage]:
    """A model request's system prompt: ``system_message`` (langchain 1.1 and later), else its
    ``system_prompt`` text (langchain 1.0)."""
    system = getattr(request, "system_message", None)
    if system is None and isinstance(getattr(request, "system_prompt", None), str):
        system = SystemMessage(content=request.system_prompt)
    return system if isinstance(system, SystemMessage) else None


#: The error text ``recover`` is given for a reply cut at the context window: the overflow
#: table's ``anthropic-stop-reason`` row (the npm middleware's text).
_WINDOW_EXCEEDED = "stop_reason: model_context_window_exceeded"


def _cut_at_window(response: Any) -> bool:
    """A model call's answer (a ``ModelResponse``, or a bare ``AIMessage``) that stopped
    because the context window filled up: its ``response_metadata`` says
    ``model_context_window_exceeded`` as the stop reason (Anthropic's ``stop_reason``, Bedrock
    Converse's ``stopReason``) or the finish reason (``finish_reason``, the OpenAI-shaped APIs
    that pass it on)."""
    messages = getattr(response, "result", [response])
    return any(
        isinstance(m, AIMessage)
        and "model_context_window_exceeded" in (m.response_metadata.get(k) for k in ("stop_reason", "stopReason", "finish_reason"))
        for m in messages
    )


@dataclass
class _AgentCall:
    """What the agent's last model call was made with."""

    model: Any
    tools: List[Any]
    system: Optional[SystemMessage]

    @staticmethod
    def of(request: Any) -> "_AgentCall":
        return _AgentCall(getattr(request, "model", None), list(getattr(request, "tools", None) or []), _system_of(request))


def _model_name(model: Any) -> Optional[str]:
    for attribute in ("model_name", "model", "model_id"):
        name = getattr(model, attribute, None)
        if isinstance(name, str) and name:
            return name
    return None


def _same_model(a: Any, b: Any) -> bool:
    """The same chat model: the same object, or the same model name (a dated snapshot and a
    gateway's ``provider/`` prefix included, as the npm package's ``summarizer`` compares)."""
    if a is b:
        return True
    x, y = _model_name(a), _model_name(b)
    if x is None or y is None:
        return False
    x, y = x[x.rfind("/") + 1 :].lower(), y[y.rfind("/") + 1 :].lower()
    return x == y or x.startswith(f"{y}-") or y.startswith(f"{x}-")


_Continued = Callable[[Dict[str, Any]], Optional[Tuple[_AgentCall, List[BaseMessage]]]]


def _summarizer(model: Any, continued: Optional[_Continued] = None) -> "_ModelSummarizer":
    """A summarizer asking a LangChain chat model. ``continued(continuation)``: the
    continuation's messages as the agent's model gets them (the middleware's), sent first when
    ``model`` is the agent's own."""
    return _ModelSummarizer(model, continued)


class _ModelSummarizer:
    """Called by the sync API (``model.invoke``, on the summarizer's own thread: a sync agent in
    Jupyter, or in an async web handler, never needs an event loop of its own) and awaited by
    the async one (``acall``: ``model.ainvoke``)."""

    def __init__(self, model: Any, continued: Optional[_Continued]) -> None:
        self._model = model
        self._continued = continued

    def __call__(self, request: Dict[str, Any]) -> str:
        asked = self._continuation(request)
        if asked is not None:
            text = self._answered(lambda: asked[0].invoke(asked[1]))
            if text is not None:
                return text
        return _joined(self._model.invoke(_plain(request)).content)

    async def acall(self, request: Dict[str, Any]) -> str:
        asked = self._continuation(request)
        if asked is not None:
            try:
                answer = await asked[0].ainvoke(asked[1])
            except asyncio.CancelledError:
                raise
            except Exception:
                answer = None
            text = self._answered(lambda: answer)
            if text is not None:
                return text
        return _joined((await self._model.ainvoke(_plain(request))).content)

    def _continuation(self, request: Dict[str, Any]) -> Optional[Tuple[Any, List[BaseMessage]]]:
        """The model (with the agent's tools) and messages of the continuation, or ``None``: not
        offered, no agent call yet, or not the agent's model (the plain request follows)."""
        continuation = request.get("continuation")
        if self._continued is None or not isinstance(continuation, dict) or not isinstance(continuation.get("messages"), list):
            return None
        try:
            made = self._continued(continuation)
            if made is None or not _same_model(self._model, made[0].model):
                return None
            call, messages = made
            return (self._model.bind_tools(call.tools) if call.tools else self._model), messages
        except Exception:
            return None

    @staticmethod
    def _answered(answer: Callable[[], Any]) -> Optional[str]:
        """The continuation's summary, or ``None``: an error, a tool call or no text."""
        try:
            message = answer()
        except Exception:
            return None
        if message is None or getattr(message, "tool_calls", None):
            return None
        text = _joined(message.content)
        return text if text.strip() else None


def _plain(request: Dict[str, Any]) -> List[BaseMessage]:
    """The plain summary request: its system prompt and prompt."""
    return [SystemMessage(content=request["system"]), HumanMessage(content=request["prompt"])]


def recovery_langchain_tools(source: Union[Compactor, FileStore]) -> List[StructuredTool]:
    """The recovery tools (``read_file``, ``grep``, ``ls``) as LangChain tools. Given the
    compactor (as the npm package's ``recoveryLangChainTools``), over its store through
    ``compactor.tools()``: a ``read_file`` page ends at 10 % of the model's window, so one read
    cannot fill it, and every store call is bounded by its ``store_timeout``. Given a store
    (as before), over that store directly: pages unbounded, calls not timed."""
    tools = source.tools() if isinstance(source, Compactor) else recovery_tools(source)
    return [
        StructuredTool.from_function(func=tool.func, coroutine=tool.afunc, name=tool.name, description=tool.description, args_schema=tool.input_schema)
        for tool in tools.values()
    ]
