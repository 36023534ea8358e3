"""How labels arrive: label sets, ingesting a batch, annotation files, labels already in the pool,
the Label Studio sync and the webhook server that keeps a campaign in step with it.
"""
