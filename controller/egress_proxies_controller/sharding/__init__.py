"""Sharding Proxies across controller replicas (``--shards N``): which shard a Proxy is in and who
owns it (assignment.py), the shard Leases (leases.py), and the keys a replica may work (keys.py)."""
