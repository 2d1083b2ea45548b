"""LangChain v1 agent middleware: ``create_agent(model, tools, middleware=[CompactorMiddleware(...)])``.

Its ``before_model`` hook runs the compactor on the agent's messages before every model call
and, when something changed, replaces them in the agent's state (``RemoveMessage(id=
REMOVE_ALL_MESSAGES)`` then the compacted list, as LangChain's own ``SummarizationMiddleware``
does), so the compaction persists into later steps. Offloaded content goes to the compactor's
store; give the agent the recovery tools (``recovery_langchain_tools(compactor.store)``) to read
it back.

Messages are converted to the core's (AI SDK) shape and back: ``SystemMessage`` → ``system``,
``HumanMessage`` → ``user``, ``AIMessage`` → ``assistant`` (text and ``tool_calls``),
``ToolMessage`` → ``tool`` (one ``tool-result``). A message the compactor left unchanged comes
back as the same LangChain object (id, metadata and all); a changed one is rebuilt with the
original's id and fields. Image, file and audio blocks (LangChain v1 standard blocks, the older
``source_type`` ones, OpenAI's ``image_url`` and ``input_audio``, Anthropic's ``source``) cross
as the core's image and file parts, counted as images and files, and come back as the blocks
they were; other blocks cross as their JSON text (counted, and kept verbatim when unchanged)."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence

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
from .stores import FileStore
from .tools import recovery_tools


def to_model_messages(messages: Sequence[BaseMessage]) -> List[Dict[str, Any]]:
    """LangChain messages in the core's (AI SDK ``ModelMessage``) shape."""
    return [_to_model(m) for m in messages]


def _text(content: Any, media: bool = False) -> List[Dict[str, Any]]:
    """Content blocks as the core's parts: text as text, with ``media`` (a user message) images,
    files and audio as image and file parts, anything else as its JSON text."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    parts = []
    for i, block in enumerate(content or []):
        if isinstance(block, str):
            parts.append({"type": "text", "text": block})
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        else:
            part = _media(block) if media else None
            if part is not None:
                # The block's place, so that a rebuilt message gets the block itself back. The core
                # passes providerOptions through and leaves them out of every fingerprint.
                part["providerOptions"] = {"langchain": {"block": i}}
                parts.append(part)
            else:
                parts.append({"type": "text", "text": json.dumps(block, ensure_ascii=False, default=str)})
    return parts


def _media(block: Any) -> Optional[Dict[str, Any]]:
    """A LangChain image, file or audio content block as the core's image or file part (data as
    base64 or a URL, the media type when the block says it), or None for any other block. The
    forms: v1 standard blocks (``{"type": "image", "base64" | "url" | "file_id", "mime_type"}``,
    the same for ``file`` and ``audio``), the older ``source_type`` ones, OpenAI's
    ``image_url`` (a data URL or a link) and ``input_audio``, Anthropic's ``source``."""
    if not isinstance(block, dict):
        return None
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


def _to_model(message: BaseMessage) -> Dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": "".join(p["text"] for p in _text(message.content))}
    if isinstance(message, ToolMessage):
        value = message.content if isinstance(message.content, str) else "".join(p["text"] for p in _text(message.content))
        return {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": message.tool_call_id,
                    "toolName": message.name or "tool",
                    "output": {"type": "error-text" if message.status == "error" else "text", "value": value},
                }
            ],
        }
    if isinstance(message, AIMessage):
        parts = _text(message.content)
        for call in message.tool_calls:
            parts.append({"type": "tool-call", "toolCallId": call["id"], "toolName": call["name"], "input": call["args"]})
        return {"role": "assistant", "content": parts}
    if isinstance(message, HumanMessage) and isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    return {"role": "user", "content": _text(message.content, media=True)}


def _from_model(message: Dict[str, Any], like: Optional[BaseMessage]) -> BaseMessage:
    """A LangChain message for a changed (or new) message; ``like`` is the original at that
    place, whose id and fields it keeps."""
    role, content = message["role"], message["content"]
    keep: Dict[str, Any] = {}
    if like is not None and like.type == {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}[role]:
        keep = {"id": like.id, "additional_kwargs": like.additional_kwargs, "response_metadata": like.response_metadata}
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content if p["type"] == "text")
    if role == "system":
        return SystemMessage(content=text, **keep)
    if role == "user":
        blocks = _blocks(content, like)
        return HumanMessage(content=blocks if blocks is not None else text, **keep)
    if role == "assistant":
        calls = [
            {"id": p["toolCallId"], "name": p["toolName"], "args": p["input"], "type": "tool_call"}
            for p in content
            if isinstance(content, list) and p["type"] == "tool-call"
        ]
        return AIMessage(content=text, tool_calls=calls, **keep)
    [result] = [p for p in content if p["type"] == "tool-result"]
    output = result["output"]
    value = output["value"] if isinstance(output.get("value"), str) else json.dumps(output.get("value"))
    return ToolMessage(
        content=value,
        tool_call_id=result["toolCallId"],
        name=result["toolName"],
        status="error" if output["type"].startswith("error") else "success",
        **keep,
    )


def _blocks(content: Any, like: Optional[BaseMessage]) -> Optional[List[Any]]:
    """A rebuilt user message's content blocks when it keeps an image or file: each such part
    is the original message's block at the place it names (the block itself, unchanged), each
    text part a text block. None when there is nothing but text."""
    if not isinstance(content, list) or all(p.get("type") == "text" for p in content):
        return None
    original = like.content if like is not None and isinstance(like.content, list) else []
    blocks: List[Any] = []
    for part in content:
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
            continue
        at = ((part.get("providerOptions") or {}).get("langchain") or {}).get("block")
        if isinstance(at, int) and 0 <= at < len(original):
            blocks.append(original[at])
        else:
            # Not from this message (the core does not make media): as the v1 standard block.
            data = part.get("image", part.get("data"))
            mime = part.get("mediaType")
            key = "url" if isinstance(data, str) and ("://" in data or data.startswith("data:")) else "base64"
            blocks.append({"type": "image" if part.get("type") == "image" else "file", key: data, **({"mime_type": mime} if mime else {})})
    return blocks


def from_model_messages(
    compacted: Sequence[Dict[str, Any]], originals: Sequence[BaseMessage], converted: Sequence[Dict[str, Any]]
) -> List[BaseMessage]:
    """The compacted messages as LangChain messages: each unchanged one is the original object
    (matched in order by its converted form), each changed one rebuilt."""
    pending: Dict[str, List[int]] = {}
    for i, m in enumerate(converted):
        pending.setdefault(json.dumps(m, sort_keys=True), []).append(i)
    same_length = len(compacted) == len(originals)
    out: List[BaseMessage] = []
    for i, message in enumerate(compacted):
        matches = pending.get(json.dumps(message, sort_keys=True))
        if matches:
            out.append(originals[matches.pop(0)])
        else:
            out.append(_from_model(message, originals[i] if same_length else None))
    return out


class CompactorMiddleware(AgentMiddleware):
    """Keeps a LangChain v1 agent's messages inside the model's context window.

    ``compactor``: a :class:`Compactor` (or the options to make one: ``model``,
    ``context_window``, ``store``, ``summarize`` ...). ``summary_model``: a LangChain chat model
    that writes the summaries (sync ``invoke`` in ``before_model``, ``ainvoke`` in
    ``abefore_model``) when the compactor has no ``summarize`` of its own. ``on_result`` is
    called with every ``ManageResult`` (for logs and tests). With ``offload_at_return``, a
    tool's output over the offload threshold is stored the moment the tool returns
    (``wrap_tool_call``), so it never enters the agent's history (the model gets the preview
    naming its path)."""

    def __init__(
        self,
        compactor: Optional[Compactor] = None,
        *,
        summary_model: Any = None,
        on_result: Optional[Callable[[ManageResult], None]] = None,
        offload_at_return: bool = False,
        **options: Any,
    ) -> None:
        super().__init__()
        if compactor is None:
            if summary_model is not None and "summarize" not in options:
                options["summarize"] = _summarizer(summary_model)
            compactor = Compactor(**options)
        self.compactor = compactor
        self._on_result = on_result
        self._offload_at_return = offload_at_return
        self._observed: Optional[object] = None

    def before_model(self, state: Any, runtime: Any) -> Optional[Dict[str, Any]]:
        messages = state["messages"]
        self._observe(messages)
        converted = to_model_messages(messages)
        return self._update(self.compactor.manage(converted), messages, converted)

    async def abefore_model(self, state: Any, runtime: Any) -> Optional[Dict[str, Any]]:
        messages = state["messages"]
        self._observe(messages)
        converted = to_model_messages(messages)
        return self._update(await self.compactor.amanage(converted), messages, converted)

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

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        result = handler(request)
        if not self._offload_at_return or not _offloadable(result):
            return result
        preview = self.compactor.offload_tool_output(result.name or "tool", result.tool_call_id, result.content)
        return result if preview is result.content else result.model_copy(update={"content": preview})

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        result = await handler(request)
        if not self._offload_at_return or not _offloadable(result):
            return result
        preview = await self.compactor.aoffload_tool_output(result.name or "tool", result.tool_call_id, result.content)
        return result if preview is result.content else result.model_copy(update={"content": preview})

    def _update(self, result: ManageResult, messages: Sequence[BaseMessage], converted: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        if self._on_result is not None:
            self._on_result(result)
        if result.messages == converted:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *from_model_messages(result.messages, messages, converted)]}


def _offloadable(result: Any) -> bool:
    return isinstance(result, ToolMessage) and isinstance(result.content, str) and result.status != "error"


def _summarizer(model: Any) -> Callable[[Dict[str, Any]], Any]:
    """A summarizer asking a LangChain chat model (async: ``amanage`` awaits it, ``manage``
    runs it on a private event loop)."""

    async def summarize(request: Dict[str, Any]) -> str:
        answer = await model.ainvoke([SystemMessage(content=request["system"]), HumanMessage(content=request["prompt"])])
        content = answer.content
        return content if isinstance(content, str) else "".join(p["text"] for p in _text(content))

    return summarize


def recovery_langchain_tools(store: FileStore) -> List[StructuredTool]:
    """The recovery tools (``read_file``, ``grep``, ``ls``) as LangChain tools over ``store``."""
    return [
        StructuredTool.from_function(func=tool.func, name=tool.name, description=tool.description, args_schema=tool.input_schema)
        for tool in recovery_tools(store).values()
    ]
