"""Renderings of results: text, Markdown, LaTeX, HTML pages and spreadsheets (plots live in :mod:`bayeseval.plots`).

Shared by the feature packages; modules here import nothing from them.
"""
