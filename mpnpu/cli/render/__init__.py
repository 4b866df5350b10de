"""Renderers: results of the library calls (batch, investigate, stress, the operator list) as text
and Markdown. They only format; every number comes from the result objects."""
