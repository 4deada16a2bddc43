"""Brokers: where a book's orders go, and what the book knows of them."""
