"""What a campaign is for: the goals (:class:`Each`, :class:`Overall`, :class:`Decide`, :class:`Gap`),
the guarantee its intervals carry, what one more label is worth toward a goal, and how a decision
goal spends labels.

The goals only read a campaign's state (:mod:`bayeseval.campaign.loop`); the state calls them.
"""
