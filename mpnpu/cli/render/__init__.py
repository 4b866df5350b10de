"""Renderers: results of the library calls (batch, investigate, stress, the operator list) as text
and Markdown, and as other formats: timelines (Chrome trace JSON, PNG/SVG) and JUnit XML. They only
format; every number comes from the result (or timeline) objects."""
