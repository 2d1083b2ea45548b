//! The per-message, per-part, per-tool breakdown adds up to the counts the planner uses.

use context_compactor::{parse_messages, CachedCounter, Encoding, ToolDefinition};

#[test]
fn breakdown_adds_up_to_the_request_count() {
    let messages = parse_messages(
        &serde_json::json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [
                {"type": "text", "text": "Find the slow requests, then summarize."},
                {"type": "image", "image": "https://example.com/a.png"}
            ]},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "I should search the logs."},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {"q": "slow", "limit": 50}}
            ]},
            {"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "search",
                 "output": {"type": "json", "value": {"hits": [{"path": "/api", "ms": 912}]}}}
            ]}
        ])
        .to_string(),
    )
    .unwrap();
    let tools: Vec<ToolDefinition> = serde_json::from_value(serde_json::json!([
        {"name": "search", "description": "Search the logs.",
         "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}},
        {"name": "read_file", "inputSchema": {"type": "object"}}
    ]))
    .unwrap();
    let counter = CachedCounter::new(Encoding::O200kBase).unwrap();
    let b = counter.breakdown(&messages, &tools);
    assert_eq!(b.total, counter.messages(&messages) + counter.tools(&tools));
    assert_eq!(b.messages.len(), 4);
    for (m, message) in b.messages.iter().zip(&messages) {
        assert_eq!(m.total, counter.message(message));
        assert_eq!(
            m.total,
            m.overhead + m.parts.iter().map(|p| p.total).sum::<u32>()
        );
    }
    let kinds: Vec<&str> = b
        .messages
        .iter()
        .flat_map(|m| m.parts.iter().map(|p| p.kind.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            "text",
            "text",
            "image",
            "reasoning",
            "tool-call",
            "tool-result"
        ]
    );
    let call = &b.messages[2].parts[1];
    assert!(call.input.unwrap() > 0 && call.input.unwrap() < call.total);
    assert_eq!(b.messages[1].parts[1].total, counter.image_tokens);
    assert_eq!(b.tools.total, counter.tools(&tools));
    let search = &b.tools.definitions["search"];
    assert_eq!(
        search["total"].as_u64().unwrap() as u32,
        counter.tools(&tools[..1])
    );
    assert!(search["inputSchema"].as_u64().unwrap() > 0);
    assert_eq!(b.tools.definitions["read_file"]["description"], 0);
}
