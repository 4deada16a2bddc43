"""Named watchlists: the names a desk follows, stored with the book, analysed by AutoRun."""
