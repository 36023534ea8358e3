"""Row back ends: pandas, DuckDB and Spark behind one small interface, and the keyed row hash of the split.

Shared by the feature packages; modules here import nothing from them.
"""
