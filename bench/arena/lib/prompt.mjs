// The one form every contender's prompts are measured in. A prompt is `{ tools, system, messages }`
// of strings: `tools` the JSON of the tool definitions the model was offered, `system` the system
// text, each message `{ role, text, calls, results }` with tool calls and results written inline,
// so the same conversation gives the same strings whichever framework sent it.

/** A tool call as text. */
export function callText(id, name, input) {
  return `\n<tool_call id="${id}" name="${name}">${typeof input === 'string' ? input : JSON.stringify(input ?? {})}</tool_call>`;
}

/** A tool result as text. */
export function resultText(id, value) {
  return `<tool_result id="${id}">${value}</tool_result>\n`;
}

/** Tool definitions `{name, description, parameters}[]` as one string. */
export function toolsText(definitions) {
  return JSON.stringify(definitions.map((d) => ({ name: d.name, description: d.description ?? '', parameters: d.parameters ?? {} })));
}

/** A tool result's output as the prompt shows it. */
export function outputValue(output) {
  if (output == null) return '';
  if (typeof output === 'string') return output;
  switch (output.type) {
    case 'text':
    case 'error-text':
      return String(output.value);
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value);
    case 'content':
      return output.value.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join('');
    case 'execution-denied':
      return `[denied] ${output.reason ?? ''}`;
    default:
      return JSON.stringify(output);
  }
}

function partsText(content) {
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' || p.type === 'reasoning' ? p.text : `[${p.type}]`)).join('');
}

/** An AI SDK prompt (`LanguageModelV4Prompt`, or `ModelMessage[]` with a system string) and its
 * tools (`LanguageModelV4FunctionTool[]`). */
export function fromAiSdk(prompt, tools = []) {
  const system = [];
  const messages = [];
  for (const m of prompt) {
    if (m.role === 'system') {
      system.push(typeof m.content === 'string' ? m.content : partsText(m.content));
      continue;
    }
    let text = '';
    const calls = [];
    const results = [];
    const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    for (const p of parts) {
      if (p.type === 'text' || p.type === 'reasoning') text += p.text;
      else if (p.type === 'tool-call') {
        calls.push(p.toolCallId);
        text += callText(p.toolCallId, p.toolName, p.input);
      } else if (p.type === 'tool-result') {
        results.push(p.toolCallId);
        text += resultText(p.toolCallId, outputValue(p.output));
      } else text += `[${p.type}]`;
    }
    messages.push({ role: m.role, text, calls, results });
  }
  const defs = tools.map((t) => ({ name: t.name, description: t.description, parameters: t.inputSchema ?? t.parameters }));
  return { tools: toolsText(defs), system: system.join('\n\n'), messages };
}

function langchainContent(content) {
  if (typeof content === 'string') return content;
  return content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
}

/** LangChain messages (`BaseMessage[]`) and the tool definitions bound to the model
 * (`{name, description, parameters}[]`, OpenAI function shape). */
export function fromLangChain(input, definitions = []) {
  const system = [];
  const messages = [];
  for (const m of input) {
    const type = m._getType?.() ?? m.type;
    if (type === 'system') {
      system.push(langchainContent(m.content));
      continue;
    }
    let text = langchainContent(m.content);
    const calls = [];
    const results = [];
    if (type === 'ai') {
      for (const c of m.tool_calls ?? []) {
        calls.push(c.id);
        text += callText(c.id, c.name, c.args);
      }
      messages.push({ role: 'assistant', text, calls, results });
    } else if (type === 'tool') {
      results.push(m.tool_call_id);
      messages.push({ role: 'tool', text: resultText(m.tool_call_id, text), calls, results });
    } else messages.push({ role: 'user', text, calls, results });
  }
  return { tools: toolsText(definitions), system: system.join('\n\n'), messages };
}

/** A Strands content block (`textBlock`, `jsonBlock`, ...) inside a tool result or a system
 * prompt, as text. */
function strandsText(block) {
  if (block.type === 'textBlock') return block.text;
  if (block.type === 'jsonBlock') return JSON.stringify(block.json);
  return `[${block.type}]`;
}

/** Strands Agents messages (`Message[]`: `{role, content: ContentBlock[]}`), its system prompt
 * (a string or system content blocks) and tool specs (`ToolSpec[]`: `{name, description,
 * inputSchema}`). Strands carries tool results in user messages; a message of tool results only
 * is a `tool` message here, as in the other forms. */
export function fromStrands(input, toolSpecs = [], systemPrompt = undefined) {
  const system = systemPrompt === undefined ? '' : typeof systemPrompt === 'string' ? systemPrompt : systemPrompt.filter((b) => b.type === 'textBlock').map((b) => b.text).join('');
  const messages = [];
  for (const m of input) {
    let text = '';
    const calls = [];
    const results = [];
    for (const b of m.content) {
      if (b.type === 'textBlock' || b.type === 'reasoningBlock') text += b.text ?? '';
      else if (b.type === 'toolUseBlock') {
        calls.push(b.toolUseId);
        text += callText(b.toolUseId, b.name, b.input);
      } else if (b.type === 'toolResultBlock') {
        results.push(b.toolUseId);
        text += resultText(b.toolUseId, b.content.map(strandsText).join(''));
      } else if (b.type !== 'cachePointBlock') text += `[${b.type}]`;
    }
    const role = m.role === 'assistant' ? 'assistant' : results.length > 0 && m.content.every((b) => b.type === 'toolResultBlock') ? 'tool' : 'user';
    messages.push({ role, text, calls, results });
  }
  const defs = toolSpecs.map((t) => ({ name: t.name, description: t.description, parameters: t.inputSchema }));
  return { tools: toolsText(defs), system, messages };
}

/** The prompt's pieces in the order a provider caches them: tools, system, then each message. */
export function pieces(prompt) {
  return [prompt.tools, prompt.system, ...prompt.messages.map((m) => `${m.role}\n${m.text}`)];
}

/** Calls without a result after them and results without a call before them. */
export function orphans(prompt) {
  const called = new Set();
  const answered = new Set();
  let orphaned = 0;
  for (const m of prompt.messages) {
    for (const id of m.results) {
      if (!called.has(id)) orphaned++;
      answered.add(id);
    }
    for (const id of m.calls) called.add(id);
  }
  for (const id of called) if (!answered.has(id)) orphaned++;
  return orphaned;
}

/** Whether `value` is anywhere in the prompt the model saw. */
export function promptContains(prompt, value) {
  return prompt.system.includes(value) || prompt.messages.some((m) => m.text.includes(value));
}

/** A Responses API content list (`input_text`, `output_text`, ...) or string, as text. */
function responsesText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((c) => (typeof c.text === 'string' ? c.text : typeof c.refusal === 'string' ? c.refusal : `[${c.type}]`)).join('');
}

/** An OpenAI Agents SDK model request (`ModelRequest`: `input` items in the Responses API shape,
 * `systemInstructions`, `tools` as `SerializedTool[]`). The SDK sends one item per message part:
 * an assistant message and the function calls of one response are consecutive items, the
 * function call results of one step too; each run of them is one message here, as one AI SDK
 * assistant or tool message holds them, so the same conversation gives the same strings. */
export function fromOpenAIAgents(input, tools = [], systemInstructions = undefined) {
  const system = systemInstructions ? [systemInstructions] : [];
  const messages = [];
  const open = (role) => {
    const last = messages.at(-1);
    if (last?.role === role) return last;
    const m = { role, text: '', calls: [], results: [] };
    messages.push(m);
    return m;
  };
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : input;
  for (const item of items) {
    if (item.role === 'system') system.push(responsesText(item.content));
    else if (item.role === 'user') messages.push({ role: 'user', text: responsesText(item.content), calls: [], results: [] });
    else if (item.role === 'assistant') open('assistant').text += responsesText(item.content);
    else if (item.type === 'function_call') {
      const m = open('assistant');
      m.calls.push(item.callId);
      m.text += callText(item.callId, item.name, item.arguments ? JSON.parse(item.arguments) : {});
    } else if (item.type === 'function_call_result') {
      const m = open('tool');
      m.results.push(item.callId);
      const out = item.output;
      const value = typeof out === 'string' ? out : out?.type === 'text' ? out.text : Array.isArray(out) ? responsesText(out) : JSON.stringify(out);
      m.text += resultText(item.callId, value);
    } else if (item.type === 'reasoning') open('assistant').text += responsesText(item.content);
    else open('assistant').text += `[${item.type}]`;
  }
  const defs = tools.filter((t) => t.type === 'function').map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  return { tools: toolsText(defs), system: system.join('\n\n'), messages };
}
