"""Where a campaign lives: the SQLite store (the only module of the campaign that runs SQL), the
file's schema and upgrades, and the creation of a campaign file from a pool.
"""
