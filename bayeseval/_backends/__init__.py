"""Row back ends: pandas, DuckDB, Spark and narwhals (any other frame) behind one small interface,
and the keyed row hash of the split.

Shared by the feature packages; modules here import nothing from them.
"""
