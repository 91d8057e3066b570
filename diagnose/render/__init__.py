"""Renderers: the report dict (render/model.py) displayed as JSON, Markdown, HTML, terminal."""
