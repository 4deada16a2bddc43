"""Invented people: company insiders and social-media authors, never real names."""

from __future__ import annotations

import numpy as np

_FIRST = (
    "Avery", "Blake", "Corin", "Dana", "Elliot", "Farrah", "Gideon", "Harper", "Imani",
    "Jonah", "Kiran", "Lena", "Marek", "Nadia", "Orson", "Priya", "Quentin", "Rosalind",
    "Soren", "Talia", "Ulric", "Vera", "Wendell", "Xiomara", "Yusuf", "Zelda",
)  # fmt: skip
_LAST = (
    "Ashgrove", "Brindlewood", "Calloway", "Dunmore", "Everhart", "Fairweather", "Galloway",
    "Hollister", "Ironwood", "Jessup", "Kettering", "Larkspur", "Merriweather", "Northcott",
    "Oakhurst", "Pemberton", "Quimby", "Ravensworth", "Stanwick", "Thistlewood", "Underhill",
    "Whitlock", "Yardley",
)  # fmt: skip
_MOODS = (
    "bullish", "bearish", "patient", "contrarian", "quiet", "lucky", "hodl", "value", "swing",
    "deep", "chart", "macro", "dividend", "options", "early",
)  # fmt: skip
_ANIMALS = (
    "otter", "falcon", "badger", "heron", "lynx", "moose", "panda", "raven", "tortoise",
    "walrus", "yak", "marmot", "ibis", "newt",
)  # fmt: skip

AUTHORS = len(_MOODS) * len(_ANIMALS) * 3
"""How many distinct social-media handles the sim uses."""

INSIDER_ROLES = (
    "Chief Executive Officer",
    "Chief Financial Officer",
    "Chief Operating Officer",
    "Director",
    "Director",
)
"""Each company's insiders, by position in its roster."""


def handle(author: int) -> str:
    """The handle of author number ``author`` (0 <= author < AUTHORS)."""
    mood, rest = divmod(author, len(_ANIMALS) * 3)
    animal, suffix = divmod(rest, 3)
    return f"@{_MOODS[mood]}_{_ANIMALS[animal]}{(7, 42, 88)[suffix]}"


def rosters(rng: np.random.Generator, companies: int) -> list[tuple[str, ...]]:
    """A name for each of each company's ``INSIDER_ROLES``."""
    first = rng.integers(0, len(_FIRST), (companies, len(INSIDER_ROLES)))
    last = rng.integers(0, len(_LAST), (companies, len(INSIDER_ROLES)))
    return [
        tuple(f"{_FIRST[f]} {_LAST[s]}" for f, s in zip(fs, ls, strict=True))
        for fs, ls in zip(first, last, strict=True)
    ]
