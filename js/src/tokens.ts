// What counting takes and returns, shared by both entries' runtimes (init.ts): the breakdown's
// shape and the tool definitions read from an AI SDK tool set.
import type { MessageLike } from './types.js';

/** A text's tokens for a model (`countModelTokens`). */
export interface ModelCount {
  /** Exact, or the estimate: the counter's tokens times `ratio`, rounded up. */
  tokens: number;
  /** Whether the model's own tokenizer counted them: an OpenAI model's encoding, or the model's
   * Hugging Face tokenizer once loaded. */
  exact: boolean;
  /** What counted: the encoding or the loaded tokenizer's name. */
  counter: string;
  /** The factor applied to the counter's tokens (1 when exact). */
  ratio: number;
}

/** A tool as the model sees it. */
export interface ToolDefinition {
  name: string;
  description?: string;
  inputSchema?: unknown;
}

/** Tool definitions (`{name, description, inputSchema}`), an AI SDK tool set
 * (`{name: tool({...})}`), or a list of tools in another framework's or provider's shape: OpenAI's
 * (`{type: 'function', function: {name, description, parameters}}`, what LangChain's
 * `convertToOpenAITool` makes, or the flat `{type: 'function', name, parameters}` of the
 * Responses API and the OpenAI Agents SDK's tools), Anthropic's (`input_schema`), LangChain.js
 * tools (`schema`) and Mastra's. */
export type ToolSetLike = readonly object[] | Record<string, { description?: unknown; inputSchema?: unknown; parameters?: unknown }>;

/** One part's tokens in a `TokenBreakdown`. */
export interface PartTokens {
  /** The part's `type`: `text`, `reasoning`, `image`, `file`, `tool-call`, `tool-result`, ... */
  type: string;
  total: number;
  /** A tool call's input. */
  input?: number;
  /** A tool result's output. */
  output?: number;
}

/** Where a request's tokens are (what `ai-tokenizer/sdk`'s `count` returns, in our counts). */
export interface TokenBreakdown {
  /** Everything below: the number the compactor plans with (before a family factor). */
  total: number;
  /** Tokens that prime the reply, once per request. */
  replyPriming: number;
  messages: { role: MessageLike['role']; total: number; overhead: number; parts: PartTokens[] }[];
  tools: {
    total: number;
    definitions: Record<string, { total: number; overhead: number; name: number; description: number; inputSchema: number }>;
  };
}

/** JSON tool definitions from either accepted shape. */
export function toolDefinitions(tools: ToolSetLike): ToolDefinition[] {
  if (Array.isArray(tools)) return tools.map((tool: unknown) => (foreign(tool) ? definition(undefined, tool) : (tool as ToolDefinition)));
  // A tool set's entry left undefined (a conditional spread) counts by its name.
  return Object.entries(tools).map(([name, tool]) => definition(name, tool ?? {}));
}

/** Fields of a tool in another shape than the core's: OpenAI's, Anthropic's, LangChain's,
 * Mastra's (`id`), MCP's (`title`, `annotations`, `outputSchema`). */
const FOREIGN_FIELDS = ['type', 'function', 'parameters', 'input_schema', 'schema', 'id', 'title', 'annotations', 'outputSchema', 'execute'];

/** A tool in another shape than the core's (`{name, description?, inputSchema?}`, which goes
 * over as it is, so that a misspelled field is the core's `invalid_config`): a class instance
 * (a LangChain or Mastra tool) or a provider's definition. */
function foreign(tool: unknown): boolean {
  if (tool === null || typeof tool !== 'object') return false;
  return Object.getPrototypeOf(tool) !== Object.prototype || FOREIGN_FIELDS.some((key) => key in tool);
}

/** A JSON schema, not a schema library's object (zod v4's has a `type` too, and a
 * `~standard` or `_zod`; zod v3's a `_def`). */
function isJsonSchema(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if ('~standard' in value || '_zod' in value || '_def' in value) return false;
  return 'type' in value || 'properties' in value || '$schema' in value;
}

/** One tool as the core reads it, named `key` (a tool set's) or by its own `name`. Anything
 * that is not an object is handed over as it is (the core's error names it). */
function definition(key: string | undefined, given: unknown): ToolDefinition {
  if (given === null || typeof given !== 'object') return given as ToolDefinition;
  const outer = given as Record<string, unknown>;
  // OpenAI Chat Completions' `{type: 'function', function: {...}}` (LangChain's convertToOpenAITool).
  const tool = outer.type === 'function' && outer.function !== null && typeof outer.function === 'object' ? (outer.function as Record<string, unknown>) : outer;
  const schema = tool.inputSchema ?? tool.parameters ?? tool.input_schema ?? tool.schema;
  const json = schema && typeof schema === 'object' && 'jsonSchema' in schema ? (schema as { jsonSchema: unknown }).jsonSchema : schema;
  // A schema object we cannot read as JSON (e.g. a raw zod schema) counts by name and
  // description only; pass `zodSchema(...)` or JSON to count it exactly.
  const plain = isJsonSchema(json);
  // AI SDK 7 allows a description function (of the call's context): counted by name and schema.
  const name = key ?? tool.name ?? tool.id;
  return { name: name as string, ...(typeof tool.description === 'string' && tool.description ? { description: tool.description } : {}), ...(plain ? { inputSchema: json } : {}) };
}
