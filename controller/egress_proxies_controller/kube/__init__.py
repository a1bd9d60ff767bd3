"""The Kubernetes side: the one client import, list+watch caches, the work queue, Events,
conditions and Lease-based leader election; nothing here knows what a Proxy or a pool means."""
