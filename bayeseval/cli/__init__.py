"""The ``bayeseval`` command line: a thin layer of argparse code over the public functions.

Nothing here is imported by the rest of the package.
"""
