"""Parsers: text in, tidy tables out. Pure functions, no I/O beyond reading a path given."""
