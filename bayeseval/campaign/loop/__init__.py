"""How a campaign spends labels: its state (counts, posterior, per-stratum verdicts), the proposal
rules and their allocation, the pool as the campaign sees it, proxy cells, forecasts and the fast
Beta-binomial posterior it refits every round.
"""
