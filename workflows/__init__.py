"""quantdesk: workflows."""
