"""The `quantdesk` command."""
