"""The ``kubernetes`` provider: each instance is a Squid Pod (plus its squid.conf ConfigMap) in a
Kubernetes cluster, driven through the official ``kubernetes`` Python client."""
