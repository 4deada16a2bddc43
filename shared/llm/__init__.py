"""quantdesk: llm."""
