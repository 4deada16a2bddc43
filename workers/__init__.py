"""quantdesk: workers."""
