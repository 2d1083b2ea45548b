//! Where the tokens of a request are: per message, per part and per tool definition, with the
//! same counts as [`CachedCounter::messages`] and [`CachedCounter::tools`] (what
//! `ai-tokenizer/sdk`'s `count` returns, so a UI can show it).

use serde::Serialize;

use super::{CachedCounter, MESSAGE_OVERHEAD, REPLY_PRIMING, TOOL_DEFINITION_OVERHEAD};
use crate::config::ToolDefinition;
use crate::message::{Content, Message, Part, Role};

/// A request's tokens, broken down. `total` is the sum of everything below it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Breakdown {
    /// Messages, framing, reply priming and tool definitions together.
    pub total: u32,
    /// The tokens that prime the reply, once per request.
    pub reply_priming: u32,
    /// Each message, in order.
    pub messages: Vec<MessageTokens>,
    /// The tool definitions.
    pub tools: ToolsTokens,
}

/// One message's tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageTokens {
    /// The message's role.
    pub role: Role,
    /// Framing plus every part.
    pub total: u32,
    /// The framing around the message.
    pub overhead: u32,
    /// Each part (a string content is one `text` part).
    pub parts: Vec<PartTokens>,
}

/// One part's tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartTokens {
    /// The part's `type` (`text`, `tool-call`, `tool-result`, `image`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Everything the part costs.
    pub total: u32,
    /// A tool call's input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<u32>,
    /// A tool result's output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<u32>,
}

/// The tool definitions' tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsTokens {
    /// Every definition.
    pub total: u32,
    /// Each definition by name, in the order given.
    pub definitions: serde_json::Map<String, serde_json::Value>,
}

impl CachedCounter {
    /// The tokens of `messages` and `tools`, broken down; `total` equals
    /// `messages(messages) + tools(tools)`.
    pub fn breakdown(&self, messages: &[Message], tools: &[ToolDefinition]) -> Breakdown {
        let messages: Vec<MessageTokens> = messages
            .iter()
            .map(|message| {
                let parts: Vec<PartTokens> = match &message.content {
                    Content::Text(text) => vec![PartTokens {
                        kind: "text".into(),
                        total: self.text(text),
                        input: None,
                        output: None,
                    }],
                    Content::Parts(parts) => parts.iter().map(|p| self.part_tokens(p)).collect(),
                };
                MessageTokens {
                    role: message.role,
                    total: MESSAGE_OVERHEAD + parts.iter().map(|p| p.total).sum::<u32>(),
                    overhead: MESSAGE_OVERHEAD,
                    parts,
                }
            })
            .collect();
        let mut definitions = serde_json::Map::new();
        let mut tools_total = 0;
        for tool in tools {
            let one = self.tools(std::slice::from_ref(tool));
            tools_total += one;
            let schema = one
                - TOOL_DEFINITION_OVERHEAD
                - self.text(&tool.name)
                - self.text(tool.description.as_deref().unwrap_or(""));
            definitions.insert(
                tool.name.clone(),
                serde_json::json!({
                    "total": one,
                    "overhead": TOOL_DEFINITION_OVERHEAD,
                    "name": self.text(&tool.name),
                    "description": self.text(tool.description.as_deref().unwrap_or("")),
                    "inputSchema": schema,
                }),
            );
        }
        Breakdown {
            total: REPLY_PRIMING + messages.iter().map(|m| m.total).sum::<u32>() + tools_total,
            reply_priming: REPLY_PRIMING,
            messages,
            tools: ToolsTokens {
                total: tools_total,
                definitions,
            },
        }
    }

    fn part_tokens(&self, part: &Part) -> PartTokens {
        let (input, output) = match part {
            Part::ToolCall(call) => (Some(self.json(&call.input)), None),
            Part::ToolResult(result) => (None, Some(self.output(&result.output))),
            _ => (None, None),
        };
        PartTokens {
            kind: part.type_name().to_owned(),
            total: self.part(part),
            input,
            output,
        }
    }
}
