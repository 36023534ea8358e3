"""Statistical properties: coverage studies, stop and decision validity, cross-checks against other tools."""
