"""The embedded stack: launching, supervising and checking local servers."""
